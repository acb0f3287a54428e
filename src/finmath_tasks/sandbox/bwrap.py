"""The ``finmath_bwrap`` sandbox: warm, isolated Python workers under bubblewrap.

Host side of the program executor (the in-sandbox side is ``runner.py``; the
host-side protocol, request policy and Inspect dispatch shared with the Docker
backend are in ``worker.py``). This module is the backend's provider: the Inspect
sandbox ``finmath_bwrap`` (:class:`FinmathBwrapSandboxEnvironment`), its
configuration, the availability check (:func:`bwrap_available`, which runs a
trivial sandboxed command), each sample's scratch directory and the one-off
commands (:func:`run_one_off`). The sandbox routes the runner command to a pool of
warm workers and runs anything else in a fresh one-off bwrap with the same
isolation. The other parts, by role:

* ``bwrap_command``: what a sandbox is: options, binds, user namespace, the flags
  (its docstring lists every isolation property).
* ``bwrap_cgroup``: memory and pids cgroups per worker sandbox (best effort).
* ``bwrap_worker``: one warm worker under bwrap, the pool of them, and their exit
  safety net.

Leftovers: each sample's scratch directory is named after the evaluating process
(pid and start time, :func:`scratch_prefix`), so a later run removes those whose
owner is gone (:func:`remove_stale_scratch`, at ``task_init``).

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
import contextlib
import functools
import os
import shutil
import signal
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from inspect_ai.util import (
    ExecResult,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    sandboxenv,
)

from finmath_tasks.errors import Unavailable
from finmath_tasks.sandbox import HIDE_SANDBOXES_ENV, hidden_sandbox, runner_source_path
from finmath_tasks.sandbox.bwrap_cgroup import NAME_PREFIX, remove_stale_cgroups
from finmath_tasks.sandbox.bwrap_command import (
    HOST_ENV,
    ONE_OFF_CAPS,
    WORKER_CAPS,
    BwrapOptions,
    bwrap_base_argv,
    bwrap_binary,
    interpreter,
    sandbox_python_argv,
    sandbox_userns,
    under,
)
from finmath_tasks.sandbox.bwrap_worker import BwrapPool, close_transport
from finmath_tasks.sandbox.protocol import SANDBOX_UID
from finmath_tasks.sandbox.worker import (
    WorkerConfig,
    WorkerSandboxEnvironment,
    config_model,
    read_limit_exceeded,
)

SANDBOX_WORKDIR = "/tmp/work"
"""Per-sample scratch directory inside one-off commands (write_file/read_file)."""


@functools.lru_cache(maxsize=1)
def _bwrap_check() -> tuple[bool, str]:
    binary = bwrap_binary()
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
        interpreter(),
        "-c",
        "import os; print(os.getuid())",
    ]
    try:
        with sandbox_userns(argv) as (argv, fds):
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                                  env=HOST_ENV, check=False, pass_fds=fds)  # fmt: skip
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
    return f"{NAME_PREFIX}{pid}-{_process_start(pid) or 0}-"


def remove_stale_scratch(tmp: str | None = None) -> list[Path]:
    """Remove the scratch directories of earlier runs whose owner process is gone.

    Only directories named by :func:`scratch_prefix` (older names record no owner and
    are kept), that are real directories (not symlinks) owned by us or, when we are
    root, the sandbox user; ``shutil.rmtree`` follows no links inside them."""
    uids = {os.geteuid(), SANDBOX_UID} if os.geteuid() == 0 else {os.geteuid()}
    removed = []
    for path in Path(tmp or tempfile.gettempdir()).glob(f"{NAME_PREFIX}*"):
        owner = path.name[len(NAME_PREFIX) :].split("-")
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
            env=HOST_ENV,
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
        close_transport(proc)
        if isinstance(exc, asyncio.TimeoutError):
            raise TimeoutError(f"command timed out after {timeout}s: {cmd[0]}") from exc
        raise
    close_transport(proc)
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
            raise Unavailable(f"the finmath_bwrap sandbox is not usable here: {reason}")
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
        remove_stale_cgroups()
        tmp = Path(tempfile.gettempdir())
        for path in tmp.glob(f"{NAME_PREFIX}*"):
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
            if not under(file, SANDBOX_WORKDIR):
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
