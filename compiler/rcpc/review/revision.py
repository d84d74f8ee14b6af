"""A workspace as it was at a git revision, for ``rcpc diff --rev REF`` (docs/review.md).

The revision's files are read from git's object database only (``git ls-tree`` and
``git cat-file --batch``) and written into a temporary directory: the work tree, the index
and every output directory are never touched, and uncommitted changes do not leak in. Files
are written as git stores them (no smudge filters or line-end conversion, as rcpc reads
bytes); symlinks stay symlinks; submodules are skipped. Only the workspace's own subtree is
written, plus the files its ``rcp.toml`` names elsewhere in the repository; a configured
file outside the repository (not versioned with it) is read where it is now.

The revision is compiled by the rcpc that is running, not the one committed at the revision:
:func:`own_files_differ` says whether rcpc's own source (when it lives in the same
repository) differs between the two. rcpc's standard library (``@rcpc//``) is the exception:
in rcpc's own repository, the revision's recipes load the revision's standard library.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import tempfile
import tomli
from pathlib import Path

import attrs

from rcpc.core import record
from rcpc.core.diagnostics import error
from rcpc.core.envvars import for_subprocess
from rcpc.core.limits import MAX_FILE_BYTES, MAX_SCHEMA_BYTES
from rcpc.domain import stdlib
from rcpc.domain.workspace import CONFIG_NAME, SCHEMA_DIR, Workspace


@attrs.frozen
class Revision:
    """A materialised revision: ``rev`` as given, its ``commit`` id, the repository's
    ``top`` directory and the workspace ``prefix`` inside it (``""`` at the top)."""

    rev: str
    commit: str
    top: Path
    prefix: str


def _git(top: Path, *args: str, data: bytes | None = None) -> bytes:
    """Run git read-only in ``top``; returns stdout. ``E0615`` when git fails."""
    env = for_subprocess(GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    try:
        done = subprocess.run(["git", "-C", str(top), *args], input=data, capture_output=True, env=env)
    except OSError as exc:
        raise error("E0615", f"cannot run git: {exc.strerror or exc}", None,
                    hint="rcpc diff --rev reads the revision with git; install git") from None
    if done.returncode != 0:
        raise _GitFailed(done.stderr.decode("utf-8", "replace").strip())
    return done.stdout


class _GitFailed(Exception):
    pass


def find(root: Path, rev: str) -> Revision:
    """The revision ``rev`` of the repository holding workspace ``root``. ``E0615`` when the
    workspace is not in a git repository or ``rev`` names no commit."""
    try:
        top = Path(_git(root, "rev-parse", "--show-toplevel").decode("utf-8").strip()).resolve()
    except _GitFailed:
        raise error("E0615", f"--rev {rev}: the workspace is not in a git repository", None,
                    hint="rcpc diff --rev compares a git revision with the work tree") from None
    if rev.startswith("-"):
        raise error("E0615", f"--rev {rev}: not a revision", None, hint="name a commit: HEAD~1, main, a tag or an id")
    try:
        commit = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}")
    except _GitFailed:
        raise error("E0615", f"--rev {rev}: no such commit", None,
                    hint="name a commit: HEAD~1, main, a tag or an id (git log --oneline lists them)") from None
    prefix = root.resolve().relative_to(top).as_posix()
    return Revision(rev, commit.decode().strip(), top, "" if prefix == "." else prefix)


def _tree(rev: Revision, path: str = "") -> list[tuple[str, str, int, str]]:
    """(mode, object id, size in bytes, path) of every file of the commit under ``path`` (all
    when empty); the size is 0 for a submodule."""
    args = ["ls-tree", "-r", "-z", "-l", "--full-tree", rev.commit]
    if path:
        args += ["--", path]
    out = []
    for item in _git(rev.top, *args).split(b"\0"):
        if item:
            meta, name = item.split(b"\t", 1)
            mode, _, oid, size = meta.decode().split()
            out.append((mode, oid, int(size) if size.isdigit() else 0, name.decode("utf-8", "surrogateescape")))
    return out


# The largest file rcpc reads from a workspace (a schema file); a larger blob is written as a
# sparse file of its size, which every read refuses on its size alone (rcpc.core.files), as it would
# refuse the work tree's file: a huge blob costs neither memory nor disk.
_READ_LIMIT = max(MAX_FILE_BYTES, MAX_SCHEMA_BYTES)
_SYMLINK_MAX = 4096  # PATH_MAX of Linux: no symlink holds a longer target


def _unsafe(rev: Revision, name: str, why: str):
    return error("E0615", f"--rev {rev.rev}: the revision holds a path git would not check out: {name[:200]!r} "
                 f"({why})", None, hint="nothing was written outside a temporary directory; compare with "
                 "another revision")


def _write(rev: Revision, dest: Path, files: list[tuple[str, str, int, str]]) -> None:
    """Write ``files`` (from :func:`_tree`) under ``dest``, a directory only this function
    writes. As ``git checkout`` (its ``verify_path``), a path with an empty, ``.``, ``..`` or
    ``.git`` component, or one that leads through a symlink or a file the revision also
    holds, is refused (``E0615``): nothing is ever written outside ``dest``."""
    wanted = []
    for mode, oid, size, name in files:
        if mode == "160000":  # a submodule: not part of this repository's files
            continue
        parts = name.split("/")
        bad = next((p for p in parts if p in ("", ".", "..") or p.lower() == ".git" or "\0" in p), None)
        if bad is not None:
            raise _unsafe(rev, name, f"a path component {bad!r}")
        at = dest
        for part in parts[:-1]:  # directories made here, never through a symlink or a file
            at = at / part
            try:
                os.mkdir(at)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(at).st_mode):
                    raise _unsafe(rev, name, f"{part!r} is a symlink or a file in the revision") from None
        if mode == "120000" and size > _SYMLINK_MAX:
            raise _unsafe(rev, name, f"a symlink to a path of {size} bytes")
        wanted.append((mode, oid, size, dest / name, name))
    small = [oid for mode, oid, size, *_ in wanted if size <= _READ_LIMIT]
    blobs = _blobs(rev, small)
    for mode, oid, size, target, name in wanted:
        try:
            if mode == "120000":
                os.symlink(next(blobs).decode("utf-8", "surrogateescape"), target)
                continue
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC,
                         0o755 if mode == "100755" else 0o644)
        except FileExistsError:
            raise _unsafe(rev, name, "the revision holds this path twice") from None
        except OSError as exc:  # a name or link too long for this file system
            raise _unsafe(rev, name, exc.strerror or str(exc)) from None
        with os.fdopen(fd, "wb") as f:
            if size <= _READ_LIMIT:
                f.write(next(blobs))
            else:
                f.truncate(size)


def _blobs(rev: Revision, oids: list[str]):
    """The content of each blob, in order, read from one ``git cat-file --batch`` as it is
    consumed (the ids are fed from a temporary file: no pipe can fill up both ways)."""
    if not oids:
        return

    with tempfile.TemporaryFile() as ids:
        ids.write("".join(o + "\n" for o in oids).encode())
        ids.seek(0)
        env = for_subprocess(GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
        with subprocess.Popen(["git", "-C", str(rev.top), "cat-file", "--batch"], stdin=ids,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env) as git:
            try:
                for _ in oids:
                    head = git.stdout.readline().decode("utf-8", "replace").split()
                    if len(head) != 3 or not head[2].isdigit():  # "<oid> missing" (a partial clone)
                        raise _GitFailed(f"cannot read object {' '.join(head)}")
                    size = int(head[2])
                    data = git.stdout.read(size)
                    if len(data) != size or git.stdout.read(1) != b"\n":
                        raise _GitFailed(f"git cat-file ended inside object {head[0]}")
                    yield data
            finally:
                git.kill()


def materialise(rev: Revision, dest: Path, live: Workspace) -> Workspace:
    """Write the revision's workspace into the empty directory ``dest`` (in the repository's
    layout) and return it as a :class:`Workspace`; ``live`` is the work tree's workspace
    (configured files outside the repository are read from there). ``E0615`` when git fails
    or the revision has no ``rcp.toml`` where the work tree has one."""
    try:
        return _materialise(rev, dest.resolve(), live)
    except _GitFailed as exc:
        raise error("E0615", f"--rev {rev.rev}: git cannot read the revision", None, notes=(str(exc),),
                    hint="name a commit, branch or tag of this repository (git rev-parse REV)") from None


def _materialise(rev: Revision, dest: Path, live: Workspace) -> Workspace:
    _write(rev, dest, _tree(rev, rev.prefix))
    root = dest / rev.prefix if rev.prefix else dest
    if not (root / CONFIG_NAME).exists() and live.config is not None:
        raise error("E0615", f"--rev {rev.rev}: {CONFIG_NAME} is not in the workspace at that revision", None,
                    hint="compare with a revision that has the workspace")
    ws = Workspace.find(root)
    raw = _configured_paths(ws)

    def located(path: Path | None, spelled: str | None) -> Path | None:
        """A configured file, as ``spelled`` in the revision's rcp.toml: an absolute path
        outside the repository is itself; one inside it, or a relative path inside it, is
        the revision's file; a relative path leading out of the repository is read from the
        work tree, relative to its workspace root."""
        if path is None or spelled is None or SCHEMA_DIR in path.parents:  # builtin:NAME, the running rcpc's
            return path
        if Path(spelled).is_absolute():
            try:
                inside = Path(spelled).resolve().relative_to(rev.top)
            except ValueError:
                return path  # outside the repository: the same file at every revision
            path = dest / inside
        rel = os.path.relpath(path, dest)
        if rel.startswith(os.pardir):
            return live.real(live.root / spelled)
        if not os.path.lexists(path):
            _write(rev, dest, _tree(rev, Path(rel).as_posix()))
        return path

    kube = tuple(located(p, r) for p, r in zip(ws.kube_schemas, raw.get("kube_schemas", ())))
    return record.evolve(ws, maxtext_schema=located(ws.maxtext_schema, raw.get("maxtext_schema")), kube_schemas=kube,
                         stdlib_dir=_stdlib_at(rev, dest))


def _stdlib_at(rev: Revision, dest: Path) -> Path | None:
    """The revision's standard library (written under ``dest``) when the running rcpc's
    (:data:`rcpc.domain.stdlib.DIRECTORY`) is a directory of this repository that the
    revision has: in rcpc's own repository a change to ``@rcpc//`` files is a change of the
    recipes that load them, reviewed as one. None (the running rcpc's) otherwise: in any
    other repository the standard library is the installed package's, the same on both
    sides."""
    try:
        rel = stdlib.DIRECTORY.relative_to(rev.top).as_posix()
    except ValueError:
        return None
    if not os.path.lexists(dest / rel):  # else written with the workspace's subtree
        files = _tree(rev, rel)
        if not files:
            return None
        _write(rev, dest, files)
    real = (dest / rel).resolve()
    return real if dest in real.parents and real.is_dir() else None  # never through a symlink out


def _configured_paths(ws: Workspace) -> dict:
    """The file names as the workspace's rcp.toml spells them: ``maxtext_schema`` (or its
    older key ``maxtext_base``), and the ``kube_schemas`` list in order (its entries in
    the order :class:`Workspace` read them)."""
    try:
        data = tomli.loads(ws.config_bytes.decode("utf-8")) if ws.config_bytes else {}
    except (UnicodeDecodeError, tomli.TOMLDecodeError):  # Workspace.find read it: not reached
        return {}
    maxtext = data.get("maxtext_schema", data.get("maxtext_base"))
    return {"maxtext_schema": maxtext if isinstance(maxtext, str) else None,
            "kube_schemas": tuple(v for v in data.get("kube_schemas", ()) if isinstance(v, str))}


def own_files_differ(rev: Revision, package: Path | None = None) -> list[str]:
    """rcpc's own source files (paths in the repository) that differ between the revision
    and what is running now (``package``: rcpc's package directory, this one by default);
    empty when they are the same or rcpc is not in the repository. The standard library's
    files are not counted: each side loads its own (:func:`_stdlib_at`)."""
    package = (package or Path(__file__).parent.parent).resolve()
    try:
        rel = package.relative_to(rev.top).as_posix()
    except ValueError:
        return []
    try:
        then = {name: oid for mode, oid, _, name in _tree(rev, rel)}
    except _GitFailed:
        return []
    algorithm = "sha256" if any(len(oid) == 64 for oid in then.values()) else "sha1"
    now = {}
    for p in sorted(package.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            data = p.read_bytes()  # git's blob id: the hash of "blob <size>\0" + content
            now[p.relative_to(rev.top).as_posix()] = hashlib.new(algorithm, b"blob %d\0" % len(data) + data).hexdigest()
    library = f"{rel}/{stdlib.DIRECTORY.name}/"
    return sorted(n for n in then.keys() | now.keys() if then.get(n) != now.get(n) and not n.startswith(library))
