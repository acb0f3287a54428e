"""`finmath variants <task>`: a split's fresh variants under a seed, and what was left out.

Lists every question left out of the variant with the reason, and with ``--show ID``
prints one question's original and variant side by side (the prompt's text: question
and tables, or the report's text and table), with the numbers replaced and both golds.
"""

from __future__ import annotations

import textwrap
from itertools import zip_longest
from typing import Any

from finmath_tasks.variants import VARIANT_KEY

TASKS = ("knowledgefmath", "finqa")
DEFAULT_SPLITS = {"knowledgefmath": "validation", "finqa": "test"}
WIDTH = 60


def _load(task: str, split: str, data_dir: str | None, seed: int) -> tuple[list[Any], Any]:
    if task == "knowledgefmath":
        from finmath_tasks.tasks.knowledgefmath.dataset import load_dataset
        from finmath_tasks.tasks.knowledgefmath.variants import instantiate
    else:
        from finmath_tasks.tasks.finqa.dataset import load_dataset  # type: ignore[assignment]
        from finmath_tasks.tasks.finqa.variants import instantiate  # type: ignore[assignment]
    original = list(load_dataset(split, data_dir))
    return original, instantiate(original, seed)


def _text(task: str, metadata: dict[str, Any]) -> str:
    if task == "knowledgefmath":
        return "\n\n".join([metadata["question"], *metadata.get("tables", [])])
    return f"{metadata['question']}\n\n{metadata['context']}"


def _gold(task: str, metadata: dict[str, Any]) -> str:
    if task == "knowledgefmath":
        return f"gold {metadata['ground_truth']!r}\n{metadata['gold_program']}"
    return f"gold {metadata['exe_ans']!r}\n{metadata['program']}"


def _column(text: str) -> list[str]:
    lines: list[str] = []
    for line in text.splitlines() or [""]:
        lines += textwrap.wrap(line, WIDTH, replace_whitespace=False) or [""]
    return lines


def side_by_side(left: str, right: str) -> str:
    rows = [f"{'original':<{WIDTH}} | variant", f"{'-' * WIDTH}-+-{'-' * WIDTH}"]
    for a, b in zip_longest(_column(left), _column(right), fillvalue=""):
        mark = "|" if a == b else "*"
        rows.append(f"{a:<{WIDTH}} {mark} {b}")
    return "\n".join(rows)


def variants_command(
    task: str, seed: int, show: str | None, split: str | None, data_dir: str | None
) -> int:
    """Print the coverage and the left-out questions, or one question side by side."""
    if task not in TASKS:
        raise ValueError(f"finmath variants: no fresh variants for {task!r} ({', '.join(TASKS)})")
    if seed < 1:
        raise ValueError("finmath variants: --seed must be 1 or more (0 is the original questions)")
    split = split or DEFAULT_SPLITS[task]
    original, result = _load(task, split, data_dir, seed)
    print(
        f"{task} {split} fresh seed {seed}: {len(result.samples)} of {result.total} "
        f"instantiated, {len(result.left_out)} left out"
    )
    if show is None:
        for question_id, reason in result.left_out.items():
            print(f"  {question_id}: {reason}")
        return 0
    before = {str(s.id): s for s in original}.get(show)
    if before is None:
        raise ValueError(f"finmath variants: no question {show!r} in {task} {split}")
    after = {str(s.id): s for s in result.samples}.get(show)
    if after is None:
        print(f"{show} is left out: {result.left_out.get(show)}")
        return 0
    print(side_by_side(_text(task, before.metadata), _text(task, after.metadata)))
    print()
    print(side_by_side(_gold(task, before.metadata), _gold(task, after.metadata)))
    record = after.metadata[VARIANT_KEY]
    print("\nreplaced: " + ", ".join(f"{r['from']} -> {r['to']}" for r in record["replaced"]))
    if record.get("held"):
        print("held at the original value: " + "; ".join(record["held"]))
    return 0
