"""What a manifest's Kubernetes checks can see of its containers' ``command`` and ``args``:
the key under which the validation cache keeps a manifest found clean (no error, no warning),
so that a manifest that differs from a clean one only in argv words no check reads (a MaxText
flag of a trainer's ``args``: the edit loop) is clean without running the checks again
(:meth:`rcpc.domain.recipe.Compiler.check_manifest`).

Which argv words the checks read, and how (:mod:`rcpc.domain.kube.rules`,
:mod:`rcpc.domain.kube.references`, the schema's list types and string keywords):

* ``E1008`` (rules): only the type of each item (a string or not);
* ``W1004``/``W1005`` (references): the ``$(VAR)`` references of each item (only an item
  holding ``$`` has one: ``pkg/kubelet/container/helpers.go`` ``ExpandContainerCommandAndArgs``),
  and which item is a shell's script (:func:`rcpc.domain.kube.references._script_index`: the
  first word, the words before the script that start with ``-``, and the argv's length);
* the list types (``E1010``): ``command`` and ``args`` are ``x-kubernetes-list-type: atomic``
  (no entry is compared with another);
* schema validation: the built-in JobSet schema (``builtin:jobset``) gives each item only
  ``type: string`` (no ``pattern``, ``enum``, ``format``, length: its verdict ignores the
  text, :mod:`rcpc.domain.kube.schemashape`). Another schema file may constrain the text, so
  :func:`view` is used only when every configured schema is the built-in JobSet one
  (:func:`applies`).

So :func:`view` replaces by :data:`rcpc.domain.kube.schemashape.ANY_STRING` each string item of
a ``command`` or ``args`` list of a container entry (a dict in an ``initContainers``,
``containers`` or ``ephemeralContainers`` list, anywhere in the manifest) that is not the
argv's first word, starts with no ``-`` and holds no ``$``; everything else (keys, types, every
other value) is kept. For manifests ``a``, ``b`` with ``view(a) == view(b)``, every check above
finds the same in ``a`` as in ``b``, and the placeholder changes none of their verdicts: a
clean ``a`` means a clean ``b``. Only "clean" is kept under a view (findings quote values and
spans). tests/test_argvview.py checks it over generated argv words against the full checks.
The cache keys a view by its :func:`repr`, which :func:`text` writes from the values
themselves, node by node (a recipe's manifests share most of their nodes: issue 41, 0.3 vs
1.1 ms for the RL recipe's 20 manifests); tests/test_argvview.py holds it to ``repr(view(...))``.
"""

from __future__ import annotations

from rcpc.core.values import Bool, Dict, Float, Int, List, Null, Str, type_name
from rcpc.domain.kube.paths import CONTAINER_LISTS
from rcpc.domain.kube.schemashape import ANY_STRING
from rcpc.domain.workspace import builtin_schema


def applies(kube_schemas) -> bool:
    """Whether :func:`view` may stand for manifests checked against ``kube_schemas`` (the
    workspace's schema files, paths): none, or only the built-in JobSet schema."""
    builtin = builtin_schema("jobset")
    return all(p == builtin for p in kube_schemas)


def view(plain):
    """``plain`` (a manifest as plain data, :func:`rcpc.core.values.to_python`) with the argv
    words no check reads replaced by :data:`ANY_STRING` (the module docstring): a new value,
    ``plain`` is not changed. Raises RecursionError on a value nested too deeply."""
    if type(plain) is dict:
        out = {}
        for k, v in plain.items():
            if k in CONTAINER_LISTS and type(v) is list:
                out[k] = [_container(c) for c in v]
            else:
                out[k] = view(v)
        return out
    if type(plain) is list:
        return [view(v) for v in plain]
    return plain


def _container(c):
    if type(c) is not dict:
        return view(c)
    out = view({k: v for k, v in c.items() if k not in ("command", "args")})
    first = True
    for k in ("command", "args"):  # the argv: command's words, then args' (as the kubelet runs them)
        if k not in c:
            continue
        words = c[k]
        if type(words) is not list:
            out[k] = view(words)
            continue
        kept = []
        for w in words:
            kept.append(ANY_STRING if type(w) is str and not first and not w.startswith("-") and "$" not in w
                        else view(w))
            first = False
        out[k] = kept
    return {k: out[k] for k in c}  # the manifest's key order


_ANY = repr(ANY_STRING)


def text(data, memo: tuple[dict, dict]) -> str:
    """``repr(view(to_python(data)))``, made from the values (:mod:`rcpc.core.values`) without
    either: what the validation cache keys a manifest's view on
    (:func:`rcpc.domain.kube.schemacache.view_key`). ``memo``: two dicts, ``({}, {})`` for a
    new one, of the texts made of list and dict nodes, by ``id`` (each entry keeps its node,
    so no other takes its id while the memo lives): the first of nodes viewed as any value,
    the second of container entries (a dict in a container list, viewed as :func:`_container`
    views it); a caller keeps it for the manifests it views, which share most of their nodes
    (the RL recipe's 20 manifests: ~760 distinct nodes of ~7,000). Values never change once
    made. Raises TypeError for a kind with no data form (as :func:`rcpc.core.values.to_python`),
    RecursionError on a value nested too deeply."""
    return _text(data, memo)


def _text(v, memo) -> str:
    t = type(v)
    if t is Str or t is Int or t is Float or t is Bool:
        return repr(v.value)
    if t is Null:
        return "None"
    if t is not Dict and t is not List:
        raise TypeError(type_name(v))
    hit = memo[0].get(id(v))
    if hit is not None and hit[0] is v:
        return hit[1]
    if t is List:
        out = "[" + ", ".join([_text(x, memo) for x in v.items]) + "]"
    else:
        out = "{" + ", ".join([_entry(k, x, memo) for k, x in v.items.items()]) + "}"
    memo[0][id(v)] = (v, out)
    return out


def _entry(k, x, memo) -> str:
    """The text of one entry of a dict's view (:func:`view`)."""
    if k in CONTAINER_LISTS and type(x) is List:
        return repr(k) + ": [" + ", ".join([_container_text(c, memo) for c in x.items]) + "]"
    return repr(k) + ": " + _text(x, memo)


def _container_text(c, memo) -> str:
    """The text of :func:`_container`'s view of ``c``."""
    if type(c) is not Dict:
        return _text(c, memo)
    hit = memo[1].get(id(c))
    if hit is not None and hit[0] is c:
        return hit[1]
    items = c.items
    argv = {}
    first = True
    for k in ("command", "args"):  # as _container: command's words, then args'
        if k not in items:
            continue
        words = items[k]
        if type(words) is not List:
            argv[k] = _text(words, memo)
            continue
        kept = []
        for w in words.items:
            kept.append(_ANY if type(w) is Str and not first and not w.value.startswith("-") and "$" not in w.value
                        else _text(w, memo))
            first = False
        argv[k] = "[" + ", ".join(kept) + "]"
    out = "{" + ", ".join([repr(k) + ": " + argv[k] if k in argv else _entry(k, x, memo)
                           for k, x in items.items()]) + "}"
    memo[1][id(c)] = (c, out)
    return out
