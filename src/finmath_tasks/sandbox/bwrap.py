"""Bubblewrap backend: a warm, isolated Python worker for model-written programs.

Host side of the program executor (the in-sandbox side is ``runner.py``; the
host-side protocol, request policy and Inspect dispatch shared with the Docker
backend are in ``worker.py``). A :class:`BwrapWorker` starts ``runner.py
--worker`` under ``bwrap`` and talks to it over two pipes (JSON lines);
:class:`BwrapPool` holds a few of them; the Inspect sandbox ``finmath_bwrap``
(:class:`FinmathBwrapSandboxEnvironment`) routes the runner command to a pool
and runs anything else in a fresh one-off bwrap with the same isolation.

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
* Host side (``worker.WarmWorker``): a wall-clock guard per request (timeout +
  margin); a worker that hangs, dies, or answers garbage or out of sequence is
  killed (its whole bwrap process group) and transparently restarted (the
  request gets an error result, the next one a fresh worker); a worker that
  exits with status 75 between requests (it could not clean up after a program)
  gets the request resent to a fresh sandbox; the bwrap process group is killed
  on close.

The worker runs with ``PYTHONMALLOC=malloc`` so that it can move its heap to
huge pages after its imports, which makes each per-program fork much cheaper
(see ``runner.py``, "Speed").

Memory: besides each program's RLIMIT_AS, every worker sandbox is put in its
own memory+pids cgroup (``memory_mb + tmpfs_mb + 512`` MiB, 64 tasks) when the
host's cgroups are writable (cgroup v2 with delegated controllers, or v1);
program processes are the OOM killer's first choice (``oom_score_adj`` 1000).

Known limits: where no cgroup can be created (and for one-off commands), the
worst-case memory of one sandbox is about ``nproc`` x ``memory_mb``; there is
no seccomp filter, so programs reach the kernel's full system-call surface (as
an unprivileged user in fresh namespaces, with no_new_privs).

Files (``write_file``/``read_file``): the scratch directory belongs to the
sandbox user, who may swap its contents for symbolic links at any time; the
host opens each path component relative to the previous one with O_NOFOLLOW,
changes owners with fchown on descriptors, and only opens regular files with
one link.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import importlib.util
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, ClassVar

from inspect_ai.util import (
    ExecResult,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    sandboxenv,
)

from finmath_tasks.sandbox import (
    HIDE_SANDBOXES_ENV,
    RUNNER_PATH_IN_SANDBOX,
    hidden_sandbox,
    runner_source_path,
)
from finmath_tasks.sandbox.protocol import SANDBOX_UID
from finmath_tasks.sandbox.worker import (
    DEFAULT_QUEUE_TIMEOUT,
    SANDBOX_ENV,
    WarmWorker,
    WorkerConfig,
    WorkerOptions,
    WorkerPool,
    WorkerSandboxEnvironment,
    WorkerStartError,
    config_model,
    default_pool_size,
    read_limit_exceeded,
)

SANDBOX_WORKDIR = "/tmp/work"
"""Per-sample scratch directory inside one-off commands (write_file/read_file)."""

SANDBOX_LIBRARIES = ("numpy", "numpy_financial", "scipy", "sympy", "mpmath")
"""Modules whose site-packages directories are bound read-only into the sandbox."""

WORKER_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN")
ONE_OFF_CAPS = ("CAP_SETUID", "CAP_SETGID")
_HOST_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
_RESPONSE_LIMIT = 32 << 20
_SCRATCH_PREFIX = "finmath-bwrap-"
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


# --------------------------------------------------------------------------- #
# command line
# --------------------------------------------------------------------------- #


def _bwrap_binary() -> str | None:
    """bwrap as the user's ``PATH`` finds it (a machine without it on ``PATH`` has no
    bwrap sandbox: its tests skip and ``auto`` does not choose it)."""
    if hidden_sandbox("bwrap"):
        return None
    return shutil.which("bwrap")


def _interpreter() -> str:
    """The real interpreter behind sys.executable (a venv's python is a symlink)."""
    return os.path.realpath(sys.executable)


@functools.lru_cache(maxsize=1)
def python_binds() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(directories to bind read-only, PYTHONPATH entries) for the sandbox's Python.

    The interpreter prefix plus the site-packages directories holding the
    libraries programs may use, located without importing them.
    """
    dirs: list[str] = []
    for prefix in (sys.base_prefix, sys.base_exec_prefix, os.path.dirname(_interpreter())):
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


def _under(path: str, parent: str) -> bool:
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
    bwrap = _bwrap_binary() or "bwrap"
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
        while parent not in made and not any(_under(parent, b) for b in bound):
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
        if any(_under(directory, b) for b in bound) or not os.path.isdir(directory):
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
    return [_interpreter(), "-s", "-B", RUNNER_PATH_IN_SANDBOX]


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


@functools.lru_cache(maxsize=1)
def _bwrap_check() -> tuple[bool, str]:
    binary = _bwrap_binary()
    if binary is None:
        if hidden_sandbox("bwrap"):
            return False, f"bwrap hidden by {HIDE_SANDBOXES_ENV}"
        return False, "bwrap not found on PATH (apt-get install bubblewrap)"
    if not runner_source_path().is_file():
        return False, f"runner not found at {runner_source_path()}"
    argv = [
        *bwrap_base_argv(BwrapOptions(), WORKER_CAPS),
        "--",
        *sandbox_python_argv(),
        "--exec",
        "--require-drop",
        "--",
        _interpreter(),
        "-c",
        "import os; print(os.getuid())",
    ]
    try:
        with sandbox_userns(argv) as (argv, fds):
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                                  env=_HOST_ENV, check=False, pass_fds=fds)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"running bwrap failed: {exc}"
    if proc.returncode != 0 or proc.stdout.strip() != str(SANDBOX_UID):
        detail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return False, f"bwrap test command failed (exit {proc.returncode}): {' | '.join(detail)}"
    return True, f"bubblewrap works ({binary})"


def bwrap_available(refresh: bool = False) -> tuple[bool, str]:
    """Really run a trivial sandboxed command; (True, info) or (False, reason)."""
    if refresh:
        _bwrap_check.cache_clear()
    return _bwrap_check()


def _close_transport(proc: asyncio.subprocess.Process) -> None:
    """Close the subprocess transport while its loop runs (else its __del__
    complains after the loop is closed)."""
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.close()


# --------------------------------------------------------------------------- #
# leftovers of earlier runs
# --------------------------------------------------------------------------- #


def _process_start(pid: int) -> str | None:
    """Start time of process ``pid`` (clock ticks since boot), None if there is none."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else None


def scratch_prefix() -> str:
    """Name prefix of this process's scratch directories: its pid and start time, so
    that a later run can tell a leftover (owner gone, or pid reused) from a live one."""
    pid = os.getpid()
    return f"{_SCRATCH_PREFIX}{pid}-{_process_start(pid) or 0}-"


def remove_stale_scratch(tmp: str | None = None) -> list[Path]:
    """Remove the scratch directories of earlier runs whose owner process is gone.

    Only directories named by :func:`scratch_prefix` (older names record no owner and
    are kept), that are real directories (not symlinks) owned by us or, when we are
    root, the sandbox user; ``shutil.rmtree`` follows no links inside them."""
    uids = {os.geteuid(), SANDBOX_UID} if os.geteuid() == 0 else {os.geteuid()}
    removed = []
    for path in Path(tmp or tempfile.gettempdir()).glob(f"{_SCRATCH_PREFIX}*"):
        owner = path.name[len(_SCRATCH_PREFIX) :].split("-")
        if len(owner) < 3 or not owner[0].isdigit() or not owner[1].isdigit():
            continue
        if _process_start(int(owner[0])) == owner[1]:
            continue  # its owner is alive
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid in uids:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


# --------------------------------------------------------------------------- #
# cgroups (best effort)
# --------------------------------------------------------------------------- #


def _own_cgroups() -> dict[str, str]:
    """controller ("memory", "pids", or "" for cgroup v2) -> our cgroup path."""
    paths: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                paths[controller] = path
    return paths


def _cgroup_mounts() -> dict[str, str]:
    """controller ("memory", "pids", or "" for cgroup v2) -> mount point."""
    mounts: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) < 4:
                continue
            if fields[2] == "cgroup2":
                mounts.setdefault("", fields[1])
            elif fields[2] == "cgroup":
                for option in fields[3].split(","):
                    if option in ("memory", "pids"):
                        mounts.setdefault(option, fields[1])
    return mounts


_CGROUP_JOIN_FAILED = 125
_CGROUP_JOIN = (
    'while [ "$1" != -- ]; do echo 0 > "$1/cgroup.procs" || exit 125; shift; done; shift; exec "$@"'
)


class _Cgroup:
    """Memory and pids limits for one sandbox, in a child of our own cgroup.

    A shell joins it and then execs bwrap (:meth:`wrap`), so every process of the
    sandbox is inside. cgroup v2 is used when our cgroup delegates the memory and pids
    controllers, else cgroup v1's memory (+ pids) hierarchies.
    """

    def __init__(self, memory_bytes: int, pids: int) -> None:
        self.memory_bytes = memory_bytes
        self.pids = pids
        self.dirs: list[Path] = []
        self.reason = ""

    @staticmethod
    def _parent(mounts: dict[str, str], own: dict[str, str], key: str) -> Path | None:
        if key not in mounts:
            return None
        mount = Path(mounts[key])
        nested = mount / own.get(key, "/").lstrip("/")
        return nested if nested.is_dir() else mount

    @staticmethod
    def _remove_stale(parent: Path) -> None:
        """Remove empty groups left by processes that exited without closing."""
        with contextlib.suppress(OSError):
            for group in parent.glob(f"{_SCRATCH_PREFIX}*"):
                owner = group.name[len(_SCRATCH_PREFIX) :].split("-", 1)[0]
                if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                    with contextlib.suppress(OSError):
                        group.rmdir()  # fails (and is kept) if not empty

    def create(self) -> bool:
        name = f"{_SCRATCH_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
        mounts, own = _cgroup_mounts(), _own_cgroups()
        for key in ("", "memory", "pids"):
            parent = self._parent(mounts, own, key)
            if parent is not None:
                self._remove_stale(parent)
        try:
            v2 = self._parent(mounts, own, "")
            delegated = ""
            if v2 is not None:
                with contextlib.suppress(OSError):
                    delegated = (v2 / "cgroup.subtree_control").read_text()
            if v2 is not None and {"memory", "pids"} <= set(delegated.split()):
                group = v2 / name
                group.mkdir()
                self.dirs.append(group)
                (group / "memory.max").write_text(str(self.memory_bytes))
                (group / "pids.max").write_text(str(self.pids))
                with contextlib.suppress(OSError):
                    (group / "memory.swap.max").write_text("0")
                return True
            memory = self._parent(mounts, own, "memory")
            if memory is None:
                self.reason = "no writable memory cgroup"
                return False
            group = memory / name
            group.mkdir()
            self.dirs.append(group)
            (group / "memory.limit_in_bytes").write_text(str(self.memory_bytes))
            with contextlib.suppress(OSError):
                (group / "memory.memsw.limit_in_bytes").write_text(str(self.memory_bytes))
            pids = self._parent(mounts, own, "pids")
            if pids is not None:
                group = pids / name
                group.mkdir()
                self.dirs.append(group)
                (group / "pids.max").write_text(str(self.pids))
            return True
        except OSError as exc:
            self.reason = f"cannot set up a cgroup: {exc}"
            self.remove()
            return False

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run by a shell that first moves itself into the group, then execs
        it (exit status :data:`_CGROUP_JOIN_FAILED` if it cannot join). Not a
        ``preexec_fn``: that runs Python in a fork of the whole evaluating process
        (threads and all), where a lock held by another thread at the fork deadlocks
        the child before exec, and ``Popen`` (called in the event loop's thread by
        asyncio) then waits for that exec forever, freezing the whole run."""
        return ["/bin/sh", "-c", _CGROUP_JOIN, "finmath-cgroup-join", *map(str, self.dirs),
                "--", *argv]  # fmt: skip

    def remove(self, wait: float = 2.0) -> None:
        """Remove the group (retrying while its last processes are exiting)."""
        deadline = time.monotonic() + wait
        for group in reversed(self.dirs):
            while True:
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)
        self.dirs = []


# --------------------------------------------------------------------------- #
# worker and pool
# --------------------------------------------------------------------------- #


class BwrapWorker(WarmWorker):
    """One warm ``runner.py --worker`` inside bubblewrap; one request at a time.

    The request policy (guard, restarts, recycling) is :class:`WarmWorker`'s;
    this class starts bwrap and talks to the worker over its stdin/stdout
    (asyncio subprocess). If it is used from a different event loop than the one
    it was started in, it is restarted.
    """

    def __init__(self, options: BwrapOptions | None = None) -> None:
        self.options: BwrapOptions = options or BwrapOptions()
        super().__init__(self.options)
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr: IO[bytes] | None = None
        self.cgroup: _Cgroup | None = None
        """The worker's cgroup, if one could be set up (kept across restarts)."""
        self._cgroup_tried = False
        _LIVE_WORKERS.add(self)

    @property
    def host_pid(self) -> int | None:
        """Host pid of the running bwrap process (None when not running)."""
        proc = self._proc
        return proc.pid if proc is not None and proc.returncode is None else None

    def _on_new_loop(self) -> None:
        if self._proc is not None:  # its pipes belong to the old loop
            self._kill_now()
            self._proc = None

    def _stderr_tail(self, lines: int = 3, limit: int = 4000) -> str:
        """The last lines the worker (or bwrap) wrote to stderr, for error messages."""
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - limit))
            text = self._stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])

    def _kill_now(self) -> None:
        """SIGKILL the bwrap process group (the sandbox dies with it)."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(OSError):
                kill(proc.pid, signal.SIGKILL)

    async def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.returncode is None and not self._recycle_pending:
            self._proc = proc
            self._kill_now()
            self._proc = None
        with contextlib.suppress(Exception):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5.0)
        except asyncio.TimeoutError:
            self._proc = proc
            self._kill_now()
            self._proc = None
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 5.0)
        _close_transport(proc)
        self._recycle_pending = False

    async def _ensure_started(self) -> None:
        proc = self._proc
        if proc is not None and proc.returncode is None and not self._recycle_pending:
            return
        await self._stop()
        if self._stderr is not None:
            self._stderr.close()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
        argv = worker_argv(self.options)
        if self.options.cgroup and not self._cgroup_tried:
            self._cgroup_tried = True
            opts = self.options
            limit_mb = opts.cgroup_memory_mb or opts.memory_mb + opts.tmpfs_mb + 512
            cgroup = _Cgroup(limit_mb << 20, opts.cgroup_pids)
            self.cgroup = cgroup if cgroup.create() else None
        while True:
            try:
                proc = await self._spawn(argv)
            except OSError as exc:
                raise WorkerStartError(f"cannot run bwrap: {exc}") from exc
            self._proc = proc
            self.starts += 1
            try:
                assert proc.stdout is not None
                line = await asyncio.wait_for(proc.stdout.readline(), self.options.startup_timeout)
                problem = self._accept_ready(line)
            except (asyncio.TimeoutError, ValueError) as exc:
                problem = type(exc).__name__
            if problem is None:
                return
            if self.cgroup is not None and await self._exit_status() == _CGROUP_JOIN_FAILED:
                await self._stop()  # could not join the cgroup: run without it
                await asyncio.to_thread(self.cgroup.remove)
                self.cgroup = None
                continue
            error = self._start_failure(problem)
            await self._stop()
            raise error

    async def _spawn(self, argv: list[str]) -> asyncio.subprocess.Process:
        kwargs: dict[str, Any] = {
            "stdin": asyncio.subprocess.PIPE,
            "stdout": asyncio.subprocess.PIPE,
            "stderr": self._stderr,
            "env": _HOST_ENV,
            "start_new_session": True,
            "limit": _RESPONSE_LIMIT,
        }
        with sandbox_userns(argv) as (argv, kwargs["pass_fds"]):
            if self.cgroup is not None:
                argv = self.cgroup.wrap(argv)
            return await asyncio.create_subprocess_exec(*argv, **kwargs)

    async def _roundtrip(self, payload: bytes, guard: float) -> bytes:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin, proc.stdout

        async def exchange() -> bytes:
            stdin.write(payload)
            await stdin.drain()  # blocks while a stuck worker leaves the pipe full
            return await stdout.readline()

        try:
            return await asyncio.wait_for(exchange(), guard)
        except asyncio.TimeoutError as exc:
            raise TimeoutError(f"no answer within {guard}s") from exc
        except (OSError, ValueError, asyncio.LimitOverrunError, asyncio.IncompleteReadError):
            return b""  # broken pipe or oversized line: a dead worker

    async def _exit_status(self) -> int | None:
        proc = self._proc
        if proc is None:
            return None
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(proc.wait(), 2.0)
        return proc.returncode

    async def _discard(self) -> None:
        await self._stop()

    def _abandon(self) -> None:
        self._kill_now()
        self._proc = None

    async def close(self) -> None:
        if self._loop is not None and self._loop is not asyncio.get_running_loop():
            self.kill()
            return
        await self._stop()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self.cgroup is not None:
            await asyncio.to_thread(self.cgroup.remove)
            self.cgroup = None
            self._cgroup_tried = False

    def kill(self) -> None:
        """Synchronous hard stop (safe from any thread or loop)."""
        self._kill_now()
        self._proc = None
        if self.cgroup is not None:
            self.cgroup.remove(wait=0.5)
            self.cgroup = None
            self._cgroup_tried = False


_LIVE_WORKERS: weakref.WeakSet[BwrapWorker] = weakref.WeakSet()


@atexit.register
def _kill_live_workers() -> None:
    """Safety net for workers never closed: kill them and remove their cgroups."""
    for worker in list(_LIVE_WORKERS):
        with contextlib.suppress(Exception):
            worker.kill()


class BwrapPool(WorkerPool):
    """``size`` BwrapWorkers (default: one per available CPU) shared by concurrent
    requests; see :class:`worker.WorkerPool`."""

    workers: list[BwrapWorker]  # type: ignore[assignment]

    def __init__(
        self,
        size: int | None = None,
        options: BwrapOptions | None = None,
        queue_timeout: float = DEFAULT_QUEUE_TIMEOUT,
    ) -> None:
        size = default_pool_size() if size is None else size
        if size < 1:
            raise ValueError("pool size must be >= 1")
        self.options = options or BwrapOptions()
        super().__init__([BwrapWorker(self.options) for _ in range(size)], queue_timeout)

    async def close(self) -> None:
        for worker in self.workers:
            await worker.close()

    def kill(self) -> None:
        for worker in self.workers:
            worker.kill()


# --------------------------------------------------------------------------- #
# one-off commands
# --------------------------------------------------------------------------- #


class _BoundedReader:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0

    async def consume(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(1 << 16):
            self.data += chunk
            if len(self.data) > 2 * self.limit:
                cut = len(self.data) - self.limit
                self.dropped += cut
                del self.data[:cut]

    def text(self) -> str:
        keep = bytes(self.data[-self.limit :]) if self.limit else b""
        return keep.decode("utf-8", "replace")


async def run_one_off(
    cmd: list[str],
    *,
    options: BwrapOptions,
    scratch_dir: str | None,
    input: str | bytes | None = None,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> ExecResult[str]:
    """Run ``cmd`` in a fresh sandbox as uid 65534 (cold); output is capped."""
    if not cmd:
        raise ValueError("empty command")
    workdir = cwd or SANDBOX_WORKDIR
    if not workdir.startswith("/"):
        workdir = f"{SANDBOX_WORKDIR}/{workdir}"
    binds = ((scratch_dir, SANDBOX_WORKDIR),) if scratch_dir else ()
    if not scratch_dir and workdir.startswith(SANDBOX_WORKDIR):
        workdir = "/tmp"
    launcher = [*sandbox_python_argv(), "--exec", f"--exec-cwd={workdir}", *options.runner_args()]
    if timeout is not None:
        launcher.append(f"--exec-timeout={timeout}")
    argv = [
        *bwrap_base_argv(options, ONE_OFF_CAPS, extra_binds=binds, env=env, chdir="/"),
        "--",
        *launcher,
        "--",
        *cmd,
    ]
    limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
    with sandbox_userns(argv) as (argv, fds):
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=_HOST_ENV,
            start_new_session=True,
            pass_fds=fds,
        )
    out, err = _BoundedReader(limit), _BoundedReader(limit)

    async def feed() -> None:
        if input is None or proc.stdin is None:
            return
        data = input.encode() if isinstance(input, str) else input
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(data)
            await proc.stdin.drain()
        with contextlib.suppress(Exception):
            proc.stdin.close()

    async def communicate() -> int:
        await asyncio.gather(feed(), out.consume(proc.stdout), err.consume(proc.stderr))
        return await proc.wait()

    try:
        if timeout is None:
            returncode = await communicate()
        else:
            returncode = await asyncio.wait_for(communicate(), timeout)
    except BaseException as exc:
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(OSError):
                kill(proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), 5.0)
        _close_transport(proc)
        if isinstance(exc, asyncio.TimeoutError):
            raise TimeoutError(f"command timed out after {timeout}s: {cmd[0]}") from exc
        raise
    _close_transport(proc)
    return ExecResult(
        success=returncode == 0, returncode=returncode, stdout=out.text(), stderr=err.text()
    )


# --------------------------------------------------------------------------- #
# Inspect sandbox environment
# --------------------------------------------------------------------------- #


class FinmathBwrapConfig(WorkerConfig, frozen=True):
    """Configuration of the ``finmath_bwrap`` sandbox (all optional)."""

    def options(self) -> BwrapOptions:
        return BwrapOptions(
            memory_mb=self.memory_mb, tmpfs_mb=self.tmpfs_mb, recycle_after=self.recycle_after
        )


def _config_model(config: SandboxEnvironmentConfigType | None) -> FinmathBwrapConfig:
    return config_model(config, FinmathBwrapConfig, "finmath_bwrap")


@sandboxenv(name="finmath_bwrap")
class FinmathBwrapSandboxEnvironment(WorkerSandboxEnvironment):
    """Inspect sandbox: warm bwrap workers for the runner, cold bwrap for the rest.

    ``run_request(request)`` goes to the task's worker pool and
    returns the runner's response. Every command (the runner's included)
    runs in a fresh one-off sandbox with the same isolation, as uid
    65534, with the sample's scratch directory at ``/tmp/work`` (its cwd);
    ``write_file``/``read_file`` operate on that directory.
    """

    sandbox_name = "finmath_bwrap"
    config_class = FinmathBwrapConfig

    _pools: ClassVar[dict[FinmathBwrapConfig, BwrapPool]] = {}
    """One pool per configuration, shared by every task of the run that uses it.
    (Keyed by config only: Inspect calls task_init/task_cleanup with the names
    "startup"/"shutdown", sample_init with the task's name.)"""

    def __init__(self, pool: BwrapPool, options: BwrapOptions) -> None:
        super().__init__()
        self._pool = pool
        self._options = options
        self._scratch = tempfile.mkdtemp(prefix=scratch_prefix())
        os.chmod(self._scratch, 0o700)
        if os.geteuid() == 0:
            os.chown(self._scratch, SANDBOX_UID, SANDBOX_UID)

    @classmethod
    def _pool_for(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> BwrapPool:
        model = _config_model(config)
        pool = cls._pools.get(model)
        if pool is None:
            pool = cls._pools[model] = BwrapPool(
                model.pool_size, model.options(), model.queue_timeout
            )
        return pool

    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        ok, reason = bwrap_available()
        if not ok:
            raise RuntimeError(f"the finmath_bwrap sandbox is not usable here: {reason}")
        await asyncio.to_thread(remove_stale_scratch)
        pool = cls._pool_for(task_name, config)
        await pool.start(len(pool.workers))

    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, str],
    ) -> dict[str, SandboxEnvironment]:
        pool = cls._pool_for(task_name, config)
        return {"default": cls(pool, pool.options)}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for environment in environments.values():
            if isinstance(environment, cls):
                environment.remove_scratch()

    @classmethod
    async def task_cleanup(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool
    ) -> None:
        pool = cls._pools.pop(_config_model(config), None)
        if pool is not None:
            await pool.close()

    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        for pool in list(cls._pools.values()):
            pool.kill()
        cls._pools.clear()
        mounts, own = _cgroup_mounts(), _own_cgroups()
        for key in ("", "memory", "pids"):
            parent = _Cgroup._parent(mounts, own, key)
            if parent is not None:
                _Cgroup._remove_stale(parent)
        tmp = Path(tempfile.gettempdir())
        for path in tmp.glob(f"{_SCRATCH_PREFIX}*"):
            if id is None or id in path.name:
                shutil.rmtree(path, ignore_errors=True)

    def remove_scratch(self) -> None:
        shutil.rmtree(self._scratch, ignore_errors=True)

    async def _run_request(self, request: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        return await self._pool.run(request, timeout)

    async def _exec_command(
        self,
        cmd: list[str],
        input: str | bytes | None,
        cwd: str | None,
        env: dict[str, str] | None,
        timeout: int | None,
    ) -> ExecResult[str]:
        return await run_one_off(
            cmd,
            options=self._options,
            scratch_dir=self._scratch,
            input=input,
            cwd=cwd,
            env=env,
            timeout=timeout,
        )

    def _parts(self, file: str) -> list[str]:
        """``file`` (relative to, or under, /tmp/work) as path components."""
        if file.startswith("/"):
            if not _under(file, SANDBOX_WORKDIR):
                raise PermissionError(
                    f"finmath_bwrap: only {SANDBOX_WORKDIR} is accessible from the host ({file})"
                )
            file = os.path.relpath(file, SANDBOX_WORKDIR)
        parts = [p for p in os.path.normpath(file).split("/") if p not in ("", ".")]
        if not parts or parts[0] == "..":
            raise PermissionError(f"finmath_bwrap: path escapes the sandbox directory ({file})")
        return parts

    def _open(self, file: str, flags: int, create_dirs: bool = False) -> int:
        """Open a file of the scratch directory without following any link.

        The sandbox user owns that directory and may change it while we work
        (swap a directory for a symbolic link to a host path, in a loop): every
        component is opened relative to the previous one's descriptor with
        O_NOFOLLOW, so nothing outside the directory can be reached, and what we
        create is handed over with fchown on its descriptor, never by path.
        Only regular files with a single link are opened (no FIFO to block on).
        """
        parts = self._parts(file)
        nofollow = os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(self._scratch, os.O_RDONLY | os.O_DIRECTORY | nofollow)
        try:
            for part in parts[:-1]:
                created = False
                if create_dirs:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=fd)
                        created = True
                parent, fd = fd, -1
                try:
                    fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | nofollow, dir_fd=parent)
                finally:
                    os.close(parent)
                if created and os.geteuid() == 0:
                    os.fchown(fd, SANDBOX_UID, SANDBOX_UID)
            target = os.open(parts[-1], flags | os.O_NONBLOCK | nofollow, 0o644, dir_fd=fd)
        finally:
            if fd >= 0:
                os.close(fd)
        st = os.fstat(target)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(target)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(f"{file} is a directory")
            raise PermissionError(f"finmath_bwrap: not a regular file with one link ({file})")
        os.set_blocking(target, True)
        return target

    async def _write_bytes(self, file: str, data: bytes) -> None:
        fd = self._open(file, os.O_WRONLY | os.O_CREAT, create_dirs=True)
        with open(fd, "wb") as fh:
            if os.geteuid() == 0:  # the sandbox user must be able to use what we wrote
                os.fchown(fd, SANDBOX_UID, SANDBOX_UID)
            fh.truncate(0)
            fh.write(data)

    async def _read_bytes(self, file: str) -> bytes:
        fd = self._open(file, os.O_RDONLY)  # FileNotFoundError as documented
        with open(fd, "rb") as fh:
            if os.fstat(fd).st_size > SandboxEnvironmentLimits.MAX_READ_FILE_SIZE:
                raise read_limit_exceeded()
            return fh.read(SandboxEnvironmentLimits.MAX_READ_FILE_SIZE + 1)
