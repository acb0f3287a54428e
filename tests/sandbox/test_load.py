"""The sandboxes under load: queueing, chaos, leftovers (bwrap and docker).

* More concurrent programs than workers, through the sandbox environment's
  ``run_request`` (as ``run_program`` does): waiting for a worker never turns into a
  program's timeout, so exactly the programs that sleep past their timeout time out.
* A stress run with workers killed from outside, hung (SIGSTOP) and recycled at
  random: every request gets an answer within its bound, no fast program gets a
  wrong value, and no process of a worker is left once the pool is closed or its
  requests are cancelled.
* Scratch directories left by a run that was killed are removed by the next one,
  and only those whose owner process is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

FAST = "def solution():\n    return {i}"
SLOW = "import time\ndef solution():\n    time.sleep(30)\n    return {i}"
PROGRAM_TIMEOUT = 1.0
EXEC_TIMEOUT = math.ceil(PROGRAM_TIMEOUT + 1.5)
"""Smaller than the time the last requests wait for a worker (12 slow programs on 2
workers), so that counting the wait as the program's time would show."""


def _bwrap_env() -> tuple[Any, Any]:
    from finmath_tasks.sandbox import bwrap

    return bwrap.FinmathBwrapSandboxEnvironment, bwrap.FinmathBwrapConfig(pool_size=2)


def _docker_env() -> tuple[Any, Any]:
    from finmath_tasks.sandbox import docker, docker_image

    ok, reason = docker.docker_available(refresh=True)
    if not ok:
        pytest.skip(f"Docker unavailable: {reason}")
    image = docker_image.ensure_image(docker_image.docker_client(), log=lambda _line: None)
    return docker.FinmathDockerSandboxEnvironment, docker.FinmathDockerConfig(
        image=image, pool_size=2
    )


BACKENDS = [
    pytest.param(_bwrap_env, id="bwrap", marks=pytest.mark.bwrap),
    pytest.param(_docker_env, id="docker", marks=pytest.mark.docker),
]


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_queueing_never_changes_a_programs_result(backend: Any) -> None:
    env_cls, config = backend()
    task = f"pytest-load-{os.getpid()}"
    count = 40
    slow = {i for i in range(count) if i % 10 in (1, 4, 7)}  # 12 of 40

    async def one(sandbox: Any, i: int) -> dict[str, Any]:
        request = {"code": (SLOW if i in slow else FAST).format(i=i), "timeout": PROGRAM_TIMEOUT}
        try:
            response: dict[str, Any] = await sandbox.run_request(request, timeout=EXEC_TIMEOUT)
        except TimeoutError as exc:
            return {"ok": False, "error": f"exec timeout: {exc}"}
        return response

    async def scenario() -> list[dict[str, Any]]:
        await env_cls.task_init(task, config)
        try:
            envs = [await env_cls.sample_init(task, config, {}) for _ in range(count)]
            results = await asyncio.gather(*(one(e["default"], i) for i, e in enumerate(envs)))
            for e in envs:
                await env_cls.sample_cleanup(task, config, e, False)
            return list(results)
        finally:
            await env_cls.task_cleanup(task, config, True)

    results = asyncio.run(scenario())
    timed_out = {i for i, r in enumerate(results) if not r["ok"]}
    assert timed_out == slow, {i: results[i]["error"] for i in timed_out ^ slow}
    for i in slow:
        assert results[i]["error"] == f"timeout after {PROGRAM_TIMEOUT}s"
    for i in set(range(count)) - slow:
        assert results[i]["value"] == i


# --------------------------------------------------------------------------- #
# chaos: workers killed, hung and recycled while requests pour in (bwrap)
# --------------------------------------------------------------------------- #


def _descendants(pid: int) -> set[int]:
    """``pid`` and every live process below it (host view)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                raw = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            ppid = int(raw[raw.rfind(b")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(name))
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        if current not in found:
            found.add(current)
            todo.extend(children.get(current, ()))
    return found


def _alive(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return raw[raw.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def _wait_all_gone(pids: set[int], seconds: float = 10.0) -> set[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = {p for p in pids if _alive(p)}
        if not left:
            return left
        time.sleep(0.05)
    return {p for p in pids if _alive(p)}


def _worker_python(bwrap_pid: int) -> int | None:
    """Host pid of the runner worker inside a worker's bwrap (the deepest python)."""
    procs = []
    for pid in _descendants(bwrap_pid):
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"--worker" in argv and not argv[0].endswith(b"bwrap"):
                procs.append(pid)
    return min(procs) if procs else None  # the worker, not its standby child


async def _serves_correctly_again(pool: Any) -> bool:
    """Once the chaos stops, every worker serves correctly again: a worker killed or
    stopped while idle costs its next request (a sandbox error), then is replaced."""
    size = len(pool.workers)
    first = await asyncio.gather(*(pool.run({"code": FAST.format(i=i)}) for i in range(size)))
    assert all(r["ok"] or r["error"].startswith("sandbox worker") for r in first), first
    after = await asyncio.gather(*(pool.run({"code": FAST.format(i=i)}) for i in range(2 * size)))
    assert [r["value"] for r in after] == list(range(2 * size)), after
    return True


@pytest.mark.slow
@pytest.mark.bwrap
def test_chaos_every_request_is_answered_and_nothing_is_left_behind() -> None:
    from finmath_tasks.sandbox.bwrap_command import BwrapOptions
    from finmath_tasks.sandbox.bwrap_worker import BwrapPool

    _bwrap_env()
    rng = random.Random(int(os.environ.get("FINMATH_CHAOS_SEED", "15")))
    options = BwrapOptions(recycle_after=5, host_margin=1.5)
    count, slow = 80, set(range(3, 80, 8))
    seen: set[int] = set()
    acts: list[str] = []
    bound = 60.0  # per request: waiting (FIFO, 3 workers) + start + timeout + margin

    async def chaos(pool: BwrapPool, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.sleep(rng.uniform(0.1, 0.4))
            if stop.is_set():
                break
            running = [w for w in pool.workers if w.host_pid is not None]
            if not running:
                continue
            worker = rng.choice(running)
            bwrap_pid = worker.host_pid
            assert bwrap_pid is not None
            seen.update(_descendants(bwrap_pid))
            target = _worker_python(bwrap_pid)
            act = rng.choice(["kill-worker", "kill-bwrap", "hang-worker", "none"])
            with_pid = {"kill-bwrap": bwrap_pid}.get(act, target)
            if with_pid is None or act == "none":
                continue
            sig = signal.SIGSTOP if act == "hang-worker" else signal.SIGKILL
            try:
                os.kill(with_pid, sig)
                acts.append(act)
            except ProcessLookupError:
                pass

    async def one(pool: BwrapPool, i: int) -> tuple[dict[str, Any], float]:
        code = (SLOW if i in slow else FAST).format(i=i)
        if i % 3 == 0:  # more than a pipe holds: the send can block on a hung worker
            code += "\n#" + "x" * (256 << 10)
        started = time.monotonic()
        result = await asyncio.wait_for(pool.run({"code": code, "timeout": PROGRAM_TIMEOUT}), bound)
        return result, time.monotonic() - started

    async def scenario() -> list[tuple[dict[str, Any], float]]:
        pool = BwrapPool(3, options)
        stop = asyncio.Event()
        try:
            await pool.start(3)
            agitator = asyncio.ensure_future(chaos(pool, stop))
            results = await asyncio.gather(*(one(pool, i) for i in range(count)))
            stop.set()
            await agitator
            assert await _serves_correctly_again(pool)
            for worker in pool.workers:
                if worker.host_pid is not None:
                    seen.update(_descendants(worker.host_pid))
            return list(results)
        finally:
            await pool.close()

    results = asyncio.run(asyncio.wait_for(scenario(), 300))
    assert len(acts) >= 5, acts
    assert seen and _wait_all_gone(seen) == set()
    for i, (result, _elapsed) in enumerate(results):
        if result["ok"]:
            assert i not in slow and result["value"] == i, (i, result)
        else:  # a slow program, or a victim of the chaos: never a wrong value
            assert i in slow or result["error"].startswith("sandbox worker"), (i, result)
    for i in slow:
        assert not results[i][0]["ok"]
    assert any(r["ok"] for r, _ in results), acts  # (how many survive depends on timing)


def _docker_worker_host_pid(container_id: str, pid_in_container: int) -> int | None:
    """Host pid of a container's process, by its pid in the container's namespace."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if container_id not in Path(f"/proc/{name}/cgroup").read_text():
                continue
            for line in Path(f"/proc/{name}/status").read_text().splitlines():
                if line.startswith("NSpid:") and line.split()[-1] == str(pid_in_container):
                    return int(name)
    return None


@pytest.mark.slow
@pytest.mark.docker
def test_docker_chaos_every_request_is_answered_and_no_container_is_left() -> None:
    from finmath_tasks.sandbox import docker_image, docker_worker

    _, config = _docker_env()
    rng = random.Random(int(os.environ.get("FINMATH_CHAOS_SEED", "15")))
    options = docker_worker.DockerOptions(image=config.image, recycle_after=5, host_margin=1.5)
    count, slow = 40, set(range(3, 40, 8))
    acts: list[str] = []
    containers: set[str] = set()

    async def chaos(pool: docker_worker.DockerPool, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.sleep(rng.uniform(0.2, 0.6))
            if stop.is_set():
                break
            running = [w for w in pool.workers if w.container_id and w._worker_pid]
            if not running:
                continue
            worker = rng.choice(running)
            assert worker.container_id is not None and worker._worker_pid is not None
            containers.add(worker.container_id)
            host_pid = _docker_worker_host_pid(worker.container_id, worker._worker_pid)
            act = rng.choice(["kill-worker", "hang-worker", "none"])
            if host_pid is None or act == "none":
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(host_pid, signal.SIGSTOP if act == "hang-worker" else signal.SIGKILL)
                acts.append(act)

    async def one(pool: docker_worker.DockerPool, i: int) -> dict[str, Any]:
        code = (SLOW if i in slow else FAST).format(i=i)
        if i % 3 == 0:
            code += "\n#" + "x" * (256 << 10)
        request = pool.run({"code": code, "timeout": PROGRAM_TIMEOUT})
        return await asyncio.wait_for(request, 120)

    async def scenario() -> list[dict[str, Any]]:
        pool = docker_worker.DockerPool(2, options, "pytest-docker-chaos")
        stop = asyncio.Event()
        try:
            await pool.start(2)
            agitator = asyncio.ensure_future(chaos(pool, stop))
            results = await asyncio.gather(*(one(pool, i) for i in range(count)))
            stop.set()
            await agitator
            assert await _serves_correctly_again(pool)
            containers.update(w.container_id for w in pool.workers if w.container_id)
            return list(results)
        finally:
            await pool.close()

    results = asyncio.run(asyncio.wait_for(scenario(), 600))
    assert len(acts) >= 3, acts
    for i, result in enumerate(results):
        if result["ok"]:
            assert i not in slow and result["value"] == i, (i, result)
        else:
            assert i in slow or result["error"].startswith("sandbox worker"), (i, result)
    client = docker_image.docker_client()
    left = client.api.containers(all=True, filters={"label": docker_image.LABEL})
    assert not containers & {c["Id"] for c in left}


@pytest.mark.slow
@pytest.mark.bwrap
def test_a_hung_worker_cannot_block_the_send_of_a_large_request() -> None:
    from finmath_tasks.sandbox.bwrap_command import BwrapOptions
    from finmath_tasks.sandbox.bwrap_worker import BwrapWorker

    _bwrap_env()

    async def scenario() -> dict[str, Any]:
        worker = BwrapWorker(BwrapOptions(host_margin=1.0))
        try:
            await worker.start()
            assert worker.host_pid is not None
            target = _worker_python(worker.host_pid)
            assert target is not None
            os.kill(target, signal.SIGSTOP)
            code = FAST.format(i=1) + "\n#" + "x" * (1 << 20)  # far more than a pipe holds
            request = worker.run({"code": code, "timeout": PROGRAM_TIMEOUT})
            return await asyncio.wait_for(request, 20)
        finally:
            await worker.close()

    response = asyncio.run(scenario())
    assert response["error"] == (
        f"sandbox worker did not answer within {PROGRAM_TIMEOUT + 1.0:.1f}s; "
        "it was killed and will be restarted"
    )


_FORK_DEADLOCK = """
import asyncio, os, sys, threading
from finmath_tasks.sandbox.bwrap_worker import BwrapWorker

# A lock another thread holds at the moment of a fork stays locked in the child
# forever: here, one that an at-fork hook (like many libraries') needs in the child.
held, armed = threading.Lock(), True
held.acquire()
os.register_at_fork(after_in_child=lambda: armed and held.acquire())

async def main():
    worker = BwrapWorker()
    response = await worker.run({"code": "def solution():\\n    return 3"})
    groups = open(f"/proc/{worker.host_pid}/cgroup").read()  # bwrap's: joined before exec
    joined = worker.cgroup is not None and all(d.name in groups for d in worker.cgroup.dirs)
    print(joined, response["value"], flush=True)
    await worker.close()

asyncio.run(main())
"""


@pytest.mark.slow
@pytest.mark.bwrap
def test_starting_a_worker_runs_no_python_in_a_fork_of_the_evaluating_process() -> None:
    """A preexec_fn (used to join the cgroup) makes the child of the evaluating
    process run Python after the fork; with a lock held by another thread, it never
    reaches exec, and asyncio's Popen (in the event loop's thread) waits for it: the
    whole run freezes and the forked copy is left behind (parent pid 1) when killed."""
    _bwrap_env()
    src = str(Path(__file__).resolve().parents[2] / "src")
    proc = subprocess.Popen(
        [sys.executable, "-c", _FORK_DEADLOCK],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": src},
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        out = "frozen"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the stuck fork is in the same group
        proc.wait()
    in_cgroup = "True" if os.geteuid() == 0 else "False"  # cgroups need root here
    assert out.split() == [in_cgroup, "3.0"], out


@pytest.mark.slow
@pytest.mark.bwrap
def test_cancelled_requests_leave_no_worker_behind() -> None:
    from finmath_tasks.sandbox.bwrap_worker import BwrapPool

    _bwrap_env()
    seen: set[int] = set()

    async def scenario() -> None:
        pool = BwrapPool(2)
        await pool.start(2)
        runs = [
            asyncio.ensure_future(pool.run({"code": SLOW.format(i=i), "timeout": 10}))
            for i in range(6)
        ]
        await asyncio.sleep(1.0)
        for worker in pool.workers:
            assert worker.host_pid is not None
            seen.update(_descendants(worker.host_pid))
        for run in runs:  # as when an eval is interrupted
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        # the cancelled requests' workers are killed at once, before any close()
        assert _wait_all_gone(seen) == set()
        assert all(w.host_pid is None for w in pool.workers)
        response = await pool.run({"code": FAST.format(i=7)})  # and start again on demand
        assert response["ok"] and response["value"] == 7
        await pool.close()

    asyncio.run(scenario())


# --------------------------------------------------------------------------- #
# leftovers of a killed run
# --------------------------------------------------------------------------- #


@pytest.mark.slow
@pytest.mark.bwrap
def test_leftover_scratch_dirs_of_dead_owners_are_removed_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from finmath_tasks.sandbox import bwrap

    env_cls, config = _bwrap_env()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live_start = bwrap._process_start(live.pid)
        assert live_start is not None
        dirs = {
            "dead": tmp_path / f"finmath-bwrap-{dead.pid}-{live_start}-abc123",
            "live": tmp_path / f"finmath-bwrap-{live.pid}-{live_start}-abc123",
            "reused": tmp_path / f"finmath-bwrap-{live.pid}-{int(live_start) - 1}-abc123",
            "old-name": tmp_path / "finmath-bwrap-k3j2x9a",
            "other": tmp_path / "something-else",
        }
        for path in dirs.values():
            (path / "sub").mkdir(parents=True)
            (path / "sub" / "file").write_text("x")
        (tmp_path / "outside").mkdir()
        (tmp_path / "outside" / "keep").write_text("x")
        os.symlink(tmp_path / "outside", dirs["dead"] / "link")
        os.symlink(tmp_path / "outside", tmp_path / f"finmath-bwrap-{dead.pid}-1-abc123")

        async def scenario() -> str:
            await env_cls.task_init("pytest-leftovers", config)
            try:
                envs = await env_cls.sample_init("pytest-leftovers", config, {})
                scratch = str(envs["default"]._scratch)
                await env_cls.sample_cleanup("pytest-leftovers", config, envs, False)
                return scratch
            finally:
                await env_cls.task_cleanup("pytest-leftovers", config, True)

        scratch = asyncio.run(scenario())
    finally:
        live.kill()
        live.wait()
    assert not dirs["dead"].exists() and not dirs["reused"].exists()
    assert dirs["live"].exists() and dirs["old-name"].exists() and dirs["other"].exists()
    assert (tmp_path / "outside" / "keep").exists()  # links were not followed
    assert (tmp_path / f"finmath-bwrap-{dead.pid}-1-abc123").is_symlink()  # not a dir: kept
    # this run's own directories record its owner the same way
    own = bwrap._process_start(os.getpid())
    assert Path(scratch).name.startswith(f"finmath-bwrap-{os.getpid()}-{own}-")
