"""How long a TAT-QA question's fresh variant takes by the size of its table, and what the
fresh-variant cache saves.

    python benchmarks/variant_table_size.py [data_dir] [--unbounded]
    # default data_dir: $FINMATH_DATA_DIR, else ../shared/data

1. Crafted documents (a table of N amounts in two columns and their total, a question on
   the change of one amount): the seconds to instantiate each (seed 1) and the outcome.
   Tables over ``MAX_TABLE_ROWS`` rows or ``MAX_TABLE_CELLS`` cells are left out with
   their reason; ``--unbounded`` also times the tables up to 102 rows with the bound
   lifted (the checks' time grows faster than the table: 300 rows took over 300 s before
   the bound).
2. Every question of the real dev and test splits, one at a time: the slowest, the 99th
   percentile and how many took over a second (the bound we hold: none).
3. The cache: dev's seed-1 variants made (cache off) and read back from a fresh cache
   folder, side by side, with the ratio.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

from finmath_tasks import variants
from finmath_tasks.loading import dataset_provenance
from finmath_tasks.tasks.tatqa import variants as tatqa_variants
from finmath_tasks.tasks.tatqa.dataset import records_to_samples

SIZES = (14, 27, 60, 102, 302, 3002)
"""Rows of the crafted tables (a header, the amounts and their total)."""


def crafted(total_rows: int) -> dict[str, Any]:
    rows = total_rows - 2
    rng = random.Random(rows)
    body = [(f"Item {i}", rng.randint(1000, 99999), rng.randint(1000, 99999)) for i in range(rows)]
    table = [["", "2019", "2018"]] + [[name, f"{a:,}", f"{b:,}"] for name, a, b in body]
    table.append(["Total", f"{sum(r[1] for r in body):,}", f"{sum(r[2] for r in body):,}"])
    name, a, b = body[5]
    question = {
        "uid": f"crafted-{total_rows}",
        "order": 1,
        "question": f"What is the change in {name} from 2018 to 2019?",
        "answer": a - b,
        "derivation": f"{a:,}-{b:,}",
        "answer_type": "arithmetic",
        "answer_from": "table",
        "rel_paragraphs": [],
        "req_comparison": False,
        "scale": "thousand",
    }
    return {
        "table": {"uid": f"table-{rows}", "table": table},
        "paragraphs": [{"uid": f"p-{rows}", "order": 1, "text": "Amounts are in thousands."}],
        "questions": [question],
    }


def timed_crafted(rows: int) -> tuple[float, str]:
    started = time.perf_counter()
    samples = list(records_to_samples([crafted(rows)], "arithmetic", "crafted"))
    result = tatqa_variants.instantiate(samples, 1)
    seconds = time.perf_counter() - started
    outcome = (
        "instantiated" if result.samples else f"left out: {result.left_out[f'crafted-{rows}']}"
    )
    return seconds, outcome


def real(data_dir: str) -> None:
    for split in ("dev", "test"):
        samples = list(tatqa_variants.load_dataset(split, data_dir))
        times = []
        for sample in samples:
            started = time.perf_counter()
            tatqa_variants.instantiate([sample], 1)
            times.append(
                (time.perf_counter() - started, len((sample.metadata or {})["table"]), sample.id)
            )
        times.sort(reverse=True)
        p99 = statistics.quantiles([t for t, _, _ in times], n=100)[98]
        slowest, rows, sample_id = times[0]
        over = sum(1 for t, _, _ in times if t > 1.0)
        print(
            f"  {split}: {len(times)} questions, slowest {slowest:.2f} s ({rows} rows, "
            f"{sample_id}), 99th percentile {p99:.2f} s, over 1 s: {over}"
        )


def cache(data_dir: str) -> None:
    dataset = tatqa_variants.load_dataset("dev", data_dir)
    samples, provenance = list(dataset), dataset_provenance(dataset)
    with tempfile.TemporaryDirectory() as folder:
        with mock.patch.dict(os.environ, {"FINMATH_VARIANT_CACHE": "off"}):
            started = time.perf_counter()
            made = variants.instantiate_once(
                "tatqa", "dev", 1, samples, tatqa_variants.instantiate, provenance
            )
            making = time.perf_counter() - started
        with mock.patch.dict(os.environ, {"FINMATH_VARIANT_CACHE": folder}):
            variants.instantiate_once(
                "tatqa", "dev", 1, samples, tatqa_variants.instantiate, provenance
            )  # written
            started = time.perf_counter()
            read = variants.instantiate_once(
                "tatqa", "dev", 1, samples, tatqa_variants.instantiate, provenance
            )
            reading = time.perf_counter() - started
            size = sum(p.stat().st_size for p in Path(folder).rglob("*.json.gz"))
    assert read.samples == made.samples
    print(
        f"  dev seed 1 ({len(made.samples)} variants): made {making:.2f} s, read from the "
        f"cache {reading:.3f} s ({size / 1e3:.0f} kB), {making / reading:.0f} times faster"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dir", nargs="?")
    parser.add_argument("--unbounded", action="store_true")
    args = parser.parse_args()
    default = Path(__file__).resolve().parents[2] / "shared" / "data"
    data_dir = args.data_dir or os.environ.get("FINMATH_DATA_DIR") or str(default)
    print(
        f"crafted tables (bound: {variants.MAX_TABLE_ROWS} rows, {variants.MAX_TABLE_CELLS} cells):"
    )
    for rows in SIZES:
        seconds, outcome = timed_crafted(rows)
        print(f"  {rows:>5} rows: {seconds:6.2f} s  {outcome}")
    if args.unbounded:
        print("crafted tables, bound lifted:")
        with mock.patch.multiple(variants, MAX_TABLE_ROWS=10**9, MAX_TABLE_CELLS=10**9):
            for rows in (r for r in SIZES if r <= 102):
                seconds, outcome = timed_crafted(rows)
                print(f"  {rows:>5} rows: {seconds:6.2f} s  {outcome}")
    if not Path(data_dir).is_dir():
        print(f"no data folder {data_dir}: the real splits are not measured", file=sys.stderr)
        return 0
    print("real questions, one at a time (seed 1):")
    real(data_dir)
    print("the fresh-variant cache:")
    cache(data_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
