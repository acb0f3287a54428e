"""The meaning rules a fresh variant keeps, as plain checks over numbers (no benchmark).

A fresh variant changes numbers of a document and recomputes its gold; it must still mean
what its question says. These checks compare a question's original numbers with its
variant's:

- :func:`sign_changed`: every intermediate value of the gold computation keeps its sign
  (zero stays zero);
- :func:`order_changed`: values written together (a table row or column, a sentence)
  keep their order, equal ones stay equal and distinct ones distinct;
- :func:`range_changed`: a percentage within [0, 100] stays within it;
- :func:`find_totals` / :func:`total_of`: the totals a table writes (a cell equal to the
  sum of a run of cells next to it in its column or row, sub-totals inside the run
  counted once), found on the original and recomputed on the variant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Cell = tuple[int, int]
"""(row, column) of a table cell."""


def sign(value: float) -> int:
    return 0 if value == 0 else (1 if value > 0 else -1)


def sign_changed(before: Sequence[float], after: Sequence[float]) -> int | None:
    """The index of the first value whose sign differs (zero is its own sign), else None
    (a trace of another length differs at its end)."""
    for i, (a, b) in enumerate(zip(before, after, strict=False)):
        if sign(a) != sign(b):
            return i
    if len(before) != len(after):
        return min(len(before), len(after))
    return None


def order_changed(before: Sequence[float], after: Sequence[float]) -> tuple[int, int] | None:
    """A pair (i, j) whose order or equality differs between ``before`` and ``after``
    (the same values, some changed), else None."""
    if len(before) != len(after):
        return (len(before), len(after))
    for i in range(len(before)):
        for j in range(i + 1, len(before)):
            if sign(before[i] - before[j]) != sign(after[i] - after[j]):
                return (i, j)
    return None


def range_changed(before: float, after: float, low: float = 0.0, high: float = 100.0) -> bool:
    """A value within [low, high] that leaves it."""
    return low <= before <= high and not low <= after <= high


@dataclass(frozen=True)
class Total:
    """A cell written as the sum of a run of cells of its column or row."""

    cell: Cell
    parts: tuple[Cell, ...]


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def find_totals(grid: Mapping[Cell, float]) -> list[Total]:
    """Every cell of ``grid`` (numeric cells; their signed values) equal to the sum of a run
    of two or more cells next to it in its column or row (just above or below it, just left
    or right of it), cells that are totals of cells inside the run counted once (through
    their total, not twice): the longest such run of each cell, for each line."""
    lines: dict[tuple[str, int], list[Cell]] = {}
    for r, c in sorted(grid):
        lines.setdefault(("column", c), []).append((r, c))
        lines.setdefault(("row", r), []).append((r, c))
    found: list[Total] = []
    for _, cells in sorted(lines.items()):
        known: dict[Cell, tuple[Cell, ...]] = {}
        # small runs first, so a sub-total is known before a total that spans it
        for length in range(2, len(cells)):
            for i, total in enumerate(cells):
                if total in known:
                    continue
                for run in (
                    cells[i - length : i] if i >= length else None,
                    cells[i + 1 : i + 1 + length],
                ):
                    if not run or len(run) != length:
                        continue
                    inside = set(run)
                    covered = {p for t, parts in known.items() if t in inside for p in parts}
                    counted = [p for p in run if p not in covered]
                    if len(counted) < 2 and not any(p in known for p in counted):
                        continue
                    if _same(sum(grid[p] for p in counted), grid[total]) and grid[total] != 0:
                        if all(_same(grid[p], grid[total]) for p in counted if grid[p]):
                            continue  # a run of one nonzero cell and zeros
                        known[total] = tuple(counted)
                        break
        found += [Total(cell, parts) for cell, parts in known.items()]
    return found


def total_of(total: Total, grid: Mapping[Cell, float]) -> float:
    return sum(grid[p] for p in total.parts)


def totals_hold(
    totals: Sequence[Total], grid: Mapping[Cell, float], decimals: Mapping[Cell, int]
) -> Total | None:
    """The first total whose cell is no longer the sum of its parts at its written precision."""
    for total in totals:
        places = decimals.get(total.cell, 0)
        if abs(total_of(total, grid) - grid[total.cell]) > 0.5 * 10**-places + 1e-9:
            return total
    return None
