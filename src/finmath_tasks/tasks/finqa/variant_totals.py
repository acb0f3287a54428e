"""The totals of a FinQA variant's table: which cells a varied cell moves, and how.

Every relation the original table holds (:func:`variant_rules.table_relations`: a cell equal
to the signed sum of other cells of its column or row, adjacent or not) must hold in the
variant. :func:`propagate` decides, from the cells a variant draws, which other cells are
recomputed and from what:

- a relation is a total only where the table's structure says so (:func:`is_total`): the
  total's label (its row's for a column, its column's header for a row) says "total", "net",
  "balance"...; its parts are the cells just above or below it (left or right); it is the
  last figure of its line; or its label shares a word with every part's ("loans reported"
  of "loans retained", "loans held-for-sale"). A relation touching a varied cell that the
  structure does not mark (a cell equal to others by chance) leaves the question out;
- where a part moves, its total is recomputed (totals of totals follow, vertical and
  horizontal); where the total itself is drawn (the program reads it), the largest of its
  parts that nothing else fixes absorbs the change (the total minus its other parts); a
  relation all of whose cells are drawn turns its total into a computed cell;
- a recomputed figure of three or more significant digits written again in another cell
  (a closing balance that is the next year's opening one) is the same figure: it changes
  too, and its own relations follow;
- every computed cell is written at its written precision, keeps its sign and is not
  written as a year.

The equations come out in the order to compute them: each reads cells drawn, held or
computed before it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from finmath_tasks.tasks.finqa.variant_rules import (
    amount_years,
    cell_value,
    figure,
    percent_change,
    table_relations,
)
from finmath_tasks.variants import (
    find_numbers,
    format_like,
    is_year,
    replace_spans,
    significant_digits,
)

RESTATED_DIGITS = 3
"""A recomputed figure of this many significant digits is the same figure where it is
written again (in another cell or a sentence), which changes with it."""

Cell = tuple[int, int]
Relation = tuple[Cell, tuple[Cell, ...]]

TOTAL_WORDS = re.compile(
    r"\b(?:total|totals|subtotal|net|sum|combined|aggregate|overall|balance|ending|end)\b"
)
"""Words of a label that name a total (or a balance carried from its parts)."""


@dataclass(frozen=True)
class Equation:
    """A computed cell: the signed sum of ``terms`` (sign, cell); with ``kind`` "percent",
    the percent change from the second term's cell to the first's."""

    cell: Cell
    terms: tuple[tuple[int, Cell], ...]
    kind: str = "sum"


def percent_equations(
    changes: Sequence[tuple[Cell, Cell, Cell]], moved: set[Cell], drawn: set[Cell]
) -> tuple[list[Equation], str | None]:
    """The percent changes to recompute (a change column's cell whose two amounts move), or
    the reason the question is left out (the percent itself is drawn, its amounts move)."""
    out = []
    for cell, a, b in changes:
        if not {a, b} & moved:
            continue
        if cell in drawn:
            return [], (
                f"the cell {cell[0]},{cell[1]} is a percent change of cells that move: "
                "it would contradict the new values"
            )
        out.append(Equation(cell, ((1, a), (1, b)), "percent"))
    return out, None


def three_equations(
    threes: Sequence[tuple[Cell, Cell, Cell, Cell]], moved: set[Cell]
) -> list[Equation]:
    """The cells that follow a three-number relation ``d + c = a + b`` of the table
    (:func:`variant_rules.three_relations`) one of whose cells
    moves: its first cell nothing else fixes (``d`` first), recomputed from the other three.
    A relation whose four cells are all fixed is checked on each draw."""
    fixed = set(moved)
    out = []
    for d, a, b, c in threes:
        if not fixed & {d, a, b, c}:
            continue
        free = [k for k in (d, c, a, b) if k not in fixed]
        if not free:
            continue
        x = free[0]
        terms: tuple[tuple[int, Cell], ...] = {
            d: ((1, a), (1, b), (-1, c)),
            c: ((1, a), (1, b), (-1, d)),
            a: ((1, d), (1, c), (-1, b)),
            b: ((1, d), (1, c), (-1, a)),
        }[x]
        fixed.add(x)
        out.append(Equation(x, terms))
    return out


def _label(table: Sequence[Sequence[str]], cell: Cell, vertical: bool) -> str:
    if vertical:
        row = table[cell[0]]
        return str(row[0]).lower() if row else ""
    return str(table[0][cell[1]]).lower() if table and cell[1] < len(table[0]) else ""


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{4,}", text) if w not in ("total", "other")}


def is_total(table: Sequence[Sequence[str]], relation: Relation, line: Sequence[Cell]) -> bool:
    """Does the table's structure mark ``relation``'s cell as the total of its parts?
    ``line``: the numeric cells of its column or row, in order."""
    total, parts = relation
    vertical = all(p[1] == total[1] for p in parts)
    if TOTAL_WORDS.search(_label(table, total, vertical)):
        return True
    positions = sorted(line.index(p) for p in parts)
    at = line.index(total)
    run = positions == list(range(positions[0], positions[-1] + 1))
    if run and (positions[-1] == at - 1 or positions[0] == at + 1):
        return True
    if at == len(line) - 1 and positions[-1] < at:
        return True
    mine = _words(_label(table, total, vertical))
    return bool(mine) and all(mine & _words(_label(table, p, vertical)) for p in parts)


def _line_of(grid: set[Cell], relation: Relation) -> list[Cell]:
    total, parts = relation
    if all(p[1] == total[1] for p in parts):
        return sorted(c for c in grid if c[1] == total[1])
    return sorted((c for c in grid if c[0] == total[0]), key=lambda c: c[1])


def propagate(
    table: Sequence[Sequence[str]],
    drawn: set[Cell],
    relations: Sequence[Relation] | None = None,
) -> tuple[list[Equation], set[Cell], str | None]:
    """The cells to recompute when the ``drawn`` cells change, in order, and the drawn cells
    that turn computed (their relation's every cell is drawn); or the reason the question
    is left out (a varied cell in a relation the table does not mark as a total)."""
    if relations is None:
        relations = table_relations(table)
    grid = {(r, c) for r, row in enumerate(table) for c, cell in enumerate(row) if cell_value(cell)}
    status: dict[Cell, str] = {c: "drawn" for c in drawn}
    equations: list[Equation] = []
    turned: set[Cell] = set()
    handled: set[Relation] = set()
    grew = True
    while grew:
        grew = False
        for relation in relations:
            total, parts = relation
            cells = (total, *parts)
            if relation in handled or not any(c in status and status[c] != "held" for c in cells):
                continue
            handled.add(relation)
            if not is_total(table, relation, _line_of(grid, relation)):
                r, c = total
                return (
                    [],
                    set(),
                    (
                        f"the cell {r},{c} ({str(table[r][c]).strip()!r}) equals the sum of cells "
                        f"{', '.join(f'{a},{b}' for a, b in parts)} but the table does not mark it "
                        "a total (by chance?): it would contradict the new values"
                    ),
                )
            free = [c for c in cells if c not in status]
            if not free:
                if (
                    total in status
                    and status[total] == "drawn"
                    and all(status[p] == "drawn" for p in parts)
                ):
                    status[total] = "computed"
                    turned.add(total)
                    equations.append(Equation(total, tuple((1, p) for p in parts)))
                continue  # every cell already fixed: checked on each draw
            terms: tuple[tuple[int, Cell], ...]
            if total in free:
                chosen, terms = total, tuple((1, p) for p in parts)
            else:
                chosen = max(
                    free, key=lambda c: abs((cell_value(table[c[0]][c[1]], True) or (0.0,))[0])
                )
                terms = ((1, total), *((-1, p) for p in parts if p != chosen))
            status[chosen] = "computed"
            for cell in free:
                status.setdefault(cell, "held")
            equations.append(Equation(chosen, terms))
            equations += _copies(table, grid, chosen, status)
            grew = True
    return equations, turned, None


def _copies(
    table: Sequence[Sequence[str]], grid: set[Cell], cell: Cell, status: dict[Cell, str]
) -> list[Equation]:
    """The cells restating a recomputed cell's figure (of :data:`RESTATED_DIGITS` significant
    digits or more: one figure, written twice), which take its new value."""
    mine = cell_value(table[cell[0]][cell[1]], True)
    if mine is None or significant_digits(mine[0]) < RESTATED_DIGITS:
        return []
    out = []
    for other in sorted(grid):
        theirs = cell_value(table[other[0]][other[1]], True)
        if other in status or theirs is None or abs(theirs[0]) != abs(mine[0]):
            continue
        status[other] = "computed"
        out.append(Equation(other, ((1 if (theirs[0] > 0) == (mine[0] > 0) else -1, cell),)))
    return out


def signed_at(original: str, cell: str, year_is_amount: bool = False) -> float:
    """The signed figure of a rewritten ``cell`` at the place of ``original``'s figure
    (:func:`variant_rules.figure`; a new value may look like a year: its place counts)."""
    found = figure(original, year_is_amount)
    if found is None:
        raise ValueError(f"no figure in the cell {original!r}")
    numbers = find_numbers(original)
    value = find_numbers(cell)[found[0]].value
    head = original[: numbers[found[0]].start].replace("$", "").strip()
    return -abs(value) if head.endswith("(") else value


def recompute(
    original: Sequence[Sequence[str]], table: list[list[str]], equations: Sequence[Equation]
) -> str | None:
    """Write each equation's cell in ``table`` (the variant's, drawn cells already written)
    at its written precision, in order; the reason a draw is rejected (a computed cell that
    changes sign, becomes zero or would read as a year), or None."""
    years = amount_years(original)
    for eq in equations:
        values = [
            sign * signed_at(original[r][c], table[r][c], (r, c) in years)
            for sign, (r, c) in eq.terms
        ]
        if eq.kind == "percent":
            change = percent_change(values[0], values[1])
            if change is None:
                return f"the percent change in cell {eq.cell[0]},{eq.cell[1]} divides by zero"
            value = change
        else:
            value = sum(values)
        r, c = eq.cell
        found = figure(original[r][c], (r, c) in years)
        if found is None:
            return f"the cell {r},{c} has no figure"
        numbers = find_numbers(original[r][c])
        first = numbers[found[0]]
        rounded = round(abs(value), first.decimals)
        if not rounded or (value > 0) != (found[1] > 0):
            return f"the recomputed cell {r},{c} would change sign or become zero"
        year = first.decimals == 0 and not first.grouped and 1950 <= rounded <= 2035
        if year and (r, c) not in years:
            return f"the recomputed cell {r},{c} would read as a year"
        current = find_numbers(table[r][c])
        edits = [
            (
                current[i].start,
                current[i].end,
                format_like(rounded if w.value >= 0 else -rounded, w),
            )
            for i, w in enumerate(numbers)
            if i == found[0] or not is_year(w)
        ]
        table[r][c] = replace_spans(table[r][c], edits)
    return None
