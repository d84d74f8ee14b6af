"""Kubernetes' own string validations, as the API server applies them (Kubernetes
``k8s.io/apimachinery/pkg/util/validation``: ``validation.go``; and
``k8s.io/apimachinery/pkg/api/validation/objectmeta.go`` for annotations).

Each function takes the string as Kubernetes sees it and returns the list of problems found,
empty when the value is valid, as the Go functions do. Lengths are in bytes of UTF-8 (Go's
``len``); a non-ASCII character fails every pattern here anyway.
"""

from __future__ import annotations

import re

from rcpc.core.patterns import LazyPattern

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_MAX = 63
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
# objectmeta.go TotalAnnotationSizeLimitB: keys and values of one object's annotations.
ANNOTATIONS_TOTAL_MAX = 256 * 1024

_DNS1123_LABEL = LazyPattern(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_DNS1123_SUBDOMAIN = LazyPattern(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_DNS1035_LABEL = LazyPattern(r"[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_QUALIFIED_NAME = LazyPattern(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_LABEL_VALUE = LazyPattern(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
_PORT_NAME = LazyPattern(r"[-a-z0-9]+\Z")
_HTTP_PATH = LazyPattern(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+\Z")


def _size(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def too_long(value: str, limit: int) -> list[str]:
    """``[message]`` when ``value`` is over ``limit`` bytes, else ``[]``."""
    return [f"must be no more than {limit} characters"] if _size(value) > limit else []


def _matches(value: str, limit: int, pattern, message: str) -> list[str]:
    out = too_long(value, limit)
    if not pattern.match(value):
        out.append(message)
    return out


def dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``: at most 63 characters of ``[a-z0-9-]``, alphanumeric at both ends
    (container names, Service names, pod hostnames)."""
    return _matches(value, DNS1123_LABEL_MAX, _DNS1123_LABEL, "must consist of lower-case letters, digits and "
                    "'-', and start and end with a letter or digit (RFC 1123 label)")


def dns1123_subdomain(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: at most 253 characters, dot-separated RFC 1123 labels
    (``metadata.name`` of most kinds)."""
    return _matches(value, DNS1123_SUBDOMAIN_MAX, _DNS1123_SUBDOMAIN, "must consist of lower-case letters, "
                    "digits, '-' and '.', and start and end with a letter or digit (RFC 1123 subdomain)")


def dns1035_label(value: str) -> list[str]:
    """``IsDNS1035Label``: at most 63 characters of ``[a-z0-9-]``, starting with a letter and
    ending alphanumeric (the JobSet webhook's rule for child Job and pod names)."""
    return _matches(value, DNS1035_LABEL_MAX, _DNS1035_LABEL, "must consist of lower-case letters, digits and "
                    "'-', start with a letter and end with a letter or digit (RFC 1035 label)")


def qualified_name(value: str) -> list[str]:
    """``IsQualifiedName``: ``[prefix/]name``, the form of label and annotation keys: an
    optional DNS-1123 subdomain prefix, one ``/``, a name of at most 63 characters of
    ``[A-Za-z0-9_.-]`` that starts and ends alphanumeric."""
    parts = value.split("/")
    out: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            out.append("prefix part must be non-empty")
        else:
            out.extend("prefix part " + m for m in dns1123_subdomain(prefix))
    else:
        return ["must be a name with an optional DNS subdomain prefix and one '/' (e.g. "
                "'example.com/my-name')"]
    if not name:
        out.append("name part must be non-empty")
    elif _size(name) > QUALIFIED_NAME_MAX:
        out.append(f"name part must be no more than {QUALIFIED_NAME_MAX} characters")
    if name and not _QUALIFIED_NAME.match(name):
        out.append("name part must consist of letters, digits, '-', '_' or '.', and start and end "
                   "with a letter or digit")
    return out


def label_value(value: str) -> list[str]:
    """``IsValidLabelValue``: empty, or at most 63 characters of ``[A-Za-z0-9_.-]`` starting
    and ending alphanumeric."""
    return _matches(value, LABEL_VALUE_MAX, _LABEL_VALUE, "must be empty or consist of letters, digits, '-', "
                    "'_' or '.', and start and end with a letter or digit")


def annotation_key(key: str) -> list[str]:
    """``ValidateAnnotations``: a key is a qualified name once lower-cased."""
    return qualified_name(key.lower())


def annotations_size(annotations: dict[str, str]) -> int:
    """The size ``ValidateAnnotationsSize`` limits to :data:`ANNOTATIONS_TOTAL_MAX` bytes:
    every key's and value's length, summed."""
    return sum(_size(k) + _size(v) for k, v in annotations.items())


def domain_prefixed_path(value: str) -> list[str]:
    """``IsDomainPrefixedPath``: ``host/path``, a DNS-1123 subdomain and a non-empty HTTP path
    (the JobSet webhook's rule for ``spec.managedBy``)."""
    host, sep, path = value.partition("/")
    if not sep or not host or not path:
        return ["must be a domain-prefixed path (such as 'acme.io/foo')"]
    out = dns1123_subdomain(host)
    if not _HTTP_PATH.match(path):
        out.append("the path after the domain may hold letters, digits and /-._~%!$&'()*+,;=: only")
    return out


def port_number(port: int) -> list[str]:
    """``IsValidPortNum``: 1 to 65535 (a container's ``containerPort``, a set ``hostPort``)."""
    return [] if 1 <= port <= 65535 else ["must be between 1 and 65535, inclusive"]


def port_name(value: str) -> list[str]:
    """``IsValidPortName`` (an IANA_SVC_NAME, RFC 6335): at most 15 characters of
    ``[a-z0-9-]``, at least one letter, no ``--``, no ``-`` at either end."""
    out = too_long(value, 15)
    if not _PORT_NAME.match(value):
        out.append("must contain only lower-case letters, digits and '-'")
    if not re.search("[a-z]", value):
        out.append("must contain at least one letter (a-z)")
    if "--" in value:
        out.append("must not contain consecutive hyphens")
    if value[:1] == "-" or value[-1:] == "-":
        out.append("must not begin or end with a hyphen")
    return out


def env_var_name(value: str) -> list[str]:
    """``IsRelaxedEnvVarName``, the rule of ``ValidateEnv`` since Kubernetes 1.32 (feature gate
    ``RelaxedEnvironmentVariableValidation``: beta and on by default in 1.32, GA and locked on
    in 1.34): not empty, and only printable ASCII characters (space to ``~``) other than ``=``.
    (1.31 and older: ``IsEnvVarName``, ``[-._a-zA-Z][-._a-zA-Z0-9]*``.)"""
    if not value:
        return ["environment variable name must be non-empty"]
    if not (value.isascii() and value.isprintable()) or "=" in value:  # ASCII's printable: space to '~'
        return ["a valid environment variable name must consist only of printable ASCII characters other than '='"]
    return []


def as_dns1123_label(value: str) -> str:
    """A name close to ``value`` that :func:`dns1123_label` accepts (lower-cased, other
    characters as ``-``, trimmed to 63 characters, alphanumeric at both ends), for a hint; ``""``
    when nothing of ``value`` is left."""
    return re.sub(r"[^a-z0-9-]", "-", value.lower())[:DNS1123_LABEL_MAX].strip("-")


def as_label_value(value: str) -> str:
    """A value close to ``value`` that :func:`label_value` accepts (other characters as ``-``,
    trimmed to 63 characters, alphanumeric at both ends), for a hint."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", value)[:LABEL_VALUE_MAX].strip("-_.")
