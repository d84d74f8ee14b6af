"""rcpc.core.record against attrs itself (the oracle): random class specs declared with both,
random field values, and every observable the build path relies on compared outcome by
outcome (a value, or the exception's type name and message): construction (missing and extra
arguments, defaults, factories, ``init=False``, ``__attrs_post_init__``, inherited fields),
``==``/``!=``, hashes (equal where attrs' are equal, unhashable where attrs' are), ``repr``,
``evolve``, pickle, copy and deepcopy, assignment and deletion on frozen and mutable
instances, ``fields``/``has``/``__match_args__``/``__slots__``; and the record module raises
what attrs raises for a mandatory field after a defaulted one."""

from __future__ import annotations

import copy
import itertools
import pickle
import re
import subprocess
import sys
import types
import weakref

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcpc.cli  # noqa: F401  (the build path's record classes, for the prebuilt templates' test)
import rcpc.domain.recipe  # noqa: F401
from rcpc.core import record, record_templates

# Each side's classes live in a module of their own (one name, both sides: repr and messages
# name the class), where pickle finds them.
_HOMES = {lib: types.ModuleType(f"rcpc_record_oracle_{lib}") for lib in ("attrs", "record")}
sys.modules.update((m.__name__, m) for m in _HOMES.values())
_COUNT = itertools.count()

FLAVOURS = {  # name → (attrs decorator, record decorator)
    "frozen": (attrs.frozen, record.frozen),
    "define": (attrs.define, record.define),
    "define(eq=False)": (attrs.define(eq=False), record.define(eq=False)),
    "define(frozen=True, eq=False)": (attrs.define(frozen=True, eq=False), record.define(frozen=True, eq=False)),
    "frozen(repr=False)": (attrs.frozen(repr=False), record.frozen(repr=False)),
}
FACTORIES = [list, dict, tuple]

values = st.one_of(st.integers(-3, 3), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3),
                   st.none(), st.tuples(st.integers(0, 2)), st.lists(st.integers(0, 2), max_size=2),
                   st.just("boom"))


@st.composite
def field_specs(draw, names):
    """(name, kind, value or factory, init, eq, repr) for each of ``names``."""
    out = []
    for name in names:
        kind = draw(st.sampled_from(["required", "default", "factory"]))
        what = (draw(values) if kind == "default" else draw(st.sampled_from(FACTORIES)) if kind == "factory"
                else None)
        init = draw(st.sampled_from([True, True, True, False]))
        out.append((name, kind, what, init, draw(st.booleans()), draw(st.booleans())))
    return out


@st.composite
def class_specs(draw):
    pool = ["a", "b", "_c", "d", "span", "_e", "value"]
    names = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=5, unique=True))
    base_names = draw(st.lists(st.sampled_from(pool), max_size=2, unique=True))
    return {"flavour": draw(st.sampled_from(sorted(FLAVOURS))), "fields": draw(field_specs(names)),
            "base": draw(field_specs(base_names)) if base_names else None, "post_init": draw(st.booleans())}


def _post_init(self):
    """Refuses an instance whose first field holds "boom" (so both must call it, with the field set)."""
    first = type(self).__match_args__[:1]
    if first and getattr(self, first[0], None) == "boom":
        raise ValueError("boom")


def declare(lib: str, spec_fields, flavour: str, base=None, post_init=False, name=None):
    """One class of ``spec_fields`` made with attrs (``lib`` "attrs") or rcpc.core.record."""
    mod = attrs if lib == "attrs" else record
    home = _HOMES[lib]
    ns = {"__module__": home.__name__, "__annotations__": {}}
    for fname, kind, what, init, eq, rep in spec_fields:
        ns["__annotations__"][fname] = "object"
        if kind == "default":
            ns[fname] = mod.field(default=what, init=init, eq=eq, repr=rep)
        elif kind == "factory":
            ns[fname] = mod.field(factory=what, init=init, eq=eq, repr=rep)
        elif not (init and eq and rep):
            ns[fname] = mod.field(init=init, eq=eq, repr=rep)
    if post_init:
        ns["__attrs_post_init__"] = _post_init
    name = name or f"C{next(_COUNT)}"
    ns["__qualname__"] = name
    cls = FLAVOURS[flavour][0 if lib == "attrs" else 1](type(name, (base,) if base else (), ns))
    setattr(home, name, cls)
    return cls


def outcome(fn):
    """``("ok", value)`` or ``("raise", exception type name, message)``."""
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - the exception is the observable
        return ("raise", type(e).__name__, str(e).replace("rcpc_record_oracle_attrs.", "").replace(
            "rcpc_record_oracle_record.", ""))


def shown(x) -> str:
    """``repr(x)`` without what differs between the sides by construction (the module of each
    side's classes, object addresses in the default ``repr``)."""
    return re.sub(r" at 0x[0-9a-f]+", "", repr(x)).replace("rcpc_record_oracle_attrs.", "").replace(
        "rcpc_record_oracle_record.", "")


def _norm(o):
    """What two outcomes of different classes can share: "ok", or the exception's type name."""
    return o[:1] if o[0] == "ok" else o[:2]


def pair(spec):
    """(attrs class, record class) of ``spec``, or the outcome both declarations gave."""
    made = []
    name = f"C{next(_COUNT)}"
    for lib in ("attrs", "record"):

        def make():
            base = declare(lib, spec["base"], spec["flavour"], name=name + "B") if spec["base"] else None
            return declare(lib, spec["fields"], spec["flavour"], base, spec["post_init"], name)
        made.append(outcome(make))
    return made


@st.composite
def calls(draw, cls):
    """Arguments for ``cls``: each init field given positionally, by keyword or left out; at
    times an unknown keyword or one positional too many."""
    args, kwargs = [], {}
    positional = True
    for f in attrs.fields(cls) if attrs.has(cls) else record.fields(cls):
        if not f.init:
            continue
        how = draw(st.sampled_from(["pos", "kw", "omit"]) if f.default is not attrs.NOTHING and
                   f.default is not record.NOTHING else st.sampled_from(["pos", "kw", "pos", "kw", "omit"]))
        if how == "pos" and positional:
            args.append(draw(values))
        elif how in ("pos", "kw"):
            kwargs[f.alias] = draw(values)
        else:
            positional = False
    extra = draw(st.sampled_from([None, None, None, "kw", "pos"]))
    if extra == "kw":
        kwargs["zz_unknown"] = 1
    elif extra == "pos" and not kwargs:
        args.append(0)
    return args, kwargs


def _names(cls):
    return [(f.name, f.alias, f.init, f.eq, f.repr) for f in (attrs.fields(cls) if attrs.has(cls) else
                                                                record.fields(cls))]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=class_specs(), data=st.data())
def test_record_classes_behave_as_attrs_classes(spec, data):
    made_a, made_r = pair(spec)
    # both made, or both refused (a mandatory field after a defaulted one)
    assert _norm(made_a) == _norm(made_r), (made_a, made_r)
    if made_a[0] == "raise":
        return
    A, R = made_a[1], made_r[1]
    assert _names(A) == _names(R)
    assert A.__match_args__ == R.__match_args__
    assert A.__slots__ == R.__slots__
    assert (A.__hash__ is None) == (R.__hash__ is None)
    assert record.has(R) and not record.has(A) and not attrs.has(R)

    instances = []
    for _ in range(3):
        args, kwargs = data.draw(calls(A))
        a, r = outcome(lambda: A(*args, **kwargs)), outcome(lambda: R(*args, **kwargs))
        assert _norm(a) == _norm(r), (args, kwargs)
        if a[0] == "ok":
            instances.append((a[1], r[1]))
    for (a, r) in instances:
        assert outcome(lambda: shown(a)) == outcome(lambda: shown(r))
        assert outcome(lambda: hash(a) == hash(a)) == outcome(lambda: hash(r) == hash(r))
        assert outcome(lambda: a == object()) == outcome(lambda: r == object())
        for (b, s) in instances:
            assert outcome(lambda: a == b) == outcome(lambda: r == s)
            assert outcome(lambda: a != b) == outcome(lambda: r != s)
            assert outcome(lambda: hash(a) == hash(b)) == outcome(lambda: hash(r) == hash(s))
        # copies
        for how in (copy.copy, copy.deepcopy, lambda x: pickle.loads(pickle.dumps(x))):
            ca, cr = outcome(lambda: how(a)), outcome(lambda: how(r))
            assert _norm(ca)[0] == _norm(cr)[0]
            if ca[0] == "ok":
                assert type(cr[1]) is R
                assert shown(ca[1]) == shown(cr[1])
                assert outcome(lambda: ca[1] == a) == outcome(lambda: cr[1] == r)
        # evolve
        changes = {}
        for f in attrs.fields(A):
            if data.draw(st.booleans(), label=f"change {f.name}"):
                changes[f.alias] = data.draw(values)
        if data.draw(st.booleans(), label="unknown change"):
            changes["zz_unknown"] = 0
        ea, er = outcome(lambda: attrs.evolve(a, **changes)), outcome(lambda: record.evolve(r, **changes))
        assert _norm(ea) == _norm(er)
        if ea[0] == "ok":
            assert shown(ea[1]) == shown(er[1])
        # assignment and deletion
        for f in attrs.fields(A):
            v = data.draw(values, label=f"set {f.name}")
            sa, sr = outcome(lambda: setattr(a, f.name, v)), outcome(lambda: setattr(r, f.name, v))
            assert sa == sr
            assert outcome(lambda: shown(a)) == outcome(lambda: shown(r))
        assert outcome(lambda: delattr(a, attrs.fields(A)[0].name)) == outcome(
            lambda: delattr(r, record.fields(R)[0].name))
        assert outcome(lambda: setattr(a, "zz_new", 1))[:2] == outcome(lambda: setattr(r, "zz_new", 1))[:2]
        assert weakref.ref(a)() is a and weakref.ref(r)() is r


def test_frozen_error_is_an_attribute_error_as_attrs_says():
    """attrs' FrozenInstanceError: an AttributeError, "can't set attribute" (what namedtuple says)."""
    @attrs.frozen
    class A:
        x: int

    @record.frozen
    class R:
        x: int

    with pytest.raises(attrs.exceptions.FrozenInstanceError) as ea:
        A(1).x = 2
    with pytest.raises(record.FrozenInstanceError) as er:
        R(1).x = 2
    assert isinstance(er.value, AttributeError)
    assert (str(ea.value), ea.value.args, ea.value.msg) == (str(er.value), er.value.args, er.value.msg)


def test_init_false_field_without_default_is_set_by_post_init():
    """The shape of ``Universe.names`` and ``List.size``: ``init=False``, set in
    ``__attrs_post_init__``; before it is set, ``repr`` shows NOTHING (as attrs)."""
    def build(mod):
        @mod.frozen
        class U:
            a: int
            names: frozenset = mod.field(init=False)

            def __attrs_post_init__(self):
                object.__setattr__(self, "names", frozenset({self.a}))

        @mod.define
        class V:
            a: int
            unset: int = mod.field(init=False)
        return U, V

    (UA, VA), (UR, VR) = build(attrs), build(record)
    assert repr(UA(1)) == repr(UR(1)) == "U(a=1, names=frozenset({1}))"
    assert repr(VA(1)) == repr(VR(1)) == "V(a=1, unset=NOTHING)"
    assert attrs.evolve(UA(1), a=2).names == record.evolve(UR(1), a=2).names == frozenset({2})


def test_fields_of_what_is_not_a_record_class():
    """attrs.fields: TypeError for a non-class, NotAnAttrsClassError (a ValueError) for a class."""
    with pytest.raises(TypeError):
        record.fields(1)
    with pytest.raises(ValueError):
        record.fields(int)
    with pytest.raises(TypeError):
        record.has(1)
    assert not record.has(int)


def test_methods_of_one_shape_share_a_template_and_keep_their_names():
    """Two classes of one shape share the compiled templates; each method is named after its
    class (tracebacks and TypeError messages)."""
    @record.frozen
    class P:
        x: int
        y: int = 0

    @record.frozen
    class Q:
        u: str
        v: str = ""

    assert P.__init__.__code__.co_code == Q.__init__.__code__.co_code
    assert P.__init__.__code__.co_varnames[:3] == ("self", "x", "y")
    assert Q.__init__.__qualname__.endswith("Q.__init__")
    with pytest.raises(TypeError, match=r"Q.__init__\(\) missing 1 required positional argument: 'u'"):
        Q()
    with pytest.raises(ValueError):
        @record.frozen
        class Bad:
            self: int


def test_prebuilt_templates_are_what_the_package_classes_ask_for_today():
    """rcpc.core.record_templates (compiled with the package, so start-up compiles no template
    of rcpc's own classes) is what ``python -m rcpc.core.record_codegen`` writes now: every
    shape the package's record classes have, each template's source as record makes it. A
    fresh process: the generator listens while it imports the classes."""
    r = subprocess.run([sys.executable, "-m", "rcpc.core.record_codegen", "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    made = [(cls, name) for module in list(sys.modules.values()) if module.__name__.startswith("rcpc.")
            for cls in vars(module).values() if isinstance(cls, type) and record.has(cls)
            and cls.__module__ == module.__name__
            for name in ("__init__", "__eq__", "__hash__")
            if getattr(getattr(cls, name, None), "__code__", None) is not None
            and getattr(cls, name).__code__.co_filename in ("<record>", record_templates.__file__)]
    assert len(made) > 100
    compiled = [f"{cls.__qualname__}.{name}" for cls, name in made
                if getattr(cls, name).__code__.co_filename != record_templates.__file__]
    assert not compiled, f"compiled at start-up, not prebuilt: {compiled}"


def test_a_shape_not_prebuilt_is_compiled_as_a_prebuilt_one_would_be():
    """A template missing from the prebuilt table is compiled from the same source lines: its
    byte code is that of the prebuilt template of the same shape."""
    key = next(k for k in record.PREBUILT if k[0] == "init" and k[1] and "r" in k[3])
    source = record._init_source(key[3], key[1], key[2])
    module = compile("\n".join(source), "<record>", "exec")
    made = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    assert made.co_code == record.PREBUILT[key].co_code
    assert made.co_varnames == record.PREBUILT[key].co_varnames


_REFERS = {  # a class body whose one method (of each kind) refers to the class: the cell all share
    "super": ("    def who(self):\n        return 'c/' + super().who()\n", lambda cls, inst: inst.who() == "c/base"),
    "method": ("    def itself(self):\n        return __class__\n", lambda cls, inst: inst.itself() is cls),
    "classmethod": ("    @classmethod\n    def cm(c):\n        return __class__\n", lambda cls, inst: cls.cm() is cls),
    "staticmethod": ("    @staticmethod\n    def sm():\n        return __class__\n", lambda cls, inst: cls.sm() is cls),
    "property": ("    @property\n    def prop(self):\n        return __class__\n", lambda cls, inst: inst.prop is cls),
}


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
@pytest.mark.parametrize("refers", sorted(_REFERS))
def test_class_variables_are_not_fields_and_methods_see_the_class_made(flavour, refers):
    """Annotations attrs reads as class variables (``ClassVar`` in each spelling, quoted) are not
    fields, others naming it are; a method, class or static method or property of the class body
    that refers to the class (zero-argument ``super()``, ``__class__``) sees the class the
    decorator makes, not the one the class statement made, as attrs'."""
    made = {}
    source, holds = _REFERS[refers]
    for lib, decorate in zip(("attrs", "record"), FLAVOURS[flavour]):
        class Base:
            def who(self):
                return "base"

        namespace = {"Base": Base}
        exec("class C(Base):\n"
             "    a: 'ClassVar[int]' = 1\n"
             "    b: 'typing.ClassVar[int]' = 2\n"
             "    c: \"'ClassVar'\" = 3\n"
             "    d: 'MyClassVar' = 4\n"
             "    e: 'int' = 5\n" + source, namespace)
        cls = made[lib] = decorate(namespace["C"])
        assert holds(cls, cls()), lib
    # (this module's annotations are strings: c's is the text "'ClassVar'", quoted twice, a field for attrs)
    assert [f.name for f in attrs.fields(made["attrs"])] == [f.name for f in record.fields(made["record"])] == [
        "c", "d", "e"]
