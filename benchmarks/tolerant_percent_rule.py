"""How many ``tolerant`` verdicts the percent rule changes: designed answers 100 times too
small and too large on every task's questions, and MathHay's recorded GPT-4o answers.

Usage: FINMATH_DATA_DIR=../shared/data python benchmarks/tolerant_percent_rule.py

``tolerant`` reads a fraction as a percent (or the reverse) only where a percentage is in
play (the record's word, else the question's). Its earlier rule allowed those readings
whatever the gold. Per task and split: the numeric questions, how many have a percentage
in play, and of the answers gold/100 and gold*100 how many the earlier rule credited and
the rule now credits (every credit lost is a money or count answer 100 times off). Then
MathHay's recorded answers (``reference_results``), compared under both rules. (The 40
FinanceMath models' recorded outputs are counted by ``benchmarks/error_classes_replay.py``.)
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Literal

from finmath_tasks.scorers.comparisons import (
    asks_for_percent,
    compare,
    gold_from_float,
    gold_number,
    gold_percent,
    number_from_float,
    tolerant,
)
from finmath_tasks.scorers.extraction import parse_number


def _golds(samples: Any, from_input: bool = False) -> list[float]:
    golds: list[float] = []
    for sample in samples:
        target = sample.target if isinstance(sample.target, str) else ""
        try:
            value = float(target)
        except ValueError:
            continue  # a span, a yes/no or a withheld answer
        if not math.isfinite(value):
            continue
        if from_input:
            golds.append(gold_from_float(value, asks_for_percent(str(sample.input))))
        else:
            golds.append(gold_number(target, sample.metadata or {}))
    return golds


def designed(golds: list[float]) -> tuple[int, int, int, int]:
    """(questions, with a percentage in play, credited before, credited now) of the
    answers gold/100 and gold*100."""
    before = now = 0
    for gold in golds:
        for factor in (0.01, 100.0):
            answer = number_from_float(float(gold) * factor)
            before += compare(tolerant, answer, gold_from_float(gold, percent=True)).correct
            now += compare(tolerant, answer, gold).correct
    return len(golds), sum(gold_percent(g) for g in golds), before, now


def main() -> int:
    data = Path(os.environ.get("FINMATH_DATA_DIR", "../shared/data"))
    from finmath_tasks.tasks.finqa import finqa
    from finmath_tasks.tasks.knowledgefmath import knowledgefmath
    from finmath_tasks.tasks.mathhay import mathhay
    from finmath_tasks.tasks.tatqa import tatqa

    rows: list[tuple[str, tuple[int, int, int, int]]] = []
    rows.append(
        (
            "knowledgefmath validation",
            designed(
                _golds(
                    knowledgefmath(split="validation", data_dir=str(data / "financemath")).dataset
                )
            ),
        )
    )
    for split in ("dev", "test"):
        task = tatqa(split=split, data_dir=str(data / "tatqa"))
        rows.append((f"tatqa {split} (arithmetic)", designed(_golds(task.dataset))))
    finqa_splits: tuple[Literal["test", "dev", "train"], ...] = ("test", "dev", "train")
    for split in finqa_splits:
        task = finqa(split=split, data_dir=str(data / "finqa"), retrieval="none")
        rows.append((f"finqa {split} (shared subset)", designed(_golds(task.dataset))))
    task = mathhay(data_dir=str(data / "mathhay"), judge=False)
    rows.append(("mathhay v1 (verified+unverified)", designed(_golds(task.dataset, True))))
    print(
        "| task, split | numeric questions | percentage in play | x/100 and x100 credited before | now |"
    )
    print("|---|---|---|---|---|")
    for name, (n, in_play, before, now) in rows:
        print(f"| {name} | {n} | {in_play} | {before} of {2 * n} | {now} of {2 * n} |")

    results = data / "mathhay" / "reference_results" / "March-2024-to-September-2024"
    changed = total = 0
    for path in sorted(results.glob("*.json")):
        for record in json.loads(path.read_text("utf-8")):
            answer = parse_number(str(record.get("pred_answer")))
            expected = record.get("expected_answer")
            if answer is None or not isinstance(expected, int | float):
                continue
            total += 1
            percent = asks_for_percent(str(record.get("question", "")))
            before = compare(tolerant, answer, gold_from_float(expected, True)).correct
            now = compare(tolerant, answer, gold_from_float(expected, percent)).correct
            changed += before != now
    print(f"\nMathHay recorded GPT-4o answers: {changed} of {total} tolerant verdicts change")
    return 0


if __name__ == "__main__":
    sys.exit(main())
