"""Module-level regular expressions compiled on first use (:class:`rcpc.core.patterns.LazyPattern`).

* A lazy pattern is the pattern ``re.compile`` makes: the same answers from every method, on
  random patterns and texts (hypothesis), and nothing compiled before the first use.
* Every lazy pattern of the package compiles: a typo in one would otherwise surface only on the
  first build that uses it, not when its module is imported.
* An edit build (the edit loop, issue 37) compiles at most :data:`EDIT_COMPILES` of rcpc's
  module-level patterns: the ones it uses. Raising it is a decision (another pattern compiled on
  every build's path), made with the reason.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

from hypothesis import given, strategies as st

import rcpc
from rcpc.core.patterns import LazyPattern

REPO = Path(__file__).resolve().parents[1]
RECIPE = "rl/qwen35_397b_256_v7x"
FLAG = r'"ragged_buffer_factor": [0-9.]+,'
# rcpc's module-level patterns an edit build compiles (17 when this was written: the lexer's
# scanner, the YAML and flag emitters' scalar rules, names, the build cache's keys...).
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
import rcpc.__main__
code = rcpc.__main__.run(sys.argv[1:])
sys.stdout.write(repr(sorted(sites)))
sys.exit(code)
"""


def test_an_edit_build_compiles_only_the_module_level_patterns_it_uses(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy2(REPO / "rcp.toml", ws / "rcp.toml")
    shutil.copytree(REPO / "recipes", ws / "recipes")
    env = {k: v for k, v in os.environ.items() if k not in ("RCPC_NO_CACHE", "PYTHONPATH")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    path = ws / "recipes" / f"{RECIPE}.rcp"
    for value in ("3.0", "4.0"):  # the first build fills the caches, the second is the edit
        text, n = re.subn(FLAG, f'"ragged_buffer_factor": {value},', path.read_text(), count=1)
        assert n == 1
        path.write_text(text)
        r = subprocess.run([sys.executable, "-c", _COUNT, "build", RECIPE, "-o", str(tmp_path / "out")], cwd=ws,
                           env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
    sites = eval(r.stdout)
    assert any(module == "rcpc.core.syntax.lexer" for module, _ in sites)  # the reader sees compiles
    assert len(sites) <= EDIT_COMPILES, sites
