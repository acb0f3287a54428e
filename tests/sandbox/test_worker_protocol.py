"""The host side of the warm-worker protocol (``worker.py``), without a sandbox.

Both backends delegate the policy of a request to :class:`WarmWorker` and the
runner command of their Inspect sandbox to :class:`WorkerSandboxEnvironment`;
here they run against an in-memory stand-in for the worker process, so every
path (restart, resend on exit status 75, guard, invalid answers) is exercised
deterministically. The backends' own tests check the same paths end to end.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest
from inspect_ai.util import ExecResult, SandboxUserUnsupportedError
from pydantic import BaseModel

from finmath_tasks.sandbox import RUNNER_ARGV, runner
from finmath_tasks.sandbox.protocol import (
    encode_request,
    error_result,
    read_response,
    request_timeout,
    valid_response,
)
from finmath_tasks.sandbox.worker import (
    WarmWorker,
    WorkerConfig,
    WorkerOptions,
    WorkerPool,
    WorkerSandboxEnvironment,
    config_model,
    default_pool_size,
)


class FakeProcess:
    """One worker process: answers per ``mode``, counts its requests."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.seq = 0
        self.status: int | None = None  # exit status once it has exited

    def answer(self, request: dict[str, Any]) -> bytes:
        if self.mode == "exit75-at-once":
            self.status = runner.EXIT_RECYCLE
        if self.status is not None:
            return b""  # it had exited before reading the request
        self.seq += 1
        if self.mode == "hang":
            raise TimeoutError
        if self.mode == "die":
            self.status = 1
            return b""
        if self.mode == "garbage":
            return b"not json\n"
        response = runner.error_response("") | {"ok": True, "value": 1.0, "error": None}
        response["worker_seq"] = self.seq + (1 if self.mode == "wrong-seq" else 0)
        response["stdout"] = request["code"]
        if self.mode == "recycle":
            response["recycle"] = True
        if self.mode == "exit75-after-one":
            self.status = runner.EXIT_RECYCLE  # exits after answering, between requests
        return (json.dumps(response) + "\n").encode()


class FakeWorker(WarmWorker):
    def __init__(self, *modes: str) -> None:
        super().__init__(WorkerOptions(host_margin=3.0))
        self.modes = list(modes)  # one per process start; the last one repeats
        self.proc: FakeProcess | None = None
        self.discarded = 0
        self.abandoned = 0

    async def _ensure_started(self) -> None:
        if self.proc is not None and not self._recycle_pending:
            return
        mode = self.modes.pop(0) if len(self.modes) > 1 else self.modes[0]
        self.starts += 1
        ready = {"no-ready": b'{"ready": false}\n', "garbage-ready": b"garbage\n"}.get(
            mode, b'{"ready": true, "pid": 7}\n'
        )
        problem = self._accept_ready(ready)
        if problem is not None:
            raise self._start_failure(problem)
        self.proc = FakeProcess(mode)

    async def _roundtrip(self, payload: bytes, guard: float) -> bytes:
        assert self.proc is not None and payload.endswith(b"\n")
        self.guard = guard
        if self.proc.mode == "slow":
            await asyncio.sleep(10)
        return self.proc.answer(json.loads(payload))

    async def _exit_status(self) -> int | None:
        return None if self.proc is None else self.proc.status

    async def _discard(self) -> None:
        self.discarded += 1
        self.proc = None

    def _abandon(self) -> None:
        self.abandoned += 1
        self.proc = None

    def _stderr_tail(self) -> str:
        return "the tail"


def run(worker: FakeWorker, *codes: str, **extra: Any) -> list[dict[str, Any]]:
    async def scenario() -> list[dict[str, Any]]:
        return [await worker.run({"code": code, **extra}) for code in codes]

    return asyncio.run(scenario())


def test_requests_go_to_one_warm_worker_in_sequence() -> None:
    worker = FakeWorker("ok")
    first, second = run(worker, "a", "b")
    assert (first["worker_seq"], second["worker_seq"]) == (1, 2)
    assert (first["stdout"], second["stdout"]) == ("a", "b")
    assert worker.starts == 1 and worker.discarded == 0
    assert worker.ready_info == {"ready": True, "pid": 7}


def test_exit_status_75_between_requests_resends_to_a_fresh_worker() -> None:
    worker = FakeWorker("exit75-after-one", "ok")
    first, second = run(worker, "a", "b")
    assert first["ok"] and second["ok"], second
    assert second["stdout"] == "b" and second["worker_seq"] == 1  # the fresh worker's first
    assert worker.starts == 2 and worker.discarded == 1


def test_a_worker_that_keeps_exiting_gives_up_after_one_resend() -> None:
    worker = FakeWorker("exit75-at-once")
    [resp] = run(worker, "a")
    assert resp == error_result(
        "sandbox worker keeps exiting before taking the request", sandbox_failure=True
    )
    assert worker.starts == 2


def test_a_dead_worker_is_reported_and_restarted() -> None:
    worker = FakeWorker("die", "ok")
    first, second = run(worker, "a", "b")
    assert first == error_result(
        "sandbox worker died (exit status 1); it will be restarted. the tail",
        sandbox_failure=True,
    )
    assert second["ok"] and worker.starts == 2 and worker.discarded == 1


def test_the_host_guard_is_the_request_timeout_plus_the_margin() -> None:
    worker = FakeWorker("hang", "ok")
    first, second = run(worker, "a", "b", timeout=1.5)
    assert first["ok"] is False
    assert first["error"] == (
        "sandbox worker did not answer within 4.5s; it was killed and will be restarted"
    )
    assert first["sandbox_failure"] is True  # the sandbox's failure, not the program's
    assert worker.guard == 4.5 and worker.discarded == 1
    assert second["ok"] and worker.starts == 2


@pytest.mark.parametrize("mode", ["garbage", "wrong-seq"])
def test_invalid_or_out_of_sequence_answers_kill_the_worker(mode: str) -> None:
    worker = FakeWorker(mode, "ok")
    first, second = run(worker, "a", "b")
    assert first == error_result(
        "sandbox worker sent an invalid response; it will be restarted", sandbox_failure=True
    )
    assert second["ok"] and worker.starts == 2 and worker.discarded == 1


def test_a_recycling_worker_is_replaced_before_the_next_request() -> None:
    worker = FakeWorker("recycle", "ok")
    first, second = run(worker, "a", "b")
    assert first["ok"] and "recycle" not in first
    assert second["ok"] and second["worker_seq"] == 1
    assert worker.starts == 2 and worker.discarded == 0


def test_start_failures_and_bad_requests_become_error_results() -> None:
    worker = FakeWorker("no-ready")
    [resp] = run(worker, "a")
    assert resp == error_result(
        "sandbox worker failed to start: no ready line; worker stderr: the tail",
        sandbox_failure=True,
    )
    [resp] = run(FakeWorker("garbage-ready"), "a")
    assert resp["error"] == (
        "sandbox worker failed to start: JSONDecodeError; worker stderr: the tail"
    )
    [resp] = run(FakeWorker("ok"), "a", bad=object())
    assert resp["ok"] is False and "sandbox_failure" not in resp
    assert resp["error"].startswith("bad request: not JSON-serialisable")


def test_a_cancelled_request_abandons_the_worker() -> None:
    worker = FakeWorker("slow")

    async def scenario() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(worker.run({"code": "a"}), 0.1)

    asyncio.run(scenario())
    assert worker.abandoned == 1 and worker.proc is None


def test_request_timeout_is_read_as_the_runner_reads_it() -> None:
    assert request_timeout({"timeout": 2}) == 2.0
    assert request_timeout({"timeout": 10_000}) == runner.MAX_TIMEOUT
    for bad in ({}, {"timeout": True}, {"timeout": -1}, {"timeout": "3"}, []):
        assert request_timeout(bad) == runner.DEFAULT_TIMEOUT
    assert encode_request({"code": "a\nb"}) == b'{"code": "a\\nb"}\n'


def test_responses_must_have_the_schema_and_the_sequence_number() -> None:
    good = runner.error_response("x") | {"worker_seq": 3}
    assert read_response(json.dumps(good).encode(), 3) == good
    assert read_response(json.dumps(good).encode(), 2) is None
    assert read_response(b"[1]", 1) is None and read_response(b"{", 1) is None
    assert valid_response(good)
    for bad in (good | {"ok": 1}, good | {"error": 5}, good | {"stdout": None}, [good]):
        assert not valid_response(bad)


# --------------------------------------------------------------------------- #
# the Inspect sandbox part
# --------------------------------------------------------------------------- #


class FakeConfig(WorkerConfig, frozen=True):
    pool_size: int = 1


class FakeEnvironment(WorkerSandboxEnvironment):
    sandbox_name = "finmath_fake"
    config_class = FakeConfig

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, bytes] = {}
        self.commands: list[list[str]] = []
        self.timeouts: list[float | None] = []

    async def _run_request(self, request: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        self.timeouts.append(timeout)
        return runner.error_response("") | {"ok": True, "value": 2.0, "error": None}

    async def _exec_command(
        self,
        cmd: list[str],
        input: str | bytes | None,
        cwd: str | None,
        env: dict[str, str] | None,
        timeout: int | None,
    ) -> ExecResult[str]:
        self.commands.append(cmd)
        return ExecResult(success=False, returncode=3, stdout="", stderr="one-off")

    async def _read_bytes(self, file: str) -> bytes:
        return self.files[file]

    async def _write_bytes(self, file: str, data: bytes) -> None:
        self.files[file] = data

    @classmethod
    async def sample_cleanup(cls, *args: Any) -> None:
        return


def test_requests_go_to_the_worker_and_every_command_is_one_off() -> None:
    env = FakeEnvironment()

    async def scenario() -> None:
        response = await env.run_request({"code": "x"})
        assert response["value"] == 2.0
        for bad in ("not json", [1], None):
            response = await env.run_request(bad)
            assert "must be a JSON object" in response["error"]
        await env.run_request({"code": "x"}, timeout=7)
        assert env.timeouts == [None, 7]  # the timeout goes to the worker (pool)
        res = await env.exec(["python3", "-c", "pass"])
        assert (res.returncode, res.stderr) == (3, "one-off")
        # the runner's command line is a command like any other: no routing by argv
        res = await env.exec(list(RUNNER_ARGV), input='{"code": "x"}')
        assert (res.returncode, res.stderr) == (3, "one-off")
        assert env.commands == [["python3", "-c", "pass"], list(RUNNER_ARGV)]
        with pytest.raises(SandboxUserUnsupportedError, match="finmath_fake runs every"):
            await env.exec(list(RUNNER_ARGV), user="root")
        await env.write_file("a.txt", "héllo\r\n")
        assert env.files["a.txt"] == "héllo\r\n".encode()
        assert await env.read_file("a.txt") == "héllo\r\n"
        assert await env.read_file("a.txt", text=False) == "héllo\r\n".encode()

    asyncio.run(scenario())


def test_config_model() -> None:
    class Other(BaseModel):
        memory_mb: int = 256

    assert config_model(None, FakeConfig, "finmath_fake") == FakeConfig()
    config = FakeConfig(pool_size=3)
    assert config_model(config, FakeConfig, "finmath_fake") is config
    assert config_model(Other(), FakeConfig, "finmath_fake") == FakeConfig(memory_mb=256)
    with pytest.raises(ValueError, match="the finmath_fake sandbox takes no config file"):
        config_model({"pool_size": 2}, FakeConfig, "finmath_fake")  # type: ignore[arg-type]
    assert FakeEnvironment.config_deserialize({"pool_size": 2}) == FakeConfig(pool_size=2)


# --------------------------------------------------------------------------- #
# the pool: waiting for a worker is not the program's time
# --------------------------------------------------------------------------- #


class SlowStartWorker(FakeWorker):
    """Takes ``start_delay`` s to start; each answer takes ``delay`` s."""

    def __init__(self, delay: float = 0.0, start_delay: float = 0.0) -> None:
        super().__init__("ok")
        self.delay, self.start_delay = delay, start_delay

    async def _ensure_started(self) -> None:
        if self.proc is None:
            await asyncio.sleep(self.start_delay)
        await super()._ensure_started()

    async def _roundtrip(self, payload: bytes, guard: float) -> bytes:
        await asyncio.sleep(self.delay)
        return await super()._roundtrip(payload, guard)


class PoolEnvironment(FakeEnvironment):
    def __init__(self, pool: WorkerPool) -> None:
        super().__init__()
        self.pool = pool

    async def _run_request(self, request: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        return await self.pool.run(request, timeout)


@pytest.mark.slow
def test_the_exec_timeout_bounds_the_run_not_the_wait_for_a_worker() -> None:
    # one worker, 6 requests of 0.2 s each, an exec timeout of 1 s: the last waits
    # 1 s for the worker (and the first 0.5 s for its start), yet none times out
    env = PoolEnvironment(WorkerPool([SlowStartWorker(delay=0.2, start_delay=0.5)]))

    async def scenario() -> list[Any]:
        runs = [env.run_request({"code": str(i)}, timeout=1) for i in range(6)]
        return await asyncio.gather(*runs, return_exceptions=True)

    results = asyncio.run(scenario())
    assert [r["stdout"] for r in results] == [str(i) for i in range(6)]


def test_a_run_longer_than_the_exec_timeout_raises_and_kills_the_worker() -> None:
    worker = FakeWorker("hang", "ok")

    async def scenario() -> dict[str, Any]:
        with pytest.raises(TimeoutError, match="program did not finish within 1s"):
            await worker.run({"code": "a", "timeout": 3}, timeout=1)
        assert worker.guard == 1 and worker.discarded == 1
        return await worker.run({"code": "b"})

    assert asyncio.run(scenario())["ok"]
    assert worker.starts == 2


@pytest.mark.slow
def test_waiting_too_long_for_a_worker_is_a_sandbox_failure_not_a_timeout() -> None:
    pool = WorkerPool([SlowStartWorker(delay=1.0)], queue_timeout=0.2)

    async def scenario() -> list[dict[str, Any]]:
        return list(await asyncio.gather(pool.run({"code": "a"}), pool.run({"code": "b"})))

    first, second = asyncio.run(scenario())
    assert first["ok"] and first["stdout"] == "a"
    assert second["ok"] is False
    assert second["error"].startswith("sandbox busy: no worker within 0.2s (1 workers;")
    assert "timeout" not in second["error"].split("(")[0]


def test_the_pool_hands_each_request_an_idle_worker_and_gets_it_back() -> None:
    workers = [SlowStartWorker(delay=0.05) for _ in range(3)]
    pool = WorkerPool(workers)

    async def scenario() -> list[dict[str, Any]]:
        first = await asyncio.gather(*(pool.run({"code": str(i)}) for i in range(9)))
        task = asyncio.ensure_future(pool.run({"code": "cancelled"}))
        await asyncio.sleep(0.01)
        task.cancel()  # a cancelled request still gives its worker back
        with pytest.raises(asyncio.CancelledError):
            await task
        return [*first, *await asyncio.gather(*(pool.run({"code": "x"}) for _ in range(3)))]

    results = asyncio.run(scenario())
    assert all(r["ok"] for r in results)
    assert sorted(w.starts for w in workers) == [1, 1, 2]  # the cancelled one was abandoned
    assert sum(w.abandoned for w in workers) == 1
    with pytest.raises(ValueError):
        WorkerPool([])


def test_a_request_cancelled_while_its_worker_starts_abandons_that_worker() -> None:
    worker = SlowStartWorker(start_delay=10)

    async def scenario() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(worker.run({"code": "a"}), 0.1)

    asyncio.run(scenario())
    assert worker.abandoned == 1


def test_the_default_pool_size_follows_the_available_cpus() -> None:
    assert default_pool_size() == len(os.sched_getaffinity(0))
    assert FakeConfig().queue_timeout > 0
    assert WorkerConfig().pool_size == min(len(os.sched_getaffinity(0)), 32)
