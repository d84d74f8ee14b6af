"""Names that become path components: a recipe name's parts, a variant, a render's file name.

Each becomes one directory entry of ``<output>/<recipe>/<variant>/<render>``, so each must be
one *portable* component, the same file on Linux, macOS and Windows:

* not empty, not ``.`` or ``..``, no ``/`` or ``\\`` (the Windows separator);
* no control character (NUL included; Unicode category Cc), no line or paragraph separator,
  no unpaired surrogate (how Python spells a file name's bytes that are not UTF-8);
* not starting with ``.`` (hidden; rcpc's own entries in an output directory start with one);
* no character Windows refuses in a file name (``< > : " | ? *``), no trailing ``.`` or space
  (Windows drops them), not a Windows device name (``CON``, ``NUL``, ``COM1``, ... with or
  without an extension);
* at most 255 bytes of UTF-8 (``NAME_MAX`` of Linux and macOS file systems).

Two names are one file where the file system ignores case (macOS and Windows by default) or
Unicode normalization (macOS): :func:`fold` gives the key under which they collide, the
"canonical caseless match" of Unicode (chapter 3.13, D145): NFD(casefold(NFD(name))).
"""

from __future__ import annotations

import unicodedata

from rcpc.core import patterns

NAME_MAX_BYTES = 255
_PLAIN = patterns.precompiled(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}")   # portable unless it ends in '.' or is a device
_WINDOWS_CHARS = frozenset('<>:"|?*')
_WINDOWS_DEVICES = frozenset(["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$",
                              *(f"{d}{i}" for d in ("COM", "LPT") for i in "0123456789\u00b9\u00b2\u00b3")])


def problem(name: str) -> str | None:
    """Why ``name`` is not one portable path component (a phrase that completes "the name
    ..."), or None when it is one."""
    if _PLAIN.fullmatch(name) and name[-1] != "." and name.split(".", 1)[0].upper() not in _WINDOWS_DEVICES:
        return None  # the common case, decided without looking at each character
    if name in ("", ".", ".."):
        return {"": "is empty", ".": "names the directory itself", "..": "names the parent directory"}[name]
    for c in name:
        if c in "/\\":
            return f"contains the path separator {c!r}"
        if c in _WINDOWS_CHARS:
            return f"contains {c!r}, which Windows does not allow in file names"
        cat = unicodedata.category(c)
        if cat in ("Cc", "Zl", "Zp"):
            return f"contains the control character U+{ord(c):04X}"
        if cat == "Cs":
            return "is not valid UTF-8"
    if name.startswith("."):
        return "starts with '.' (a hidden file; rcpc's own entries start with '.')"
    if name[-1] in ". ":
        return f"ends with {name[-1]!r}, which Windows drops"
    if name.split(".", 1)[0].rstrip(" ").upper() in _WINDOWS_DEVICES:
        return f"is the Windows device name {name.split('.', 1)[0]!r}"
    if len(name.encode("utf-8")) > NAME_MAX_BYTES:
        return f"is longer than {NAME_MAX_BYTES} bytes"
    return None


def fold(name: str) -> str:
    """The key under which names collide on a case- and normalization-insensitive file
    system: ``fold("Tuned") == fold("tuned")``, ``fold("e\\u0301") == fold("\\u00e9")``."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())
