"""MathHay's prefix order earned on a served model that reports reused prompt tokens.

    bash ../shared/tools/local_model.sh start 8014   # prints LOCAL_BASE_URL, LOCAL_API_KEY
    LOCAL_BASE_URL=... LOCAL_API_KEY=... python benchmarks/prefix_cache_local.py \\
        [--model openai-api/local/local] [--samples 16] [--length 3000]

The same MathHay questions (the first ``--samples`` of the prefix order, release
March-2024-to-September-2024, sssd, one request at a time) are evaluated twice by
the served model, in the files' order and in the prefix order spaced for one request
in flight (the task itself spaces it for 10: a one-slot server reads the previous
prompt only, so this script orders the samples itself). The server (a
llama.cpp server with one slot) reuses the prompt's common prefix with the slot's
previous prompt and reports it (``prompt_tokens_details.cached_tokens``), which
Inspect records as ``input_tokens_cache_read``. Prints, per order: prompt tokens and
cached tokens as Inspect recorded them, the estimates of the ``slot`` rule (the
previous prompt only) and of the ``server`` rule (any earlier prompt) in o200k tokens
(the server's own tokenizer differs), wall time, and whether every sample's prompt
and verdict is the same in both runs (restart the server between orders: its cache
would otherwise serve the second run from the first).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval

from finmath_tasks.prefix_cache import SERVER, SLOT, serve
from finmath_tasks.tasks.mathhay import cost as mathhay_cost
from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.mathhay.dataset import load_data
from finmath_tasks.tasks.mathhay.task import in_files_order, prefix_sorted, token_pool

RELEASE = "March-2024-to-September-2024"


def ordered(base: dict[str, Any], order: str) -> Task:
    """The task with its samples in the files' order (``dataset``) or in prefix order
    spaced for one request in flight (``prefix``)."""
    task = in_files_order(mathhay(**base))
    if order == "prefix":
        meta = task.metadata or {}
        data = load_data(None, RELEASE, str(meta["subset"]), list(meta["task_types"]))
        task.dataset = prefix_sorted(
            task.dataset, data, token_pool(data), int(meta["reserve"]), spacing=1
        )
    return task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="openai-api/local/local")
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--length", type=int, default=3000)
    parser.add_argument("--ids", help="comma-separated sample ids (default: --samples)")
    parser.add_argument(
        "--orders",
        default="dataset,prefix",
        help="orders to run; restart the server between two runs so that the second "
        "does not reuse the first run's cached prompts",
    )
    args = parser.parse_args()
    if not os.environ.get("FINMATH_DATA_DIR"):
        os.environ["FINMATH_DATA_DIR"] = str(Path(__file__).resolve().parents[2] / "shared/data")
    base: dict[str, Any] = {
        "release": RELEASE, "subset": "full", "task_type": "sssd", "length": args.length,
        "judge": False,
    }  # fmt: skip
    ids = (
        args.ids.split(",")
        if args.ids
        else [str(s.id) for s in ordered(base, "prefix").dataset][: args.samples]
    )
    files = in_files_order(mathhay(**base)).dataset
    by_id = dict(
        zip((str(s.id) for s in files), mathhay_cost.prompts(base, files_order=True), strict=True)
    )
    print(
        "| order | samples | prompt tokens (server) | cached (server) | estimate, o200k: "
        "previous prompt only (slot) | any earlier prompt (server) | wall time |"
    )
    print("|---|---|---|---|---|---|---|")
    seen: dict[str, dict[str, Any]] = {}
    for order in args.orders.split(","):
        task = ordered(base, order)
        wanted = set(ids)
        prompts = [by_id[str(s.id)] for s in task.dataset if str(s.id) in wanted]
        estimate, held = serve(prompts, [SLOT, SERVER])
        with tempfile.TemporaryDirectory() as logs:
            start = time.perf_counter()
            [log] = eval(
                task, model=args.model, sample_id=ids, max_connections=1,
                max_samples=1, max_tokens=16, display="none", log_dir=logs,
            )  # fmt: skip
            seconds = time.perf_counter() - start
            assert log.status == "success", log.error
            samples = list(log.samples or [])
        usage = next(iter(log.stats.model_usage.values()))
        read = usage.input_tokens_cache_read or 0
        total = usage.input_tokens + read + (usage.input_tokens_cache_write or 0)
        print(
            f"| {order} | {len(samples)} | {total:,} | {read:,} ({read / total:.1%}) | "
            f"{estimate.read:,} of {estimate.tokens:,} ({estimate.share:.1%}) | "
            f"{held.read:,} ({held.share:.1%}) | {seconds:.0f} s |",
            flush=True,
        )
        seen[order] = {
            str(s.id): (s.input, s.scores["exact_match"].value if s.scores else None)
            for s in samples
        }
    if len(seen) == 2:
        same = seen["dataset"] == seen["prefix"]
        print(f"\nsame prompt and exact-match verdict for every sample in both orders: {same}")


if __name__ == "__main__":
    main()
