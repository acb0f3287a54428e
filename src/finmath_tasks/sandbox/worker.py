"""Host side of the warm-worker protocol, shared by the bwrap and docker backends.

Both backends host ``runner.py --worker`` (its module docstring describes the
JSON-lines protocol and everything enforced per program) and expose it as an
Inspect sandbox; they differ only in how the worker process is started and
reached (``bwrap_worker.py``: under bubblewrap, over two pipes; ``docker_worker.py``: with
``docker exec`` in a container, over the exec's socket) and in how one-off
commands and files are handled. What is the same lives here.

Protocol (host side)
--------------------
* A request is a JSON object, sent as one line (:func:`encode_request`).
* A worker's answer is accepted only if it is one line holding a JSON object of
  the runner's response schema (:func:`valid_response`) whose ``worker_seq`` is
  the number of requests this worker process has been sent
  (:func:`read_response`). Failures on the host side are answered with a
  response of the same schema (:func:`error_result`), never an exception.

Host-side guard (:class:`WarmWorker`, one request at a time)
------------------------------------------------------------
* The worker is started on demand and must print its ready line within
  ``startup_timeout``.
* Each request gets a wall-clock guard of its timeout (as the runner reads it,
  at most 600 s) + ``host_margin``, counted from the moment the request is sent
  to a started worker (never the wait for the worker or its start; the caller's
  own bound, Inspect's exec ``timeout``, is applied to the same span and raises
  TimeoutError when it is the shorter); a worker that does not answer in time, dies,
  or answers garbage or out of sequence is killed (for Docker: with every
  process of the sandbox user) and restarted: that request gets an error
  result, the next one a fresh worker. A request abandoned by its caller
  (cancelled) kills the worker too: its state is unknown.
* A worker that announced ``"recycle": true`` (after ``recycle_after``
  programs) is replaced before the next request.
* A worker that could not clean up after a program exits *between* requests
  with status 75 (``runner.EXIT_RECYCLE``); the request it did not take is
  resent, once, to a fresh worker.

Pool (:class:`WorkerPool`)
--------------------------
Concurrent requests share a few warm workers (by default one per CPU this process
may run on, :func:`default_pool_size`); each takes an idle worker, the one idle the
longest. Waiting for one is bounded by ``queue_timeout``, separately from the
program's timeout: if it expires the request gets a ``sandbox busy`` error result,
never a program timeout, so queueing does not change what a program is scored.

Inspect sandbox (:class:`WorkerSandboxEnvironment`)
---------------------------------------------------
``run_request(request)`` goes to a warm worker and returns its
JSON response as stdout (returncode 0; a request that is not a JSON object gets
a ``bad request`` response); any other command is the backend's one-off
command. Every command runs as the unprivileged sandbox user: ``user=`` is
refused. ``write_file``/``read_file`` take text as UTF-8.
"""

from __future__ import annotations

import abc
import asyncio
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar, overload

from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUserUnsupportedError,
)
from pydantic import BaseModel, Field

from finmath_tasks.sandbox.protocol import (
    EXIT_RECYCLE,
    encode_request,
    error_result,
    read_response,
    request_timeout,
)

SANDBOX_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",
}
"""The whole environment of a sandbox (nothing of the evaluating process's);
programs get an even smaller one from the runner."""

_RESEND = object()

DEFAULT_QUEUE_TIMEOUT = 900.0
"""Seconds a request may wait for an idle worker before it fails as "sandbox busy"."""


def default_pool_size() -> int:
    """Workers per pool by default: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


class WorkerStartError(RuntimeError):
    """The worker could not be started (message includes its stderr)."""


@dataclass(frozen=True)
class WorkerOptions:
    """Limits common to both backends (per program unless stated otherwise)."""

    memory_mb: int = 1024
    """RLIMIT_AS of a program (numpy+scipy+sympy already take ~370 MB of it)."""
    tmpfs_mb: int = 64
    """Size of the sandbox's writable tmpfs (where program directories live)."""
    fsize_mb: int = 16
    nofile: int = 64
    nproc: int = 16
    recycle_after: int = 500
    """The worker exits after this many programs and a fresh one is started."""
    startup_timeout: float = 120.0
    host_margin: float = 5.0
    """Seconds granted beyond a program's timeout before the host kills the worker."""
    preimport: bool = True

    def runner_args(self) -> list[str]:
        """Limits for ``runner.py`` (worker and ``--exec`` launcher)."""
        return [
            f"--memory-mb={self.memory_mb}",
            f"--fsize-mb={self.fsize_mb}",
            f"--nofile={self.nofile}",
            f"--nproc={self.nproc}",
            "--require-drop",
        ]

    def worker_args(self) -> list[str]:
        """``runner.py`` arguments of the warm worker."""
        return [
            "--worker",
            f"--recycle={self.recycle_after}",
            *self.runner_args(),
            *([] if self.preimport else ["--no-preimport"]),
        ]


class WarmWorker(abc.ABC):
    """One warm ``runner.py --worker``; one request at a time (see module doc).

    Requests are serialised by an asyncio.Lock, re-created when the worker is
    used from another event loop. A backend provides the start and the
    transport: :meth:`_ensure_started`, :meth:`_roundtrip`, :meth:`_exit_status`,
    :meth:`_discard`, :meth:`_abandon` and :meth:`_stderr_tail`.
    """

    start_error: ClassVar[type[WorkerStartError]] = WorkerStartError

    def __init__(self, options: WorkerOptions) -> None:
        self.options = options
        self.starts = 0
        """How many worker processes were started (1 + restarts)."""
        self.ready_info: dict[str, Any] = {}
        self._seq = 0
        self._recycle_pending = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None

    def _bind_loop(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._lock is None:
            self._on_new_loop()
            self._loop = loop
            self._lock = asyncio.Lock()
        return self._lock

    def _on_new_loop(self) -> None:
        """Called when the worker is used from an event loop other than the last one
        (before that loop's first request); by default the worker is kept."""
        return

    async def start(self) -> None:
        """Start the worker now (otherwise it starts on the first request)."""
        async with self._bind_loop():
            await self._ensure_started()

    async def run(self, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Run one request (runner schema); always returns a response dict.

        ``timeout``: the caller's bound on the program's run (the exchange with a
        started worker, not the wait for it); TimeoutError if it expires first."""
        async with self._bind_loop():
            return await self._run_locked(request, timeout)

    # ------------------------------------------------------------ backend

    @abc.abstractmethod
    async def _ensure_started(self) -> None:
        """Start a worker unless one is running and not about to recycle; it must
        pass its first line to :meth:`_accept_ready` (raise :attr:`start_error`)."""

    @abc.abstractmethod
    async def _roundtrip(self, payload: bytes, guard: float) -> bytes:
        """Send one request line, return the answer line: b"" if the worker is
        gone (EOF, broken pipe, oversized line); TimeoutError after ``guard`` s."""

    @abc.abstractmethod
    async def _exit_status(self) -> int | None:
        """The exit status of a worker that stopped answering (waiting a little)."""

    @abc.abstractmethod
    async def _discard(self) -> None:
        """Kill the worker and forget it (the next request starts a fresh one)."""

    @abc.abstractmethod
    def _abandon(self) -> None:
        """Synchronous, from a cancelled request: kill the worker, state unknown."""

    @abc.abstractmethod
    def _stderr_tail(self) -> str:
        """The end of what the worker wrote to stderr, for error messages."""

    # ------------------------------------------------------------ shared

    def _accept_ready(self, line: bytes | None, reason: str = "no ready line") -> str | None:
        """Take the worker's first line: None if it is the ready line, else why not."""
        try:
            info = json.loads(line) if line else None
        except ValueError as exc:
            return type(exc).__name__
        if not isinstance(info, dict) or info.get("ready") is not True:
            return reason
        self.ready_info = info
        self._seq = 0
        self._recycle_pending = False
        return None

    def _start_failure(self, reason: str) -> WorkerStartError:
        tail = self._stderr_tail()
        return self.start_error(f"{reason}; worker stderr: {tail or '(empty)'}")

    async def _run_locked(
        self, request: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        try:
            payload = encode_request(request)
        except (TypeError, ValueError) as exc:
            return error_result(f"bad request: not JSON-serialisable ({exc})")
        guard = request_timeout(request) + self.options.host_margin
        for _attempt in range(2):
            try:
                await self._ensure_started()
            except WorkerStartError as exc:
                return error_result(f"sandbox worker failed to start: {exc}", sandbox_failure=True)
            except BaseException:  # cancelled while starting: not a worker to keep
                self._abandon()
                raise
            response = await self._exchange(payload, guard, timeout)
            if isinstance(response, dict):
                return response
        return error_result(
            "sandbox worker keeps exiting before taking the request", sandbox_failure=True
        )

    async def _exchange(
        self, payload: bytes, guard: float, timeout: float | None = None
    ) -> dict[str, Any] | object:
        """One request/response; _RESEND if the worker had exited before reading it."""
        self._seq += 1
        bound = guard if timeout is None else min(guard, timeout)
        try:
            line = await self._roundtrip(payload, bound)
        except TimeoutError as exc:
            await self._discard()
            if bound < guard:  # the caller's own, shorter bound
                raise TimeoutError(f"program did not finish within {timeout:g}s") from exc
            return error_result(
                f"sandbox worker did not answer within {guard:.1f}s; it was killed and "
                "will be restarted",
                sandbox_failure=True,
            )
        except BaseException:  # cancelled mid-request: the worker's state is unknown
            self._abandon()
            raise
        if not line:
            status = await self._exit_status()
            tail = self._stderr_tail()
            await self._discard()
            if status == EXIT_RECYCLE:  # exited between requests, on purpose: resend
                return _RESEND
            return error_result(
                f"sandbox worker died (exit status {status}); it will be restarted. {tail}".strip(),
                sandbox_failure=True,
            )
        response = read_response(line, self._seq)
        if response is None:
            await self._discard()
            return error_result(
                "sandbox worker sent an invalid response; it will be restarted",
                sandbox_failure=True,
            )
        if response.pop("recycle", False):
            self._recycle_pending = True
        return response


class WorkerPool:
    """Warm workers shared by concurrent requests (see module doc, "Pool").

    Idle workers wait in a FIFO queue (re-created when the pool is used from
    another event loop); a request takes the first, the one idle the longest
    (at first, in list order: the started ones), and puts it back when done,
    whatever happens to the request.
    """

    def __init__(
        self, workers: Sequence[WarmWorker], queue_timeout: float = DEFAULT_QUEUE_TIMEOUT
    ) -> None:
        if not workers:
            raise ValueError("pool size must be >= 1")
        self.workers = list(workers)
        self.queue_timeout = queue_timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._idle: asyncio.Queue[WarmWorker] | None = None

    def _idle_queue(self) -> asyncio.Queue[WarmWorker]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._idle is None:
            self._loop, self._idle = loop, asyncio.Queue()
            for worker in self.workers:
                self._idle.put_nowait(worker)
        return self._idle

    async def start(self, count: int = 1) -> None:
        """Start ``count`` workers now (the rest start when first needed)."""
        await asyncio.gather(*(w.start() for w in self.workers[:count]))

    async def run(self, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Run one request on an idle worker (``timeout``: see :meth:`WarmWorker.run`)."""
        idle = self._idle_queue()
        try:
            # an item leaves the queue only when get() returns, so a timeout loses none
            worker = await asyncio.wait_for(idle.get(), self.queue_timeout)
        except asyncio.TimeoutError:
            return error_result(
                f"sandbox busy: no worker within {self.queue_timeout:g}s "
                f"({len(self.workers)} workers; raise the sandbox's pool_size or queue_timeout)",
                sandbox_failure=True,
            )
        try:
            return await worker.run(request, timeout)
        finally:
            idle.put_nowait(worker)


class WorkerConfig(BaseModel, frozen=True):
    """Configuration common to both sandboxes (all optional).

    ``pool_size``: warm workers per run (default: the CPUs available, at most 32);
    ``queue_timeout``: seconds a program may wait for one (see :class:`WorkerPool`)."""

    memory_mb: int = Field(default=1024, ge=128)
    tmpfs_mb: int = Field(default=64, ge=1)
    recycle_after: int = Field(default=500, ge=0)
    pool_size: int = Field(default_factory=lambda: min(default_pool_size(), 32), ge=1, le=32)
    queue_timeout: float = Field(default=DEFAULT_QUEUE_TIMEOUT, gt=0)


ConfigT = TypeVar("ConfigT", bound=BaseModel)


def config_model(
    config: SandboxEnvironmentConfigType | None, model: type[ConfigT], sandbox_name: str
) -> ConfigT:
    """A sandbox's configuration as ``model`` (the default one for None)."""
    if config is None:
        return model()
    if isinstance(config, model):
        return config
    if isinstance(config, BaseModel):
        return model(**config.model_dump())
    raise ValueError(
        f"the {sandbox_name} sandbox takes no config file; pass a {model.__name__} (got {config!r})"
    )


def read_limit_exceeded() -> OutputLimitExceededError:
    """What ``read_file`` raises for a file larger than Inspect's limit."""
    return OutputLimitExceededError(
        limit_str=SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, truncated_output=None
    )


class WorkerSandboxEnvironment(SandboxEnvironment):
    """Inspect sandbox whose runner command goes to a warm worker (see module doc).

    A backend provides :meth:`_run_request` (the warm worker or pool),
    :meth:`_exec_command` (any other command) and :meth:`_read_bytes`/
    :meth:`_write_bytes` (the sample's files).
    """

    sandbox_name: ClassVar[str]
    config_class: ClassVar[type[BaseModel]]

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return cls.config_class(**config)

    @abc.abstractmethod
    async def _run_request(self, request: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        """Run one runner request on a warm worker (``timeout``: the exec's, which
        bounds the program's run only, never the wait for a worker)."""

    @abc.abstractmethod
    async def _exec_command(
        self,
        cmd: list[str],
        input: str | bytes | None,
        cwd: str | None,
        env: dict[str, str] | None,
        timeout: int | None,
    ) -> ExecResult[str]:
        """Run any command but the runner's, as the sandbox user."""

    @abc.abstractmethod
    async def _read_bytes(self, file: str) -> bytes:
        """The contents of ``file`` (FileNotFoundError, IsADirectoryError, ...)."""

    @abc.abstractmethod
    async def _write_bytes(self, file: str, data: bytes) -> None:
        """Create or replace ``file`` (and its missing parent directories)."""

    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        if user is not None:
            raise SandboxUserUnsupportedError(
                f"{self.sandbox_name} runs every command as the unprivileged sandbox user; "
                f"it cannot run as {user!r}"
            )
        return await self._exec_command(list(cmd), input, cwd, env, timeout)

    async def run_request(self, request: Any, timeout: float | None = None) -> dict[str, Any]:
        """Run one runner request (see ``protocol``) on a warm worker; the response.

        What ``client.run_program`` calls for our backends (any other sandbox
        gets the runner as a command). ``timeout`` bounds the program's run on a
        started worker, never the wait for one (TimeoutError when it expires).
        A request that is not a JSON object gets a ``bad request`` response.
        """
        if not isinstance(request, dict):
            return error_result("bad request: request must be a JSON object")
        return await self._run_request(request, timeout)

    async def write_file(self, file: str, contents: str | bytes) -> None:
        data = contents.encode("utf-8") if isinstance(contents, str) else contents
        await self._write_bytes(file, data)

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        data = await self._read_bytes(file)
        return data.decode("utf-8") if text else data
