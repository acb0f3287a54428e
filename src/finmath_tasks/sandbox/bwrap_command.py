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
  interpreter prefix ``sys.base_prefix`` and the site-packages directories
  that hold numpy, numpy_financial, scipy, sympy and mpmath (on PYTHONPATH in
  the order of the host's sys.path, so the same copies load), each at its own
  path (e.g. ``/root/.pyenv/versions/3.11.7`` and
  ``/work/main/.venv/lib/python3.11/site-packages``: their parents exist in the
  sandbox only as empty directories), plus the runner at
  ``/opt/finmath/runner.py``. Fresh ``/proc`` and a minimal ``/dev``. ``/tmp`` is
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


@functools.lru_cache(maxsize=1)
def python_binds() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(directories to bind read-only, PYTHONPATH entries) for the sandbox's Python.

    The interpreter prefix plus the site-packages directories holding the
    libraries programs may use, located without importing them.
    """
    dirs: list[str] = []
    for prefix in (sys.base_prefix, sys.base_exec_prefix, os.path.dirname(interpreter())):
        real = os.path.realpath(prefix)
        if real not in dirs:
            dirs.append(real)
    site_dirs: list[str] = []
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
        if site not in site_dirs:
            site_dirs.append(site)
    # PYTHONPATH in the order of our sys.path, so the sandbox imports the same copies
    order = [os.path.realpath(p) for p in sys.path]
    site_dirs.sort(key=lambda d: order.index(d) if d in order else len(order))
    return tuple(dirs + [d for d in site_dirs if d not in dirs]), tuple(site_dirs)


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
    _, pythonpath = python_binds()
    full_env = {**SANDBOX_ENV, "PYTHONPATH": ":".join(pythonpath)}
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
    binds, _ = python_binds()
    for directory in binds:
        if any(under(directory, b) for b in bound) or not os.path.isdir(directory):
            continue
        ensure_parents(directory)
        argv += ["--ro-bind", directory, directory]
        bound.append(directory)
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
