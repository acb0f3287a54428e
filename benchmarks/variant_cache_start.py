"""How soon a fresh-variant run starts its first sample: made anew, then read from the cache,
beside a run of the original questions, through the real ``inspect eval`` command.

    python benchmarks/variant_cache_start.py [--task knowledgefmath] [--seed 1] [--repeats 2]

Each line is one ``inspect eval <task> --limit 1 --model mockllm/model`` in a fresh process
(a fresh ``$FINMATH_VARIANT_CACHE`` folder for the whole script): the seconds from the
command's start to its first sample's ``started_at`` in the log, the whole command's
seconds, and the log's status. The runs are, in order:

1. the original questions (no variant: what any run pays for Inspect's start and the
   data);
2. the fresh variant with an empty cache (the seed's variants made, the golds run);
3. the same fresh variant again, ``--repeats`` times (read from the cache).

The last column sets each run beside the original's start. Needs the task's data
(``$FINMATH_DATA_DIR``) and, for knowledgefmath, bubblewrap (its golds run in the sandbox).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from inspect_ai.log import list_eval_logs, read_eval_log

from finmath_tasks.tiktoken_offline import write_cache


def one_run(task: str, args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(seconds to the first sample's start, seconds of the command, status) of one run."""
    with tempfile.TemporaryDirectory(prefix="finmath-start-logs-") as logs:
        command = [
            "inspect", "eval", f"finmath_tasks/{task}", *args, "--limit", "1",
            "--model", "mockllm/model", "--log-dir", logs, "--display", "none",
        ]  # fmt: skip
        started = time.time()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        ended = time.time()
        found = list_eval_logs(logs)
        if done.returncode != 0 or not found:
            sys.exit(f"{' '.join(command)} failed: {done.stderr.strip()[-500:]}")
        log = read_eval_log(found[0])
        if not log.samples or log.samples[0].started_at is None:
            return float("nan"), ended - started, log.status
        written: Any = log.samples[0].started_at
        sample_start = datetime.fromisoformat(written) if isinstance(written, str) else written
        return sample_start.timestamp() - started, ended - started, log.status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="knowledgefmath")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="finmath-start-") as scratch:
        env = dict(os.environ)
        env["FINMATH_VARIANT_CACHE"] = str(Path(scratch) / "variants")
        if "TIKTOKEN_CACHE_DIR" not in env:  # mockllm counts tokens with tiktoken, offline
            env["TIKTOKEN_CACHE_DIR"] = str(Path(scratch) / "tiktoken")
            write_cache(Path(env["TIKTOKEN_CACHE_DIR"]))
        fresh = ["-T", "variant=fresh", "-T", f"variant_seed={options.seed}"]
        runs: list[tuple[str, list[str]]] = [("original questions", [])]
        runs.append(("fresh variant, empty cache", fresh))
        runs += [(f"fresh variant, cached ({i + 1})", fresh) for i in range(options.repeats)]
        print(f"{options.task}, seed {options.seed}, load {os.getloadavg()[0]:.1f}:")
        base = None
        for label, args in runs:
            first, whole, status = one_run(options.task, args, env)
            base = first if base is None else base
            print(
                f"  {label:<30} first sample after {first:6.1f} s, command {whole:6.1f} s, "
                f"{status}, {first / base:.2f}x the original's start"
            )


if __name__ == "__main__":
    main()
