"""The ``finmath_bwrap`` backend's warm workers: ``runner.py --worker`` under bwrap.

A :class:`BwrapWorker` starts ``runner.py --worker`` under ``bwrap`` (the command
of ``bwrap_command.worker_argv``, in a cgroup of ``bwrap_cgroup`` when the host
allows) and talks to it over two pipes (JSON lines); :class:`BwrapPool` holds a
few of them. Workers never closed are killed at interpreter exit.

Host side (``worker.WarmWorker``): a wall-clock guard per request (timeout +
margin); a worker that hangs, dies, or answers garbage or out of sequence is
killed (its whole bwrap process group) and transparently restarted (the
request gets an error result, the next one a fresh worker); a worker that
exits with status 75 between requests (it could not clean up after a program)
gets the request resent to a fresh sandbox; the bwrap process group is killed
on close.

The worker runs with ``PYTHONMALLOC=malloc`` so that it can move its heap to
huge pages after its imports, which makes each per-program fork much cheaper
(see ``runner.py``, "Speed").
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import tempfile
import weakref
from typing import IO, Any

from finmath_tasks.sandbox.bwrap_cgroup import CGROUP_JOIN_FAILED, Cgroup
from finmath_tasks.sandbox.bwrap_command import (
    HOST_ENV,
    BwrapOptions,
    sandbox_userns,
    worker_argv,
)
from finmath_tasks.sandbox.worker import (
    DEFAULT_QUEUE_TIMEOUT,
    WarmWorker,
    WorkerPool,
    WorkerStartError,
    default_pool_size,
)

_RESPONSE_LIMIT = 32 << 20


def close_transport(proc: asyncio.subprocess.Process) -> None:
    """Close the subprocess transport while its loop runs (else its __del__
    complains after the loop is closed)."""
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.close()


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
        self.cgroup: Cgroup | None = None
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
        close_transport(proc)
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
            cgroup = Cgroup(limit_mb << 20, opts.cgroup_pids)
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
            if self.cgroup is not None and await self._exit_status() == CGROUP_JOIN_FAILED:
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
            "env": HOST_ENV,
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
