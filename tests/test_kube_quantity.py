"""Resource quantities (``rcpc.domain.kube.quantity``): which texts the API server reads as a
quantity, their amount, and E1005/E1014 at every place a built-in kind holds one (issue 38:
``emptyDir.sizeLimit: 1Gb`` passed; only resource requests and limits were checked).

The value space is resource.Quantity's grammar (apimachinery ``quantity.go``: a signed number,
a binary-SI, decimal-SI or exponent suffix), its near misses (other cases of the suffixes, a
fractional exponent, text around it) and what the parser accepts beyond the grammar (``"-"``,
``"."``, ``"Gi"``). The oracle is written from the parser's structure as one regular expression
and its side conditions, independently of the scanner it checks."""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.core.source import Span
from rcpc.core.values import Float, Int, Null, Str
from rcpc.domain.kube import quantity as kq

REPO = Path(__file__).resolve().parents[1]
CRD = REPO.parent / "shared" / "data" / "jobset" / "jobset.x-k8s.io_jobsets.yaml"
SPAN = Span("<test>", 1, 1, 1, 1)
SETTINGS = settings(max_examples=300, deadline=None)

DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
# parseQuantityString's shape: sign, digits, '.', digits, suffix letters, sign, digits
SHAPE = re.compile(r"(?P<sign>[+-]?)(?P<num>[0-9]*)(?:\.(?P<frac>[0-9]*))?(?P<suffix>[eEinumkKMGTP]*[+-]?[0-9]*)\Z")


def oracle(text: str) -> Fraction | None:
    """The amount ParseQuantity gives ``text``, or None when it refuses it."""
    m = SHAPE.match(text)
    if not text or m is None:
        return None
    suffix = m["suffix"]
    if suffix in DECIMAL:
        base, exp = 10, DECIMAL[suffix]
    elif suffix in BINARY:
        base, exp = 2, BINARY[suffix]
    elif re.fullmatch(r"[eE][+-]?[0-9]+", suffix) and -2 ** 63 <= int(suffix[1:]) < 2 ** 63:
        base, exp = 10, (int(suffix[1:]) + 2 ** 31) % 2 ** 32 - 2 ** 31
    else:
        return None
    frac = m["frac"] or ""
    digits = (m["num"] or "") + frac
    if not digits and base == 10 and exp - len(frac) < -9:
        return None  # inf.Dec reads a number of no digit: ErrNumeric
    value = Fraction(int(digits or "0"), 10 ** len(frac)) * (Fraction(10) ** max(-400, min(400, exp)) if base == 10 else 2 ** exp)
    nano = Fraction(1, 10 ** 9)
    if value % nano:
        value = (value // nano + 1) * nano
    if base == 2:
        value = min(value, Fraction(2 ** 63 - 1))
    return -value if m["sign"] == "-" else value


def same(got, want) -> bool:
    """``got`` is the amount ``want`` (a Fraction, or None), as the module gives amounts: an int
    when it is whole, else a Fraction (a build's whole quantities need no fractions module:
    tests/test_startup_imports.py), so that every comparison, ``int()`` and ``.denominator``
    the rules use gives what it gave on Fractions."""
    if want is None:
        return got is None
    return got == want and type(got) is (int if want.denominator == 1 else Fraction)


def grammar() -> st.SearchStrategy[str]:
    """Texts of the grammar ``<signedNumber><suffix>``."""
    digits = st.text("0123456789", min_size=1, max_size=6)
    number = st.one_of(digits, st.tuples(digits, digits).map(".".join), digits.map(lambda d: d + "."),
                       digits.map(lambda d: "." + d))
    signed = st.tuples(st.sampled_from(["", "+", "-"]), number).map("".join)
    suffix = st.one_of(st.sampled_from(sorted(DECIMAL) + sorted(BINARY)),
                       st.tuples(st.sampled_from("eE"), st.sampled_from(["", "+", "-"]),
                                 st.text("0123456789", min_size=1, max_size=3)).map("".join))
    return st.tuples(signed, suffix).map("".join)


NEAR = st.text(alphabet="0123456789.+-eEinumkKMGTPi BbxX_\t", max_size=8)


@SETTINGS
@given(text=st.one_of(grammar(), NEAR))
@example(text="500m")
@example(text="16Gi")
@example(text="1e3")
@example(text="1Gb")           # the issue's emptyDir.sizeLimit: refused
@example(text="16GB")
@example(text="1ki")           # a suffix in the wrong case
@example(text="1KI")
@example(text="1K")
@example(text="1e1.5")         # an exponent with a fraction: in the CRD's pattern, refused by the parser
@example(text="-")             # the parser's own: 0
@example(text=".")
@example(text="+.")
@example(text="Gi")
@example(text="e3")
@example(text="e-10")          # no digit and below the nano: ErrNumeric
@example(text="1e4294967296")  # the exponent cut to 32 bits: 1
@example(text="0.1n")          # rounded up to 1n
@example(text="8Ei")           # capped at 2^63-1
@example(text=" 1")
def test_parse_is_parse_quantity(text):
    assert same(kq.parse(text), oracle(text))


def test_the_crd_pattern_is_the_jobset_crds():
    """CRD_PATTERN is the pattern the JobSet CRD gives each of its quantities."""
    patterns = set(re.findall(r"pattern: (\^\(\\\+\|-\).*)$", CRD.read_text(encoding="utf-8"), re.M))
    (pattern,) = patterns
    assert kq.CRD_PATTERN.pattern == pattern[1:-1] + r"\Z"


@SETTINGS
@given(text=st.one_of(grammar(), NEAR, st.tuples(st.sampled_from([" ", "\u3000", "\t", "\n"]), grammar()).map("".join)))
@example(text=" 1")            # kubectl sends " 1"; UnmarshalJSON trims it
@example(text="1\t")           # a tab is sent as \t, which the parser refuses
def test_a_manifest_string(text):
    """A string where a quantity is wanted: trimmed as Quantity.UnmarshalJSON trims it (Go's
    space characters the JSON encoder does not escape); for a custom resource, the CRD's
    pattern first."""
    escaped = any(c < " " or c in '"\\<>&\u2028\u2029' for c in text)
    trimmed = text.strip(" \x85\xa0\u1680\u202f\u205f\u3000" + "".join(chr(c) for c in range(0x2000, 0x200B)))
    want = None if escaped else oracle(trimmed)
    assert same(kq.amount(Str(text, SPAN)), want)
    crd = want if re.fullmatch(kq.CRD_PATTERN.pattern.removesuffix(r"\Z"), text) else None
    assert same(kq.amount(Str(text, SPAN), crd=True), crd)


@SETTINGS
@given(value=st.integers(-10 ** 30, 10 ** 30))
def test_a_manifest_int(value):
    """A JSON integer is its digits."""
    assert same(kq.amount(Int(value, str(value), SPAN)), oracle(str(value))) and oracle(str(value)) == value


@SETTINGS
@given(value=st.floats(allow_nan=False, allow_infinity=False))
@example(value=1e-05)   # sent as 0.00001
@example(value=1e21)    # sent as 1e+21
@example(value=1e-7)    # sent as 1e-7
def test_a_manifest_float(value):
    """A JSON float is read from the text Go's encoder writes for it: the shortest digits that
    read back as the float (the decimal Python's repr gives), in the amount rounded up to the
    nano; a null is 0."""
    text = kq.go_json_number(value)
    assert float(text) == value and ("e" in text) == (value != 0 and not 1e-6 <= abs(value) < 1e21)
    assert same(kq.amount(Float(value, repr(value), SPAN)), oracle(text))
    exact = Fraction(Decimal(repr(value)))
    assert oracle(text) == exact or abs(exact) < 10 ** -9 or abs(exact) > 10 ** 400 or exact % Fraction(1, 10 ** 9)
    assert same(kq.amount(Null("null", SPAN)), Fraction(0))


# every place a built-in kind holds a quantity ----------------------------------------------------
def validate(manifest: dict) -> list[tuple[str, str]]:
    """(code, manifest path) of each E1005/E1014 ``rcpc validate`` gives ``manifest``."""
    from rcpc.cli import main

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "m.yaml").write_text(json.dumps(manifest) + "\n")
        err = io.StringIO()
        with contextlib.chdir(d), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            main(["validate", "m.yaml"])
    found = re.findall(r"error\[(E1005|E1014)\]: \w+ (\S+):", err.getvalue())
    return found


def pod(where: str, q) -> dict:
    """A pod spec holding quantity ``q`` at ``where``."""
    container = {"name": "c", "image": "i"}
    spec = {"restartPolicy": "Never", "containers": [container]}
    if where == "limits":
        container["resources"] = {"limits": {"memory": q}}
    elif where == "sizeLimit":
        spec["volumes"] = [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": q}}]
    elif where == "overhead":
        spec["overhead"] = {"cpu": q}
    elif where == "divisor":
        container["env"] = [{"name": "M", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": q}}}]
    return spec


PATHS = {"limits": "containers[0].resources.limits.memory", "sizeLimit": "volumes[0].emptyDir.sizeLimit",
         "overhead": "overhead.cpu", "divisor": "containers[0].env[0].valueFrom.resourceFieldRef.divisor"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=st.sampled_from(sorted(PATHS)), text=st.one_of(grammar(), NEAR), jobset=st.booleans())
@example(where="sizeLimit", text="1Gb", jobset=False)    # the issue's example
@example(where="sizeLimit", text="1Gb", jobset=True)
@example(where="sizeLimit", text="-1Gi", jobset=False)   # "SizeLimit field must be a valid resource quantity"
@example(where="limits", text="-", jobset=False)         # 0 to a Job; the JobSet CRD's pattern refuses it
@example(where="limits", text="-", jobset=True)
def test_every_quantity_of_a_pod(where, text, jobset):
    """E1005 for a text the API server does not read as a quantity (for a JobSet: the CRD's
    pattern, then the parser), E1014 for a negative one where Kubernetes' validation wants 0
    or more (requests and limits, overhead, an emptyDir's sizeLimit), at its manifest path."""
    spec = pod(where, text)
    if jobset:
        manifest = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
                    "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": spec}}}}]}}
        prefix = "spec.replicatedJobs[0].template.spec.template.spec."
    else:
        manifest = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                    "spec": {"template": {"spec": spec}}}
        prefix = "spec.template.spec."
    amount = kq.amount(Str(text, SPAN), crd=jobset)
    want = []
    if amount is None:
        want = [("E1005", prefix + PATHS[where])]
    elif amount < 0 and where != "divisor":
        want = [("E1014", prefix + PATHS[where])]
    assert [f for f in validate(manifest) if f[1] == prefix + PATHS[where]] == want


@given(kind=st.sampled_from(["PersistentVolume", "ResourceQuota", "LimitRange"]), text=st.sampled_from(["10Gi", "10GB"]))
@settings(max_examples=10, deadline=None)
def test_quantities_of_other_built_in_kinds(kind, text):
    """PersistentVolume capacity, ResourceQuota hard, LimitRange limits."""
    spec = {"PersistentVolume": {"capacity": {"storage": text}}, "ResourceQuota": {"hard": {"memory": text}},
            "LimitRange": {"limits": [{"type": "Container", "max": {"memory": text}}]}}[kind]
    found = validate({"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}, "spec": spec})
    assert [code for code, _ in found] == ([] if text == "10Gi" else ["E1005"])
