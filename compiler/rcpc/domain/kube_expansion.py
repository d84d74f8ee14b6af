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
    return [Reference(name, start, end) for start, end, name in _scan(text) if name is not None]


def expand(text: str, env: Mapping[str, str]) -> str:
    """``text`` as the container receives it, ``env`` mapping the names defined for it to
    their values (Kubernetes ``expansion.Expand`` with ``MappingFuncFor(env)``): defined
    references replaced, undefined ones kept, ``$$`` made ``$``."""
    out = []
    done = 0
    for start, end, name in _scan(text):
        out.append(text[done:start])
        out.append("$" if name is None else env.get(name, text[start:end]))
        done = end
    out.append(text[done:])
    return "".join(out)
