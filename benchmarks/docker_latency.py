"""Latency of the Docker sandbox on the FinanceMath validation gold programs.

Two ways of running each of the 200 ``python_solution`` programs:

* ``docker-warm``: one container and the runner's warm worker, one request at a
  time (what the ``finmath_docker`` sandbox does);
* ``docker-cold``: a fresh container per program, the equivalent of
  ``docker run --rm -i --network none --read-only ... python3 runner.py`` through
  the SDK, with the one-shot runner (what a sandbox without a warm worker pays).

Prints median / p95 / mean latency per program (host wall clock, request to
response), throughput, and the cold/warm ratios; checks that both modes return
the same values.

    python benchmarks/docker_latency.py [--limit N] [--cold-limit N] [--timeout S]

Data: ``$FINMATH_DATA_DIR/financemath/validation.json`` (default ``../shared/data``
beside the repository). Needs a Docker engine and the sandbox image
(``bash scripts/docker-setup.sh``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "src"))

from finmath_tasks.sandbox import RUNNER_PATH_IN_SANDBOX  # noqa: E402
from finmath_tasks.sandbox import docker as backend  # noqa: E402


@dataclass
class Measurement:
    """Per-program latencies (ms) and responses of one mode."""

    name: str
    latencies_ms: list[float] = field(default_factory=list)
    responses: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0
    setup_s: float = 0.0

    @property
    def ok(self) -> int:
        return sum(1 for r in self.responses if r.get("ok"))

    def percentile(self, q: float) -> float:
        data = sorted(self.latencies_ms)
        if not data:
            return math.nan
        rank = max(0, math.ceil(q / 100 * len(data)) - 1)
        return data[rank]

    @property
    def median(self) -> float:
        return statistics.median(self.latencies_ms) if self.latencies_ms else math.nan

    @property
    def throughput(self) -> float:
        return len(self.latencies_ms) / self.wall_s if self.wall_s else math.nan


def load_programs(limit: int | None = None) -> list[str]:
    data_dir = Path(os.environ.get("FINMATH_DATA_DIR") or REPO_ROOT.parent / "shared" / "data")
    path = data_dir / "financemath" / "validation.json"
    if not path.is_file():
        raise SystemExit(f"data not found: {path} (set FINMATH_DATA_DIR)")
    rows = json.loads(path.read_text())
    programs = [row["python_solution"] for row in rows if row.get("python_solution")]
    return programs[:limit] if limit else programs


def _request(code: str, timeout: float) -> dict[str, Any]:
    return {"code": code, "entry": "solution", "timeout": timeout, "max_output": 8192}


def docker_warm(
    programs: list[str], timeout: float = 10.0, image: str | None = None
) -> Measurement:
    """Hook: the finmath_docker warm worker (one container, one request at a time)."""
    result = Measurement("docker-warm")

    async def scenario() -> None:
        worker = backend.DockerWorker(backend.DockerOptions(image=image), task_name="benchmark")
        started = time.perf_counter()
        await worker.start()
        result.setup_s = time.perf_counter() - started
        try:
            wall = time.perf_counter()
            for code in programs:
                t0 = time.perf_counter()
                response = await worker.run(_request(code, timeout))
                result.latencies_ms.append((time.perf_counter() - t0) * 1000)
                result.responses.append(response)
            result.wall_s = time.perf_counter() - wall
        finally:
            await worker.close()

    asyncio.run(scenario())
    return result


def _run_fresh_container(client: Any, image: str, request: dict[str, Any]) -> dict[str, Any]:
    """One program in a fresh, locked-down container (``docker run --rm -i`` equivalent)."""
    api = client.api
    host_config = api.create_host_config(
        network_mode="none",
        read_only=True,
        tmpfs={"/tmp": "rw,nosuid,nodev,noexec,size=64m,mode=1777"},
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        pids_limit=128,
        mem_limit="2g",
        memswap_limit="2g",
        nano_cpus=10**9,
        ipc_mode="none",
        auto_remove=True,
    )
    container_id = api.create_container(
        image,
        command=["python3", "-I", "-B", RUNNER_PATH_IN_SANDBOX],
        user=backend.SANDBOX_USER,
        working_dir="/tmp",
        stdin_open=True,  # + StdinOnce: EOF after our request
        network_disabled=True,
        host_config=host_config,
        labels={backend.LABEL: "benchmark"},
    )["Id"]
    try:
        attach = api.attach_socket(
            container_id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        )
        stream = backend._ExecStream(attach)  # same stream framing as exec
        try:
            api.start(container_id)
            stream.send((json.dumps(request) + "\n").encode())
            stream.close_stdin()
            out = bytearray()
            deadline = time.monotonic() + request["timeout"] + 60
            while (frame := stream.read_frame(deadline)) is not None:
                if frame[0] == 1:
                    out += frame[1]
        finally:
            stream.close()
    finally:
        backend._remove_container(client, container_id)
    try:
        response: dict[str, Any] = json.loads(out)
    except ValueError:
        response = {"ok": False, "error": f"no JSON response: {bytes(out[:200])!r}"}
    return response


def docker_cold(
    programs: list[str], timeout: float = 10.0, image: str | None = None
) -> Measurement:
    """Hook: a fresh container per program with the one-shot runner."""
    result = Measurement("docker-cold")
    client = backend.docker_client()
    started = time.perf_counter()
    image = backend.ensure_image(client, image=image)
    result.setup_s = time.perf_counter() - started
    wall = time.perf_counter()
    for code in programs:
        t0 = time.perf_counter()
        response = _run_fresh_container(client, image, _request(code, timeout))
        result.latencies_ms.append((time.perf_counter() - t0) * 1000)
        result.responses.append(response)
    result.wall_s = time.perf_counter() - wall
    return result


def report(results: list[Measurement]) -> None:
    header = f"{'mode':<12} {'n':>4} {'ok':>4} {'median ms':>10} {'p95 ms':>9} {'mean ms':>9}"
    header += f" {'progs/s':>8} {'setup s':>8}"
    print(header)
    for m in results:
        mean = statistics.fmean(m.latencies_ms) if m.latencies_ms else math.nan
        print(
            f"{m.name:<12} {len(m.latencies_ms):>4} {m.ok:>4} {m.median:>10.1f}"
            f" {m.percentile(95):>9.1f} {mean:>9.1f} {m.throughput:>8.2f} {m.setup_s:>8.2f}"
        )
    if len(results) == 2:
        warm, cold = results
        print(
            f"ratio {cold.name}/{warm.name}: median x{cold.median / warm.median:.1f}, "
            f"p95 x{cold.percentile(95) / warm.percentile(95):.1f}, "
            f"throughput x{warm.throughput / cold.throughput:.1f} in favour of {warm.name}"
        )
        n = min(len(warm.responses), len(cold.responses))
        differ = [
            i
            for i in range(n)
            if warm.responses[i].get("ok") != cold.responses[i].get("ok")
            or warm.responses[i].get("value") != cold.responses[i].get("value")
        ]
        print(
            f"same result in both modes: {n - len(differ)}/{n}"
            + (f" (differ: {differ[:10]})" if differ else "")
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="first N programs (warm)")
    parser.add_argument("--cold-limit", type=int, default=None, help="first N programs (cold)")
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--image", default=None, help="sandbox image (default: build/reuse)")
    parser.add_argument("--skip-cold", action="store_true")
    args = parser.parse_args(argv)

    ok, reason = backend.docker_available()
    if not ok:
        print(f"docker unavailable: {reason}", file=sys.stderr)
        return 2
    programs = load_programs(args.limit)
    print(f"{len(programs)} FinanceMath validation gold programs; {reason}")
    modes: list[tuple[Callable[..., Measurement], list[str]]] = [(docker_warm, programs)]
    if not args.skip_cold:
        cold_limit = args.cold_limit or len(programs)
        modes.append((docker_cold, programs[:cold_limit]))
    results = [fn(progs, args.timeout, args.image) for fn, progs in modes]
    report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
