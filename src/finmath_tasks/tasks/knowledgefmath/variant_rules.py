"""The rules a FinanceMath variant keeps (:mod:`finmath_tasks.variant_rules`).

:func:`violation` compares a question's original with its variant: the gold
``solution()`` of each, run in the sandbox with every intermediate value traced
(:func:`finmath_tasks.variant_rules.instrument_python`: each value's sign, each
branch, each ``max``/``min`` choice the same); the numbers written in the question
and its Markdown tables (order within a sentence, a row or a column; the tables'
totals, three-number relations and short ratios, :mod:`.variant_tables`; figures
restated; percentages in range); and a gold that the published
answer no longer matches under the official comparison (nor our tolerant one), so
reciting the published answers does not score.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence

from finmath_tasks.scorers.comparisons import COMPARISONS, compare, number_from_float
from finmath_tasks.tasks.knowledgefmath.scoring import financemath_compare
from finmath_tasks.tasks.knowledgefmath.variant_tables import Relations, Tables, year_shape
from finmath_tasks.variant_rules import (
    Number,
    pair_numbers,
    table_lines,
    totals_of,
    trace_violation,
    written_violation,
)
from finmath_tasks.variants import is_year

_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n")


def _sentence_of(text: str, at: int) -> int:
    return len(_SENTENCE_END.findall(text, 0, at))


def numbers(
    before: Sequence[str], after: Sequence[str]
) -> tuple[list[Number], list[list[int | None]]] | None:
    """The numbers written in the question (part 0) and tables, original and variant, with
    what each is written together with; the tables' lines. None: they do not align."""
    out: list[Number] = []
    cells: dict[tuple[Hashable, int, int], int] = {}
    for part, (old, new) in enumerate(zip(before, after, strict=True)):
        if part == 0:
            pairs = pair_numbers(old, new)
            if pairs is None:
                return None
            for a, b in pairs:
                if not is_year(a):
                    key = ("sentence", _sentence_of(old, a.start), a.percent, a.scale)
                    out.append(Number(a.value, b.value, a.decimals, a.percent, (key,), a.text))
            continue
        if len(old.split("\n")) != len(new.split("\n")):
            return None
        rows = []
        table = 0  # a blank line starts another table
        for line_a, line_b in zip(old.split("\n"), new.split("\n"), strict=True):
            if not line_a.strip():
                table += 1
            elif not re.fullmatch(r"[\s|:-]*", line_a):
                rows.append((line_a, line_b, table))
        for r, (line_a, line_b, table) in enumerate(rows):
            pairs = pair_numbers(line_a, line_b)
            if pairs is None:
                return None
            seen: set[int] = set()
            for a, b in pairs:
                if is_year(a):
                    continue
                c = line_a.count("|", 0, a.start)
                groups: tuple[Hashable, ...] = (("row", part, r), ("column", part, table, c))
                if c not in seen:
                    cells[((part, table), r, c)] = len(out)
                    seen.add(c)
                else:
                    groups = (("cell", part, r, c),)
                out.append(Number(a.value, b.value, a.decimals, a.percent, groups, a.text))
    return out, table_lines(cells)


def recites(published: float, new: float) -> bool:
    """Does the published answer still score on the variant's gold? ``new`` as the scorers
    read it: a :class:`~finmath_tasks.scorers.comparisons.GoldNumber` keeps its written
    places (``0.50`` asks two decimals of a rounding comparison, not one)."""
    if financemath_compare(published, float(new)).correct:
        return True
    said = number_from_float(float(published))
    return any(compare(fn, said, new).correct for fn in COMPARISONS.values())


def written_rules(
    before: Sequence[str], after: Sequence[str], totals: list[tuple[int, list[int]]] | None = None
) -> str | None:
    found = numbers(before, after)
    if found is None:
        return "the variant's numbers do not align with the original's"
    written, lines = found
    why = written_violation(written, totals_of(written, lines) if totals is None else totals)
    if why is not None:
        return why
    why = year_shape(before[1:], after[1:])
    if why is not None:
        return why
    # totals over runs, three-number relations and short ratios of the tables
    return Relations(Tables(before[1:])).broken(Tables(after[1:]))


def violation(
    before: Sequence[str],
    after: Sequence[str],
    traces: tuple[str | None, str | None],
    published: float,
    new_gold: float,
    totals: list[tuple[int, list[int]]] | None = None,
) -> str | None:
    """Why a variant breaks a rule (None: it keeps them all). ``traces``: the original's
    and the variant's trace signatures (None: the program printed none)."""
    original, new = traces
    if original is None or new is None:
        return "the gold program's trace could not be read"
    why = trace_violation(original, new)
    if why is not None:
        return why
    why = written_rules(before, after, totals)
    if why is not None:
        return why
    if recites(published, new_gold):
        return "the gold does not move (the published answer would still score)"
    return None
