"""The ``finmath_docker`` sandbox: warm, isolated Python workers, one container each.

Host side of the program executor for Docker (the in-sandbox side is
``runner.py``); the counterpart of ``bwrap.py``, with which it shares the
host-side protocol, request policy and Inspect dispatch (``worker.py``). It
talks to the engine through the ``docker`` Python SDK (never the compose CLI),
imported lazily: this module is imported by the package's Inspect registry and
must stay cheap.

This module is the backend's provider: the Inspect sandbox ``finmath_docker``
(:class:`FinmathDockerSandboxEnvironment`), its configuration, the availability
check and the command line (``python -m finmath_tasks.sandbox.docker
build|check|cleanup``). The sandbox shares a ``docker_worker.DockerPool`` of
workers (``pool_size``, by default one per available CPU) between all samples of
an eval run (per sandbox config), routes each runner command to an idle one (each
worker runs one request at a time; the wait for a worker is bounded apart from
the program's timeout, see ``worker.WorkerPool``) and runs any other command with
``docker exec`` in the sample's home container. The other parts, by role:

* ``docker_image``: the engine connection and the sandbox image (build, tag, base).
* ``docker_containers``: container lifecycle and clean-up: owner labels, a uid per
  container, removal of leftovers, the atexit and signal safety net.
* ``docker_exec``: what runs in a container (pid 1, helper programs) and the exec
  connection to it.
* ``docker_worker``: one container with its warm worker (isolation of the
  container, the worker transport) and the pool of them.

Known limits: programs share the container's IPC and network namespaces (the
engine's default seccomp profile forbids the per-program ``unshare`` the bwrap
backend uses): the runner removes every SysV IPC object and POSIX message queue
after each program instead, and keys are out of reach (the profile forbids the
keyring calls); an abstract UNIX socket kept alive by an SCM_RIGHTS cycle lives
until the kernel's garbage collector frees it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import sys
from typing import Any, ClassVar

from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    sandboxenv,
)
from pydantic import Field

from finmath_tasks.errors import Unavailable
from finmath_tasks.sandbox import HIDE_SANDBOXES_ENV, hidden_sandbox
from finmath_tasks.sandbox.docker_containers import remove_containers, remove_stale_containers
from finmath_tasks.sandbox.docker_exec import READ_SOURCE, SANDBOX_PYTHON, WRITE_SOURCE
from finmath_tasks.sandbox.docker_image import (
    IMAGE_REPOSITORY,
    DockerSandboxError,
    docker_client,
    ensure_image,
    image_id,
    resolve_base_image,
    short_exc,
    source_hash,
)
from finmath_tasks.sandbox.docker_worker import DockerOptions, DockerPool
from finmath_tasks.sandbox.worker import (
    WorkerConfig,
    WorkerSandboxEnvironment,
    config_model,
    read_limit_exceeded,
)


@functools.lru_cache(maxsize=1)
def _docker_check() -> tuple[bool, str]:
    try:
        import docker
    except ImportError:
        return False, "the docker Python SDK is not installed (pip install docker)"
    if hidden_sandbox("docker"):
        return False, f"no Docker engine answers (hidden by {HIDE_SANDBOXES_ENV})"
    try:
        client = docker.from_env(timeout=5)
        client.ping()
        version = client.version().get("Version", "?")
    except Exception as exc:
        return False, f"no Docker engine answers ({short_exc(exc, 200)})"
    try:
        explicit = os.environ.get("FINMATH_SANDBOX_IMAGE")
        if explicit:
            if image_id(client, explicit) is None:
                return (
                    False,
                    f"Docker Engine {version}, but FINMATH_SANDBOX_IMAGE={explicit} is missing",
                )
            return True, f"Docker Engine {version}, image {explicit}"
        try:
            base = resolve_base_image(client, pull=False)
        except DockerSandboxError as exc:
            return False, (
                f"Docker Engine {version}, but {exc} (run scripts/docker-setup.sh to build one)"
            )
        tag = f"{IMAGE_REPOSITORY}:{source_hash(image_id(client, base) or base)}"
        if image_id(client, tag) is not None:
            return True, f"Docker Engine {version}, image {tag}"
        return True, f"Docker Engine {version}; the sandbox image will be built on {base}"
    except Exception as exc:
        return False, f"Docker Engine {version}, but inspecting images failed: {short_exc(exc)}"


def docker_available(refresh: bool = False) -> tuple[bool, str]:
    """Cheap check: does an engine answer (5 s timeout) and is an image (or base) there?"""
    if refresh:
        _docker_check.cache_clear()
    return _docker_check()


# --------------------------------------------------------------------------- #
# Inspect sandbox environment
# --------------------------------------------------------------------------- #


class FinmathDockerConfig(WorkerConfig, frozen=True):
    """Configuration of the ``finmath_docker`` sandbox (all optional)."""

    image: str | None = None
    base_image: str | None = None
    container_memory_mb: int = Field(default=2048, ge=256)
    cpus: float = Field(default=1.0, gt=0)
    pids: int = Field(default=128, ge=16)

    def options(self) -> DockerOptions:
        return DockerOptions(
            memory_mb=self.memory_mb,
            container_memory_mb=self.container_memory_mb,
            cpus=self.cpus,
            pids=self.pids,
            tmpfs_mb=self.tmpfs_mb,
            recycle_after=self.recycle_after,
            image=self.image,
            base_image=self.base_image,
        )


def _config_model(config: SandboxEnvironmentConfigType | None) -> FinmathDockerConfig:
    return config_model(config, FinmathDockerConfig, "finmath_docker")


@sandboxenv(name="finmath_docker")
class FinmathDockerSandboxEnvironment(WorkerSandboxEnvironment):
    """Inspect sandbox: a pool of containers with a warm worker each per eval run
    (and config; ``pool_size`` containers, by default one per available CPU).

    ``run_request(request)`` goes to an idle worker of the pool
    and returns the runner's response. Every command (the runner's included)
    runs with ``docker exec`` in the sample's home container as the container's
    own uid (with the runner's limits), in the sample's private scratch directory (its cwd,
    created on first use); ``write_file``/``read_file`` resolve relative paths
    against it. Only that directory is writable.
    """

    sandbox_name = "finmath_docker"
    config_class = FinmathDockerConfig

    _pools: ClassVar[dict[FinmathDockerConfig, DockerPool]] = {}
    """One pool per configuration. Keyed by config only: Inspect calls
    ``task_init("startup", ...)`` and ``task_cleanup("shutdown", ...)`` once per eval
    run with placeholder names, and ``sample_init`` with the real task name."""

    def __init__(self, pool: DockerPool) -> None:
        super().__init__()
        self._pool = pool
        self._worker = pool.home()
        self._scratch: str | None = None

    @classmethod
    def _pool_for(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> DockerPool:
        model = _config_model(config)
        pool = cls._pools.get(model)
        if pool is None:
            pool = cls._pools[model] = DockerPool(
                model.pool_size, model.options(), task_name, model.queue_timeout
            )
        return pool

    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        pool = cls._pool_for(task_name, config)
        try:
            await pool.start(1)
        except DockerSandboxError as exc:
            # Unavailable: Inspect prints the message alone, not the SDK's traceback
            raise Unavailable(f"the finmath_docker sandbox is not usable here: {exc}") from exc

    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, str],
    ) -> dict[str, SandboxEnvironment]:
        return {"default": cls(cls._pool_for(task_name, config))}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for environment in environments.values():
            if isinstance(environment, cls) and environment._scratch is not None:
                with contextlib.suppress(Exception):
                    await environment._worker.remove_scratch(environment._scratch)
                environment._scratch = None

    @classmethod
    async def task_cleanup(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool
    ) -> None:
        pool = cls._pools.pop(_config_model(config), None)
        if pool is None:
            return
        if cleanup:
            await pool.close()
            return
        for worker in pool.workers:
            if worker.container_name:
                print(
                    f"finmath_docker: container {worker.container_name} left running (no cleanup)"
                )

    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        for pool in list(cls._pools.values()):
            with contextlib.suppress(Exception):
                await pool.close()
        cls._pools.clear()

        def remove() -> list[str]:
            return remove_containers(docker_client(timeout=30), id)

        try:
            removed = await asyncio.to_thread(remove)
        except DockerSandboxError as exc:
            print(f"finmath_docker: nothing cleaned up: {exc}")
            return
        print(f"finmath_docker: removed {len(removed)} container(s)")

    async def _scratch_dir(self) -> str:
        if self._scratch is None:
            self._scratch = await self._worker.make_scratch()
        return self._scratch

    async def _resolve(self, path: str) -> str:
        if path.startswith("/"):
            return path
        return (
            f"{await self._scratch_dir()}/{path}"
            if path not in ("", ".")
            else await self._scratch_dir()
        )

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
        workdir = await self._resolve(cwd or "")
        limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
        code, out, err, truncated = await self._worker.exec(
            cmd, input=input, cwd=workdir, env=env, timeout=timeout, output_limit=limit
        )
        stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
        if truncated:
            raise OutputLimitExceededError(
                limit_str=SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR,
                truncated_output=stdout,
            )
        return ExecResult(success=code == 0, returncode=code, stdout=stdout, stderr=stderr)

    async def _write_bytes(self, file: str, data: bytes) -> None:
        path = await self._resolve(file)
        code, _, err, _ = await self._worker.exec(
            [*SANDBOX_PYTHON, "-c", WRITE_SOURCE, path], input=data, cwd=await self._scratch_dir()
        )
        _raise_for_file_code(code, file, err)

    async def _read_bytes(self, file: str) -> bytes:
        path = await self._resolve(file)
        limit = SandboxEnvironmentLimits.MAX_READ_FILE_SIZE
        code, out, err, _ = await self._worker.exec(
            [*SANDBOX_PYTHON, "-c", READ_SOURCE, path, str(limit)],
            cwd=await self._scratch_dir(),
            output_limit=limit + 1,
        )
        if code == 5:
            raise read_limit_exceeded()
        _raise_for_file_code(code, file, err)
        return out


def _raise_for_file_code(code: int, file: str, err: bytes) -> None:
    if code == 0:
        return
    detail = err.decode("utf-8", "replace").strip()
    if code == 2:
        raise FileNotFoundError(f"{file}: no such file or directory")
    if code == 3:
        raise IsADirectoryError(f"{file} is a directory")
    if code == 4:
        raise PermissionError(f"{file}: {detail or 'permission denied'}")
    raise RuntimeError(f"file operation on {file} failed (exit {code}): {detail}")


# --------------------------------------------------------------------------- #
# command line: python -m finmath_tasks.sandbox.docker build|check|cleanup
# --------------------------------------------------------------------------- #


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m finmath_tasks.sandbox.docker",
        description="Manage the finmath_docker sandbox image and containers.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build the sandbox image if missing; print its tag")
    build.add_argument("--base-image", default=None)
    build.add_argument("--rebuild", action="store_true")
    build.add_argument("--quiet", action="store_true")
    sub.add_parser("check", help="is Docker usable for the sandbox?")
    cleanup = sub.add_parser("cleanup", help="remove sandbox containers")
    cleanup.add_argument("id", nargs="?", default=None)
    cleanup.add_argument("--stale", action="store_true", help="only those whose owner is gone")
    args = parser.parse_args(argv)

    def log(text: str) -> None:
        if not getattr(args, "quiet", False):
            print(text, file=sys.stderr, flush=True)

    try:
        if args.command == "check":
            ok, reason = docker_available()
            print(reason)
            return 0 if ok else 1
        client = docker_client()
        if args.command == "build":
            network = os.environ.get("FINMATH_SANDBOX_BUILD_NETWORK", "host")
            tag = ensure_image(
                client,
                base_image=args.base_image,
                rebuild=args.rebuild,
                build_network=None if network in ("", "default") else network,
                log=log,
            )
            print(tag)
            return 0
        removed = (
            remove_stale_containers(client) if args.stale else remove_containers(client, args.id)
        )
        print(f"removed {len(removed)} container(s)")
        return 0
    except DockerSandboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
