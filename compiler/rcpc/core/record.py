"""Record classes: the part of attrs' API that ``rcpc build``, ``check`` and ``fmt`` use, with
attrs' semantics, at a small fraction of attrs' import and class-creation cost.

Why (issue 20, valgrind instruction counts, deterministic): ``python -c pass`` is 38.8 M
instructions; ``import attrs`` adds 146 M (it imports ``typing``, ``inspect``, ``ast``,
``dis``, ``tokenize`` and its validators and converters) and creating the AST's 33 attrs
classes another 101 M (~1 ms a class: attrs compiles each method's script and, for
``slots=True``, builds every class twice). A build imports ~70 such classes. Here the
methods a build calls most (``__init__``, ``__eq__``, ``__hash__``) are generated code as in
attrs, but from templates made once per shape (which fields have defaults or factories, how
many are compared) and renamed per class (``CodeType.replace``), so most classes compile
nothing; the rest are shared functions. Measured: importing the modules of a build 530 M ->
287 M instructions. The templates of the shapes rcpc's own classes have are compiled ahead of
time (:mod:`rcpc.core.record_templates`, written by ``python -m rcpc.core.record_codegen``):
compiling them at start-up was ~7 ms of every build (57 templates). attrs stays where data is not on the build path (importer,
language server, review); ``tests/test_record.py`` checks this module against attrs itself,
on random class specs.

What is mirrored (attrs 26, https://www.attrs.org/en/stable/api.html):

* :func:`define` (``attrs.define``): fields from the class's annotations, in order, after those
  of its record base classes (collected along the MRO as attrs does); slotted (``__slots__``
  with ``__weakref__``); ``__init__`` taking the fields positionally or by name (a field named
  ``_x`` is the argument ``x``), defaults and factories evaluated per call, then
  ``__attrs_post_init__()`` if the class has one; ``__repr__`` as attrs writes it
  (``Name(id='x', span=Span(...))``, ``...`` for a recursive reference, ``NOTHING`` for an
  ``init=False`` field not set); ``__eq__``/``__ne__`` comparing the ``eq`` fields of two
  instances of the same class (``self.a == other.a and ...``, else ``NotImplemented``);
  ``eq=True`` and mutable: unhashable (``__hash__`` None), ``eq=False``: identity equality
  and hash; ``__match_args__``; ``__getstate__``/``__setstate__`` (the fields' values as a
  tuple in field order, a format attrs also reads) so instances pickle and copy, frozen ones
  included. A method the class
  body defines itself (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``) is kept (attrs'
  ``auto_detect``).
* :func:`frozen` (``attrs.frozen``): :func:`define` with ``frozen=True``: assigning or deleting
  an attribute raises :class:`FrozenInstanceError` (an ``AttributeError``, "can't set
  attribute"); with ``eq`` the hash is that of the ``eq`` fields.
* :func:`field` (``default``, ``factory``, ``init``, ``eq``, ``repr``), :class:`Factory`,
  :func:`evolve`, :func:`fields` (a tuple of :class:`Field`), :func:`has`, :data:`NOTHING`.

Not mirrored (nothing on the build path uses them): validators, converters, ``kw_only``,
``order``, ``slots=False``, ``Factory(takes_self=True)``, ``cached_property`` on slotted classes,
``on_setattr`` hooks, ``cache_hash``.
"""

import operator
from _thread import _local

from rcpc.core.record_templates import TEMPLATES as PREBUILT

__all__ = ["NOTHING", "Factory", "Field", "FrozenInstanceError", "NotARecordClassError", "define", "evolve",
           "field", "fields", "frozen", "has"]


class _Nothing:
    """The "no value" sentinel (``attrs.NOTHING``): falsy, shown as ``NOTHING``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOTHING"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self):
        return "NOTHING"


NOTHING = _Nothing()


class FrozenInstanceError(AttributeError):
    """Raised on assigning or deleting an attribute of a frozen record (as
    ``attrs.exceptions.FrozenInstanceError``: an ``AttributeError``, message "can't set
    attribute", the message namedtuples give)."""

    def __init__(self):
        msg = "can't set attribute"
        super().__init__(msg)
        self.msg = msg


class NotARecordClassError(ValueError):
    """A class that is not a record class passed to :func:`fields` (as attrs'
    ``NotAnAttrsClassError``)."""


class Factory:
    """A default made by calling ``factory()`` for every instance (``attrs.Factory``)."""

    __slots__ = ("factory",)

    def __init__(self, factory):
        self.factory = factory

    def __repr__(self) -> str:
        return f"Factory({self.factory!r})"


class Field:
    """One field of a record class, as :func:`fields` lists them (attrs' ``Attribute``):
    ``name``; ``default`` (:data:`NOTHING`, a value, or a :class:`Factory`); ``init``, ``eq`` and
    ``repr`` (whether ``__init__`` takes it, equality and hashing compare it, ``__repr__`` shows
    it); ``alias``, the ``__init__`` argument (the name without leading underscores)."""

    __slots__ = ("name", "default", "init", "eq", "repr", "alias")

    def __init__(self, name, default=NOTHING, init=True, eq=True, repr=True):
        self.name = name
        self.default = default
        self.init = init
        self.eq = eq
        self.repr = repr
        self.alias = name.lstrip("_")

    def __repr__(self) -> str:
        return (f"Field(name={self.name!r}, default={self.default!r}, init={self.init!r}, eq={self.eq!r}, "
                f"repr={self.repr!r})")


class _Spec:
    """What :func:`field` returns, replaced by a :class:`Field` when the class is made."""

    __slots__ = ("default", "init", "eq", "repr")

    def __init__(self, default, init, eq, repr):
        self.default, self.init, self.eq, self.repr = default, init, eq, repr


def field(*, default=NOTHING, factory=None, init: bool = True, eq: bool = True, repr: bool = True):
    """A field with options (``attrs.field``): ``default`` a value, or ``factory`` called for
    each instance (not both: ``ValueError``); ``init=False``: not an ``__init__`` argument (set
    from the default, if any, else left unset for ``__attrs_post_init__``); ``eq=False``: left
    out of equality and hashing; ``repr=False``: left out of ``repr``."""
    if factory is not None:
        if default is not NOTHING:
            raise ValueError("The `default` and `factory` arguments are mutually exclusive.")
        if not callable(factory):
            raise ValueError("The `factory` argument must be a callable.")
        default = Factory(factory)
    return _Spec(default, init, eq, repr)


_CLASSVAR_PREFIXES = ("typing.ClassVar", "t.ClassVar", "ClassVar", "typing_extensions.ClassVar")
_OBJ_SETATTR = object.__setattr__
_REPR_CONTEXT = _local()


def _is_class_var(annotation) -> bool:
    a = annotation if type(annotation) is str else str(annotation)
    if "ClassVar" not in a:  # every prefix names it: the common answer without slicing
        return False
    if a.startswith(("'", '"')) and a.endswith(("'", '"')):
        a = a[1:-1]
    return a.startswith(_CLASSVAR_PREFIXES)


def _collect(cls) -> tuple:
    """(all fields in attrs' order, the class's own fields)."""
    body = cls.__dict__
    own = []
    for name, annotation in body.get("__annotations__", {}).items():
        if _is_class_var(annotation):
            continue
        value = body.get(name, NOTHING)
        if type(value) is _Spec:
            own.append(Field(name, value.default, value.init, value.eq, value.repr))
        else:
            own.append(Field(name, value))
    taken = {f.name for f in own}
    inherited = []
    for base in reversed(cls.__mro__[1:-1]):
        for f in base.__dict__.get("__record_own__", ()):
            if f.name not in taken:
                inherited.append(f)
    kept, seen = [], set()
    for f in reversed(inherited):  # each name once: its latest definition along the MRO
        if f.name not in seen:
            seen.add(f.name)
            kept.insert(0, f)
    every = tuple(kept + own)
    had_default = False
    for f in every:
        if not f.init:
            continue
        if had_default and f.default is NOTHING:
            raise ValueError("No mandatory attributes allowed after an attribute with a default value or factory.  "
                             f"Attribute in question: {f!r}")
        if f.default is not NOTHING:
            had_default = True
    return every, tuple(own)


_FunctionType = type(_is_class_var)
_TEMPLATES: dict = {}  # shape → code object (see _template)
# the templates' placeholders (_a<i> an argument, _n<i> an attribute), made once, not per class
_ARG = tuple(f"_a{i}" for i in range(64))
_ATTR = tuple(f"_n{i}" for i in range(64))


def _template(key, source):
    """The code object of the one function the lines ``source()`` define, made once a process
    per ``key`` (the shape of the method: which fields have defaults or factories, how many are
    compared): from :mod:`rcpc.core.record_templates` when it holds ``key`` (the shapes of
    rcpc's own classes, compiled ahead of time: loaded with the package's byte code), else
    compiled now. Field names in templates are placeholders (``_a<i>`` an argument, ``_n<i>``
    an attribute), renamed per class by :func:`_function`, so classes of one shape share one
    code object."""
    code = _TEMPLATES.get(key)
    if code is None:
        code = PREBUILT.get(key)
        if code is None:
            module = compile("\n".join(source()), "<record>", "exec")
            code = next(c for c in module.co_consts if type(c) is type(module))
        _TEMPLATES[key] = code
    return code


def _function(code, names: dict, globs: dict, qualname: str, defaults=None):
    """A function of template ``code`` with its placeholders renamed by ``names``."""
    get = names.get
    code = code.replace(co_varnames=tuple([get(v, v) for v in code.co_varnames]),
                        co_names=tuple([get(v, v) for v in code.co_names]),
                        co_consts=tuple([get(c, c) if type(c) is str else c for c in code.co_consts]),
                        co_qualname=qualname)
    if len(set(code.co_varnames)) != len(code.co_varnames):
        raise ValueError(f"{qualname}: a field name clashes with a name of the generated method: "
                         f"{code.co_varnames[1:]}")
    return _FunctionType(code, globs, code.co_name, defaults)


def _init_template(every, is_frozen: bool, post_init: bool):
    kinds = "".join(("f" if type(f.default) is Factory else "r" if f.default is NOTHING else "d") if f.init
                    else ("F" if type(f.default) is Factory else "-" if f.default is NOTHING else "D")
                    for f in every)
    return _template(("init", is_frozen, post_init, kinds), lambda: _init_source(kinds, is_frozen, post_init))


def _init_source(kinds: str, is_frozen: bool, post_init: bool) -> list:
    """The lines of the ``__init__`` template of fields of ``kinds`` (one letter a field:
    ``r`` required, ``d`` defaulted, ``f`` a factory; ``-``, ``D``, ``F``: not an argument, left
    unset, set from its default, from its factory)."""
    args, steps = [], []
    put = "_setattr('_n{}', {})" if is_frozen else "self._n{} = {}"
    if is_frozen:
        steps.append("_setattr = _OBJ_SETATTR.__get__(self)")
    for i, k in enumerate(kinds):
        if k == "r" or k == "d":
            args.append(f"_a{i}" if k == "r" else f"_a{i}=None")
            steps.append(put.format(i, f"_a{i}"))
        elif k == "f":
            args.append(f"_a{i}=NOTHING")
            steps += [f"if _a{i} is not NOTHING:", "    " + put.format(i, f"_a{i}"), "else:",
                      "    " + put.format(i, f"_factory{i}()")]
        elif k == "F":
            steps.append(put.format(i, f"_factory{i}()"))
        elif k == "D":
            steps.append(put.format(i, f"_default{i}"))
    if post_init:
        steps.append("self.__attrs_post_init__()")
    return [f"def __init__(self{''.join(', ' + a for a in args)}):"] + ["    " + s for s in steps or ["pass"]]


def _methods(cls, every, is_frozen: bool, eq: bool, body: dict) -> dict:
    """``__init__``, ``__eq__`` and ``__hash__`` of ``cls`` (those ``body`` does not define),
    from templates shared by classes of one shape (:func:`_template`)."""
    qualname = cls.__qualname__
    globs = {"__name__": cls.__module__, "__builtins__": __builtins__, "NOTHING": NOTHING,
             "_OBJ_SETATTR": _OBJ_SETATTR}
    made = {}
    if "__init__" not in body:
        names, defaults = {}, []
        for i, f in enumerate(every):
            names[_ARG[i] if i < 64 else f"_a{i}"] = f.alias
            names[_ATTR[i] if i < 64 else f"_n{i}"] = f.name
            if type(f.default) is Factory:
                globs[f"_factory{i}"] = f.default.factory
                if f.init:
                    defaults.append(NOTHING)
            elif f.default is not NOTHING:
                if f.init:
                    defaults.append(f.default)
                else:
                    globs[f"_default{i}"] = f.default
        code = _init_template(every, is_frozen, getattr(cls, "__attrs_post_init__", None) is not None)
        made["__init__"] = _function(code, names, globs, f"{qualname}.__init__", tuple(defaults) or None)
    compared = {_ATTR[i] if i < 64 else f"_n{i}": name for i, name in enumerate([f.name for f in every if f.eq])}
    n = len(compared)
    if eq and "__eq__" not in body:
        code = _template(("eq", n), lambda: [
            "def __eq__(self, other):", "    if other.__class__ is not self.__class__:",
            "        return NotImplemented",
            "    return " + (" and ".join(f"self._n{i} == other._n{i}" for i in range(n)) or "True")])
        made["__eq__"] = _function(code, compared, globs, f"{qualname}.__eq__")
    if eq and is_frozen and "__hash__" not in body:
        globs["_TYPE_HASH"] = hash(f"<record {cls.__module__}.{qualname} {id(cls)}>")
        code = _template(("hash", n), lambda: [
            "def __hash__(self):", f"    return hash((_TYPE_HASH,{''.join(f' self._n{i},' for i in range(n))}))"])
        made["__hash__"] = _function(code, compared, globs, f"{qualname}.__hash__")
    return made


def _ne(self, other):
    """``not self == other`` (``NotImplemented`` stays), as attrs' ``__ne__``."""
    result = self.__eq__(other)
    if result is NotImplemented:
        return NotImplemented
    return not result


def _repr(self) -> str:
    """attrs' ``__repr__`` text: ``Class(field=value!r, ...)``; ``...`` for an instance already
    being shown further out (a cycle)."""
    try:
        already = _REPR_CONTEXT.already_repring
    except AttributeError:
        already = {id(self)}
        _REPR_CONTEXT.already_repring = already  # the outermost repr of this thread: removed after it
    else:
        if id(self) in already:
            return "..."
        already.add(id(self))
    try:
        cls = self.__class__
        shown = ", ".join(f"{f.name}={getattr(self, f.name) if f.init else getattr(self, f.name, NOTHING)!r}"
                          for f in cls.__record_fields__ if f.repr)
        return f"{cls.__qualname__.rsplit('>.', 1)[-1]}({shown})"
    finally:
        already.remove(id(self))
        if not already:  # the outermost: the thread keeps nothing between two reprs
            del _REPR_CONTEXT.already_repring


def _state_methods(every: tuple) -> dict:
    """``__getstate__`` and ``__setstate__`` of a class with fields ``every``: the state is
    the tuple of the fields' values in field order (the format attrs wrote before 22.2;
    smaller and faster to pickle than attrs' dict of names, which ``__setstate__`` also
    takes)."""
    names = tuple(f.name for f in every)
    if len(names) > 1:
        values = operator.attrgetter(*names)  # a tuple, in C
    else:
        def values(self) -> tuple:
            return tuple(getattr(self, name) for name in names)

    def getstate(self) -> tuple:
        return values(self)

    def setstate(self, state) -> None:
        put = _OBJ_SETATTR.__get__(self)
        if isinstance(state, tuple):
            for name, value in zip(names, state):
                put(name, value)
        else:
            for name in names:
                if name in state:
                    put(name, state[name])

    return {"__getstate__": getstate, "__setstate__": setstate}


def _frozen_setattr(self, name, value):
    if isinstance(self, BaseException) and name in (
            "__cause__", "__context__", "__traceback__", "__suppress_context__", "__notes__"):
        BaseException.__setattr__(self, name, value)
        return
    raise FrozenInstanceError


def _frozen_delattr(self, name):
    if isinstance(self, BaseException) and name == "__notes__":
        BaseException.__delattr__(self, name)
        return
    raise FrozenInstanceError


def _build(cls, is_frozen: bool, eq: bool, show: bool):
    every, own = _collect(cls)
    body = cls.__dict__
    own_names = {f.name for f in own}
    ns = {k: v for k, v in body.items() if k not in own_names and k not in ("__dict__", "__weakref__")}
    defined = list(ns.values())  # the class body's: only these can refer to the class (below)
    existing, weakref_inherited = set(), False
    for base in cls.__mro__[1:-1]:
        if base.__dict__.get("__weakref__") is not None:
            weakref_inherited = True
        existing.update(getattr(base, "__slots__", ()))
    slots = [f.name for f in own if f.name not in existing]
    if not weakref_inherited and "__weakref__" not in slots:
        slots.append("__weakref__")
    ns["__slots__"] = tuple(slots)
    ns["__qualname__"] = cls.__qualname__
    ns["__record_fields__"] = every
    ns["__record_own__"] = own
    ns.update(_methods(cls, every, is_frozen, eq, body))
    if eq:
        if "__eq__" not in body:
            ns["__ne__"] = _ne
        if not is_frozen and "__hash__" not in body:
            ns["__hash__"] = None
    if show and "__repr__" not in body:
        ns["__repr__"] = _repr
    if is_frozen:
        ns["__setattr__"] = _frozen_setattr
        ns["__delattr__"] = _frozen_delattr
    if "__match_args__" not in body:
        ns["__match_args__"] = tuple(f.name for f in every if f.init)
    if "__getstate__" not in body:
        ns.update(_state_methods(every))
    new = type(cls)(cls.__name__, cls.__bases__, ns)
    # Methods that refer to the class (zero-argument super(), __class__) see the new one.
    for item in defined:
        if type(item) is _FunctionType:
            pass
        elif isinstance(item, (classmethod, staticmethod)):
            item = item.__func__
        elif isinstance(item, property):
            item = item.fget
        for cell in getattr(item, "__closure__", None) or ():
            try:
                if cell.cell_contents is cls:
                    cell.cell_contents = new
            except ValueError:  # an empty cell
                pass
    return new


def define(maybe_cls=None, *, frozen: bool = False, eq: bool = True, repr: bool = True, slots: bool = True):
    """A slotted record class from the annotated class body (``attrs.define``; see the module
    docstring for what is generated). Used bare (``@define``) or with options
    (``@define(frozen=True, eq=False)``). ``slots=False`` is not supported (``TypeError``)."""
    if slots is not True:
        raise TypeError("record classes are always slotted")

    def wrap(cls):
        return _build(cls, frozen, eq, repr)

    return wrap if maybe_cls is None else wrap(maybe_cls)


def frozen(maybe_cls=None, *, eq: bool = True, repr: bool = True, slots: bool = True):
    """``define(frozen=True)`` (``attrs.frozen``): immutable, hashable by its ``eq`` fields."""
    return define(maybe_cls, frozen=True, eq=eq, repr=repr, slots=slots)


def has(cls) -> bool:
    """Whether ``cls`` is a record class (``attrs.has``); ``TypeError`` if it is not a class."""
    if not isinstance(cls, type):
        raise TypeError(f"Passed object must be a class, not {cls!r}.")
    return getattr(cls, "__record_fields__", None) is not None


def fields(cls) -> tuple:
    """The :class:`Field` tuple of a record class or instance (``attrs.fields``), in
    ``__init__`` order. ``TypeError`` for neither a class nor a record instance,
    :class:`NotARecordClassError` for a class that is not a record class."""
    if not isinstance(cls, type):
        if getattr(type(cls), "__record_fields__", None) is None:
            raise TypeError("Passed object must be a class or record instance.")
        cls = type(cls)
    found = getattr(cls, "__record_fields__", None)
    if found is None:
        raise NotARecordClassError(f"{cls!r} is not a record class.")
    return found


def evolve(inst, /, **changes):
    """A copy of ``inst`` with ``changes`` (``attrs.evolve``): the class is called with every
    ``init`` field's current value unless changed, so ``__init__`` (and
    ``__attrs_post_init__``) run again; an unknown name is a ``TypeError`` from ``__init__``."""
    cls = inst.__class__
    for f in fields(cls):
        if f.init and f.alias not in changes:
            changes[f.alias] = getattr(inst, f.name)
    return cls(**changes)
