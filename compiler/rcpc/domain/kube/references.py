"""Warnings on the ``$(VAR)`` references of a pod's containers that Kubernetes leaves as
written (:mod:`rcpc.domain.kube.expansion` has the expansion rules): the container then
receives ``$(VAR)`` itself, which is rarely what the manifest meant.

What a container's references can name (the kubelet, ``pkg/kubelet/kubelet_pods.go``
``makeEnvironmentVariables``; ``pkg/kubelet/container/helpers.go``
``ExpandContainerCommandAndArgs``):

* an env value: the env vars defined before it in the container's ``env`` (its own earlier
  definition included), the ``envFrom`` sources' and the services' variables;
* ``command`` and ``args``: every env var of the container, the ``envFrom`` sources' and the
  services', and in an Indexed Job's pods (a JobSet's by default) ``JOB_COMPLETION_INDEX``,
  which the Job controller appends to each container's ``env`` (init and regular containers,
  ``pkg/controller/job/indexed_job_utils.go`` ``addCompletionIndexEnvVariables``) unless the
  container defines it.

``W1004``: a ``$(X)`` that names none of them. Not reported: names of the form of a service's
variables (``<SERVICE>_SERVICE_HOST``, ``<SERVICE>_PORT_<n>_TCP``, ...: the namespace's
services are not known here), a container with ``envFrom`` (its sources' keys are not known
here), and in a shell script (the argument after ``-c`` of ``sh``, ``bash`` and the like) a
``$(X)`` whose ``X`` is not an env var name (``[A-Z_][A-Z0-9_]*``, POSIX's convention): that is
the shell's command substitution (``$(date)``), which Kubernetes leaves for the shell.

``W1005``: a ``$(JOB_COMPLETION_INDEX)`` that stays as written: in a pod that is not an Indexed
Job's, or in an env value (the variable is appended after the container's env).
"""

from __future__ import annotations

from rcpc.core.patterns import LazyPattern
from rcpc.core.values import Dict, List, Str
from rcpc.domain.kube.expansion import JOB_COMPLETION_INDEX, env_entries, references
from rcpc.domain.kube.paths import CONTAINER_LISTS, diag

SHELLS = frozenset(("sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", "busybox"))
ENV_NAME = LazyPattern(r"[A-Z_][A-Z0-9_]*\Z")
# pkg/kubelet/envvars FromServices: <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT[_<PORT NAME>], <NAME>_PORT,
# <NAME>_PORT_<port>_<PROTOCOL>[_PROTO|_PORT|_ADDR]
SERVICE_VAR = LazyPattern(r"[A-Z0-9_]+_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_[0-9]+_(TCP|UDP|SCTP)"
                         r"(_(PROTO|PORT|ADDR))?)?)\Z")
INDEX_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


def check_references(pod: Dict, path: tuple, kind: str, indexed: bool, out: list) -> None:
    """The warnings of the module docstring on the containers of pod spec ``pod`` at ``path``;
    ``indexed``: the pod is an Indexed Job's (it gets ``JOB_COMPLETION_INDEX``)."""
    for key in CONTAINER_LISTS:
        group = pod.items.get(key)
        for i, c in enumerate(group.items if type(group) is List else ()):
            if type(c) is Dict:
                injected = indexed and key != "ephemeralContainers"
                _check_container(c, path + (key, i), kind, injected, out)


def _items(d: Dict, key: str) -> list:
    v = d.items.get(key)
    return list(v.items) if type(v) is List else []


def _check_container(c: Dict, at: tuple, kind: str, injected: bool, out: list) -> None:
    env_from = c.items.get("envFrom")
    if type(env_from) is List and env_from.items:
        return  # the sources' keys are not known here
    name = c.items.get("name")
    container = repr(name.value) if type(name) is Str else "of the pod"
    defined: set[str] = set()  # the names of the entries before each one (its own earlier definition included)
    for j, var, var_name, _ in env_entries(c):
        value = var.items.get("value")
        if type(value) is Str:
            for ref in references(value.value):
                if ref.name not in defined:
                    _warn(ref.name, value, at + ("env", j, "value"), kind, container, "env", False, out)
        defined.add(var_name)
    if injected:
        defined.add(JOB_COMPLETION_INDEX)
    argv = [(k, n, x) for k in ("command", "args") for n, x in enumerate(_items(c, k))]
    script = _script_index([x for _, _, x in argv])
    for index, (k, n, item) in enumerate(argv):
        if type(item) is not Str:
            continue
        for ref in references(item.value):
            if ref.name in defined or (index == script and not ENV_NAME.match(ref.name)):
                continue
            _warn(ref.name, item, at + (k, n), kind, container, k, index == script, out)


def _script_index(argv: list) -> int | None:
    """The index in ``argv`` of the script a shell runs (the word after a ``-c`` option,
    alone or among others such as ``-ec``), or None when ``argv`` runs no shell script."""
    if not argv or type(argv[0]) is not Str or argv[0].value.rpartition("/")[2] not in SHELLS:
        return None
    for i, word in enumerate(argv[1:], 1):
        if type(word) is Str and word.value.startswith("--"):
            continue  # a long option (bash --norc)
        if type(word) is not Str or not word.value.startswith("-"):
            return None
        if "c" in word.value[1:]:
            return i + 1 if i + 1 < len(argv) else None
    return None


def _warn(name: str, value: Str, at: tuple, kind: str, container: str, field: str, script: bool, out: list) -> None:
    if SERVICE_VAR.match(name):
        return
    if name == JOB_COMPLETION_INDEX:
        why = ("the Job controller appends JOB_COMPLETION_INDEX after the container's env, so no env value can "
               "refer to it") if field == "env" else ("only an Indexed Job's pods get JOB_COMPLETION_INDEX (the Job "
                                                       "controller defines it)")
        out.append(diag("W1005", kind, at, f"$(JOB_COMPLETION_INDEX) stays as written: {why}", value.span,
                        severity="warning", hint=f"refer to it in command or args of an Indexed Job's pod, or define "
                        f"it with valueFrom: {{fieldRef: {{fieldPath: \"{INDEX_FIELD}\"}}}}"))
        return
    where = "no env var defined before it" if field == "env" else "no env var"
    then = ", and the shell runs it as a command" if script else ""
    out.append(diag("W1004", kind, at, f"$({name[:60]}) names {where} of container {container}: Kubernetes leaves it "
                    f"as written{then}", value.span, severity="warning",
                    hint=f"define {name[:60]} in the container's env (earlier in env, for an env value), or write "
                         f"$$({name[:60]}) for the text $({name[:60]})"))
