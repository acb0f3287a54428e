"""Latency of the program executor on the FinanceMath validation gold programs.

Runs the 200 ``python_solution`` programs of
``$FINMATH_DATA_DIR/financemath/validation.json`` (default ``../shared/data``
beside the repository) through one or more backends, one program at a time:

* ``bwrap``: the warm ``runner.py --worker`` inside bubblewrap (BwrapWorker);
* ``bwrap-pool``: two such workers used alternately (BwrapPool), not by default;
* ``cold``: a fresh ``python3 runner.py`` subprocess per program (one-shot
  mode, same runner, NO isolation) -- what a sandbox without a warm worker pays;
* ``docker`` / ``docker-cold``: HOOKS for the Docker backend (a warm worker in
  one container; a fresh container per program), to be filled in by the Docker
  backend's owner: see :func:`run_docker_warm` and :func:`run_docker_cold`.

For each backend it prints the median and p95 latency per program (host wall
clock, request to response), the throughput (programs/s over the whole run),
how many values match the reference, and the cold/warm ratios.

The reference value of each program is computed in a separate cold subprocess
(plain ``exec`` + ``solution()``, as the FinanceMath reference evaluation does),
never in this process. A value matches when it is within 1e-9 relative of it.

    python benchmarks/sandbox_latency.py [--backends bwrap,cold] [--limit N]
        [--preamble numpy] [--repeat R]

``--preamble numpy`` prepends ``import numpy as np`` / ``import numpy_financial
as npf`` to every program, as model-written programs often do (the gold
programs import almost nothing, so their cold cost is mostly interpreter
start-up); ``--preamble all`` also imports sympy and scipy.stats.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT / "src") not in sys.path:
    sys.path.insert(0, str(REPO_ROOT / "src"))

from finmath_tasks.sandbox import runner_source_path  # noqa: E402

PREAMBLES = {
    "none": "",
    "numpy": "import numpy as np\nimport numpy_financial as npf\n",
    "all": "import numpy as np\nimport numpy_financial as npf\nimport sympy\nimport scipy.stats\n",
}

REFERENCE_SCRIPT = r"""
import json, math, sys
programs = json.load(sys.stdin)
out = []
for code in programs:
    namespace = {"__name__": "reference"}
    try:
        exec(compile(code, "<gold>", "exec"), namespace)
        value = float(namespace["solution"]())
        out.append(value if math.isfinite(value) else None)
    except BaseException:
        out.append(None)
print(json.dumps(out))
"""


@dataclass
class BackendRun:
    """Latencies (ms) and responses of one backend."""

    name: str
    latencies_ms: list[float] = field(default_factory=list)
    responses: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0
    setup_s: float = 0.0
    skipped: str | None = None

    def percentile(self, q: float) -> float:
        data = sorted(self.latencies_ms)
        if not data:
            return math.nan
        return data[min(len(data) - 1, max(0, math.ceil(q * len(data)) - 1))]

    @property
    def median(self) -> float:
        return statistics.median(self.latencies_ms) if self.latencies_ms else math.nan

    @property
    def throughput(self) -> float:
        return len(self.latencies_ms) / self.wall_s if self.wall_s else math.nan


def data_dir() -> Path:
    default = REPO_ROOT.parent / "shared" / "data"
    return Path(os.environ.get("FINMATH_DATA_DIR", default))


def load_programs(limit: int | None, preamble: str) -> list[str]:
    path = data_dir() / "financemath" / "validation.json"
    records = json.loads(path.read_text())
    programs = [r["python_solution"] for r in records if r.get("python_solution")]
    return [preamble + code for code in programs[:limit]]


def reference_values(programs: list[str]) -> list[float | None]:
    """Each program's own value, computed in a separate cold interpreter."""
    proc = subprocess.run(
        [sys.executable, "-c", REFERENCE_SCRIPT],
        input=json.dumps(programs),
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _request(code: str, timeout: float) -> dict[str, Any]:
    return {"code": code, "timeout": timeout}


# --------------------------------------------------------------------------- #
# backends
# --------------------------------------------------------------------------- #


async def run_bwrap(programs: list[str], timeout: float) -> BackendRun:
    from finmath_tasks.sandbox.bwrap import BwrapWorker, bwrap_available

    result = BackendRun("bwrap")
    ok, reason = bwrap_available()
    if not ok:
        result.skipped = reason
        return result
    worker = BwrapWorker()
    t0 = time.perf_counter()
    await worker.start()
    result.setup_s = time.perf_counter() - t0
    try:
        await worker.run(_request("def solution():\n    return 0", timeout))  # warm-up
        start = time.perf_counter()
        for code in programs:
            t = time.perf_counter()
            response = await worker.run(_request(code, timeout))
            result.latencies_ms.append((time.perf_counter() - t) * 1000)
            result.responses.append(response)
        result.wall_s = time.perf_counter() - start
    finally:
        await worker.close()
    return result


async def run_bwrap_pool(programs: list[str], timeout: float) -> BackendRun:
    """Two warm workers used alternately (least recently used): one cleans up
    after its program while the other runs the next one."""
    from finmath_tasks.sandbox.bwrap import BwrapPool, bwrap_available

    result = BackendRun("bwrap-pool")
    ok, reason = bwrap_available()
    if not ok:
        result.skipped = reason
        return result
    pool = BwrapPool(2)
    t0 = time.perf_counter()
    await pool.start(2)
    result.setup_s = time.perf_counter() - t0
    try:
        for _ in range(2):
            await pool.run(_request("def solution():\n    return 0", timeout))  # warm-up
        start = time.perf_counter()
        for code in programs:
            t = time.perf_counter()
            response = await pool.run(_request(code, timeout))
            result.latencies_ms.append((time.perf_counter() - t) * 1000)
            result.responses.append(response)
        result.wall_s = time.perf_counter() - start
    finally:
        await pool.close()
    return result


async def run_cold(programs: list[str], timeout: float) -> BackendRun:
    """A fresh ``python3 runner.py`` (one-shot mode) per program, no isolation."""
    result = BackendRun("cold")
    argv = [sys.executable, str(runner_source_path())]
    start = time.perf_counter()
    for code in programs:
        t = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate(json.dumps(_request(code, timeout)).encode())
        result.latencies_ms.append((time.perf_counter() - t) * 1000)
        try:
            result.responses.append(json.loads(out))
        except ValueError:
            result.responses.append({"ok": False, "error": err.decode()[-300:]})
    result.wall_s = time.perf_counter() - start
    return result


# ---- HOOKS for the Docker backend (to be filled in by its owner) ---------- #
# Each receives the programs and the per-program timeout and returns a
# BackendRun with one latency (ms, request to response) and one runner
# response per program, ``wall_s`` for the whole loop and ``setup_s`` for
# starting the container/worker. Set ``skipped`` to a reason when Docker is
# unavailable. benchmarks/docker_latency.py has the measuring code to reuse.


async def run_docker_warm(programs: list[str], timeout: float) -> BackendRun:
    """HOOK (c): the warm runner worker in one container, one request at a time."""
    return BackendRun("docker", skipped="not implemented yet (hook for the Docker backend)")


async def run_docker_cold(programs: list[str], timeout: float) -> BackendRun:
    """HOOK (d): a fresh container per program with the one-shot runner."""
    return BackendRun("docker-cold", skipped="not implemented yet (hook for the Docker backend)")


BACKENDS: dict[str, Callable[[list[str], float], Awaitable[BackendRun]]] = {
    "bwrap": run_bwrap,
    "bwrap-pool": run_bwrap_pool,
    "cold": run_cold,
    "docker": run_docker_warm,
    "docker-cold": run_docker_cold,
}
WARM = ("bwrap", "bwrap-pool", "docker")


# --------------------------------------------------------------------------- #
# report
# --------------------------------------------------------------------------- #


def _matches(response: dict[str, Any], reference: float | None) -> bool:
    if reference is None:
        return not response.get("ok")
    value = response.get("value")
    return (
        bool(response.get("ok"))
        and isinstance(value, (int, float))
        and math.isclose(value, reference, rel_tol=1e-9, abs_tol=1e-12)
    )


def report(runs: list[BackendRun], references: list[float | None]) -> None:
    numeric = sum(r is not None for r in references)
    print(f"\n{len(references)} programs ({numeric} with a numeric reference value)\n")
    header = (
        f"{'backend':<12}{'median ms':>11}{'p95 ms':>10}{'prog/s':>9}{'correct':>11}{'setup s':>9}"
    )
    print(header)
    print("-" * len(header))
    for run in runs:
        if run.skipped:
            print(f"{run.name:<12}  skipped: {run.skipped}")
            continue
        correct = sum(_matches(r, ref) for r, ref in zip(run.responses, references, strict=True))
        print(
            f"{run.name:<12}{run.median:>11.2f}{run.percentile(0.95):>10.2f}"
            f"{run.throughput:>9.1f}{f'{correct}/{len(references)}':>11}{run.setup_s:>9.2f}"
        )
        failures = [
            (i, r.get("error"))
            for i, (r, ref) in enumerate(zip(run.responses, references, strict=True))
            if not _matches(r, ref)
        ]
        for i, error in failures[:5]:
            print(f"{'':<12}mismatch #{i}: {error}")
    by_name = {r.name: r for r in runs if not r.skipped and r.latencies_ms}
    cold = by_name.get("cold")
    for warm_name in WARM:
        warm = by_name.get(warm_name)
        if cold and warm:
            print(
                f"\ncold/{warm_name}: median latency x{cold.median / warm.median:.1f}, "
                f"throughput x{warm.throughput / cold.throughput:.1f}"
            )
    if "docker-cold" in by_name and "docker" in by_name:
        dc, dw = by_name["docker-cold"], by_name["docker"]
        print(f"docker-cold/docker: median latency x{dc.median / dw.median:.1f}")


async def main_async(args: argparse.Namespace) -> int:
    programs = load_programs(args.limit, PREAMBLES[args.preamble])
    print(f"computing reference values of {len(programs)} programs in a cold subprocess...")
    references = reference_values(programs)
    runs = []
    for name in args.backends:
        for _ in range(args.repeat):
            print(f"running {name}...", flush=True)
            runs.append(await BACKENDS[name](programs, args.timeout))
    report(runs, references)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--backends",
        type=lambda s: [b.strip() for b in s.split(",") if b.strip()],
        default=["bwrap", "cold"],
        help=f"comma-separated, from {', '.join(BACKENDS)} (default: bwrap,cold)",
    )
    parser.add_argument("--limit", type=int, default=None, help="only the first N programs")
    parser.add_argument("--timeout", type=float, default=3.0, help="per-program timeout (s)")
    parser.add_argument("--preamble", choices=sorted(PREAMBLES), default="none")
    parser.add_argument("--repeat", type=int, default=1, help="run each backend R times")
    args = parser.parse_args(argv)
    unknown = [b for b in args.backends if b not in BACKENDS]
    if unknown:
        parser.error(f"unknown backend(s): {', '.join(unknown)}")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
