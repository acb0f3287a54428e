"""The ``finmath_bwrap`` backend's sandbox: the bubblewrap command line and its user namespace.

Everything that decides what a bwrap sandbox is: :class:`BwrapOptions`, the
directories bound into it (:func:`python_binds`), the per-sandbox user namespace
(:func:`sandbox_userns`), the flags (:func:`bwrap_base_argv`) and the warm
worker's command (:func:`worker_argv`). One-off commands use the same flags with
fewer capabilities (``bwrap.run_one_off``).

Isolation of the sandbox (see :func:`bwrap_base_argv` for the exact flags)
--------------------------------------------------------------------------
* Network: ``--unshare-net``. The sandbox has its own network namespace whose
  only interface is a private loopback, so nothing outside is reachable: not
  the internet, not the host's 127.0.0.1, not the host's abstract UNIX sockets.
* Processes: ``--unshare-pid`` (the sandbox sees only its own processes; the
  worker kills all of them but itself and pid 1 after every program),
  ``--die-with-parent`` (the sandbox dies with the evaluating process) and
  ``--new-session`` (no controlling terminal to inject input into).
  ``--unshare-ipc``/``--unshare-uts``/``--unshare-cgroup-try`` as well.
* Users: a user namespace per sandbox (``--userns``, made by
  :func:`_new_userns`), in which only uid/gid 0 (the worker) and 65534 (programs)
  exist, mapped to themselves. Per-user kernel state is per user namespace, so
  the sandbox's 65534 shares none with the host's ``nobody`` or with other
  sandboxes: RLIMIT_NPROC counts only this sandbox's processes, user keyrings
  are its own. (Chosen over a distinct host uid per sandbox, which would need
  uid allocation and files owned by odd uids, and over seccomp, which cannot
  separate process counts.)
* Per program (``runner.py --fresh-namespaces``): the program's process makes
  its own user, IPC, network and mount namespaces (as uid 65534, no privilege
  needed) and session keyring, and its directory is a private tmpfs (4096
  inodes). SysV IPC, POSIX message queues, abstract UNIX sockets, keys and files
  all die with the program: the next one starts from a clean slate, retained
  shared memory cannot outlive it, and nothing is deleted file by file.
* Filesystem: an empty root (remounted read-only at the end) with read-only
  binds of exactly /usr (+ the /bin, /lib, /lib64, /sbin symlinks or dirs), the
  interpreter prefix ``sys.base_prefix`` and, of the site directories that hold
  numpy, numpy_financial, scipy, sympy and mpmath (on PYTHONPATH in the order of
  the host's sys.path, so the same copies load), only those libraries' own
  entries (each distribution's top-level entries as its ``RECORD`` lists them:
  the package, its ``.libs``, its metadata), each at its own path (e.g.
  ``/root/.pyenv/versions/3.11.7`` and
  ``/work/main/.venv/lib/python3.11/site-packages/numpy``: their parents exist in
  the sandbox only as empty directories), plus the runner at
  ``/opt/finmath/runner.py``, bound alone. Every site directory inside /usr or an
  interpreter prefix is an empty read-only tmpfs (with the libraries bound back
  where they live there), so no other installed package, and no file of
  ``finmath_tasks`` (a wheel puts its package data, golds included, beside
  numpy), is visible (:class:`PythonView`). Fresh ``/proc`` and a minimal ``/dev``. ``/tmp`` is
  a private tmpfs with a size limit (``--size``), mounted *before* the binds
  (bwrap mounts in order), so an environment living under /tmp stays visible.
  The worker imports every promised library at start and refuses to start,
  naming the one that fails. Nothing else of the host: not
  /etc, /home, the rest of /root or /work, the current directory or the
  project. Binds are ``nosuid``.
* Environment: ``--clearenv`` and an explicit minimal environment, so no
  variable of the evaluating process (API keys!) reaches the sandbox; the
  bwrap process itself is also started with a minimal environment.
* Privileges: ``--cap-drop ALL``; the worker gets back only CAP_SETUID,
  CAP_SETGID (to switch each program's process to uid/gid 65534), CAP_KILL
  (to kill leftovers) and CAP_CHOWN (to hand each program its directory). Programs run as 65534 with no capabilities and
  no_new_privs; one-off commands likewise (through ``runner.py --exec``).
* Per program (enforced by ``runner.py``): its own forked process, rlimits on
  CPU, address space, file size, open files and process count, a wall-clock
  timeout, a fresh working directory, capped stdout/stderr.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from finmath_tasks.sandbox import RUNNER_PATH_IN_SANDBOX, hidden_sandbox, runner_source_path
from finmath_tasks.sandbox.protocol import SANDBOX_UID
from finmath_tasks.sandbox.worker import SANDBOX_ENV, WorkerOptions

SANDBOX_LIBRARIES = ("numpy", "numpy_financial", "scipy", "sympy", "mpmath")
"""Modules whose site-packages directories are bound read-only into the sandbox."""

WORKER_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN")
ONE_OFF_CAPS = ("CAP_SETUID", "CAP_SETGID")
HOST_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
"""The whole environment of the bwrap process itself (nothing of the evaluating process)."""
_USERNS_FD = "{userns-fd}"
"""Placeholder in :func:`bwrap_base_argv` for the descriptor of the sandbox's user
namespace; :func:`sandbox_userns` fills it in when the command is started."""


@dataclass(frozen=True)
class BwrapOptions(WorkerOptions):
    """Limits of a bwrap sandbox (``tmpfs_mb``: its private /tmp, per worker)."""

    cgroup: bool = True
    """Also confine each worker sandbox to a memory+pids cgroup when the host allows
    it (best effort: skipped silently where cgroups are not writable)."""
    cgroup_memory_mb: int | None = None
    """Memory limit of the whole sandbox (default: memory_mb + tmpfs_mb + 512)."""
    cgroup_pids: int = 64


def bwrap_binary() -> str | None:
    """bwrap as the user's ``PATH`` finds it (a machine without it on ``PATH`` has no
    bwrap sandbox: its tests skip and ``auto`` does not choose it)."""
    if hidden_sandbox("bwrap"):
        return None
    return shutil.which("bwrap")


def interpreter() -> str:
    """The real interpreter behind sys.executable (a venv's python is a symlink)."""
    return os.path.realpath(sys.executable)


SITE_DIR_NAMES = ("site-packages", "dist-packages")
_SITE_GLOBS = tuple(
    f"{local}lib*/python*/{name}" for local in ("", "local/") for name in SITE_DIR_NAMES
)
"""Where installers put packages under a prefix (``/usr``, an interpreter's prefix)."""
_NEVER_BOUND = ("finmath_tasks", "__editable__")
"""Entries of a site directory never bound, whatever claims them: this package's own files
(its modules, package data, metadata, an editable install's finder)."""


@dataclass(frozen=True)
class PythonView:
    """What of the host's Python the sandbox sees.

    ``roots``: directories bound whole (the interpreter's prefixes: its standard library).
    ``sites``: site directories (``site-packages``, ``dist-packages``) and, in each, the
    entries bound into it: only the files of the libraries programs may import
    (:data:`SANDBOX_LIBRARIES`; each distribution's own top-level entries, from its
    ``RECORD``). Every site directory under a bound root is emptied first (``masked``), so
    no other package, no package data and nothing of ``finmath_tasks`` is visible: the
    sandbox runs only the runner, bound alone at :data:`RUNNER_PATH_IN_SANDBOX`.
    ``pythonpath``: the library sites, in the order of the host's ``sys.path``."""

    roots: tuple[str, ...]
    sites: tuple[tuple[str, tuple[str, ...]], ...]
    masked: tuple[str, ...]
    pythonpath: tuple[str, ...]


def _top_level(site: str, origin: str) -> str | None:
    """The entry of ``site`` that holds the module at ``origin`` (``numpy``, ``six.py``)."""
    relative = os.path.relpath(origin, site)
    top = relative.split(os.sep, 1)[0]
    return None if top in ("..", ".") else top


def _distribution_tops(dist: importlib.metadata.Distribution) -> set[str]:
    """The top-level entries a distribution's ``RECORD`` lists (none if it cannot be read)."""
    try:
        files = dist.files or []
    except OSError:
        return set()
    return {f.parts[0] for f in files if f.parts and f.parts[0] not in ("..", "__pycache__")}


def _library_entries(site: str, top: str, module: str) -> set[str]:
    """The entries of ``site`` that make up the library whose top-level entry is ``top``:
    those its distribution's ``RECORD`` lists (the package, its ``.libs``, its metadata), or
    without one, the package and ``<module>.libs``. Files at the top of ``__pycache__`` and
    paths outside ``site`` (scripts) are left out.

    The distribution named like the module is read first (numpy, scipy, sympy, mpmath and
    numpy-financial all are); only when its ``RECORD`` does not hold ``top`` is every
    distribution of the site read (a few hundred ``RECORD`` files: seconds, not
    milliseconds, on each new process that starts a sandbox)."""
    entries = {top}
    if os.path.isdir(os.path.join(site, f"{module}.libs")):
        entries.add(f"{module}.libs")
    try:
        named = list(importlib.metadata.distributions(name=module, path=[site]))
    except (OSError, ValueError):
        named = []
    owners = [tops for tops in map(_distribution_tops, named) if top in tops]
    if not owners:
        try:
            found = list(importlib.metadata.distributions(path=[site]))
        except OSError:
            found = []
        owners = [tops for tops in map(_distribution_tops, found) if top in tops]
    for tops in owners:
        entries |= tops
    return {
        e
        for e in entries
        if not any(n in e for n in _NEVER_BOUND) and os.path.lexists(os.path.join(site, e))
    }


def _site_dirs_under(roots: list[str]) -> list[str]:
    """The site directories inside ``roots`` (each root's usual layouts, and any entry of
    ``sys.path`` named like one), real paths."""
    found: list[str] = []
    for root in roots:
        for pattern in _SITE_GLOBS:
            found.extend(glob.glob(os.path.join(root, pattern)))
    found.extend(p for p in sys.path if os.path.basename(p) in SITE_DIR_NAMES)
    real = [os.path.realpath(p) for p in found if os.path.isdir(p)]
    return [p for p in dict.fromkeys(real) if any(under(p, r) for r in roots)]


@functools.lru_cache(maxsize=1)
def python_binds() -> PythonView:
    """The sandbox's view of the host's Python (:class:`PythonView`): the interpreter's
    prefixes, and of the site directories only the libraries programs may use, located
    without importing them."""
    roots: list[str] = []
    for prefix in (sys.base_prefix, sys.base_exec_prefix, os.path.dirname(interpreter())):
        real = os.path.realpath(prefix)
        if real not in roots:
            roots.append(real)
    sites: dict[str, set[str]] = {}
    for name in SANDBOX_LIBRARIES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.origin:
            continue
        origin = spec.origin
        if spec.submodule_search_locations:  # a package: origin is .../name/__init__.py
            origin = os.path.dirname(origin)
        site = os.path.realpath(os.path.dirname(origin))
        top = _top_level(site, os.path.realpath(origin)) or os.path.basename(origin)
        sites.setdefault(site, set()).update(_library_entries(site, top, name))
    # PYTHONPATH in the order of our sys.path, so the sandbox imports the same copies
    order = [os.path.realpath(p) for p in sys.path]
    ordered = sorted(sites, key=lambda d: order.index(d) if d in order else len(order))
    masked = _site_dirs_under([*roots, "/usr"])
    masked += [d for d in ordered if d not in masked and any(under(d, r) for r in roots)]
    return PythonView(
        roots=tuple(roots),
        sites=tuple((d, tuple(sorted(sites[d]))) for d in ordered),
        masked=tuple(masked),
        pythonpath=tuple(ordered),
    )


def _new_userns() -> int:
    """A fresh user namespace in which uid/gid 0 and 65534 are themselves; its fd.

    One per sandbox: the sandbox's uid 65534 then shares no per-user state with
    the host's ``nobody`` or with other sandboxes (process counts for
    RLIMIT_NPROC, user keyrings), while the worker (uid 0 in it, with only the
    capabilities bwrap leaves it, which are scoped to this namespace) can still
    switch programs to 65534 and hand them files. util-linux ``unshare --user``
    makes the namespace and waits on its stdin; we (root) write its maps, keep a
    handle on the namespace and let it exit. Not ``os.fork``: Python code in a
    fork of the multi-threaded evaluating process can deadlock on a lock another
    thread held at the fork (and with it the whole run).
    """
    unshare = shutil.which("unshare") or "/usr/bin/unshare"
    holder = subprocess.Popen(
        [unshare, "--user", "--", "/bin/sh", "-c", "echo ready; read _"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        close_fds=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        if holder.stdout.readline() != b"ready\n":
            reason = (holder.stderr.read() if holder.stderr else b"").decode(errors="replace")
            raise OSError(f"cannot create a user namespace for the sandbox: {reason.strip()}")
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{holder.pid}/{name}", "w") as fh:
                fh.write(f"0 0 1\n{SANDBOX_UID} {SANDBOX_UID} 1\n")
        return os.open(f"/proc/{holder.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        holder.stdin.close()
        try:
            holder.wait(timeout=5)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()
        for stream in (holder.stdout, holder.stderr):
            if stream is not None:
                stream.close()


@contextlib.contextmanager
def sandbox_userns(argv: list[str]) -> Iterator[tuple[list[str], tuple[int, ...]]]:
    """``argv`` with a fresh user namespace filled in, and the fds to pass."""
    if _USERNS_FD not in argv:
        yield argv, ()
        return
    fd = _new_userns()
    try:
        yield [str(fd) if arg == _USERNS_FD else arg for arg in argv], (fd,)
    finally:
        os.close(fd)


def under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def bwrap_base_argv(
    options: BwrapOptions,
    caps: tuple[str, ...],
    *,
    extra_binds: tuple[tuple[str, str], ...] = (),
    env: dict[str, str] | None = None,
    chdir: str = "/tmp",
) -> list[str]:
    """The bwrap command line up to (not including) the command to run."""
    bwrap = bwrap_binary() or "bwrap"
    argv = [
        bwrap,
        "--userns", _USERNS_FD,
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname", "finmath-sandbox",
        "--die-with-parent", "--new-session",
        "--cap-drop", "ALL",
    ]  # fmt: skip
    for cap in caps:
        argv += ["--cap-add", cap]
    argv.append("--clearenv")
    view = python_binds()
    full_env = {**SANDBOX_ENV, "PYTHONPATH": ":".join(view.pythonpath)}
    full_env.update(env or {})
    for key, value in full_env.items():
        argv += ["--setenv", key, value]

    bound: list[str] = ["/usr"]
    made: set[str] = {"/"}
    argv += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
            made.add(top)
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
            bound.append(top)

    def ensure_parents(path: str) -> None:
        parents = []
        parent = os.path.dirname(path)
        while parent not in made and not any(under(parent, b) for b in bound):
            parents.append(parent)
            parent = os.path.dirname(parent)
        for directory in reversed(parents):
            argv.extend(["--perms", "0755", "--dir", directory])
            made.add(directory)

    # bwrap mounts in order: the private /tmp comes before the binds, so that a
    # Python environment living under /tmp (a CI clone, tox) is bound on top of
    # it instead of being hidden by it
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--size", str(options.tmpfs_mb << 20), "--perms", "0755", "--tmpfs", "/tmp"]
    made.add("/tmp")
    for directory in view.roots:
        if any(under(directory, b) for b in bound) or not os.path.isdir(directory):
            continue
        ensure_parents(directory)
        argv += ["--ro-bind", directory, directory]
        bound.append(directory)
    # every site directory the roots (or /usr) hold is emptied: no package of the host,
    # no package data (ours: finmath_tasks/tasks/*/data) reaches the sandbox; then only
    # the libraries' own entries are bound back into the sites that hold them
    masked = [d for d in view.masked if any(under(d, b) for b in bound)]
    for directory in masked:
        argv += ["--perms", "0755", "--tmpfs", directory]
    for site, entries in view.sites:
        if site not in masked:
            if any(under(site, b) for b in bound):
                continue  # a site inside a bound root that is not masked: cannot happen
            ensure_parents(site)
            argv += ["--perms", "0755", "--dir", site]
            made.add(site)
        for entry in entries:
            source = os.path.join(site, entry)
            argv += ["--ro-bind", os.path.realpath(source), source]
    for directory in masked:
        argv += ["--remount-ro", directory]
    ensure_parents(RUNNER_PATH_IN_SANDBOX)
    argv += ["--ro-bind", str(runner_source_path()), RUNNER_PATH_IN_SANDBOX]
    for source, dest in extra_binds:
        argv += ["--bind", source, dest]
    argv += ["--remount-ro", "/", "--chdir", chdir]
    return argv


def sandbox_python_argv() -> list[str]:
    """How the sandbox starts the runner (the real interpreter, no user site)."""
    return [interpreter(), "-s", "-B", RUNNER_PATH_IN_SANDBOX]


WORKER_ENV = {"PYTHONMALLOC": "malloc"}
"""Worker only: objects in the malloc heap, which the worker collapses into huge
pages after its imports (much cheaper forks; see runner._collapse_to_huge_pages)."""


def worker_argv(options: BwrapOptions) -> list[str]:
    return [
        *bwrap_base_argv(options, WORKER_CAPS, env=WORKER_ENV),
        "--",
        *sandbox_python_argv(),
        *options.worker_args(),
        "--own-pidns",
        "--fresh-namespaces",
    ]
