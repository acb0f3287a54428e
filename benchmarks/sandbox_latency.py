"""Latency of the program executor on the FinanceMath validation gold programs.

Runs the 200 ``python_solution`` programs of
``$FINMATH_DATA_DIR/financemath/validation.json`` (default ``../shared/data``
beside the repository) one at a time through each mode, side by side in one run:

warm (one long-lived worker, one request at a time):

* ``bwrap``: ``runner.py --worker`` inside bubblewrap (BwrapWorker);
* ``bwrap-pool``: two such workers used alternately (BwrapPool), not by default;
* ``docker``: ``runner.py --worker`` in one container (DockerWorker).

cold (a new process or container per program, one-shot ``runner.py``):

* ``cold``: ``python3 runner.py``, a bare interpreter, no isolation;
* ``cold-preloaded``: the same, but the interpreter first imports what the warm
  worker pre-imports (``runner.PREIMPORTS``: math, numpy, numpy_financial, sympy,
  scipy, scipy.stats), i.e. the same environment the programs get when warm;
  ~1.3 s each, so it runs only the first ``--preloaded-limit`` programs (30);
* ``docker-cold``: a fresh locked-down container per program
  (``docker run --rm -i --network none --read-only ...`` through the SDK).

For each mode it prints the median and p95 latency per program (host wall clock,
request to response, ms), the throughput (programs/s over the measured loop),
how many programs have the same outcome as the reference, and the cold/warm
ratios of median latency and throughput, computed over the programs both modes
ran. Every mode gets one untimed warm-up request first. Unavailable backends are
skipped with the reason.

The reference value of each program is computed in a separate cold subprocess
(plain ``exec`` + ``solution()``, as the FinanceMath reference evaluation does),
never in this process. A response matches when its value is within 1e-9 relative
of the reference (or when both fail).

    python benchmarks/sandbox_latency.py [--backends bwrap,docker,cold,...]
        [--limit N] [--preloaded-limit N] [--timeout S] [--image IMAGE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT / "src") not in sys.path:
    sys.path.insert(0, str(REPO_ROOT / "src"))

from finmath_tasks.sandbox import RUNNER_PATH_IN_SANDBOX, runner_source_path  # noqa: E402
from finmath_tasks.sandbox.runner import PREIMPORTS  # noqa: E402

TARGET_MEDIAN_MS = 10.0
TARGET_SPEEDUP = 50.0

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

# `python3 -c PRELOAD_SCRIPT runner.py`: import the warm worker's libraries, then
# run the runner as `python3 runner.py` would (one-shot mode).
PRELOAD_SCRIPT = f"""
import runpy, sys
for name in {PREIMPORTS!r}:
    __import__(name)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""

# Same thread settings as the warm worker (it sets them before importing numpy).
COLD_ENV = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}

Request = dict[str, Any]
Response = dict[str, Any]
RunFn = Callable[[Request], Awaitable[Response]]


class Unavailable(Exception):
    """The mode cannot run here (the message says why)."""


@dataclass
class Run:
    """Per-program latencies (ms) and responses of one mode."""

    name: str
    latencies_ms: list[float] = field(default_factory=list)
    finished_s: list[float] = field(default_factory=list)
    """Seconds from the start of the measured loop to the end of each program."""
    responses: list[Response] = field(default_factory=list)
    setup_s: float = 0.0
    skipped: str | None = None

    def median(self, n: int | None = None) -> float:
        data = self.latencies_ms[:n]
        return statistics.median(data) if data else math.nan

    def p95(self) -> float:
        data = sorted(self.latencies_ms)
        if not data:
            return math.nan
        return data[min(len(data) - 1, max(0, math.ceil(0.95 * len(data)) - 1))]

    def throughput(self, n: int | None = None) -> float:
        n = len(self.finished_s) if n is None else min(n, len(self.finished_s))
        return n / self.finished_s[n - 1] if n else math.nan


# --------------------------------------------------------------------------- #
# modes: each is an async context manager yielding `run(request) -> response`
# --------------------------------------------------------------------------- #


@contextlib.asynccontextmanager
async def bwrap_warm(args: argparse.Namespace) -> AsyncIterator[RunFn]:
    from finmath_tasks.sandbox.bwrap import bwrap_available
    from finmath_tasks.sandbox.bwrap_worker import BwrapWorker

    ok, reason = bwrap_available()
    if not ok:
        raise Unavailable(reason)
    worker = BwrapWorker()
    try:
        await worker.start()
        yield worker.run
    finally:
        await worker.close()


@contextlib.asynccontextmanager
async def bwrap_pool(args: argparse.Namespace) -> AsyncIterator[RunFn]:
    """Two warm workers used alternately: one cleans up while the other runs."""
    from finmath_tasks.sandbox.bwrap import bwrap_available
    from finmath_tasks.sandbox.bwrap_worker import BwrapPool

    ok, reason = bwrap_available()
    if not ok:
        raise Unavailable(reason)
    pool = BwrapPool(2)
    try:
        await pool.start(2)
        yield pool.run
    finally:
        await pool.close()


@contextlib.asynccontextmanager
async def docker_warm(args: argparse.Namespace) -> AsyncIterator[RunFn]:
    from finmath_tasks.sandbox.docker import docker_available
    from finmath_tasks.sandbox.docker_worker import DockerOptions, DockerWorker

    ok, reason = docker_available()
    if not ok:
        raise Unavailable(reason)
    worker = DockerWorker(DockerOptions(image=args.image), task_name="benchmark")
    try:
        await worker.start()
        yield worker.run
    finally:
        await worker.close()


async def _run_subprocess(argv: list[str], request: Request) -> Response:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=COLD_ENV,
    )
    out, err = await proc.communicate(json.dumps(request).encode())
    try:
        response: Response = json.loads(out)
    except ValueError:
        response = {"ok": False, "error": f"no JSON response: {err.decode()[-300:]}"}
    return response


@contextlib.asynccontextmanager
async def cold_bare(args: argparse.Namespace) -> AsyncIterator[RunFn]:
    argv = [sys.executable, str(runner_source_path())]
    yield lambda request: _run_subprocess(argv, request)


@contextlib.asynccontextmanager
async def cold_preloaded(args: argparse.Namespace) -> AsyncIterator[RunFn]:
    argv = [sys.executable, "-c", PRELOAD_SCRIPT, str(runner_source_path())]
    yield lambda request: _run_subprocess(argv, request)


def _fresh_container(client: Any, image: str, request: Request) -> Response:
    """One program in a new locked-down container, removed afterwards (`docker run --rm -i`)."""
    from finmath_tasks.sandbox.docker_image import LABEL

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
    )
    container_id = api.create_container(
        image,
        command=["python3", "-I", "-B", RUNNER_PATH_IN_SANDBOX],
        user="65534:65534",  # the image's user (a one-shot container, no per-container uid)
        working_dir="/tmp",
        stdin_open=True,  # with StdinOnce: closing our stdin is the container's EOF
        network_disabled=True,
        host_config=host_config,
        labels={LABEL: "benchmark"},
    )["Id"]
    try:
        attach = api.attach_socket(container_id, params={"stdin": 1, "stream": 1})
        sock: socket.socket = getattr(attach, "_sock", attach)
        try:
            api.start(container_id)
            sock.sendall((json.dumps(request) + "\n").encode())
            sock.shutdown(socket.SHUT_WR)
        finally:
            sock.close()
            attach.close()
        api.wait(container_id, timeout=request["timeout"] + 60)
        out = api.logs(container_id, stdout=True, stderr=False)
    finally:
        api.remove_container(container_id, force=True)
    try:
        response: Response = json.loads(out)
    except ValueError:
        response = {"ok": False, "error": f"no JSON response: {out[:200]!r}"}
    return response


@contextlib.asynccontextmanager
async def docker_cold(args: argparse.Namespace) -> AsyncIterator[RunFn]:
    from finmath_tasks.sandbox.docker import docker_available
    from finmath_tasks.sandbox.docker_image import docker_client, ensure_image

    ok, reason = docker_available()
    if not ok:
        raise Unavailable(reason)
    client = docker_client()
    image = await asyncio.to_thread(ensure_image, client, image=args.image)
    yield lambda request: asyncio.to_thread(_fresh_container, client, image, request)


@dataclass(frozen=True)
class Mode:
    open: Callable[[argparse.Namespace], contextlib.AbstractAsyncContextManager[RunFn]]
    warm: bool
    label: str


PRELOADED = ", ".join(PREIMPORTS)
MODES: dict[str, Mode] = {
    "bwrap": Mode(bwrap_warm, True, "bwrap warm worker"),
    "bwrap-pool": Mode(bwrap_pool, True, "bwrap pool of 2 warm workers"),
    "docker": Mode(docker_warm, True, "docker warm worker (one container)"),
    "cold": Mode(cold_bare, False, "cold, bare interpreter (python3 runner.py per program)"),
    "cold-preloaded": Mode(
        cold_preloaded,
        False,
        f"cold, same preloaded environment as the warm worker ({PRELOADED})",
    ),
    "docker-cold": Mode(docker_cold, False, "cold, fresh docker container per program"),
}
DEFAULT_MODES = ["bwrap", "docker", "cold", "cold-preloaded", "docker-cold"]


# --------------------------------------------------------------------------- #
# measurement (one loop for every mode)
# --------------------------------------------------------------------------- #


def _request(code: str, timeout: float) -> Request:
    return {"code": code, "entry": "solution", "timeout": timeout, "max_output": 8192}


async def measure(name: str, programs: list[str], args: argparse.Namespace) -> Run:
    result = Run(name)
    t0 = time.perf_counter()
    try:
        async with MODES[name].open(args) as run:
            await run(_request("def solution():\n    return 0", args.timeout))  # warm-up
            result.setup_s = time.perf_counter() - t0
            start = time.perf_counter()
            for code in programs:
                t = time.perf_counter()
                response = await run(_request(code, args.timeout))
                now = time.perf_counter()
                result.latencies_ms.append((now - t) * 1000)
                result.finished_s.append(now - start)
                result.responses.append(response)
    except Unavailable as exc:
        result.skipped = str(exc)
    return result


# --------------------------------------------------------------------------- #
# data, reference, report
# --------------------------------------------------------------------------- #


def load_programs(limit: int | None) -> list[str]:
    data_dir = Path(os.environ.get("FINMATH_DATA_DIR") or REPO_ROOT.parent / "shared" / "data")
    path = data_dir / "financemath" / "validation.json"
    if not path.is_file():
        raise SystemExit(f"data not found: {path} (set FINMATH_DATA_DIR)")
    records = json.loads(path.read_text())
    programs = [r["python_solution"] for r in records if r.get("python_solution")]
    return programs[:limit]


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


def _matches(response: Response, reference: float | None) -> bool:
    if reference is None:
        return not response.get("ok")
    value = response.get("value")
    return (
        bool(response.get("ok"))
        and isinstance(value, (int, float))
        and math.isclose(value, reference, rel_tol=1e-9, abs_tol=1e-12)
    )


def report(runs: list[Run], references: list[float | None]) -> None:
    numeric = sum(r is not None for r in references)
    print(
        f"\n{len(references)} programs ({numeric} with a numeric reference value); "
        "correct = same value as the reference (rel. 1e-9) or both fail\n"
    )
    header = (
        f"{'mode':<16}{'n':>5}{'median ms':>11}{'p95 ms':>10}{'prog/s':>9}"
        f"{'correct':>10}{'setup s':>9}"
    )
    print(header)
    print("-" * len(header))
    for run in runs:
        if run.skipped:
            print(f"{run.name:<16}skipped: {run.skipped}")
            continue
        n = len(run.latencies_ms)
        checked = zip(run.responses, references[:n], strict=True)
        correct = sum(_matches(r, ref) for r, ref in checked)
        print(
            f"{run.name:<16}{n:>5}{run.median():>11.1f}{run.p95():>10.1f}"
            f"{run.throughput():>9.2f}{f'{correct}/{n}':>10}{run.setup_s:>9.2f}"
        )
        mismatches = [
            (i, r, ref)
            for i, (r, ref) in enumerate(zip(run.responses, references[:n], strict=True))
            if not _matches(r, ref)
        ]
        for i, r, ref in mismatches[:5]:
            print(f"{'':<16}mismatch #{i}: value={r.get('value')} ref={ref} {r.get('error')}")
    print("\nmodes:")
    for run in runs:
        print(f"  {run.name:<16}{MODES[run.name].label}")

    done = [r for r in runs if not r.skipped and r.latencies_ms]
    warm = [r for r in done if MODES[r.name].warm]
    cold = [r for r in done if not MODES[r.name].warm]
    if warm and cold:
        print("\nratios cold/warm (over the first n programs, which both modes ran):")
        for w in warm:
            for c in cold:
                n = min(len(w.latencies_ms), len(c.latencies_ms))
                print(
                    f"  {c.name:<15}/ {w.name:<11} n={n:<4} median x{c.median(n) / w.median(n):<7.1f}"
                    f"throughput x{w.throughput(n) / c.throughput(n):.1f}"
                )

    bwrap = next((r for r in done if r.name == "bwrap"), None)
    if bwrap is None:
        return
    print(
        f"\ntarget: bwrap warm median <= {TARGET_MEDIAN_MS:g} ms: {bwrap.median():.1f} ms -> "
        + ("met" if bwrap.median() <= TARGET_MEDIAN_MS else "NOT met")
    )
    for c in cold:
        n = min(len(bwrap.latencies_ms), len(c.latencies_ms))
        speedup = c.median(n) / bwrap.median(n)
        verdict = "met" if speedup >= TARGET_SPEEDUP else "NOT met"
        print(
            f"target: bwrap warm >= {TARGET_SPEEDUP:g}x faster (median) than "
            f"{MODES[c.name].label}: x{speedup:.1f} -> {verdict}"
        )


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


async def main_async(args: argparse.Namespace) -> int:
    programs = load_programs(args.limit)
    print(f"{os.cpu_count()} CPUs, load average {_load()} (before)")
    print(f"computing reference values of {len(programs)} programs in a cold subprocess...")
    references = reference_values(programs)
    runs = []
    for name in args.backends:
        subset = programs[: args.preloaded_limit] if name == "cold-preloaded" else programs
        print(f"running {name} on {len(subset)} programs...", flush=True)
        runs.append(await measure(name, subset, args))
    report(runs, references)
    print(f"\nload average {_load()} (after)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--backends",
        type=lambda s: [b.strip() for b in s.split(",") if b.strip()],
        default=DEFAULT_MODES,
        help=f"comma-separated, from {', '.join(MODES)} (default: {','.join(DEFAULT_MODES)})",
    )
    parser.add_argument("--limit", type=int, default=None, help="only the first N programs")
    parser.add_argument(
        "--preloaded-limit",
        type=int,
        default=30,
        help="cold-preloaded runs only the first N programs (~1.3 s each; default 30)",
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="per-program timeout (s)")
    parser.add_argument("--image", default=None, help="docker sandbox image (default: build/reuse)")
    args = parser.parse_args(argv)
    unknown = [b for b in args.backends if b not in MODES]
    if unknown:
        parser.error(f"unknown backend(s): {', '.join(unknown)}")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
