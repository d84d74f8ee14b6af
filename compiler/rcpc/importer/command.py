"""A shell command string (a container's ``bash -c`` text, an ``xpk --command``) split into
the parts an imported recipe names: the MaxText trainer and its flag words, and the
``LIBTPU_INIT_ARGS`` flag string. The text is parsed with bashlex (a port of bash's own
parser); every part keeps its offsets, so the text around it is kept byte for byte."""

from __future__ import annotations

import attrs
import bashlex

from rcpc.importer import bash

# MaxText's trainer reads its config file, then key=value overrides (MaxText pyconfig);
# MaxDiffusion's trainers read theirs the same way (src/maxdiffusion/configs/base_wan_14b.yml).
_CONFIG_DIR = "configs/"
_CONFIG_SUFFIXES = (".yml", ".yaml")


def is_config(word: str) -> bool:
    """Whether ``word`` names a trainer's config file (``.../configs/NAME.yml``)."""
    return _CONFIG_DIR in word and word.endswith(_CONFIG_SUFFIXES)
LIBTPU_ASSIGNMENT = "LIBTPU_INIT_ARGS="


@attrs.frozen
class Trainer:
    """``python3 -m MODULE .../configs/NAME.yml k=v ...`` (or ``python SCRIPT.py .../configs/NAME.yml
    k=v ...``) inside a command: ``program`` the
    text up to the config file, ``words`` the raw text of each flag word, ``start``/``end``
    the offsets of the flag words in the command (start of the first, end of the last)."""

    program: str
    program_start: int
    words: tuple
    start: int
    end: int


@attrs.frozen
class LibtpuArgs:
    """The single-quoted value of ``LIBTPU_INIT_ARGS='...'``: its offsets and text."""

    start: int
    end: int
    text: str


def _words(node):
    return [p for p in getattr(node, "parts", []) if p.kind == "word"]


def _walk(nodes):
    found = []

    class Visitor(bashlex.ast.nodevisitor):
        def visitcommand(self, n, parts):
            found.append(n)

    for n in nodes:
        Visitor().visit(n)
    return found


def parse_commands(text: str):
    """The simple commands of shell ``text`` (bashlex nodes, in order). Raises
    ``bashlex.errors.ParsingError`` (or another bashlex error) for text bash cannot parse, or
    that bashlex does not finish parsing (:func:`rcpc.importer.bash.parse`)."""
    return _walk(bash.parse(text))


def split(text: str) -> tuple[Trainer | None, LibtpuArgs | None]:
    """The MaxText trainer and ``LIBTPU_INIT_ARGS`` of a command string, each None when
    absent (or, for the trainer, when a word after the config file is not ``key=value``).
    Raises what :func:`parse_commands` raises."""
    trainer = libtpu = None
    for cmd in parse_commands(text):
        words = _words(cmd)
        for w in words:
            raw = text[w.pos[0]:w.pos[1]]
            if raw.startswith(LIBTPU_ASSIGNMENT + "'") and raw.endswith("'") and raw.count("'") == 2:
                libtpu = LibtpuArgs(w.pos[0] + len(LIBTPU_ASSIGNMENT) + 1, w.pos[1] - 1, raw[len(LIBTPU_ASSIGNMENT) + 1:-1])
        names = [w.word for w in words]
        for i in range(len(names) - 2):
            if not names[i].startswith("python"):
                continue
            if names[i + 1] == "-m" and i + 3 < len(names) and is_config(names[i + 3]):
                config = i + 3  # python3 -m MODULE CONFIG (MaxText's trainers)
            elif names[i + 1].endswith(".py") and is_config(names[i + 2]):
                config = i + 2  # python SCRIPT.py CONFIG (MaxDiffusion's generate_wan.py)
            else:
                continue
            flags = words[config + 1:]
            raws = tuple(text[w.pos[0]:w.pos[1]] for w in flags)
            if flags and all("=" in r and r.split("=", 1)[0].isidentifier() for r in raws):
                trainer = Trainer(text[words[i].pos[0]:words[config].pos[1]], words[i].pos[0], raws,
                                  flags[0].pos[0], flags[-1].pos[1])
    return trainer, libtpu


def flag_list(text: str) -> tuple[str, list, str, str] | None:
    """``text`` as ``prefix + sep.join(items) + suffix`` with one separator between every
    two items (``'   --a=1   --b=2 '`` → ``("   ", ["--a=1", "--b=2"], "   ", " ")``), or
    None when the spacing is not uniform or an item is not an ``--flag``."""
    items = text.split()
    if not items or not all(i.startswith("--") for i in items):
        return None
    first = text.index(items[0])
    prefix = text[:first]
    stripped = text.rstrip()
    suffix = text[len(stripped):]
    sep = None
    pos = first + len(items[0])
    for item in items[1:]:
        nxt = text.index(item, pos)
        gap = text[pos:nxt]
        if sep is None:
            sep = gap
        elif gap != sep:
            return None
        pos = nxt + len(item)
    sep = sep if sep is not None else " "
    if prefix + sep.join(items) + suffix != text:
        return None
    return prefix, items, sep, suffix
