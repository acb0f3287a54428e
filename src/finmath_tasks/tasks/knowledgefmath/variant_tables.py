"""Relations of a FinanceMath question's Markdown tables that every draw must keep.

A draw that breaks one is redrawn; a question whose every draw does is drawn again holding
one more value at a time (``variants.narrowed_plans``), so the value stays as written.
Found in the original tables, each table apart (a blank line or a new header starts one):

- a total: a cell equal to the sum of a run of cells next to it in its column or row
  (:func:`finmath_tasks.variant_rules.find_totals`: a net operating income over the five
  lines below it);
- ``d = a + b - c`` over four amounts of a column or row of at most :data:`SMALL_LINE`
  figures, where ``d``'s label names a total or the same cells give it in every parallel
  line;
- a figure of one or two significant digits with decimals equal at its written places to
  ``a / b`` of two larger amounts of its line, where its label names a ratio (earnings per
  share, net income over shares) or every parallel line gives it too (a standard error
  equal to each coefficient over its t-statistic); a ratio figure holds when one of the
  pairs that gave it still does.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

from finmath_tasks.variant_rules import Total, find_totals, totals_hold
from finmath_tasks.variants import find_numbers, is_year

Key = tuple[int, int, int]
"""A cell: (table, row, column)."""
Figure = tuple[float, int, bool]
"""A cell's signed value, decimals and percent form."""

SMALL_LINE = 12
"""Three-number relations and short ratios are looked for in lines of at most this many."""
TOTAL_LABEL = re.compile(
    r"\b(?:total|totals|subtotal|net|sum|combined|aggregate|overall|balance|ending|closing)\b",
    re.IGNORECASE,
)
RATIO_LABEL = re.compile(r"ratio|\bto\b|times|multiple|coverage|per\b|\bx\b", re.IGNORECASE)


def markdown_tables(text: str) -> list[list[list[str]]]:
    """A part's Markdown tables, each as its rows of cells (separator lines dropped)."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in text.split("\n"):
        line = line.strip()
        if not line.startswith("|"):
            if current:
                tables.append(current)
            current = []
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
            continue
        current.append(cells)
    if current:
        tables.append(current)
    return tables


def _figure(cell: str) -> Figure | None:
    for w in find_numbers(cell):
        if is_year(w):
            continue
        negative = w.value < 0 or cell[: w.start].rstrip(" $€£").endswith("(")
        value = -abs(w.value) if negative else abs(w.value)
        return value, w.decimals, w.percent or "%" in cell
    return None


class Tables:
    """The figures of a question's tables with each row's label and column's header."""

    def __init__(self, parts: Sequence[str]) -> None:
        self.grid: dict[Key, Figure] = {}
        self.labels: dict[tuple[int, int], str] = {}
        self.headers: dict[tuple[int, int], str] = {}
        t = 0
        for part in parts:
            for rows in markdown_tables(part):
                for r, row in enumerate(rows):
                    words = []
                    for c, cell in enumerate(row):
                        found = _figure(cell)
                        if found is None:
                            words.append(cell)
                        else:
                            self.grid[(t, r, c)] = found
                    self.labels[(t, r)] = " ".join(words)
                for c in range(max((len(row) for row in rows), default=0)):
                    above = []
                    for row in rows:
                        if c < len(row) and _figure(row[c]) is not None:
                            break
                        above.append(row[c] if c < len(row) else "")
                    self.headers[(t, c)] = " ".join(above)
                t += 1

    def label(self, key: Key, vertical: bool) -> str:
        t, r, c = key
        return self.labels.get((t, r), "") if vertical else self.headers.get((t, c), "")

    def lines(self) -> list[tuple[bool, list[Key]]]:
        """Every column (True) and row (False) of amounts, in order."""
        lines: dict[tuple[bool, int, int], list[Key]] = {}
        for key in sorted(self.grid):
            if not self.grid[key][2]:
                t, r, c = key
                lines.setdefault((True, t, c), []).append(key)
                lines.setdefault((False, t, r), []).append(key)
        return [(v, cells) for (v, _, _), cells in lines.items()]

    def parallel(self, cells: Sequence[Key], vertical: bool) -> list[list[Key]]:
        t = cells[0][0]
        axis = 2 if vertical else 1
        others = {k[axis] for k in self.grid if k[0] == t} - {cells[0][axis]}
        out = []
        for o in sorted(others):
            moved = [(t, k[1], o) if vertical else (t, o, k[2]) for k in cells]
            if all(k in self.grid and not self.grid[k][2] for k in moved):
                out.append(moved)
        return out


def _three(grid: dict[Key, Figure], d: Key, a: Key, b: Key, c: Key) -> bool:
    places = max(grid[k][1] for k in (a, b, c, d))
    value = grid[a][0] + grid[b][0] - grid[c][0]
    return grid[d][0] != 0 and abs(value - grid[d][0]) <= 0.5 * 10.0**-places + 1e-9


def _ratio(grid: dict[Key, Figure], r: Key, a: Key, b: Key) -> bool:
    if not grid[b][0] or not grid[r][0]:
        return False
    return abs(grid[a][0] / grid[b][0] - grid[r][0]) <= 0.5 * 10.0 ** -grid[r][1] + 1e-9


class Relations:
    """The relations of the original tables (found once per question)."""

    def __init__(self, tables: Tables) -> None:
        self.totals: list[tuple[int, Total]] = []
        for t in sorted({k[0] for k in tables.grid}):
            values = {(k[1], k[2]): v[0] for k, v in tables.grid.items() if k[0] == t and not v[2]}
            self.totals += [(t, total) for total in find_totals(values)]
        self.threes: list[tuple[Key, Key, Key, Key]] = []
        self.ratios: dict[Key, list[tuple[Key, Key]]] = {}
        grid = tables.grid
        seen: set[frozenset[frozenset[Key]]] = set()
        for vertical, cells in tables.lines():
            if len(cells) > SMALL_LINE:
                continue
            for d in cells:
                others = [k for k in cells if k != d and grid[k][0]]
                for a, b in itertools.combinations(others, 2):
                    for c in others:
                        if c in (a, b) or grid[c][0] <= 0 or not _three(grid, d, a, b, c):
                            continue
                        equation = frozenset((frozenset((a, b)), frozenset((c, d))))
                        parallel = tables.parallel([d, a, b, c], vertical)
                        marked = TOTAL_LABEL.search(tables.label(d, vertical))
                        if equation not in seen and (
                            marked or (parallel and all(_three(grid, *p) for p in parallel))
                        ):
                            seen.add(equation)
                            self.threes.append((d, a, b, c))
            for r in cells:
                value, decimals, _ = grid[r]
                digits = f"{abs(value):.{decimals}f}".replace(".", "").strip("0")
                if not decimals or not value or len(digits) > 2:
                    continue
                larger = [k for k in cells if k != r and abs(grid[k][0]) > abs(value)]
                for a, b in itertools.permutations(larger, 2):
                    if not _ratio(grid, r, a, b):
                        continue
                    parallel = tables.parallel([r, a, b], vertical)
                    marked = RATIO_LABEL.search(tables.label(r, vertical))
                    if marked or (parallel and all(_ratio(grid, *p) for p in parallel)):
                        self.ratios.setdefault(r, []).append((a, b))

    def broken(self, variant: Tables) -> str | None:
        """The first relation the variant's tables no longer hold, or None."""
        grid = variant.grid
        keys = {(t, *k) for t, total in self.totals for k in (total.cell, *total.parts)}
        keys |= {k for four in self.threes for k in four}
        keys |= {k for r, pairs in self.ratios.items() for k in (r, *(x for p in pairs for x in p))}
        if not keys <= set(grid):
            return "a figure of the tables is no longer read where the original has one"
        for t in sorted({t for t, _ in self.totals}):
            values = {(k[1], k[2]): v[0] for k, v in grid.items() if k[0] == t}
            decimals = {(k[1], k[2]): v[1] for k, v in grid.items() if k[0] == t}
            mine = [total for u, total in self.totals if u == t]
            stale = totals_hold(mine, values, decimals)
            if stale is not None:
                return (
                    f"the total {values[stale.cell]:g} of the table is no longer the sum of "
                    "its parts"
                )
        for d, a, b, c in self.threes:
            if not _three(grid, d, a, b, c):
                return f"the figure {grid[d][0]:g} of the table is no longer a + b - c of its line"
        for r, pairs in self.ratios.items():
            if not any(_ratio(grid, r, a, b) for a, b in pairs):
                return f"the ratio {grid[r][0]:g} of the table no longer equals its two figures"
        return None


YEAR_LIKE = (1900, 2100)
"""A whole four-digit figure without a separator in this range reads as a year to a reader
(a wider range than the years the variants never vary)."""


def year_shape(before: Sequence[str], after: Sequence[str]) -> str | None:
    """A figure of the variant's tables that reads as a year where the original's does not,
    or the reverse (sales of 2,125 drawn to 2066): the reason to redraw, or None."""

    def year_like(w: Any) -> bool:
        return w.integer and not w.grouped and YEAR_LIKE[0] <= abs(w.value) <= YEAR_LIKE[1]

    for old, new in zip(before, after, strict=True):
        for a, b in zip(find_numbers(old), find_numbers(new), strict=False):
            if year_like(a) != year_like(b):
                return f"the figure {b.text!r} reads as a year where {a.text!r} does not, or the reverse"
    return None
