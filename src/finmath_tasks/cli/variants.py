"""`finmath variants <task>`: a split's fresh variants under a seed, and what was left out.

Lists every question left out of the variant with the reason, and with ``--show ID``
prints one question's original and variant side by side (the prompt's text: question
and tables, or the report's text and table), with the numbers replaced and both golds.
"""

from __future__ import annotations

import importlib
import textwrap
from itertools import zip_longest
from typing import Any

from finmath_tasks.loading import dataset_provenance
from finmath_tasks.variants import VARIANT_KEY, instantiate_once

MODULE = "finmath_tasks.tasks.{}.variants"
"""A benchmark with fresh variants has this module: ``DEFAULT_SPLIT``,
``load_dataset(split, data_dir)``, ``instantiate(samples, seed)`` and
``describe(metadata) -> (text, gold)``; its ``RULES``, if any, is its rules version
(part of the fresh-variant cache's key)."""
WIDTH = 60


def _module(task: str) -> Any:
    if not task.isidentifier():
        raise ValueError(f"finmath variants: no task {task!r}")
    try:
        return importlib.import_module(MODULE.format(task))
    except ModuleNotFoundError:
        raise ValueError(f"finmath variants: the task {task!r} has no fresh variants") from None


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


def _split_arguments(split: str, data_dir: str | None) -> dict[str, Any]:
    """The task's arguments for ``--split`` and ``--data-dir`` (a variants module's
    ``task_arguments`` replaces this where its task has no ``split``)."""
    return {"split": split, "data_dir": data_dir}


def _task_checks(task: str, split: str, data_dir: str | None, seed: int) -> None:
    """The task's own checks of these settings (a seed out of range, a data folder with the
    packaged split, ...), its refusal said as it says it: the task is built on the original
    questions (instantiating the variants once, below, not twice) and the seed goes through
    the check every task with variants makes of it."""
    from finmath_tasks.errors import UsageError
    from finmath_tasks.variants import check_variant

    function = getattr(importlib.import_module(f"finmath_tasks.tasks.{task}"), task)
    # a task whose questions are chosen by another parameter than `split` says how --split maps
    arguments = getattr(_module(task), "task_arguments", _split_arguments)
    try:
        check_variant(task, "fresh", seed)
        function(**arguments(split, data_dir))
    except UsageError as e:  # a -T refusal, data that cannot be read
        raise ValueError(f"finmath variants: {e}") from None


def variants_command(
    task: str, seed: int, show: str | None, split: str | None, data_dir: str | None
) -> int:
    """Print the coverage and the left-out questions, or one question side by side."""
    module = _module(task)
    if seed < 1:
        raise ValueError("finmath variants: --seed must be 1 or more (0 is the original questions)")
    split = split or module.DEFAULT_SPLIT
    _task_checks(task, split, data_dir, seed)
    dataset = module.load_dataset(split, data_dir)
    original = list(dataset)
    # made once: the variants a run of this seed made (or will read) are the ones listed
    provenance = dataset_provenance(dataset)
    result = instantiate_once(task, split, seed, original, module.instantiate, provenance)
    print(
        f"{task} {split} fresh seed {seed}: {len(result.samples)} of {result.total} "
        f"instantiated, {len(result.left_out)} left out"
    )
    if show is None:
        for sample_id, reason in result.left_out.items():
            print(f"  {sample_id}: {reason}")
        return 0
    before = {str(s.id): s for s in original}.get(show)
    if before is None:
        raise ValueError(f"finmath variants: no question {show!r} in {task} {split}")
    after = {str(s.id): s for s in result.samples}.get(show)
    if after is None:
        print(f"{show} is left out: {result.left_out.get(show)}")
        return 0
    (text_before, gold_before), (text_after, gold_after) = (
        module.describe(before.metadata),
        module.describe(after.metadata),
    )
    print(side_by_side(text_before, text_after))
    print()
    print(side_by_side(gold_before, gold_after))
    record = after.metadata[VARIANT_KEY]
    print("\nreplaced: " + ", ".join(f"{r['from']} -> {r['to']}" for r in record["replaced"]))
    if record.get("held"):
        print("held at the original value: " + "; ".join(record["held"]))
    return 0
