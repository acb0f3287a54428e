"""Does queueing for a sandbox worker change any sample's result? (A program's timeout
must count its own run, never the wait for a worker.)

Runs real ``inspect_ai.eval``s of ``knowledgefmath`` with ``solver=pot`` on the
FinanceMath validation split (``$FINMATH_DATA_DIR``, default ``../shared/data``),
repeated over epochs up to ``--samples`` samples (600: 200 problems x 3 epochs),
with a scripted mockllm whose answer to each problem is a fenced program: the gold
program, or, for about ``--slow-share`` of the problems (chosen by a hash of the
question, the same in every run), a program that sleeps past the timeout. Every
sample also re-runs its gold program, so the sandbox gets two programs per sample.

Each run uses ``max_connections`` = ``max_samples`` = one of ``--connections``
(1, 10, 50). For each it prints the wall time, the eval's status, accuracy and
execution rate, and how many programs timed out; then whether the set of samples
(id, epoch) whose program timed out is identical in all runs and equal to the
planned slow set. ``--repeat N`` runs the highest concurrency N times (the bar we hold
it to: 600 samples at 50 connections with status success, three times in a row).
Exits non-zero if any run did not end with status success or the sets differ.

    python benchmarks/sandbox_queueing.py [--sandbox bwrap|docker] [--samples 600]
        [--connections 1,10,50] [--repeat 1] [--slow-share 0.2]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT / "src") not in sys.path:
    sys.path.insert(0, str(REPO_ROOT / "src"))

SLOW_PROGRAM = "def solution():\n    import time\n    time.sleep(30)\n    return 0\n"
PROBLEMS = 200


def is_slow(question: str, share: float) -> bool:
    digest = hashlib.sha256(question.encode()).digest()
    return int.from_bytes(digest[:4], "big") < share * 2**32


def scripted_model(programs: dict[str, tuple[str, str]], share: float) -> Any:
    """mockllm answering each problem (by its prompt: question, program) with its program."""
    from inspect_ai.model import ModelOutput, get_model

    def answer(messages: list[Any], *_: Any) -> ModelOutput:
        question, gold = programs[messages[-1].text]
        program = SLOW_PROGRAM if is_slow(question, share) else gold
        return ModelOutput.from_content("mockllm/model", f"```python\n{program}```")

    return get_model("mockllm/model", custom_outputs=answer)


def one_run(
    sandbox: str, data_dir: str, samples: int, connections: int, share: float, log_dir: str
) -> dict[str, Any]:
    from inspect_ai import eval as inspect_eval

    from finmath_tasks.sandbox.client import PROGRAM_RESULT_KEY
    from finmath_tasks.sandbox.resolve import resolve_sandbox
    from finmath_tasks.tasks.knowledgefmath import knowledgefmath
    from finmath_tasks.tasks.knowledgefmath.dataset import render_prompt

    task = knowledgefmath(
        split="validation",
        solver="pot",
        data_dir=data_dir,
    )
    programs = {
        render_prompt(md["question"], md["tables"], "pot"): (str(s.input), md["gold_program"])
        for s in task.dataset
        if (md := s.metadata or {})
    }
    epochs = max(1, -(-samples // len(programs)))
    limit = min(len(programs), samples)
    started = time.monotonic()
    [log] = inspect_eval(
        task,
        model=scripted_model(programs, share),
        epochs=epochs,
        limit=limit,
        max_connections=connections,
        max_samples=connections,
        sandbox=resolve_sandbox(sandbox),
        log_dir=log_dir,
        display="none",
    )
    wall = time.monotonic() - started
    timed_out, planned, errors = set(), set(), {}
    for sample in log.samples or []:
        key = (str(sample.id), sample.epoch)
        record = (sample.store or {}).get(PROGRAM_RESULT_KEY) or {}
        error = record.get("error") or ""
        if error.startswith("timeout"):
            timed_out.add(key)
        elif error:
            errors[key] = error
        if is_slow(str(sample.input), share):
            planned.add(key)
    metrics: dict[str, float] = {}
    for score in log.results.scores if log.results else []:
        for name, metric in score.metrics.items():
            if name in ("accuracy", "mean"):
                metrics[score.name] = metric.value
    return {
        "connections": connections,
        "status": log.status,
        "samples": len(log.samples or []),
        "wall": wall,
        "timed_out": timed_out,
        "planned": planned,
        "errors": errors,
        "metrics": metrics,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sandbox", default="bwrap", choices=["bwrap", "docker"])
    parser.add_argument("--samples", type=int, default=3 * PROBLEMS)
    parser.add_argument("--connections", default="1,10,50")
    parser.add_argument("--repeat", type=int, default=1, help="runs at the highest concurrency")
    parser.add_argument("--slow-share", type=float, default=0.2)
    args = parser.parse_args(argv)

    import finmath_tasks._registry  # noqa: F401  (offline tiktoken encodings for mockllm)

    default_data = REPO_ROOT.parent / "shared" / "data"
    data_dir = os.environ.get("FINMATH_DATA_DIR") or str(default_data)
    levels = [int(c) for c in args.connections.split(",")]
    levels += [max(levels)] * (args.repeat - 1)
    load = os.getloadavg()
    print(f"# {args.samples} samples, sandbox {args.sandbox}, {os.cpu_count()} CPUs, "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")  # fmt: skip
    print("connections  status   samples  wall_s  timed_out  planned  other_errors  metrics")
    runs = []
    with tempfile.TemporaryDirectory(prefix="finmath-queueing-") as log_dir:
        for connections in levels:
            run = one_run(
                args.sandbox, data_dir, args.samples, connections, args.slow_share, log_dir
            )
            runs.append(run)
            metrics = " ".join(f"{k}={v:.3f}" for k, v in sorted(run["metrics"].items()))
            print(
                f"{connections:>11}  {run['status']:<7}  {run['samples']:>7}  {run['wall']:>6.1f}"
                f"  {len(run['timed_out']):>9}  {len(run['planned']):>7}"
                f"  {len(run['errors']):>12}  {metrics}",
                flush=True,
            )
            for key, error in list(run["errors"].items())[:3]:
                print(f"    {key}: {error[:160]}")
    same = all(r["timed_out"] == runs[0]["timed_out"] for r in runs)
    planned = all(r["timed_out"] == r["planned"] for r in runs)
    success = all(r["status"] == "success" for r in runs)
    print(f"timed-out sets identical in all runs: {same}; equal to the planned slow set: {planned}")
    print(f"all runs status success: {success}")
    return 0 if same and planned and success else 1


if __name__ == "__main__":
    sys.exit(main())
