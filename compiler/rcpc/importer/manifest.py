"""``rcpc import manifest``: a manifest template with ``${VAR}`` placeholders (an envsubst
template, as the published TPU recipes are) → recipe source.

Each placeholder becomes a param: ``int``, ``bool`` or ``float`` where it is the whole value
of a field the Kubernetes schema types so (:mod:`.fields`), else ``str``. A container's startup command that runs MaxText's
trainer is split (:mod:`.command`): its flag words become a ``maxtext_flags`` set (each value
in the spelling the template has), its ``LIBTPU_INIT_ARGS`` a list of XLA flags, and the
shell around them is kept as text. The manifest itself is a call of a shared library
function when one renders the same data (:data:`rcpc.importer.library.CANDIDATES`, tried in
order, each proven by :mod:`.proof`), else a data literal (:func:`literal`). A file of several
documents (a server's Namespace, StorageClass, claim and Deployment) is one recipe of one data
literal render a document, in order, proven document by document; the first document with a
startup command has it split.
"""

from __future__ import annotations

import textwrap

import attrs

from rcpc.core import goyaml
from rcpc.core.diagnostics import CompileError, Diagnostic
from rcpc.core.source import Span
from rcpc.core.values import to_python
from rcpc.domain.kube.manifests import load_manifests
from rcpc.domain.renders import JOBSET_API_VERSION
from rcpc.importer import bash, command as cmd, fields
from rcpc.importer.literals import Ref, flag_value, fstring, joined, placeholders, quoted_flag_value, string

# Variables a pod's shell reads at run time, set by the TPU and JobSet environment: a
# placeholder of one of these is kept literal (reference/tpu-recipes.md: "${TPU_WORKER_ID}
# is read by the shell at run time"), unless named with --var.
RUNTIME_VARIABLES = frozenset({"TPU_WORKER_ID", "TPU_WORKER_HOSTNAMES", "JOB_COMPLETION_INDEX", "HOSTNAME",
                               "JOBSET_NAME", "REPLICATED_JOB_NAME", "JOB_INDEX", "MEGASCALE_SLICE_ID"})
FLAGS_NAME = "MAXTEXT_FLAGS"
SHELL_NAME = "MAXTEXT_SHELL"
XLA_NAME = "XLA_FLAGS"
LIBTPU_NAME = "LIBTPU_INIT_ARGS"
COMMAND_NAME = "COMMAND"


@attrs.frozen
class Startup:
    """A container's startup command string split for the recipe: ``flags`` the
    ``maxtext_flags`` layers (each a dict key → value source; a key written again starts a
    new layer, as MaxText's last ``key=value`` wins) or None when the flag words have no such
    spelling, ``quoted`` the keys whose value part the command quotes where the shell needs
    no quotes (``FLAGS.shell_quoted(keys)``), ``noop`` the ``(layer, key)`` entries that set
    the value already in force (lint's ``W0330``, acknowledged in the recipe), ``schema`` False
    when the trainer is not MaxText's (``maxtext_flags(..., schema = None)``), ``xla`` the flag
    list ``(prefix, items, sep, suffix)`` or None, and ``pieces``: the command as text and
    :class:`Ref` pieces."""

    text: str
    trainer: cmd.Trainer | None
    libtpu: cmd.LibtpuArgs | None
    flags: tuple | None
    xla: tuple | None
    pieces: tuple
    unknown_keys: tuple = ()
    quoted: tuple = ()
    noop: frozenset = frozenset()
    schema: bool = True

    @property
    def shell(self) -> str:
        """Recipe source of the flag set's shell form as the command writes it (the name
        :data:`SHELL_NAME` when some values are quoted: :meth:`shell_lines` defines it)."""
        return SHELL_NAME if self.quoted else FLAGS_NAME + ".shell"

    def shell_lines(self) -> list:
        """``MAXTEXT_SHELL = MAXTEXT_FLAGS.shell_quoted([...])`` when some values are quoted."""
        if not self.quoted:
            return []
        return [f"{SHELL_NAME} = {FLAGS_NAME}.shell_quoted([{', '.join(string(k) for k in self.quoted)}])"]


@attrs.frozen
class Template:
    """A manifest template read for import: ``doc`` its data (placeholders as written),
    ``params`` name → default value (its ``--set`` text), ``startup`` the split startup
    command (or None), ``notes`` what was not converted (warnings to list), ``places`` name →
    the first :class:`~rcpc.importer.fields.Place` of a typed param (an ``int``, ``bool`` or
    ``float``; the others are ``str``), ``chosen`` the typed params whose default the import
    chose (no ``--set``), ``value`` the document as values with spans (where each node is);
    for a file of several documents, ``documents`` holds each one's template (its ``doc``,
    ``startup`` and ``value``) and ``doc``/``value``/``startup`` are None."""

    shown: str
    text: str
    doc: dict
    params: dict
    startup: Startup | None
    notes: tuple
    places: dict = attrs.field(factory=dict)
    chosen: frozenset = frozenset()
    value: object = None
    documents: tuple = ()  # a file of several documents: each one's Template (doc, startup, value)

    def type_of(self, name: str) -> str:
        """The param type of placeholder ``name``."""
        place = self.places.get(name)
        return place.type if place is not None else "str"


def split_startup_of(t: Template) -> Startup | None:
    """The startup command the recipe of ``t`` splits: its own, or, of a file of several
    documents, the one document's that has one (:func:`read` splits only one)."""
    return next((d.startup for d in t.documents if d.startup is not None), None) if t.documents else t.startup


def with_startup(t: Template, startup: Startup) -> Template:
    """``t`` with the startup command of :func:`split_startup_of` replaced by ``startup``."""
    if not t.documents:
        return attrs.evolve(t, startup=startup)
    return attrs.evolve(t, documents=tuple(attrs.evolve(d, startup=startup) if d.startup is not None else d
                                           for d in t.documents))


def containers(doc) -> list:
    """The containers of every pod template in a JobSet's replicated jobs (empty for other
    shapes)."""
    out: list = []
    spec = doc.get("spec") if isinstance(doc, dict) else None
    jobs = spec.get("replicatedJobs") if isinstance(spec, dict) else None
    for job in jobs if isinstance(jobs, list) else []:
        try:
            pod = job["template"]["spec"]["template"]["spec"]
        except (KeyError, TypeError, IndexError):
            continue
        cs = pod.get("containers") if isinstance(pod, dict) else None
        out.extend(c for c in (cs if isinstance(cs, list) else []) if isinstance(c, dict))
    return out


def startup_command(doc) -> str | None:
    """The one ``bash -c`` text every container of the manifest runs, or None."""
    texts = {c["command"][2] for c in containers(doc)
             if isinstance(c.get("command"), list) and len(c["command"]) == 3 and c["command"][:2] == ["bash", "-c"]
             and isinstance(c["command"][2], str)}
    return texts.pop() if len(texts) == 1 else None


def split_startup(text: str, names, span_of) -> tuple[Startup, list]:
    """The startup command ``text`` split for the recipe (see :class:`Startup`), and the
    warnings (``W1200``) for what stays shell text. ``span_of(words)`` locates them."""
    notes = []
    try:
        trainer, libtpu = cmd.split(text)
    except Exception as exc:  # bashlex raises its own errors and, on some input, others
        notes.append(_unparsed(exc, text, span_of))
        trainer = libtpu = None
    flags = layers = None
    quoted: list = []
    noop = set()
    if trainer is not None:
        words = []
        for raw in trainer.words:
            key = raw.split("=", 1)[0]
            source, how = flag_value(key, raw, names), "bare"
            if source is None:
                found = quoted_flag_value(key, raw, names)
                if found is not None:  # quotes the shell needs (either form writes them), or not
                    source, how = found[0], "quoted" if found[1] else "either"
            words.append((raw, key, source, how))
        # shell_quoted quotes every token of a key: a key written bare and with quotes the
        # shell needs not has no one spelling
        hows: dict = {}
        for raw, key, source, how in words:
            hows.setdefault(key, set()).add(how)
        layers, in_force = [{}], {}
        for raw, key, source, how in words:
            if source is None or {"bare", "quoted"} <= hows[key]:
                notes.append(Diagnostic("W1200", f"TODO(import): the MaxText flags are kept as shell text: {raw!r} "
                                        "has no maxtext_flags spelling that renders as written", span_of(raw),
                                        severity="warning",
                                        hint="convert the flag words to maxtext_flags by hand once reviewed"))
                layers, quoted = None, []
                break
            if how == "quoted" and key not in quoted:
                quoted.append(key)
            if key in layers[-1]:
                layers.append({})
            if in_force.get(key) == source:
                noop.add((len(layers) - 1, key))
            layers[-1][key] = in_force[key] = source
    if layers is not None:
        flags = tuple(layers)
    xla = cmd.flag_list(libtpu.text) if libtpu is not None else None
    cuts = []
    if xla is not None:
        cuts.append((libtpu.start, libtpu.end, Ref(LIBTPU_NAME)))
    if flags is not None:
        cuts.append((trainer.start, trainer.end, Ref(SHELL_NAME if quoted else FLAGS_NAME + ".shell")))
    pieces, last = [], 0
    for start, end, ref in sorted(cuts, key=lambda c: c[0]):
        pieces += placeholders(text[last:start], names) + [ref]
        last = end
    pieces += placeholders(text[last:], names)
    schema = trainer is None or is_maxtext(trainer.program)
    return Startup(text, trainer, libtpu, flags, xla, tuple(pieces), quoted=tuple(quoted), noop=frozenset(noop),
                   schema=schema), notes


def _unparsed(exc: Exception, text: str, span_of) -> Diagnostic:
    """``W1200`` for a startup command ``text`` bashlex cannot parse (``exc``), at the
    command's first words: bashlex's message and the offset in the command where it stopped
    (:func:`rcpc.importer.bash.stopped_at`: an early end at the command's end, never the stale
    offset bashlex gives it), or no offset when it gives none in this text."""
    pos = bash.stopped_at(exc, text)
    at = f" at offset {pos} of {len(text)} characters" if pos is not None else ""
    return Diagnostic("W1200", f"TODO(import): the startup command is kept as text: bash cannot parse it "
                      f"({bash.problem(exc)}{at})", span_of(text[:40]), severity="warning",
                      hint="the command is one string in the recipe: split it by hand once reviewed")


def is_maxtext(program: str) -> bool:
    """Whether the trainer ``program`` (``python3 -m MODULE CONFIG``) runs a module of MaxText
    (``MaxText.*``, or ``maxtext.*`` since MaxText's package move), whose flags its schema
    describes; another trainer that reads ``key=value`` words (MaxDiffusion's) is not."""
    words = program.split()
    module = words[2] if len(words) > 2 and words[1] == "-m" else ""
    return module.split(".", 1)[0] in ("MaxText", "maxtext")


def read(path, shown: str, sets: dict, variables, schema_of=None) -> Template:
    """The template of file ``path`` for import (of several documents: each one's in
    ``documents``, one recipe rendering each, :func:`literal`). ``sets``: param defaults (``--set``);
    ``variables``: the placeholders that become params (None: every ``${NAME}`` but
    :data:`RUNTIME_VARIABLES`); ``schema_of(apiVersion, kind)``: the object's schema, or None
    (typed params, :mod:`rcpc.importer.fields`). Raises
    :class:`~rcpc.core.diagnostics.CompileError`: ``E1103`` (not readable YAML), ``E1200``
    (no document, or one that is not a Kubernetes object), ``E1205`` (a ``--set`` name that is not a placeholder),
    ``E1207`` (a placeholder of a typed field that cannot be a typed param)."""
    retyped: list = []  # W1104: keys kubectl sends as other text, as the recipe will write them
    source, docs = load_manifests(path, shown, retyped)
    if not docs:
        raise CompileError(Diagnostic("E1200", f"{shown} holds no document; import reads Kubernetes objects",
                                      Span(shown, 1, 1, 1, 1), hint="a manifest has apiVersion, kind and metadata"))
    for value in docs:
        for key in ("apiVersion", "kind", "metadata"):
            if key not in value.items:
                raise CompileError(Diagnostic("E1200", f"{shown} is not a Kubernetes object: it has no {key}",
                                              value.span, hint="a manifest has apiVersion, kind and metadata"))
    text = source.text
    found = _placeholder_names(text)
    if variables is None:
        variables = [n for n in found if n not in RUNTIME_VARIABLES]
    for name in sets:
        if name not in variables:
            raise CompileError(Diagnostic("E1205", f"--set {name}: the template has no placeholder ${{{name}}}",
                                          None, hint=f"placeholders: {', '.join(variables) or 'none'}"))
    places: dict = {}
    for value in docs:
        doc = to_python(value)
        api, kind = doc.get("apiVersion"), doc.get("kind")
        schema = schema_of(api, kind) if schema_of is not None and isinstance(api, str) and isinstance(kind, str) \
            else None
        found_places = fields.param_types(fields.typed_places(value, text, schema, set(variables))) if schema else {}
        for name, place in found_places.items():
            places.setdefault(name, place)  # a placeholder typed in two documents: the first one's type
    for name, text_set in sets.items():
        if name in places:
            fields.check_set(places[name], text_set)
    params = {n: sets[n] if n in sets else fields.default_text(places[n]) if n in places else visible_default(n)
              for n in variables}
    templates, split_one = [], False
    for value in docs:
        doc = to_python(value)  # as kubectl reads it
        startup, notes = None, []
        command = startup_command(doc)
        if command is not None and split_one:
            notes = [Diagnostic("W1200", "TODO(import): the startup command of this document is kept as text (the "
                                "recipe splits one document's command into a flag set)", value.span,
                                severity="warning", hint="split it by hand once reviewed")]
        elif command is not None:
            startup, notes = split_startup(command, set(params), lambda words: locate(shown, text, words))
            split_one = True
        templates.append(Template(shown, text, doc, params, startup, tuple(notes), places,
                                  frozenset(n for n in places if n not in sets), value))
    if len(templates) == 1:
        return attrs.evolve(templates[0], notes=(*retyped, *templates[0].notes))
    notes = (*retyped, *(n for t in templates for n in t.notes))
    return Template(shown, text, None, params, None, notes, places, frozenset(n for n in places if n not in sets),
                    None, tuple(templates))


def locate(shown: str, text: str, words: str):
    """The span of the first place in the template text where ``words`` stands, not preceded
    by a name character (``steps=`` is not found in ``max_steps=``); else line 1, column 1."""
    for i, line in enumerate(text.splitlines(), 1):
        col = line.find(words)
        while col > 0 and (line[col - 1].isalnum() or line[col - 1] == "_"):
            col = line.find(words, col + 1)
        if col >= 0:
            return Span(shown, i, col + 1, i, col + 1 + len(words))
    return Span(shown, 1, 1, 1, 1)


def _placeholder_names(text: str) -> list:
    """The names of the ``${NAME}`` (braced) placeholders of ``text``, in order: the form
    templates use for their variables (``$PID`` in a command is the shell's)."""
    names: list = []
    i = text.find("${")
    while i >= 0:
        end = text.find("}", i)
        name = text[i + 2:end] if end > 0 else ""
        if name.isidentifier() and name not in names:
            names.append(name)
        i = text.find("${", i + 2)
    return names


def visible_default(name: str) -> str:
    """A param's default when ``--set`` gives none: the variable's name in lowercase with
    dashes (``WORKLOAD_NAME`` → ``workload-name``), visible in every render and valid where
    the templates put it (a DNS-1123 name, an image reference, a path), and a string as
    kubectl reads it after envsubst (``N`` is ``n-value``: ``n`` is go-yaml's false)."""
    text = name.lower().replace("_", "-")
    return text if goyaml.resolve(text)[0] == goyaml.STR else f"{text}-value"


def header(t: Template, how: str) -> list:
    """The recipe's opening comment and its params."""
    said = (f"by `rcpc import manifest`, {how}: the render equals the template after envsubst with the "
            "same values (rcpc import proves it).")
    lines = [f"# Imported from {t.shown}"] + textwrap.wrap(said, 98, initial_indent="# ", subsequent_indent="# ",
                                                           break_on_hyphens=False) + [""]
    lines[-1:-1] = [f"# {n.message}" for n in t.notes]
    for name, default in t.params.items():
        place = t.places.get(name)
        if place is None:
            lines.append(f"{name} = param(str, default = {string(default)}, "
                         f"doc = {string('${' + name + '} in the template.')})")
        else:
            doc = f"${{{name}}} in the template, in {place.where()}."
            lines.append(f"{name} = param({place.type}, default = {default}, doc = {string(doc)})")
    return lines + [""]


def flag_lines(t: Template) -> list:
    """``MAXTEXT_FLAGS = maxtext_flags({...}, ...)``, when the startup command has a flag set:
    one dict a layer, an entry that sets the value already in force marked to be ignored by
    lint (``W0330``: the command sets it again), ``schema = None`` for a trainer that is not
    MaxText's, the unknown keys acknowledged."""
    s = t.startup
    if s is None or s.flags is None:
        return []
    args = []
    for i, layer in enumerate(s.flags):
        body = "".join(f"    {string(k)}: {v},{'  # rcpc: ignore[W0330]' if (i, k) in s.noop else ''}\n"
                       for k, v in layer.items())
        args.append(f"{{\n{body}}}")
    if not s.schema:
        args.append("\n    # the trainer is not MaxText's: MaxText's schema does not describe its flags\n"
                    "    schema = None")
    if s.unknown_keys:
        args.append("unknown_keys = [" + ", ".join(string(k) for k in s.unknown_keys) + "]")
    return [f"{FLAGS_NAME} = maxtext_flags({', '.join(args)})", ""]


def literal(t: Template) -> str:
    """The recipe that is the manifest as a data literal (``jobset(...)`` for a JobSet of the
    API version rcpc writes, else ``manifest(...)``); the startup command a named f-string of
    the kept shell, the flag set and the XLA flag list. A file of several documents is one
    recipe of one render a document, in order (each named by its kind, with its position
    when two documents have the same kind)."""
    how = "as a data literal" if not t.documents else \
        f"as data literals, one render for each of its {len(t.documents)} documents"
    lines = header(t, how)
    docs = t.documents or (t,)
    kinds = [str(d.doc.get("kind", "manifest")).lower() for d in docs]
    for i, d in enumerate(docs):
        name = kinds[i] if kinds.count(kinds[i]) == 1 else f"{kinds[i]}-{i + 1}"
        lines += literal_body(d, name, first=not t.documents or i == 0)
    return "\n".join(lines + ['variant("default")']) + "\n"


def literal_body(t: Template, name: str, first: bool) -> list:
    """The lines of one document as a data literal, its render named ``name`` (a JobSet of
    rcpc's API version is ``jobset``'s ``jobset`` when it is the file's ``first``)."""
    lines = flag_lines(t)
    s = t.startup
    if s is not None:
        if s.xla is not None:
            prefix, items, sep, suffix = s.xla
            lines.append(f"{XLA_NAME} = [" + ", ".join(string(i) for i in items) + "]")
            lines.append(f"{LIBTPU_NAME} = {joined(XLA_NAME, prefix, sep, suffix)}")
        if s.flags is not None:
            lines += s.shell_lines()
        lines += [f"{COMMAND_NAME} = {fstring(s.pieces)}", ""]
    doc = t.doc
    rest = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind", "metadata")}
    names = set(t.params)
    if doc.get("apiVersion") == JOBSET_API_VERSION and doc.get("kind") == "JobSet" and list(rest) == ["spec"]:
        call = ['jobset(', f'    name = {string("jobset" if first else name)},']
    else:
        call = ["manifest(", f"    name = {string(name)},",
                f"    apiVersion = {value(doc['apiVersion'], names, s)},",
                f"    kind = {value(doc['kind'], names, s)},"]
    call.append(f"    metadata = {value(doc['metadata'], names, s)},")
    for k, v in rest.items():
        call.append(f"    {k} = {value(v, names, s)},")
    return lines + call + [")", ""]


def value(v, names, startup: Startup | None) -> str:
    """Recipe source of a YAML value: strings with placeholders as f-strings, the startup
    command as its name."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "None"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        if startup is not None and v == startup.text:
            return COMMAND_NAME
        return fstring(placeholders(v, names))
    if isinstance(v, list):
        return "[" + ", ".join(value(x, names, startup) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{string(str(k))}: {value(x, names, startup)}" for k, x in v.items()) + "}"
    return string(str(v))  # a timestamp or binary read as text by YAML 1.1: kept as its text
