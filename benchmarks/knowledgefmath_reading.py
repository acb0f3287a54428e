"""knowledgefmath's official verdict against the reference's rules: CoT reply shapes
and PoT program-output shapes, one table each.

Usage: FINMATH_DATA_DIR=../shared/data python benchmarks/knowledgefmath_reading.py [--cot N] [--pot N]

CoT: N validation questions (default 40; non-zero golds written without an
exponent) x 16 reply shapes of a scripted extractor (the ``grader`` role).
PoT: N validation questions (default 50; gold programs that start with the
signature) x 12 output shapes built from the gold programs, run in our
sandbox. For each shape: the reference's verdict (written by hand from its
rules in ``tests/tasks/knowledgefmath/reading_shapes.py``), the official
``financemath`` verdict of our code, and our strict reading beside it.
Real Inspect evals with mockllm; prints Markdown tables.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "tasks" / "knowledgefmath")]

from reading_shapes import (  # noqa: E402
    OUTPUT_SHAPES,
    REPLY_SHAPES,
    body_of,
    run_output_shapes,
    run_reply_shapes,
    validation_records,
)


def _data_dir() -> Path:
    chosen = os.environ.get("FINMATH_DATA_DIR")
    path = Path(chosen) if chosen else ROOT.parent / "shared" / "data"
    if not (path / "financemath" / "validation.json").is_file():
        sys.exit(f"no financemath/validation.json under {path}: set FINMATH_DATA_DIR")
    return path


def cot_table(rows: list[dict[str, Any]], profile: str) -> tuple[str, int]:
    by_shape: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_shape[row["shape"]].append(row)
    lines = [
        f"| reply shape | n | reference correct | financemath correct | same verdict "
        f"| {profile} correct | flagged unreadable |",
        "|---|---|---|---|---|---|---|",
    ]
    same_total = 0
    for shape in REPLY_SHAPES:
        members = by_shape[shape.name]
        expected = sum(r["expected_correct"] for r in members)
        official = sum(r["value"]["financemath"] == 1.0 for r in members)
        same = sum((r["value"]["financemath"] == 1.0) is r["expected_correct"] for r in members)
        ours = sum(r["value"][profile] == 1.0 for r in members)
        flagged = sum(bool(r["metadata"].get("unreadable")) for r in members)
        same_total += same
        lines.append(
            f"| `` {shape.name} `` | {len(members)} | {expected} | {official} | {same} "
            f"| {ours} | {flagged} |"
        )
    return "\n".join(lines), same_total


def pot_table(rows: list[dict[str, Any]]) -> tuple[str, int]:
    by_shape: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_shape[row["shape"]].append(row)
    lines = [
        "| output shape | n | reference (acc, executed) | financemath acc, execution_rate "
        "| same verdict | tolerant acc, strict_execution_rate |",
        "|---|---|---|---|---|---|",
    ]
    same_total = 0
    for shape in OUTPUT_SHAPES:
        members = by_shape[shape.name]
        acc = sum(r["value"]["financemath"] for r in members)
        ran = sum(r["value"]["execution_rate"] for r in members)
        same = sum(
            (r["value"]["financemath"] == 1.0) is shape.correct
            and (r["value"]["execution_rate"] == 1.0) is shape.executed
            for r in members
        )
        tolerant = sum(r["value"]["tolerant"] for r in members)
        strict = sum(r["value"]["strict_execution_rate"] for r in members)
        same_total += same
        n = len(members)
        lines.append(
            f"| {shape.name} | {n} | {n * shape.correct:.0f}, {n * shape.executed:.0f} "
            f"| {acc:.0f}, {ran:.0f} | {same} | {tolerant:.0f}, {strict:.0f} |"
        )
    return "\n".join(lines), same_total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cot", type=int, default=40, help="CoT questions (x 16 shapes)")
    parser.add_argument("--pot", type=int, default=50, help="PoT questions (x 12 shapes)")
    args = parser.parse_args()
    data_dir = _data_dir()
    records = validation_records(data_dir)
    cot_ids = [
        r["question_id"]
        for r in records
        if float(r["ground_truth"]) != 0 and "e" not in repr(float(r["ground_truth"]))
    ][: args.cot]
    pot_ids = [
        r["question_id"]
        for r in records
        if (body_of(r["python_solution"].strip()) or "").startswith("    ")
    ][: args.pot]
    with tempfile.TemporaryDirectory() as logs:
        if args.cot:
            start = time.monotonic()
            rows = run_reply_shapes(data_dir, cot_ids, Path(logs) / "cot")
            table, same = cot_table(rows, "tolerant")
            print(f"## CoT: {len(cot_ids)} questions x {len(REPLY_SHAPES)} reply shapes\n")
            print(table)
            print(
                f"\nsame verdict as the reference: {same} of {len(rows)} "
                f"({time.monotonic() - start:.0f} s)\n"
            )
        if args.pot:
            start = time.monotonic()
            rows = run_output_shapes(data_dir, pot_ids, Path(logs) / "pot")
            table, same = pot_table(rows)
            print(f"## PoT: {len(pot_ids)} questions x {len(OUTPUT_SHAPES)} output shapes\n")
            print(table)
            print(
                f"\nsame verdict (accuracy and execution) as the reference: {same} of "
                f"{len(rows)} ({time.monotonic() - start:.0f} s)"
            )


if __name__ == "__main__":
    main()
