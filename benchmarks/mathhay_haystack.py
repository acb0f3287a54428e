"""MathHay haystack construction: time per sample and peak memory, ours vs the reference style.

    python benchmarks/mathhay_haystack.py [data_dir] [--reference-samples N]
    # default data_dir: $FINMATH_DATA_DIR, else ../shared/data

In one run, over the 602 questions of the March-2024-to-September-2024 release
at 128K tokens with the paper's default placements:

1. the one-time pool tokenization (``TokenPool.prepare``);
2. our build time per sample (every question), after that one-time step;
3. the reference style in the same run: re-tokenize the question's whole
   irrelevant join per sample (``haystack.reference_build``), on the first N
   questions of each task type (default 3, i.e. 21 samples; ~0.6 s each),
   interleaved with our builds of the same samples; the ratio compares the two
   on those same samples;
4. peak memory of building every sample of every task type at 128K in one
   process: a child process loads the data, builds all 602 haystacks one after
   the other (each discarded after use, as the solver does) and reports its
   ``ru_maxrss`` before and after.

Both styles produce identical text (checked here on the reference samples).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from finmath_tasks.tasks.mathhay.dataset import TASK_TYPES, MathHayData, load_data
from finmath_tasks.tasks.mathhay.haystack import TokenPool, reference_build
from finmath_tasks.tasks.mathhay.task import placement_for, prompt_for

RELEASE = "March-2024-to-September-2024"
LENGTH = 128_000


def data_dir(arg: str | None) -> str:
    if arg:
        return arg
    env = os.environ.get("FINMATH_DATA_DIR")
    if env:
        return env
    return str(Path(__file__).resolve().parents[1].parent / "shared" / "data")


def load(root: str) -> tuple[MathHayData, TokenPool]:
    data = load_data(root, RELEASE, "full", list(TASK_TYPES))
    return data, TokenPool(data.pool_documents, data.pool_size)


def build(data: MathHayData, pool: TokenPool, key: str) -> str:
    q = data.questions[key]
    _, where = placement_for(None, len(q.documents))
    prompt_tokens = len(pool.encode(prompt_for(q.question, "")))
    return pool.build(data.order(key), q.documents, where, LENGTH, prompt_tokens).text


def build_reference(data: MathHayData, pool: TokenPool, key: str) -> str:
    q = data.questions[key]
    _, where = placement_for(None, len(q.documents))
    prompt_tokens = len(pool.encode(prompt_for(q.question, "")))
    tokens = reference_build(
        data.pool_documents, data.order(key), q.documents, where, LENGTH, prompt_tokens,
        pool.encode,
    )  # fmt: skip
    return str(pool.encoding.decode(tokens))


def maxrss_mb() -> float:
    # ru_maxrss is in KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory_child(root: str) -> None:
    data, pool = load(root)
    pool.prepare()
    before = maxrss_mb()
    total = 0
    for key in data.questions:
        total += len(build(data, pool, key))
    print(json.dumps({"samples": len(data.questions), "chars": total,
                      "maxrss_loaded_mb": before, "maxrss_peak_mb": maxrss_mb()}))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dir", nargs="?")
    parser.add_argument("--reference-samples", type=int, default=3, help="per task type")
    parser.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    root = data_dir(args.data_dir)
    if args.memory_child:
        memory_child(root)
        return

    data, pool = load(root)
    keys = list(data.questions)
    print(f"{len(keys)} questions ({RELEASE}), length {LENGTH}, default placements")
    print(f"pool: {len(data.pool_documents)} documents present of {data.pool_size} "
          f"({data.missing_pool_entries} missing, skipped)")  # fmt: skip

    start = time.perf_counter()
    pool.prepare()
    print(f"one-time pool tokenization: {time.perf_counter() - start:.2f} s")

    ours = []
    for key in keys:
        start = time.perf_counter()
        build(data, pool, key)
        ours.append(time.perf_counter() - start)
    print(f"ours, all {len(keys)} samples: mean {statistics.mean(ours) * 1000:.1f} ms, "
          f"median {statistics.median(ours) * 1000:.1f} ms, "
          f"max {max(ours) * 1000:.1f} ms per sample")  # fmt: skip

    chosen = [k for t in TASK_TYPES for k in [k for k in keys if k.startswith(f"{t}-")][
        : args.reference_samples]]  # fmt: skip
    mine, theirs = [], []
    for key in chosen:  # interleaved, same samples
        start = time.perf_counter()
        a = build(data, pool, key)
        mine.append(time.perf_counter() - start)
        start = time.perf_counter()
        b = build_reference(data, pool, key)
        theirs.append(time.perf_counter() - start)
        assert a == b, f"{key}: the two styles differ"
    m, r = statistics.mean(mine) * 1000, statistics.mean(theirs) * 1000
    print(f"same {len(chosen)} samples, side by side (identical text):")
    print(f"  ours (pool tokenized once)        {m:8.1f} ms/sample")
    print(f"  reference (re-tokenize per sample) {r:8.1f} ms/sample")
    print(f"  ratio reference/ours              {r / m:8.1f}x")

    child = subprocess.run(
        [sys.executable, __file__, root, "--memory-child"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    facts = json.loads(child.stdout.strip().splitlines()[-1])
    print(f"peak memory building all {facts['samples']} samples at {LENGTH} in one process: "
          f"{facts['maxrss_peak_mb']:.0f} MB maxrss "
          f"({facts['maxrss_loaded_mb']:.0f} MB after loading data and tokenizing the pool)")  # fmt: skip


if __name__ == "__main__":
    main()
