"""Module-level regular expressions compiled on first use (:class:`rcpc.core.patterns.LazyPattern`)
or ahead of time (:func:`rcpc.core.patterns.precompiled`).

* A lazy pattern is the pattern ``re.compile`` makes: the same answers from every method, on
  random patterns and texts (hypothesis), and nothing compiled before the first use.
* Every lazy pattern of the package compiles: a typo in one would otherwise surface only on the
  first build that uses it, not when its module is imported.
* A precompiled pattern is the pattern ``re.compile`` makes (``re.Pattern`` equality compares the
  engine's code), for every entry of :mod:`rcpc.core.pattern_codes` and for the generator's
  output on other patterns; the table is the one ``python -m rcpc.core.pattern_codegen`` writes,
  and it is used on the interpreter CI runs (3.11).
* An edit build (the edit loop, issue 37) compiles none of rcpc's module-level patterns (those it
  uses are precompiled, the others lazy); on an interpreter the table is not made for, at most
  :data:`EDIT_COMPILES`. Raising it is a decision (another pattern compiled on every build's
  path), made with the reason.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys

from hypothesis import given, strategies as st

import _sre
import pytest

import rcpc
from rcpc.core import pattern_codegen, pattern_codes, patterns
from rcpc.core.patterns import LazyPattern

RECIPE = "rl/qwen35_397b_256_v7x"
FLAG = r'"ragged_buffer_factor": [0-9.]+,'
# rcpc's module-level patterns an edit build compiles where the precompiled table is not this
# interpreter's (17 when this was written: the lexer's scanner, the YAML and flag emitters' scalar
# rules, names, the build cache's keys...); 0 where it is.
EDIT_COMPILES = 20

_PATTERNS = [r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z", r"^[-+]?[0-9]+$", r"(\\*)\$\{", r"\s+|[^\s]+",
             r"(\d{4})-(\d\d?)-(\d\d?)", r"(?P<key>[A-Za-z_]+)=(?P<value>.*)", r"[+-]?(?:inf|infinity|nan)",
             r"^[A-Za-z_\[]", r"#.*?\brcpc:\s*ignore\[\s*([A-Za-z0-9_]+)\s*\]"]
_TEXTS = st.text(alphabet="aZ09_-+.:=$\\{}[]# \n\tinfINF", max_size=30)


@given(pattern=st.sampled_from(_PATTERNS), flags=st.sampled_from([0, re.I, re.M, re.I | re.M]), text=_TEXTS)
def test_a_lazy_pattern_answers_as_the_compiled_pattern(pattern, flags, text):
    lazy, compiled = LazyPattern(pattern, flags), re.compile(pattern, flags)
    assert "_compiled" not in vars(lazy)  # nothing compiled yet
    for method in ("match", "fullmatch", "search"):
        got, want = getattr(lazy, method)(text), getattr(compiled, method)(text)
        assert (got and (got.span(), got.groups())) == (want and (want.span(), want.groups()))
    assert lazy.findall(text) == compiled.findall(text)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in compiled.finditer(text)]
    assert lazy.sub("<\\g<0>>", text) == compiled.sub("<\\g<0>>", text)
    assert lazy.split(text) == compiled.split(text)
    assert (lazy.pattern, lazy.flags, lazy.groups, lazy.groupindex) == (
        compiled.pattern, compiled.flags, compiled.groups, compiled.groupindex)
    assert lazy.compiled == compiled
    assert "match" in vars(lazy)  # a method, once read, is the instance's own


def _lazy_patterns():
    """(module.name, LazyPattern) of every module of the package, in its globals and in the
    tuples and dicts of its globals."""
    for info in pkgutil.walk_packages(rcpc.__path__, "rcpc."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency (the language server's) not installed
            continue
        for name, value in vars(module).items():
            found = (value,) if isinstance(value, LazyPattern) else (
                value if isinstance(value, tuple) else
                [v for item in value.values() for v in (item if isinstance(item, tuple) else (item,))]
                if isinstance(value, dict) else ())
            for item in found:
                if isinstance(item, LazyPattern):
                    yield f"{info.name}.{name}", item


def test_every_lazy_pattern_of_the_package_compiles():
    found = dict(_lazy_patterns())
    assert len(found) >= 30, sorted(found)  # the reader finds them (flagset's are in a dict of tuples)
    assert "rcpc.domain.kube.validation._DNS1123_LABEL" in found and "rcpc.core.goyaml._TIMESTAMPS" in found
    for name, pattern in found.items():
        assert isinstance(pattern.compiled, re.Pattern), name
        assert pattern.compiled == re.compile(*pattern._source), name
        assert pattern._source in pattern_codes.PATTERNS or not patterns._USABLE, name  # made from the table


def test_every_precompiled_pattern_is_the_pattern_re_compile_makes():
    assert len(pattern_codes.PATTERNS) >= 50  # the lazy patterns' too
    for pattern, flags in pattern_codes.PATTERNS:
        got, want = patterns.precompiled(pattern, flags), re.compile(pattern, flags)
        assert got == want, pattern
        assert got is not want or not patterns._USABLE, pattern  # made from the table, not found in re's cache
        assert (got.pattern, got.flags, got.groups, got.groupindex) == (
            want.pattern, want.flags, want.groups, want.groupindex)


@given(pattern=st.sampled_from(_PATTERNS + [r"(?x) a | b  # c", r"(?P<n>a)(?P=n)", r"[^\w\s]+?", r"\b(?:y|yes)\Z"]),
       flags=st.sampled_from([0, re.I, re.M, re.S, re.X, re.I | re.M]))
def test_the_generator_writes_what_re_compile_passes_the_engine(pattern, flags):
    final, code, groups, groupindex, indexgroup = pattern_codegen.entry(pattern, flags)
    made = _sre.compile(pattern, final, list(code), groups, groupindex, indexgroup)
    want = re.compile(pattern, flags)
    assert made == want
    assert (made.flags, made.groups, made.groupindex) == (want.flags, want.groups, want.groupindex)


def test_the_table_is_what_the_generator_writes_and_this_interpreter_uses_it():
    r = subprocess.run([sys.executable, "-m", "rcpc.core.pattern_codegen", "--check"], capture_output=True, text=True)
    if sys.implementation.cache_tag != pattern_codes.INTERPRETER[0]:
        pytest.skip(f"the table is made for {pattern_codes.INTERPRETER[0]}")
    assert r.returncode == 0, r.stderr
    assert patterns._USABLE


_COUNT = """
import re._compiler, sys
sites = set()
compile = re._compiler.compile
def counted(p, flags=0):
    frame = sys._getframe(1)
    while frame.f_globals.get("__name__", "").startswith("re"):
        frame = frame.f_back
    if frame.f_globals.get("__name__", "").startswith("rcpc") and frame.f_code.co_name == "<module>":
        sites.add((frame.f_globals["__name__"], frame.f_lineno))
    return compile(p, flags)
re._compiler.compile = counted
exec("import re; re.compile('canary')", {"__name__": "rcpc.canary"})  # a module-level compile is seen
import rcpc.__main__
code = rcpc.__main__.run(sys.argv[1:])
sys.stdout.write(repr(sorted(sites)))
sys.exit(code)
"""


def test_an_edit_build_compiles_only_the_module_level_patterns_it_uses(tmp_path, bundled_workspace):
    ws, env = bundled_workspace
    path = ws / "recipes" / f"{RECIPE}.rcp"
    for value in ("3.0", "4.0"):  # the first build fills the caches, the second is the edit
        text, n = re.subn(FLAG, f'"ragged_buffer_factor": {value},', path.read_text(), count=1)
        assert n == 1
        path.write_text(text)
        r = subprocess.run([sys.executable, "-c", _COUNT, "build", RECIPE, "-o", str(tmp_path / "out")], cwd=ws,
                           env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
    sites = eval(r.stdout)
    assert ("rcpc.canary", 1) in sites  # the reader sees module-level compiles
    sites.remove(("rcpc.canary", 1))
    assert len(sites) <= (0 if patterns._USABLE else EDIT_COMPILES), sites
