"""The MaxText oracle (``rcpc check --maxtext PATH``, ``maxtext_oracle`` in rcp.toml): MaxText's
own config loader run on every flag set the recipes render, and its refusals reported at the
recipe line that set the flag (docs/maxtext.md, "Oracle mode").

rcpc never imports MaxText. For each group of launches with one device count
(:class:`rcpc.domain.launches.Launch`) it starts one subprocess: the interpreter the user
named (``--maxtext-python``, ``maxtext_python``; default: the one running rcpc) running
:mod:`rcpc.oracle_driver` with MaxText's package on ``PYTHONPATH``, ``JAX_PLATFORMS=cpu`` and
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` (the devices of the launch's slices),
in an empty temporary directory that is also its ``HOME``, with a timeout. The driver runs
``pyconfig.initialize(["", base.yml, *argv])`` with the launch's ``M_`` variables set, then
MaxText's mesh creation when the slice is known. Only the MaxText the user named runs: a
recipe gives data (the argv tokens, the ``M_`` texts), never a program or a path to run.

Results are cached in the ``oracle`` area of rcpc's store (:mod:`rcpc.core.store`: its key
discipline, entry format, validation, trust rules and batched writes), keyed by the driver, the
content of every file of MaxText's package, the interpreter's path, size and mtime, and the
case; an entry that does not read back as a result is a miss.

Diagnostics: ``E0360`` MaxText refuses the flag set; ``E0361`` the oracle cannot run (no such
interpreter, no MaxText package at the path, MaxText cannot be imported by that interpreter);
``E0362`` the loader did not answer within the timeout.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from rcpc.core.envvars import for_subprocess, get
from rcpc.core.diagnostics import Diagnostic, error
from rcpc.core.source import Span
from rcpc.core import store
from rcpc.domain.maxtext.flagset import argv, resolved

DRIVER = Path(__file__).resolve().parent / "oracle_driver.py"
START_TIMEOUT = 120.0  # seconds for a subprocess to import MaxText and jax
CASE_TIMEOUT = 10.0  # seconds more for each case it runs
MAX_CASES = 400  # cases of one subprocess
SPLIT_CASES = 16  # cases worth a subprocess of their own (its start costs about as much as 16 cases)
MAX_PACKAGE_FILES = 20000  # files of MaxText's package hashed, at most
MAX_PACKAGE_BYTES = 512 << 20
MAX_RESULT_BYTES = 1 << 20  # one result line
AREA = "oracle"  # of the store
MAX_SHOWN = 300  # characters of MaxText's message in a diagnostic
# MaxText keys a refusal's message may name and still be about each of them (a cross-field check
# names a few); more is a list, as pyconfig.py's "'KEY' not in 'emb_dim', 'mlp_dim', ..." of every key
MAX_NAMED = 8


class Oracle:
    """MaxText's config loader at ``maxtext`` (a MaxText checkout, its ``src`` directory, or the
    ``maxtext`` package directory) run by ``python`` (an executable path or a command name on
    ``PATH``; None: the interpreter running rcpc). ``span``: where it was named (for
    ``E0361``); ``timeout``: the seconds one subprocess may run (default
    :data:`START_TIMEOUT` plus :data:`CASE_TIMEOUT` for each case); ``jobs``: subprocesses run at
    once (cases of one device count are split among them when there are enough); ``session``:
    the :class:`~rcpc.core.session.Session` whose table (:data:`DIGESTS`) keeps the package's
    digest for the oracles made after (default: this oracle's own). Raises :class:`CompileError` ``E0361`` when the path holds no MaxText package
    or the interpreter is not found."""

    def __init__(self, maxtext: Path, python: str | None = None, span: Span | None = None, cache: bool = True,
                 timeout: float | None = None, shown: str | None = None, jobs: int = 1, session=None):
        self.span, self.timeout, self.jobs = span, timeout, max(1, jobs)
        self.shown = shown or str(maxtext)  # how to name it in messages (as the user wrote it)
        self.package = _package_dir(Path(maxtext), span)
        self.python = _interpreter(python, span)
        self.cache = cache and store.enabled()
        self._digest: str | None = None
        self._digests = session.table(DIGESTS) if session is not None else {}
        self.timed_out: float | None = None  # the timeout a subprocess ran into
        self.ran = 0  # cases run in a subprocess (not from the cache)

    @property
    def base_yml(self) -> Path:
        return self.package / "configs" / "base.yml"

    def digest(self) -> str:
        """SHA-256 hex of what a result depends on besides the case (module docstring)."""
        if self._digest is None:
            h = hashlib.sha256()
            h.update(DRIVER.read_bytes())
            h.update(package_digest(self.package, self._digests).encode())
            st = os.stat(self.python)
            h.update(f"{self.python}:{st.st_size}:{st.st_mtime_ns}".encode())
            self._digest = h.hexdigest()
        return self._digest

    def run(self, cases: list[dict]) -> list[dict | None]:
        """MaxText's answer for each case (``{"argv": [...], "env": {...}, "devices": N,
        "slices": S, "mesh": bool}``): ``{"ok": True}`` or ``{"ok": False, "type", "message",
        "locs"}`` (:mod:`rcpc.oracle_driver`), or ``{"unanswered": why}`` when its run ended
        before it answered (its timeout, a crash: ``why`` says which). Raises
        :class:`CompileError` ``E0361`` when MaxText cannot be imported."""
        out: list = [None] * len(cases)
        todo: dict[tuple, list[int]] = {}
        keys = [self._key(c) for c in cases]
        for i, c in enumerate(cases):
            hit = self._cached(keys[i])
            if hit is not None:
                out[i] = hit
            else:
                todo.setdefault((c["devices"], c["slices"]), []).append(i)
        parts = []
        self.ran += sum(len(idx) for idx in todo.values())
        for (devices, slices), idx in todo.items():
            n = max(1, min(self.jobs, len(idx) // SPLIT_CASES), -(-len(idx) // MAX_CASES))
            parts += [((devices, slices), idx[k::n]) for k in range(n)]
        if len(parts) > 1 and self.jobs > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(self.jobs, len(parts))) as pool:
                done = list(pool.map(lambda p: self._subprocess(*p[0], [cases[i] for i in p[1]]), parts))
        else:
            done = [self._subprocess(*p[0], [cases[i] for i in p[1]]) for p in parts]
        for (_, idx), answers in zip(parts, done):
            for i, a in zip(idx, answers):
                out[i] = a
                if _well_formed(a):
                    self._store(keys[i], a)
        return out

    # the subprocess -------------------------------------------------------------------------
    def _subprocess(self, devices: int, slices: int, cases: list[dict]) -> list[dict | None]:
        base = str(self.base_yml)
        job = {"slices": slices, "cases": [{"argv": [base, *c["argv"]], "env": c["env"], "mesh": c["mesh"]}
                                           for c in cases]}
        with tempfile.TemporaryDirectory(prefix="rcpc-oracle-") as tmp:
            job_path, results, log = (os.path.join(tmp, n) for n in ("job.json", "results.jsonl", "stderr.txt"))
            home = os.path.join(tmp, "home")
            os.mkdir(home)
            with open(job_path, "w", encoding="utf-8") as f:
                json.dump(job, f)
            env = {"PATH": for_subprocess().get("PATH", os.defpath), "HOME": home, "TMPDIR": home,
                   "PYTHONPATH": str(self.package.parent), "PYTHONDONTWRITEBYTECODE": "1",
                   "JAX_PLATFORMS": "cpu", "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
                   "TF_CPP_MIN_LOG_LEVEL": "3", "LC_ALL": "C.UTF-8"}
            timeout = self.timeout or START_TIMEOUT + CASE_TIMEOUT * len(cases)
            with open(job_path, "rb") as stdin, open(results, "wb") as res, open(log, "wb") as err:
                try:
                    proc = subprocess.Popen([self.python, str(DRIVER), str(res.fileno())], stdin=stdin,
                                            stdout=subprocess.DEVNULL, stderr=err, pass_fds=(res.fileno(),),
                                            cwd=home, env=env, start_new_session=True)
                except OSError as exc:
                    raise error("E0361", f"cannot run the MaxText oracle's interpreter {self.python}: "
                                f"{exc.strerror or exc}", self.span,
                                hint="name an interpreter with MaxText's requirements installed "
                                     "(--maxtext-python, maxtext_python in rcp.toml)") from None
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.timed_out = timeout
                    _kill(proc)
                except BaseException:
                    _kill(proc)
                    raise
            answers = _read_results(results, len(cases))
            why = (f"its run was ended after {timeout:g} s" if self.timed_out == timeout and proc.returncode != 0
                   else f"its run ended with status {proc.returncode}" + (f" ({_signal_name(-proc.returncode)})"
                                                                          if proc.returncode < 0 else "")
                   + (f": {_tail(log)}" if _tail(log) else ""))
            if answers and "startup" in answers[0]:
                raise error("E0361", f"MaxText at {self.shown} cannot be imported by {self.python}: "
                            f"{answers[0]['startup'][:MAX_SHOWN]}", self.span,
                            hint="install what MaxText's config loader imports (jax, flax, pydantic, omegaconf, "
                                 "...: its requirements) into that interpreter, or name another with "
                                 "--maxtext-python")
        return answers + [{"unanswered": why}] * (len(cases) - len(answers))

    # the cache -------------------------------------------------------------------------------
    def _key(self, case: dict) -> str:
        return store.key(AREA, self.digest(), json.dumps([case["argv"], sorted(case["env"].items()), case["devices"],
                                                          case["slices"], case["mesh"]], ensure_ascii=False))

    def _cached(self, key: str) -> dict | None:
        if not self.cache:
            return None
        payload = store.get(AREA, key)
        if payload is None or len(payload) > MAX_RESULT_BYTES:
            return None
        try:
            found = json.loads(payload)
        except ValueError:
            return None
        return found if _well_formed(found) else None

    def _store(self, key: str, answer: dict) -> None:
        if self.cache:
            store.put(AREA, key, json.dumps(answer).encode())  # written with the run's other entries


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()


def _read_results(path: str, n: int) -> list[dict]:
    out = []
    with open(path, "rb") as f:
        for line in f:
            if len(line) > MAX_RESULT_BYTES or len(out) >= n:
                break
            try:
                found = json.loads(line)
            except ValueError:
                break
            if not (type(found) is dict and ("startup" in found or _well_formed(found))):
                break
            out.append(found)
    return out


def _tail(path: str) -> str:
    """The last line of a run's stderr (at most :data:`MAX_SHOWN` characters)."""
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - 600))
        lines = f.read().decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:MAX_SHOWN] if lines else ""


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _well_formed(r) -> bool:
    if type(r) is not dict or type(r.get("ok")) is not bool:
        return False
    if r["ok"]:
        return True
    locs = r.get("locs", [])
    return (type(r.get("type")) is str and type(r.get("message")) is str and type(locs) is list
            and all(type(x) is list and all(type(p) is str for p in x) for x in locs))


def _package_dir(path: Path, span: Span | None) -> Path:
    """The ``maxtext`` package directory under ``path`` (a checkout: ``src/maxtext``)."""
    for d in (path / "src" / "maxtext", path / "maxtext", path):
        if (d / "configs" / "pyconfig.py").is_file() and d.name == "maxtext":
            return d.resolve()
    raise error("E0361", f"no MaxText package under {path} (looked for src/maxtext/configs/pyconfig.py)", span,
                hint="name a MaxText checkout (the directory holding src/maxtext)")


def _interpreter(python: str | None, span: Span | None) -> str:
    if python is None:
        return sys.executable
    found = shutil.which(python) if os.sep not in python else (python if os.access(python, os.X_OK) else None)
    if found is None:
        raise error("E0361", f"no interpreter {python!r} for the MaxText oracle", span,
                    hint="name a Python executable (a path, or a command on PATH) with MaxText's requirements")
    return os.path.abspath(found)


# The session's table (rcpc.core.session.Session.table) of package digests: (package path,) -> hex
DIGESTS = "rcpc.oracle:digests"


def package_digest(package: Path, digests: dict | None = None) -> str:
    """SHA-256 hex of MaxText's package: every regular file's path and bytes (``__pycache__``
    left out), at most :data:`MAX_PACKAGE_FILES` files and :data:`MAX_PACKAGE_BYTES` bytes
    (``E0361`` beyond). Found once for ``digests`` (a session's :data:`DIGESTS` table; default:
    found anew)."""
    digests = {} if digests is None else digests
    key = (str(package),)
    if key in digests:
        return digests[key]
    h = hashlib.sha256()
    files = total = 0
    for d, dirs, names in os.walk(package):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for name in sorted(names):
            p = os.path.join(d, name)
            if not os.path.isfile(p) or os.path.islink(p) or name.endswith(".pyc"):
                continue
            files += 1
            total += os.path.getsize(p)
            if files > MAX_PACKAGE_FILES or total > MAX_PACKAGE_BYTES:
                raise error("E0361", f"{package} is larger than a MaxText package ({MAX_PACKAGE_FILES} files, "
                            f"{MAX_PACKAGE_BYTES >> 20} MiB at most)", None, hint="name MaxText's own package")
            with open(p, "rb") as f:
                h.update(os.path.relpath(p, package).encode("utf-8", "surrogateescape") + b"\0" + f.read() + b"\0")
    digests[key] = h.hexdigest()
    return digests[key]


# launches -> cases -> diagnostics ----------------------------------------------------------------
def case_of(launch) -> dict:
    """The driver's case of a :class:`~rcpc.domain.launches.Launch`."""
    return {"argv": argv(launch.flags), "env": {name: text for name, text, _ in launch.env},
            "devices": launch.devices or 1, "slices": launch.slices, "mesh": launch.devices is not None}


def check_launches(oracle: Oracle, launches: list) -> list[Diagnostic]:
    """``E0360`` for each launch MaxText's loader refuses, ``E0362`` for each it did not answer
    in time; each launch (same argv, env, devices) once."""
    seen: dict = {}
    for x in launches:
        c = case_of(x)
        seen.setdefault(json.dumps(c, sort_keys=True), (x, c))
    items = list(seen.values())
    answers = oracle.run([c for _, c in items])
    out = []
    for (x, c), a in zip(items, answers):
        if "unanswered" in a:
            out.append(Diagnostic("E0362", f"MaxText's config loader did not answer for this flag set: {a['unanswered']}",
                                  x.flags.span, related=(("MaxText started here", x.span),),
                                  hint="give it more time with --maxtext-timeout SECONDS" if "ended after" in
                                  a["unanswered"] else "run the loader by hand on these flags to see why it stopped"))
        elif not a["ok"]:
            out.append(refusal(x, c, a, oracle))
    return out


_WORD = r"(?<![A-Za-z0-9_]){}(?![A-Za-z0-9_])"


def refusal(launch, case: dict, answer: dict, oracle: Oracle | None = None) -> Diagnostic:
    """``E0360`` for MaxText's refusal ``answer`` of ``launch``: at the flag (or ``M_``
    variable) named by the error's location or message that was set last, the others as
    related locations; at the ``maxtext_flags`` call when it names none. A message naming more
    than :data:`MAX_NAMED` of MaxText's keys (the schema's; without one, the flag set's) lists
    keys (pyconfig.py's unknown-key error lists every key MaxText knows after the one it
    refuses): the flag it names first is the one refused."""
    fs = launch.flags
    entries = resolved(fs)
    order = {k: i for i, k in enumerate(entries)}
    message = answer["message"]
    located = {p[0] for p in answer.get("locs", []) if p}
    named: dict = {}  # key -> where the error names it (-1: its pydantic location)
    for k in entries:
        if k in located or k.split(".")[0] in located:
            named[k] = -1
        elif found := re.search(_WORD.format(re.escape(k)), message):
            named[k] = found.start()
    keys = sorted(named, key=named.__getitem__)
    known = fs.schema.fields if fs.schema is not None else entries
    if sum(1 for w in set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", message)) if w in known) > MAX_NAMED:
        keys = keys[:1]  # a list of keys (MaxText's valid ones): the refusal is of the key named first
    env = [(n, s) for n, _, s in launch.env if re.search(_WORD.format(re.escape(n)), message)]
    keys.sort(key=lambda k: order[k])
    places = [(f"'{k}' set here", entries[k].value.span) for k in keys] + [(f"{n} set here", s) for n, s in env]
    span = places[-1][1] if places else fs.span
    shown = message if len(message) <= MAX_SHOWN else message[:MAX_SHOWN] + "…"
    where = (f"on {case['devices']} CPU device{'s' if case['devices'] != 1 else ''}"
             + (f", {case['slices']} slices" if case["slices"] > 1 else "") if case["mesh"] else "without a slice")
    notes = [f"MaxText {oracle.shown} ({where})"] if oracle is not None else []
    return Diagnostic("E0360", f"MaxText's config loader refuses this flag set: {answer['type']}: {shown}", span,
                      related=(*places[:-1], ("MaxText started here", launch.span)), notes=tuple(notes),
                      hint="change the flags MaxText names; the oracle ran MaxText's own pyconfig.initialize")

