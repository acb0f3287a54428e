"""The ``finmath_docker`` backend's warm worker: one container, ``runner.py --worker`` in it.

A :class:`DockerWorker` owns one container and the ``runner.py --worker`` process
inside it, which it starts with ``docker exec`` and talks to over the exec's
hijacked socket (JSON lines, demultiplexed from Docker's stream framing:
``docker_exec.ExecStream``). Its request policy (guard, restarts, recycling) is
``worker.WarmWorker``'s. A :class:`DockerPool` holds ``size`` of them, shared by
concurrent programs. (One worker per container, not several: a worker that must
be killed kills every process of the sandbox user in its container.)

Isolation of the container (see :meth:`DockerWorker._create_container`)
----------------------------------------------------------------------
* Network: ``network_mode="none"`` (only a private loopback).
* Filesystem: read-only root (the image); the only writable place is a
  size-limited tmpfs at ``/run/finmath`` (root-owned, mode 0711, nosuid, nodev,
  noexec, ``RUN_DIR_INODES`` inodes, so that hard links cannot make the clean-up
  slow) where the runner makes each program's private working directory;
  ``/tmp`` and the rest are read-only, so one program cannot leave files for the
  next. No ``/dev/shm`` (``ipc_mode="none"``). Nothing of the host is mounted.
* Privileges: ``cap_drop=ALL`` with only CHOWN, SETUID, SETGID and KILL added
  back, ``no-new-privileges``. Programs, one-off commands and pid 1 run as the
  container's own uid (next point) with no capabilities. Only the warm worker runs
  as uid 0 (of the container, with those four capabilities): like the bwrap worker
  it must switch each program's process to that uid and kill its leftovers; a
  program therefore cannot signal, ptrace or read the memory or pipes of the
  worker, whatever it does. (The container's configured user is 0 because Docker
  grants an exec'd process capabilities only then; pid 1 drops to the container's
  uid as its first action and every exec names its user.)
* A uid per container (``docker_containers``, which says why): drawn at random
  from a range no host user, group or subordinate-id delegation uses, labelled and
  checked once the container exists; if another of our containers has it, ours is
  removed and another is drawn (checking after creation means two containers
  created at once cannot both keep it). A program that forks to its limit so never
  makes a program of another sandbox, or a host process, fail. It has no name in
  the image (no ``/etc/passwd`` entry; ``HOME`` is ``/tmp``).
* Resources: ``mem_limit``/``memswap_limit`` (no swap), ``nano_cpus``,
  ``pids_limit``, core dumps off; per program the runner adds rlimits (CPU, address
  space, file size, open files, processes) and a wall-clock timeout.
* pid 1 is a tiny reaper (``docker_exec.PID1_SOURCE``): it reaps orphans, ignores every
  signal sent from inside the container (the kernel shields a namespace's init)
  and is not dumpable, so ``kill(-1, SIGKILL)`` from a program cannot stop the
  container. It exits when its stdin reaches EOF: the host keeps an attach
  connection to that stdin (``StdinOnce``) for the container's whole life, so when
  the evaluating process dies, even by SIGKILL, the engine closes it, pid 1
  exits, and the container (``auto_remove``) is removed.
* Host side (``worker.WarmWorker``): a wall-clock guard per request (timeout +
  margin); a worker that hangs, dies, or answers garbage or out of sequence is
  killed together with every process of the sandbox user and transparently
  restarted (that request gets an error result, the next one a fresh worker); a
  worker that exits with status 75 between requests (it could not clean up
  after a program; its exit status is the exec's) gets the request resent to a
  fresh worker, after every process of the sandbox user has been killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inspect_ai.util import SandboxEnvironmentLimits

from finmath_tasks.sandbox import RUNNER_PATH_IN_SANDBOX
from finmath_tasks.sandbox.docker_containers import (
    LABEL_OWNER,
    LABEL_TASK,
    LABEL_UID,
    candidate_uid,
    install_safety_net,
    owner_token,
    register_live,
    remove_container,
    remove_stale_containers,
    unregister_live,
)
from finmath_tasks.sandbox.docker_exec import (
    KILL_ALL_SOURCE,
    PID1_SOURCE,
    REMOVE_SCRATCH_SOURCE,
    RUN_DIR,
    RUN_DIR_INODES,
    SANDBOX_PYTHON,
    SCRATCH_PREFIX,
    Collector,
    ExecStream,
)
from finmath_tasks.sandbox.docker_image import (
    LABEL,
    DockerSandboxError,
    docker_client,
    ensure_image,
    short_exc,
)
from finmath_tasks.sandbox.worker import (
    DEFAULT_QUEUE_TIMEOUT,
    SANDBOX_ENV,
    WarmWorker,
    WorkerOptions,
    WorkerPool,
)
from finmath_tasks.sandbox.worker import WorkerStartError as BaseWorkerStartError

logger = logging.getLogger(__name__)

WORKER_CAPS = ("CHOWN", "SETUID", "SETGID", "KILL")
"""Capabilities left in the container; only the worker (uid 0) ever holds them."""
CONTAINER_NAME_PREFIX = "finmath-sandbox-"
_RESPONSE_LIMIT = 32 << 20
_STDERR_TAIL = 4000


class WorkerStartError(DockerSandboxError, BaseWorkerStartError):
    """The warm worker could not be started (message includes its stderr)."""


@dataclass(frozen=True)
class DockerOptions(WorkerOptions):
    """Limits of a Docker sandbox (``tmpfs_mb``: program and scratch dirs)."""

    container_memory_mb: int = 2048
    """Memory cgroup limit of the whole container (worker + program + pid 1), no swap."""
    cpus: float = 1.0
    pids: int = 128
    """pids cgroup limit of the whole container."""
    image: str | None = None
    """Use this prebuilt image as is (else build/reuse from the Dockerfile)."""
    base_image: str | None = None
    build_network: str | None = "host"
    """Network of the image build (``None``: the engine's default)."""

    def runner_args(self) -> list[str]:
        return [*super().runner_args(), f"--tmp-root={RUN_DIR}"]


def worker_argv(options: DockerOptions) -> list[str]:
    """Command of the warm worker inside the container (run as uid 0 there; the
    container's uid for programs is appended as ``--uid``)."""
    return [*SANDBOX_PYTHON, RUNNER_PATH_IN_SANDBOX, *options.worker_args()]


class DockerWorker(WarmWorker):
    """One container with a warm ``runner.py --worker``; one request at a time.

    The request policy (guard, restarts, recycling) is :class:`WarmWorker`'s;
    this class provides the container and the worker's exec connection. Its
    async methods run the blocking SDK calls in a thread. Requests and one-off
    commands are serialised by an asyncio.Lock (re-created if used from another
    event loop) and, underneath, a threading.Lock, so an abandoned (cancelled)
    call cannot overlap with the next one. ``start()`` also builds or finds the
    image and starts the container.
    """

    start_error = WorkerStartError

    def __init__(self, options: DockerOptions | None = None, task_name: str = "") -> None:
        self.options: DockerOptions = options or DockerOptions()
        super().__init__(self.options)
        self.task_name = task_name
        self.image: str | None = None
        self.container_id: str | None = None
        self.container_name: str | None = None
        self.uid: int | None = None
        """The container's own uid (and gid) for pid 1, programs and one-off commands."""
        self.container_starts = 0
        self._client: Any = None
        self._attach: Any = None
        self._worker: ExecStream | None = None
        self._worker_exec: str | None = None
        self._worker_pid: int | None = None
        self._out = bytearray()
        self._stderr = bytearray()
        self._sync_lock = threading.RLock()
        install_safety_net()  # here: usually the main thread, where signals can be set

    # ------------------------------------------------------------- async API

    async def exec(
        self,
        cmd: list[str],
        *,
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float | None = None,
        output_limit: int | None = None,
    ) -> tuple[int, bytes, bytes, bool]:
        """Run a one-off command as the container's uid: (exit code, stdout, stderr, truncated)."""
        data = input.encode("utf-8") if isinstance(input, str) else input
        async with self._bind_loop():
            return await self._call(self._exec_sync, cmd, data, cwd, env, timeout, output_limit)

    async def make_scratch(self) -> str:
        """A fresh private directory (the container's uid's, unguessable name) for one sample."""
        async with self._bind_loop():
            return await self._call(self._make_scratch_sync)

    async def remove_scratch(self, path: str) -> None:
        async with self._bind_loop():
            await self._call(self._remove_scratch_sync, path)

    async def close(self) -> None:
        """Stop the worker and remove the container (waits until it is gone)."""
        await asyncio.to_thread(self.kill)

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return await asyncio.to_thread(fn, *args)
        except BaseException as exc:
            if not isinstance(exc, Exception):  # cancelled mid-call: state unknown
                self._abandon()
            raise

    # ------------------------------------------------- the WarmWorker transport

    async def _ensure_started(self) -> None:
        try:
            await self._call(self._ensure_worker_sync)
        except WorkerStartError:
            raise
        except DockerSandboxError as exc:  # no image or container: no worker either
            raise WorkerStartError(str(exc)) from exc

    async def _roundtrip(self, payload: bytes, guard: float) -> bytes:
        line: bytes = await self._call(self._roundtrip_sync, payload, guard)
        return line

    async def _exit_status(self) -> int | None:
        status: int | None = await self._call(self._exit_status_sync)
        return status

    async def _discard(self) -> None:
        await self._call(functools.partial(self._stop_worker_sync, kill=True))

    def _abandon(self) -> None:
        """Make the thread's I/O fail fast; that thread then kills the worker."""
        stream = self._worker
        if stream is not None:
            stream.close()

    # ------------------------------------------------------------ sync parts

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = docker_client()
        return self._client

    def _create_container(self) -> None:
        from docker.types import Ulimit

        client = self.client
        api = client.api
        remove_stale_containers(client)
        if self.image is None:
            self.image = ensure_image(
                client,
                image=self.options.image,
                base_image=self.options.base_image,
                build_network=self.options.build_network,
            )
        o = self.options
        host_config = api.create_host_config(
            network_mode="none",
            read_only=True,
            # few inodes (hard links count): what a program leaves is quick to delete
            tmpfs={
                RUN_DIR: f"rw,nosuid,nodev,noexec,size={o.tmpfs_mb}m,nr_inodes={RUN_DIR_INODES},mode=0711"
            },
            cap_drop=["ALL"],
            cap_add=list(WORKER_CAPS),
            security_opt=["no-new-privileges"],
            pids_limit=o.pids,
            mem_limit=f"{o.container_memory_mb}m",
            memswap_limit=f"{o.container_memory_mb}m",
            nano_cpus=int(o.cpus * 1e9),
            ipc_mode="none",
            ulimits=[Ulimit(name="core", soft=0, hard=0)],
            auto_remove=True,
            init=False,
        )
        for _attempt in range(8):
            uid = candidate_uid()
            name = f"{CONTAINER_NAME_PREFIX}{secrets.token_hex(6)}"
            labels = {LABEL: "worker", LABEL_OWNER: owner_token(),
                      LABEL_TASK: self.task_name[:200], LABEL_UID: str(uid)}  # fmt: skip
            try:
                created = api.create_container(
                    self.image,
                    command=[*SANDBOX_PYTHON, "-c", PID1_SOURCE, str(uid)],
                    # Docker (>= 20.10) gives an exec'd process capabilities only when the
                    # container's user is root; pid 1 drops to the container's uid at once,
                    # every exec names its user, and only the worker keeps uid 0 (module doc).
                    user="0:0",
                    working_dir="/tmp",
                    hostname="finmath-sandbox",
                    environment=SANDBOX_ENV,
                    labels=labels,
                    stdin_open=True,  # with detach=False this also sets StdinOnce
                    network_disabled=True,
                    host_config=host_config,
                    name=name,
                )
            except Exception as exc:
                raise DockerSandboxError(
                    f"cannot create the sandbox container: {short_exc(exc)}"
                ) from exc
            container_id = str(created["Id"])
            register_live(container_id, self)
            self.container_id, self.container_name, self.uid = container_id, name, uid
            # Checked once created (labelled): of two containers created at once with
            # the same uid, the later one's check always sees the earlier one.
            try:
                same = api.containers(all=True, filters={"label": f"{LABEL_UID}={uid}"})
            except Exception as exc:
                self._remove_container_sync()
                raise DockerSandboxError(f"cannot list containers: {short_exc(exc)}") from exc
            if all(info["Id"] == container_id for info in same):
                break
            self._remove_container_sync()  # another live container has this uid: draw again
        else:
            raise DockerSandboxError("found no uid unused by other containers")
        try:
            self._attach = api.attach_socket(container_id, params={"stdin": 1, "stream": 1})
            api.start(container_id)
        except Exception as exc:
            self._remove_container_sync()
            raise DockerSandboxError(
                f"cannot start the sandbox container: {short_exc(exc)}"
            ) from exc
        self.container_starts += 1
        logger.info(f"started sandbox container {name} ({self.image})")

    @property
    def _user(self) -> str:
        return f"{self.uid}:{self.uid}"

    def _container_running(self) -> bool:
        if self.container_id is None:
            return False
        try:
            state = self.client.api.inspect_container(self.container_id)["State"]
        except Exception:
            return False
        return bool(state.get("Running"))

    def _exec_start(
        self,
        cmd: list[str],
        *,
        user: str,
        stdin: bool,
        workdir: str = "/tmp",
        env: dict[str, str] | None = None,
    ) -> tuple[str, ExecStream]:
        api = self.client.api
        assert self.container_id is not None
        exec_id = api.exec_create(
            self.container_id, cmd, stdin=stdin, stdout=True, stderr=True, tty=False,
            user=user, workdir=workdir, environment=env,
        )["Id"]  # fmt: skip
        return exec_id, ExecStream(api.exec_start(exec_id, socket=True))

    def _exec_simple(self, cmd: list[str], user: str, timeout: float = 30.0) -> int:
        """Run a helper command to completion, discarding output; its exit code."""
        exec_id, stream = self._exec_start(cmd, user=user, stdin=False)
        deadline = time.monotonic() + timeout
        try:
            while stream.read_frame(deadline) is not None:
                pass
        finally:
            stream.close()
        code = self.client.api.exec_inspect(exec_id).get("ExitCode")
        return -1 if code is None else int(code)

    def _read_line(self, stream: ExecStream, deadline: float) -> bytes | None:
        """Next stdout line of the worker; None at EOF (stderr goes to a tail)."""
        while True:
            newline = self._out.find(b"\n")
            if newline >= 0:
                line = bytes(self._out[: newline + 1])
                del self._out[: newline + 1]
                return line
            if len(self._out) > _RESPONSE_LIMIT:
                raise ValueError("response too large")
            frame = stream.read_frame(deadline)
            if frame is None:
                return None
            kind, payload = frame
            if kind == 2:
                self._stderr += payload
                del self._stderr[:-_STDERR_TAIL]
            else:
                self._out += payload

    def _stderr_tail(self, limit: int = 1000) -> str:
        return bytes(self._stderr[-limit:]).decode("utf-8", "replace").strip()

    def _start_worker_exec(self) -> tuple[str, ExecStream]:
        argv = [*worker_argv(self.options), f"--uid={self.uid}"]
        return self._exec_start(argv, user="0", stdin=True)

    def _ensure_container_sync(self) -> None:
        if self.container_id is not None and self._container_running():
            return
        if self.container_id is not None:
            logger.warning("the sandbox container is gone; starting a new one")
            self._remove_container_sync()
        self._create_container()

    def _ensure_worker_sync(self) -> None:
        with self._sync_lock:
            if self._worker is not None and not self._recycle_pending:
                return
            self._stop_worker_sync()
            self._ensure_container_sync()
            self._stderr.clear()
            self._out.clear()
            try:
                exec_id, stream = self._start_worker_exec()
            except Exception as exc:
                # the container may have died between the check and the exec: once more
                self._remove_container_sync()
                self._create_container()
                try:
                    exec_id, stream = self._start_worker_exec()
                except Exception as exc2:
                    raise WorkerStartError(f"cannot exec the worker: {short_exc(exc2)}") from exc
            self.starts += 1
            try:
                line = self._read_line(stream, time.monotonic() + self.options.startup_timeout)
                problem = self._accept_ready(line)
            except (TimeoutError, ValueError) as exc:
                problem = type(exc).__name__
            if problem is not None:
                error = self._start_failure(problem)
                stream.close()
                raise error
            self._worker, self._worker_exec = stream, exec_id
            self._worker_pid = int(self.ready_info.get("pid", 0))

    def _kill_sandbox_processes(self) -> None:
        """SIGKILL every process of the sandbox user (programs, leftovers, one-offs)."""
        with contextlib.suppress(Exception):
            self._exec_simple([*SANDBOX_PYTHON, "-c", KILL_ALL_SOURCE], user=self._user, timeout=15)

    def _stop_worker_sync(self, *, kill: bool = False) -> None:
        """Close the worker's connection (it exits at EOF); ``kill``: SIGKILL it too."""
        stream, pid = self._worker, self._worker_pid
        self._worker, self._worker_exec, self._worker_pid = None, None, None
        self._out.clear()
        if stream is not None:
            stream.close()
        if kill and pid and self.container_id is not None:
            with contextlib.suppress(Exception):
                self._exec_simple(
                    [*SANDBOX_PYTHON, "-c", f"import os; os.kill({pid}, 9)"], user="0", timeout=15
                )
            self._kill_sandbox_processes()

    def _roundtrip_sync(self, payload: bytes, guard: float) -> bytes:
        with self._sync_lock:
            stream = self._worker
            if stream is None:
                return b""
            try:
                deadline = time.monotonic() + guard
                stream.sock.settimeout(guard)  # a stuck worker must not block the send either
                stream.send(payload)
                return self._read_line(stream, deadline) or b""
            except TimeoutError:
                raise
            except (OSError, ValueError):  # broken connection or oversized line
                return b""
            finally:
                if stream.closed:  # abandoned by a cancelled request: nobody else cleans up
                    self._stop_worker_sync(kill=True)

    def _exit_status_sync(self, wait: float = 2.0) -> int | None:
        """Exit status of the worker's exec once it has stopped (None if it runs on)."""
        with self._sync_lock:
            exec_id = self._worker_exec
            if exec_id is None:
                return None
            deadline = time.monotonic() + wait
            while True:
                try:
                    info = self.client.api.exec_inspect(exec_id)
                except Exception:
                    return None
                if not info.get("Running"):
                    code = info.get("ExitCode")
                    return None if code is None else int(code)
                if time.monotonic() >= deadline:
                    return None
                time.sleep(0.02)

    def _exec_sync(
        self,
        cmd: list[str],
        data: bytes | None,
        cwd: str | None,
        env: dict[str, str] | None,
        timeout: float | None,
        output_limit: int | None,
    ) -> tuple[int, bytes, bytes, bool]:
        if not cmd:
            raise ValueError("empty command")
        with self._sync_lock:
            self._ensure_container_sync()
            limit = output_limit or SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
            launcher = [*SANDBOX_PYTHON, RUNNER_PATH_IN_SANDBOX, "--exec", *self.options.runner_args(),
                        f"--uid={self.uid}"]  # fmt: skip
            argv = [*launcher, "--", *cmd]
            if timeout is not None:
                argv = ["/usr/bin/timeout", "-s", "KILL", f"{timeout:g}",
                        *launcher, f"--exec-timeout={timeout:g}", "--", *cmd]  # fmt: skip
            # uid 0 only for the launcher, which drops to the container's uid before cmd
            exec_id, stream = self._exec_start(
                argv, user="0", stdin=data is not None, workdir=cwd or "/tmp", env=env
            )
            out, err = Collector(limit), Collector(limit)
            started = time.monotonic()
            deadline = None if timeout is None else started + timeout + 10
            timed_out = False
            try:
                if data is not None:
                    with contextlib.suppress(OSError):
                        stream.send(data)
                    stream.close_stdin()
                while True:
                    frame = stream.read_frame(deadline)
                    if frame is None:
                        break
                    (err if frame[0] == 2 else out).add(frame[1])
            except TimeoutError:
                timed_out = True
            finally:
                stream.close()
            code = self.client.api.exec_inspect(exec_id).get("ExitCode")
            self._kill_sandbox_processes()  # nothing a one-off command started survives it
            killed_at_limit = (
                timeout is not None and code == 137 and time.monotonic() - started >= timeout
            )
            if timed_out or killed_at_limit:
                raise TimeoutError(f"command timed out after {timeout}s: {cmd[0]}")
            return (
                (-1 if code is None else int(code)),
                bytes(out.data),
                bytes(err.data),
                (out.overflow or err.overflow),
            )

    def _make_scratch_sync(self) -> str:
        with self._sync_lock:
            self._ensure_container_sync()
            path = f"{RUN_DIR}/{SCRATCH_PREFIX}{secrets.token_hex(16)}"
            code = self._exec_simple(
                [*SANDBOX_PYTHON, "-c",
                 f"import os; os.mkdir({path!r}, 0o700); os.chown({path!r}, {self.uid}, {self.uid})"],
                user="0",
            )  # fmt: skip
            if code != 0:
                raise DockerSandboxError(f"cannot create the scratch directory {path}")
            return path

    def _remove_scratch_sync(self, path: str) -> None:
        if not path.startswith(f"{RUN_DIR}/{SCRATCH_PREFIX}"):
            raise ValueError(f"not a scratch directory: {path}")
        with self._sync_lock:
            if self.container_id is None or not self._container_running():
                return
            with contextlib.suppress(Exception):
                self._exec_simple(
                    [*SANDBOX_PYTHON, "-c", REMOVE_SCRATCH_SOURCE, path, str(self.uid)], user="0"
                )

    def _remove_container_sync(self) -> None:
        container_id = self.container_id
        self.container_id = None
        if self._attach is not None:
            with contextlib.suppress(Exception):
                getattr(self._attach, "_sock", self._attach).close()
            with contextlib.suppress(Exception):
                self._attach.close()
            self._attach = None
        if container_id is not None:
            try:
                remove_container(self.client, container_id)
            finally:
                unregister_live(container_id)

    def kill(self) -> None:
        """Synchronous hard stop: close the worker and remove the container."""
        with self._sync_lock:
            self._stop_worker_sync()
            self._remove_container_sync()

    def remove_at_exit(self) -> None:
        """:meth:`kill` for the exit safety net (``docker_containers``), which must not
        wait for a lock held by a thread that may never return."""
        if self._sync_lock.acquire(timeout=2):
            try:
                self._stop_worker_sync()
                self._remove_container_sync()
            finally:
                self._sync_lock.release()
        else:
            self._abandon()
            if self.container_id is not None:
                remove_container(docker_client(timeout=20), self.container_id)


class DockerPool(WorkerPool):
    """``size`` DockerWorkers, each with its own container, shared by concurrent
    programs (see :class:`worker.WorkerPool`). Only the first is started by
    :meth:`start`; the others start when first used. Each sample's one-off commands
    and files live in one of the containers (:meth:`home`, in turn)."""

    workers: list[DockerWorker]  # type: ignore[assignment]

    def __init__(
        self,
        size: int,
        options: DockerOptions,
        task_name: str = "",
        queue_timeout: float = DEFAULT_QUEUE_TIMEOUT,
    ) -> None:
        super().__init__([DockerWorker(options, task_name) for _ in range(size)], queue_timeout)
        self._homes = 0

    def home(self) -> DockerWorker:
        """The container for a new sample's scratch directory and one-off commands."""
        self._homes += 1
        return self.workers[(self._homes - 1) % len(self.workers)]

    async def close(self) -> None:
        """Stop every worker and remove every container (waits until they are gone)."""
        await asyncio.gather(*(w.close() for w in self.workers))
