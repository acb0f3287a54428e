"""The rules a FinQA variant keeps (:mod:`finmath_tasks.variant_rules`), on a record's fields.

:func:`violation` compares a record's original fields with its variant's: the gold
program run step by step on both (every step's sign, every ``greater`` and every
``table_max``/``table_min`` choice the same), the numbers written in the question,
the sentences and the table (order within a row, a column or a sentence; the
table's totals; figures restated elsewhere; percentages in range), and a numeric
gold that moves under every comparison the task reports (the official rounded
equality and the tolerant ones), so reciting the published answer does not score.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from finmath_tasks.scorers.comparisons import COMPARISONS, compare, number_from_float
from finmath_tasks.tasks.finqa.dsl import TABLE_OPS, Execution, _row, execute, parse_program
from finmath_tasks.variant_rules import (
    Number,
    pair_numbers,
    signature,
    table_lines,
    totals_of,
    trace_violation,
    written_violation,
)
from finmath_tasks.variants import is_year


def trace(program: str, table: Sequence[Sequence[str]]) -> tuple[Execution, str]:
    """The program's execution and its trace: each step's sign or truth value, and for a
    ``table_max``/``table_min`` the cell it chose."""
    run = execute(program, table)
    if not run.ok:
        return run, ""
    out = []
    for step, value in zip(parse_program(program), run.steps, strict=True):
        out.append(signature([value]))
        if step.op in ("table_max", "table_min"):
            row = _row(table, step.args[0], 0)
            out.append(chr(97 + min(row.index(float(value)), 25)))
    return run, "".join(out)


def _sentences(metadata: dict[str, Any]) -> list[str]:
    return [*metadata["pre_text"], *metadata["post_text"]]


def numbers(
    before: dict[str, Any], after: dict[str, Any]
) -> tuple[list[Number], list[list[int | None]]] | None:
    """The written numbers (years aside), original and variant, with what each is written
    together with, and the table's lines; None when the texts do not align."""
    out: list[Number] = []
    cells: dict[tuple[Hashable, int, int], int] = {}

    def add(
        old: str, new: str, groups: list[tuple[Any, ...]], cell: tuple[int, int] | None
    ) -> bool:
        pairs = pair_numbers(old, new)
        if pairs is None:
            return False
        first = True
        for a, b in pairs:
            if is_year(a):
                continue
            form = (a.percent, a.scale)
            keys: tuple[Hashable, ...] = tuple((*g, form) if cell is None else g for g in groups)
            if cell is not None and first:
                cells[("table", cell[0], cell[1])] = len(out)
            elif cell is not None:
                keys = ()  # the parenthesised repeat of a cell's figure
            first = False
            out.append(Number(a.value, b.value, a.decimals, a.percent, keys, a.text))
        return True

    if not add(before["question"], after["question"], [("question",)], None):
        return None
    for i, (old, new) in enumerate(zip(_sentences(before), _sentences(after), strict=True)):
        if not add(old, new, [("sentence", i)], None):
            return None
    for r, (row_a, row_b) in enumerate(zip(before["table"], after["table"], strict=True)):
        for c, (old, new) in enumerate(zip(row_a, row_b, strict=True)):
            if not add(old, new, [("row", r), ("column", c)], (r, c)):
                return None
    return out, table_lines(cells)


def recites(original: float | str, new: float | str) -> bool:
    """Does the published answer still score on the variant's gold (numeric golds)?"""
    if isinstance(original, str) or isinstance(new, str):
        return False
    if round(float(original), 5) == round(float(new), 5):
        return True
    said = number_from_float(float(original))
    return any(compare(fn, said, float(new)).correct for fn in COMPARISONS.values())


def violation(
    before: dict[str, Any],
    after: dict[str, Any],
    totals: list[tuple[int, list[int]]] | None = None,
) -> str | None:
    """Why the variant ``after`` of the record ``before`` breaks a rule (None: it keeps
    them all). ``totals``: the original's table totals, when already found."""
    first, path = trace(str(before["program"]), before["table"])
    second, new_path = trace(str(after["program"]), after["table"])
    if not first.ok or not second.ok:
        return f"the gold program fails: {second.error or first.error}"
    why = trace_violation(path, new_path)
    if why is not None:
        return why
    found = numbers(before, after)
    if found is None:
        return "the variant's numbers do not align with the original's"
    written, lines = found
    if totals is None:
        totals = totals_of(written, lines)
    why = written_violation(written, totals)
    if why is not None:
        return why
    assert first.value is not None and second.value is not None
    if recites(first.value, second.value):
        return "the gold does not move (the published answer would still score)"
    return None


def table_ops(program: str) -> bool:
    return any(step.op in TABLE_OPS for step in parse_program(program))
