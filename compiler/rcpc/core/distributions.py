"""The third-party distributions rcpc's results may depend on: its declared dependencies
(:data:`DECLARED`, ``pyproject.toml``'s ``[project] dependencies``) and, transitively, theirs,
as installed on ``sys.path``. Not only what one run imported: a run served by the caches
imports no jsonschema, yet its result is jsonschema's from an earlier run, so every cache key
and replay record holds the whole closure (:func:`fingerprint`, :func:`found`).

A distribution is found as :mod:`importlib.metadata` finds it (the first ``*.dist-info`` or
``*.egg-info`` of its normalized name on ``sys.path``, PEP 503 names), read here with ``os``
alone (importing :mod:`importlib.metadata` costs ~60 ms, more than a warm build):
``Version`` and ``Requires-Dist`` from its ``METADATA`` (``PKG-INFO`` and ``requires.txt`` for
an egg): what ``pip install rcpc`` installs. A requirement under an ``extra`` marker is left
out: rcpc asks for no extra of its dependencies, and what they import when it happens to be
installed changes none of rcpc's results (jsonschema imports ``idna`` for its ``format``
checks, which rcpc's validators do not run; ``tests/test_replay_inputs.py`` lists what a
full run imports). One under another marker (``python_version < "3.13"``) is kept when
installed: kept when not needed only keys the caches more finely. Found once a process.
"""

from __future__ import annotations

import os
import sys

# pyproject.toml [project] dependencies, by name (tests/test_replay_inputs.py compares them)
DECLARED = ("lark", "attrs", "PyYAML", "jsonschema", "shtab", "bashlex", "tomli")
_FOUND: list = []  # [((name, version, metadata file, sys.path directory), ...)], once a process


def normalize(name: str) -> str:
    """PEP 503's normalized form of a distribution name: lower case, each run of ``-``,
    ``_`` and ``.`` one ``-``."""
    out, dash = [], False
    for ch in name.lower():
        if ch in "-_.":
            dash = True
            continue
        if dash and out:
            out.append("-")
        dash = False
        out.append(ch)
    return "".join(out)


def _index() -> dict[str, tuple[str, str]]:
    """{normalized name: (path of its ``.dist-info``/``.egg-info``, the ``sys.path`` directory
    holding it)}, the first on ``sys.path``."""
    index: dict[str, tuple[str, str]] = {}
    for entry in sys.path:
        directory = entry or os.getcwd()
        try:
            with os.scandir(directory) as it:
                names = sorted(e.name for e in it if e.name.endswith((".dist-info", ".egg-info")))
        except OSError:  # missing, not a directory (a zip file)
            continue
        for name in names:
            index.setdefault(normalize(name.rsplit(".", 1)[0].split("-", 1)[0]),
                             (os.path.join(directory, name), directory))
    return index


def _metadata(info: str) -> tuple[str, str, list[str]]:
    """(metadata file, version, names of the requirements that are not an extra's) of the
    distribution whose ``.dist-info``/``.egg-info`` is ``info``. OSError when unreadable."""
    egg = info.endswith(".egg-info")
    path = info if egg and os.path.isfile(info) else os.path.join(info, "PKG-INFO" if egg else "METADATA")
    version, requires = "", []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                break  # the headers end at the first empty line (RFC 822); the description follows
            field, _, value = line.partition(":")
            if field == "Version":
                version = value.strip()
            elif field == "Requires-Dist" and "extra" not in value.partition(";")[2]:
                requires.append(_requirement_name(value))
    if egg and os.path.isdir(info):
        try:
            with open(os.path.join(info, "requires.txt"), encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("["):
                        break  # [extra] and [:marker] sections follow the plain requirements
                    if line.strip():
                        requires.append(_requirement_name(line))
        except FileNotFoundError:
            pass
    return path, version, requires


def _requirement_name(text: str) -> str:
    """The distribution name a requirement (``jsonschema>=4.20; python_version>"3"``) starts with."""
    text = text.strip()
    end = 0
    while end < len(text) and (text[end].isalnum() or text[end] in "-_."):
        end += 1
    return text[:end]


def found() -> tuple[tuple[str, str, str, str], ...]:
    """(normalized name, version, metadata file, the ``sys.path`` directory holding it) of
    each installed distribution of the closure of :data:`DECLARED`, sorted by name (one not installed, or whose metadata cannot
    be read, is left out: an import of it would fail)."""
    if not _FOUND:
        index = _index()
        out: dict[str, tuple[str, str, str, str]] = {}
        todo = [normalize(n) for n in DECLARED]
        while todo:
            name = todo.pop()
            if name in out or name not in index:
                continue
            try:
                path, version, requires = _metadata(index[name][0])
            except OSError:
                continue
            out[name] = (name, version, path, index[name][1])
            todo.extend(normalize(r) for r in requires if r)
        _FOUND.append(tuple(out[n] for n in sorted(out)))
    return _FOUND[0]


def fingerprint() -> str:
    """Each distribution of :func:`found` as ``name==version path:size:mtime_ns`` lines: an
    upgrade, a downgrade or a reinstall (its metadata file written again) changes it."""
    lines = []
    for name, version, path, _ in found():
        try:
            st = os.stat(path)
            lines.append(f"{name}=={version} {path}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            lines.append(f"{name}=={version} {path}:gone")
    return "\n".join(lines)
