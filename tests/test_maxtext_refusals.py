"""MaxText's cross-field refusals (types.py's model validators: ``if ...: raise ValueError``,
``assert``): extracted into the schema (rcpc/domain/maxtext/refusals.py), decided by our evaluator
(rcpc/domain/maxtext/refusal_eval.py) exactly as MaxText's own code decides them, and reported where
the flags are written (E0350, rcpc/domain/maxtext/crossfield.py)."""

from __future__ import annotations

import ast
import enum
import math
import types as pytypes
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SCHEMA_TOML
from rcpc.core.diagnostics import CompileError
from rcpc.domain.maxtext.refusal_eval import Undecided, holds
from rcpc.domain.maxtext.refusals import extract
from rcpc.domain.maxtext.schema import BUILTIN_PATH, load_schema
from rcpc.domain.maxtext import BUILTIN
from rcpc.domain.maxtext.schemagen import _Module

REPO = Path(__file__).resolve().parents[1]
TYPES_PY = REPO.parent / "shared" / "data" / "maxtext" / "types.py"
SCHEMA = load_schema(BUILTIN_PATH, None, BUILTIN)
FLAGS = 'flag_file(name = "f", flags = F)\n'
TREE = ast.parse(TYPES_PY.read_text(encoding="utf-8"))
BY_LINE = {n.lineno: n for n in ast.walk(TREE) if isinstance(n, (ast.If, ast.Assert))}
FUNCS = [n for n in ast.walk(TREE) if isinstance(n, ast.FunctionDef)]


def _enum_classes() -> dict:
    """types.py's own Enum classes, made from its source (what pydantic gives the validators)."""
    out: dict = {}
    for node in TREE.body:
        if isinstance(node, ast.ClassDef) and any(ast.unparse(b).split(".")[-1] in ("Enum", "IntEnum") for b in node.bases):
            ns: dict = {"Enum": enum.Enum, "enum": enum}
            exec(compile(ast.Module([node], []), str(TYPES_PY), "exec"), ns)
            out[node.name] = ns[node.name]
    return out


ENUMS = _enum_classes()


# (a) MaxText's own code is the oracle ---------------------------------------------------------
def oracle_code(r: dict) -> tuple[str, str]:
    """(source, parameter name): the refusal's ``if`` (or ``assert``) statement of types.py,
    verbatim, nested under the ``if`` tests it runs under (guards), inside nothing else."""
    stmt = BY_LINE[r["line"]]
    fn = min((f for f in FUNCS if f.lineno <= r["line"] <= f.end_lineno), key=lambda f: f.end_lineno - f.lineno)
    if isinstance(stmt, ast.If):
        stmt = ast.If(test=stmt.test, body=stmt.body, orelse=[])
    lines, indent = [], ""
    for line, truth in r["guards"]:
        test = ast.unparse(BY_LINE[line].test)
        lines.append(f"{indent}if {'' if truth else 'not '}({test}):")
        indent += "    "
    lines.extend(indent + x for x in ast.unparse(stmt).splitlines())
    return "\n".join(lines), fn.args.args[0].arg


def as_pydantic(t: dict, v):
    """The value pydantic gives a validator: an enum's member for an enum's value."""
    for x in (t["of"] if t["type"] == "union" else [t]):
        if x["type"] == "enum" and v is not None and v in x["values"]:
            return ENUMS[x["name"]](v)
    return v


def _common_enums() -> dict:
    """common_types.py's enums (what a statement of types.py names, ``AttentionType.MLA.value``),
    made from their members as the file states them (read with ``ast``, not imported)."""
    path = REPO.parent / "shared" / "data" / "maxtext-src" / "src" / "maxtext" / "common" / "common_types.py"
    out = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef) and any(ast.unparse(b).endswith("Enum") for b in node.bases):
            out[node.name] = enum.Enum(node.name, {t.targets[0].id: t.value.value for t in node.body
                                                   if isinstance(t, ast.Assign) and isinstance(t.targets[0], ast.Name)
                                                   and isinstance(t.value, ast.Constant)})
    return out


COMMON_ENUMS = _common_enums()


def maxtext_raises(r: dict, values: dict):
    """True / False: MaxText's statement raises ValueError (AssertionError) / does not;
    the exception type when Python fails otherwise deciding it."""
    src, param = oracle_code(r)
    config = {}
    for k, v in values.items():  # an enum field holds the enum's member, as pydantic makes it
        config[k] = as_pydantic(SCHEMA.type_of(k), v)
    try:
        exec(compile(src, str(TYPES_PY), "exec"), {"ValueError": ValueError, **COMMON_ENUMS},
             {param: pytypes.SimpleNamespace(**config)})
    except (ValueError, AssertionError):
        return True
    except Exception as exc:  # noqa: BLE001 - the oracle's other failures are compared too
        return type(exc)
    return False


def constants(tree) -> list:
    out = []
    if isinstance(tree, dict):
        if "const" in tree:
            c = tree["const"]
            out.extend(c if isinstance(c, list) else [c])
        for v in tree.values():
            out.extend(constants(v))
    elif isinstance(tree, list):
        for v in tree:
            out.extend(constants(v))
    return out


def values_of(t: dict, near: list):
    """Values pydantic can make for the type node ``t``, drawn around the condition's
    constants ``near`` (where the decision changes)."""
    kind = t["type"]
    nums = [c for c in near if type(c) in (int, float)]
    if kind == "bool":
        return st.booleans()
    if kind == "int":
        lo, hi = t.get("ge", t["gt"] + 1 if "gt" in t else -4), t.get("le", t["lt"] - 1 if "lt" in t else 8)
        pts = [int(c) + d for c in nums if c == c and abs(c) < 1e9 for d in (-1, 0, 1)]
        return st.one_of(st.integers(lo, max(lo, hi)), *(st.just(p) for p in pts if lo <= p <= max(hi, p)))
    if kind == "float":
        pts = [float(c) + d for c in nums if math.isfinite(c) for d in (-0.5, 0.0, 1e-9, 0.5)]
        return st.one_of(st.floats(-4, 4), *(st.just(p) for p in pts))
    if kind == "str":
        return st.one_of(st.sampled_from([c for c in near if type(c) is str] or [""]), st.text(max_size=3))
    if kind == "none":
        return st.none()
    if kind == "literal" or (kind == "enum" and t["values"]):
        return st.sampled_from(t["values"])
    if kind == "union":
        return st.one_of(*(values_of(x, near) for x in t["of"]))
    if kind == "list":
        return st.lists(st.integers(0, 3), max_size=3)
    if kind == "dict":
        return st.dictionaries(st.text(max_size=2), st.integers(0, 3), max_size=2)
    return st.text(max_size=3)


READ = [r for r in SCHEMA.refusals if r.get("by") != "hand"]  # read from types.py (maxtext/refusal_rules.py: by hand)


@pytest.mark.parametrize("r", READ, ids=lambda r: f"types.py:{r['line']}")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_refusal_decided_as_maxtext_decides_it(r, data):
    near = constants(r["when"])
    values = {k: data.draw(values_of(SCHEMA.type_of(k), near), label=k) for k in r["reads"]}
    expected = maxtext_raises(r, values)
    try:
        got = holds(r["when"], values)
    except Undecided:
        got = "undecided"
    if expected in (True, False):
        assert got == expected, (r["line"], values)
    else:  # Python itself fails deciding it (None < 1): rcpc reports nothing
        assert got == "undecided", (r["line"], values, expected)


def test_moe_chunks_refusal_is_modelled():
    (r,) = [r for r in SCHEMA.refusals if r["reads"] == ["num_moe_token_chunks", "use_ring_of_experts"]]
    bad = {"num_moe_token_chunks": 2, "use_ring_of_experts": False}
    assert maxtext_raises(r, bad) is True and holds(r["when"], bad) is True
    good = {"num_moe_token_chunks": 2, "use_ring_of_experts": True}
    assert maxtext_raises(r, good) is False and holds(r["when"], good) is False
    assert r["message"] == ["num_moe_token_chunks > 1 requires use_ring_of_experts=True."]


def test_a_refusal_that_contradicts_its_guard_is_left_out():
    """types.py:3701 ("Elastic training is only supported with Pathways") runs after ``if
    self.elastic_enabled:`` a call that may change any field, so the reading of types.py puts
    it under ``not elastic_enabled``, and its own condition needs ``elastic_enabled``: it could
    never fire. It is left out (issue 36); a hand-written rule models it instead."""
    from rcpc.domain.maxtext.refusals import contradicts

    assert not [r for r in READ if "Elastic training" in str(r["message"])]
    (hand,) = [r for r in SCHEMA.refusals if r.get("by") == "hand" and "Elastic training" in str(r["message"])]
    assert holds(hand["when"], {"elastic_enabled": True, "enable_single_controller": False})
    a = {"field": "elastic_enabled"}
    assert contradicts({"and": [{"not": a}, {"and": [a, {"not": {"field": "x"}}]}]})
    assert not contradicts({"and": [{"not": a}, {"field": "x"}]})
    assert all(not contradicts(r["when"]) for r in SCHEMA.refusals)


def test_every_hand_written_refusal_names_the_line_that_raises_in_maxtexts_file():
    package = REPO.parent / "shared" / "data" / "maxtext-src" / "src" / "maxtext"  # "utils/x.py": in the package
    hand = [r for r in SCHEMA.refusals if r.get("by") == "hand"]
    assert len(hand) >= 25
    for r in hand:
        path = package / r["file"] if "/" in r["file"] else TYPES_PY.parent / r["file"]
        line = path.read_text(encoding="utf-8").splitlines()[r["line"] - 1]
        assert ("raise" in line or "assert" in line or "ValueError" in line or "jnp.dtype" in line  # calls that raise
                or "math.log2" in line or '"' in line), r


def test_every_refusal_names_a_raising_statement_of_types_py():
    assert len(READ) >= 10
    for r in READ:
        stmt = BY_LINE[r["line"]]
        assert isinstance(stmt, ast.Assert) or isinstance(stmt.body[0], ast.Raise)
        assert r["reads"] and all(k in SCHEMA.fields for k in r["reads"])


# extraction is conservative -----------------------------------------------------------------
FIELDS = {k: {"type": {"type": t}, "base": v} for k, t, v in
          (("a", "int", 0), ("b", "bool", False), ("c", "int", 0), ("rules", "list", []))}
FIELDS["rules"]["type"] = {"type": "list", "items": {"type": "any"}}


def extracted(body: str) -> list[int]:
    src = ("class M(BaseModel):\n  a: int = 0\n  @model_validator(mode=\"after\")\n  def v(self):\n"
           + "".join(f"    {line}\n" for line in body.strip("\n").splitlines()) + "    return self\n"
           "  def helper(self):\n    self.c = 3\n")
    tree = ast.parse(src)
    return [r["line"] - 4 for r in extract(tree, _Module(tree), "M", FIELDS)[0]]


@pytest.mark.parametrize("body, lines", [
    ('if self.a > 1 and not self.b:\n  raise ValueError("x")', [1]),
    ('assert self.a in (1, 2), "x"', [1]),
    ('self.a = 2\nif self.a > 1:\n  raise ValueError("x")', []),              # a default set before
    ('if self.b:\n  self.a = 2\nif self.a > 1:\n  raise ValueError("x")', []),  # set on one branch
    ('setattr(self, "a", 1)\nif self.a > 1:\n  raise ValueError("x")', []),
    ('setattr(self, k, 1)\nif self.a > 1:\n  raise ValueError("x")', []),     # any field may change
    ('f(self)\nif self.a > 1:\n  raise ValueError("x")', []),                 # unknown code given self
    ('self.helper()\nif self.c > 1:\n  raise ValueError("x")', []),           # a helper sets c
    ('self.rules.append(1)\nif len(self.rules) > 1:\n  raise ValueError("x")', []),
    ('if os.environ.get("X"):\n  if self.a > 1:\n    raise ValueError("x")', []),  # undecidable guard
    ('if self.b:\n  if self.a > 1:\n    raise ValueError("x")', [2]),
    ('if self.b:\n  return self\nif self.a > 1:\n  raise ValueError("x")', [3]),
    ('if g():\n  return self\nif self.a > 1:\n  raise ValueError("x")', []),    # an undecidable early return
    ('for x in y:\n  if self.a > 1:\n    raise ValueError("x")', []),
    ('if self.a > n:\n  raise ValueError("x")', []),                          # a local name
    ('if self.a > 1:\n  raise TypeError("x")', []),
    ('if self.a > 1:\n  log()\n  raise ValueError("x")', []),
    ('if self.b:\n  f(self)\nif self.a > 1:\n  raise ValueError("x")', [3]),      # decided where b is false
    ('if g():\n  f(self)\nif self.a > 1:\n  raise ValueError("x")', []),
    ('def h():\n  self.a = 1\nif self.a > 1:\n  raise ValueError("x")', [3]),     # h never runs
    ('def h():\n  self.a = 1\nh()\nif self.a > 1:\n  raise ValueError("x")', []),
    ('if self.rules == [1]:\n  raise ValueError("x")', []),    # pyconfig may make a list a tuple
    ('if len(self.rules) > 1 or self.rules:\n  raise ValueError("x")', [1]),
    ('if self.a is 1:\n  raise ValueError("x")', []),
    ('if self.a is not None:\n  raise ValueError("x")', [1]),
])
def test_extraction_is_conservative(body, lines):
    assert extracted(body) == lines


def test_a_branch_that_may_change_anything_guards_what_follows():
    src = ("class M(BaseModel):\n  @model_validator(mode=\"after\")\n  def v(self):\n"
           "    if self.b:\n      f(self)\n    if self.a > 1:\n      raise ValueError(\"x\")\n")
    tree = ast.parse(src)
    (r,) = extract(tree, _Module(tree), "M", FIELDS)[0]
    assert r["guards"] == [[4, False]] and r["reads"] == ["a", "b"]
    assert holds(r["when"], {"a": 2, "b": False}) and not holds(r["when"], {"a": 2, "b": True})


# (b) end to end -------------------------------------------------------------------------------
def errors_of(ws, text: str) -> list:
    ws.write("recipes/r.rcp", text, dedent=False)
    try:
        ws.build()
    except CompileError as exc:
        return [d for d in exc.diagnostics if d.severity == "error"]
    return []


def test_refused_flags_are_an_error_at_the_flag(sws):
    (d,) = errors_of(sws, 'F = maxtext_flags({\n    "steps": 10,\n    "num_moe_token_chunks": 2,\n})\n' + FLAGS)
    assert (d.code, str(d.span)) == ("E0350", "recipes/r.rcp:3:29")
    assert '"num_moe_token_chunks > 1 requires use_ring_of_experts=True." (types.py:980' in d.message
    assert d.hint and "'use_ring_of_experts' is False (base.yml)" in d.notes


def test_refusal_points_at_the_flag_set_last_and_shows_the_others(sws):
    (d,) = errors_of(sws, 'F = maxtext_flags({"use_mhc_pallas_kernel": True}, {"enable_mhc_lite": False})\n' + FLAGS)
    assert d.code == "E0350" and str(d.span).startswith("recipes/r.rcp:1:") and "types.py:1786" in d.message
    assert [m for m, _ in d.related] == ["'use_mhc_pallas_kernel' is True here"]


# ring of experts needs an expert-parallel rank above 1 (types.py ep_enabled): the `exp` logical axis
# maps to `expert` among others in base.yml's rules
@pytest.mark.parametrize("layer", ['{"num_moe_token_chunks": 2, "use_ring_of_experts": True, "ici_expert_parallelism": 4}',
                                   '{"num_moe_token_chunks": 1}', '{"steps": 5}'])
def test_accepted_configs_pass(sws, layer):
    assert errors_of(sws, f"F = maxtext_flags({layer})\n" + FLAGS) == []


def test_values_are_read_as_pydantic_reads_them(sws):
    (d,) = errors_of(sws, 'F = maxtext_flags({"num_moe_token_chunks": "2", "use_ring_of_experts": "no"})\n' + FLAGS)
    assert d.code == "E0350"


def test_a_field_an_env_variable_overrides_is_not_decided(sws):
    text = ('F = maxtext_flags({"num_moe_token_chunks": 2})\n'
            'jobset(name = "js", spec = {"template": {"spec": {"containers": [{\n'
            '    "name": "main",\n    "image": "i",\n    "args": F.argv,\n'
            '    "env": [{"name": "M_USE_RING_OF_EXPERTS", "value": "true"}],\n}]}}})\n')
    assert [d.code for d in errors_of(sws, text)] == []


def test_check_reports_it_with_exit_1(sws, cli):
    (sws.root / "rcp.toml").write_text(SCHEMA_TOML, encoding="utf-8")
    sws.write("recipes/r.rcp", 'F = maxtext_flags({\n    "rope_pairwise": True,\n    "rope_interleave": False,\n})\n'
              + FLAGS, dedent=False)
    r = cli("check")
    assert r.code == 1 and "recipes/r.rcp:3:24: error[E0350]" in r.err and "types.py:2020" in r.err
    assert "Traceback" not in r.err


def test_a_value_of_the_model_config_is_read(sws):
    text = 'F = maxtext_flags({\n    "model_name": "qwen3-vl-4b",\n    "scan_layers": True,\n})\n' + FLAGS
    (d,) = errors_of(sws, text)
    assert (d.code, str(d.span)) == ("E0350", "recipes/r.rcp:3:20") and "types.py:3277" in d.message
    assert "'deepstack_visual_indexes_for_vit' is [5, 11, 17] (models/qwen3-vl-4b.yml)" in d.notes
    assert errors_of(sws, text.replace('"scan_layers": True', '"scan_layers": False')) == []
