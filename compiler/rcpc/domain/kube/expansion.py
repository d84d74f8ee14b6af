"""Kubernetes' expansion of ``$(VAR)`` references in a container's ``command``, ``args`` and
env values: what the container receives. Pure functions on strings.

The rules are those of Kubernetes ``third_party/forked/golang/expansion/expand.go``
(``Expand``, ``tryReadVariableName``, ``MappingFuncFor``), which the kubelet applies
(``pkg/kubelet/kubelet_pods.go`` ``makeEnvironmentVariables`` to env values,
``pkg/kubelet/container/helpers.go`` ``ExpandContainerCommandAndArgs`` to command and args):

* ``$(NAME)`` is replaced by the value of ``NAME`` when it is defined, and kept as written
  when it is not (``MappingFuncFor`` gives the reference back); ``NAME`` is everything up to
  the first ``)``, whatever it holds (``$()`` names the empty name);
* ``$$`` is one ``$`` (an escape: ``$$(X)`` is the text ``$(X)``, never expanded);
* any other ``$`` is kept: before another character (``$X``, ``${X}``), at the end of the
  text, and ``$(`` with no ``)`` after it (scanning goes on after the ``(``, so a later
  ``$(Y)`` is still expanded);
* a replacement is not scanned again (``$(A)`` whose value is ``$(B)`` gives ``$(B)``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from rcpc.core import record
from rcpc.core.values import Dict, List, Str

JOB_COMPLETION_INDEX = "JOB_COMPLETION_INDEX"


@record.frozen
class Reference:
    """One ``$(name)`` of a text: ``name``, and where the reference (``$`` to ``)``) starts
    and ends in the text (Python string indices, ``end`` exclusive)."""

    name: str
    start: int
    end: int


def _scan(text: str) -> Iterator[tuple[int, int, str | None]]:
    """The pieces ``Expand`` reads, in order, as ``(start, end, name)``: a reference (its
    ``name``) or an escaped ``$$`` (``name`` None); the text between them is copied as it is."""
    cursor = 0
    n = len(text)
    while True:
        cursor = text.find("$", cursor)
        if cursor < 0 or cursor + 1 >= n:  # no '$', or a '$' that ends the text: kept
            return
        follow = text[cursor + 1]
        if follow == "$":
            yield cursor, cursor + 2, None
            cursor += 2
        elif follow == "(":
            close = text.find(")", cursor + 2)
            if close < 0:  # an incomplete reference: '$(' kept, scanning goes on after the '('
                cursor += 2
                continue
            yield cursor, close + 1, text[cursor + 2:close]
            cursor = close + 1
        else:  # '$' and the character after it, kept
            cursor += 2


def references(text: str) -> list[Reference]:
    """Every ``$(name)`` reference of ``text`` that Kubernetes would look up, in order
    (``$$(X)`` is an escape, not a reference)."""
    if "$" not in text:  # most texts: no generator started
        return []
    return [Reference(name, start, end) for start, end, name in _scan(text) if name is not None]


def expand(text: str, env: Mapping[str, str]) -> str:
    """``text`` as the container receives it, ``env`` mapping the names defined for it to
    their values (Kubernetes ``expansion.Expand`` with ``MappingFuncFor(env)``): defined
    references replaced, undefined ones kept, ``$$`` made ``$``."""
    if "$" not in text:
        return text
    out = []
    done = 0
    for start, end, name in _scan(text):
        out.append(text[done:start])
        out.append("$" if name is None else env.get(name, text[start:end]))
        done = end
    out.append(text[done:])
    return "".join(out)


def env_entries(container) -> list[tuple]:
    """(index in ``env``, entry dict, name, value as the container receives it) of each named
    entry of a container's ``env`` (``container``: a container dict, a language value; the
    index places the entry, ``env[index]``, for diagnostics), in order, as the
    kubelet makes them (``makeEnvironmentVariables``): a literal ``value`` expanded with the
    entries before it (:func:`expand`; a later entry of a name replaces an earlier one), an
    absent or empty one ``""``; None for a value known only when the pod runs (``valueFrom``,
    or a value that refers to such a name). ``envFrom`` sources and the services' variables
    are not known here (their references are kept as written by :func:`expand_known`, as the
    warnings of :mod:`rcpc.domain.kube.references` say)."""
    env = container.items.get("env") if type(container) is Dict else None
    defined: dict[str, str | None] = {}
    out = []
    for index, var in enumerate(env.items if type(env) is List else ()):
        if type(var) is not Dict or type(var.items.get("name")) is not Str:
            continue
        name, value = var.items["name"].value, var.items.get("value")
        if type(value) is Str and value.value:
            runtime = any(defined.get(r.name, "") is None for r in references(value.value))
            text = None if runtime else expand_known(value.value, defined)
        else:
            text = None if "valueFrom" in var.items else ""
        defined[name] = text
        out.append((index, var, name, text))
    return out


def container_env(container) -> dict[str, str | None]:
    """{name: value} of the env a container's ``command`` and ``args`` are expanded with
    (:func:`env_entries`, the last entry of a name winning; None: known only at run time)."""
    return {name: text for _, _, name, text in env_entries(container)}


def expand_known(text: str, env: Mapping[str, str | None]) -> str:
    """:func:`expand` with the names of ``env`` whose value is known (not None): a reference to
    a name known only at run time is kept as written, as an undefined one is."""
    if "$" not in text:  # most env values: the known names not gathered
        return text
    return expand(text, {k: v for k, v in env.items() if v is not None})
