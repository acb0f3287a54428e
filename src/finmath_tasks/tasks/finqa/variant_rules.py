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

import itertools
import re
from collections.abc import Hashable, Mapping, Sequence
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
from finmath_tasks.variants import Written, find_numbers, is_year


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


YEAR_LIKE = (1900, 2100)
"""A whole four-digit figure without a separator in this range can be read as a year (a
reader's range, wider than the one the variants hold as years)."""


def _year_like(w: Written) -> bool:
    return w.integer and not w.grouped and YEAR_LIKE[0] <= abs(w.value) <= YEAR_LIKE[1]


def year_shape(before: Sequence[Sequence[str]], after: Sequence[Sequence[str]]) -> str | None:
    """A cell of the variant's table whose numbers read as a year where the original's do
    not, or the reverse ("1901" of a lease payment drawn to 1856, "1708" to 1900): a reader
    would take it for a label, and a figure changes role. The reason, or None."""
    for r, (row_a, row_b) in enumerate(zip(before, after, strict=True)):
        for c, (old, new) in enumerate(zip(row_a, row_b, strict=True)):
            if old == new:
                continue
            years_a = [_year_like(w) for w in find_numbers(old)]
            years_b = [_year_like(w) for w in find_numbers(new)]
            if years_a != years_b:
                return (
                    f"the cell {r},{c} {str(new).strip()!r} reads as a year where "
                    f"{str(old).strip()!r} does not, or the reverse"
                )
    return None


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
    why = year_shape(before["table"], after["table"])
    if why is not None:
        return why
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


# --- the relations of a table, checked on the two records alone ----------------------------

AUDIT_SUBSET = 4
"""A relation the audit looks for: a cell equal to the sum of 2 to this many other cells of
its column or row, anywhere in the line (or of a run of adjacent cells of any length)."""


def _fields(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """A FinQA record (original schema) or a sample's metadata: the fields with the table."""
    return record if "table" in record else record.get("qa", {})


_SCALE = re.compile(r"\b(?:thousand|million|billion|trillion|k|m|mn|bn)\b", re.IGNORECASE)


DASHES = (2013.0, 2014.0)
"""FinQA's texts write an en dash and an em dash as "2013" and "2014" (``loans 2013
reported``; a cell "2014" is an empty one)."""


def figure(cell: str, year_is_amount: bool = False) -> tuple[int, float, int, bool] | None:
    """A cell's figure: its first number that is not a year (with ``year_is_amount``, a
    number that looks like one counts, a dash aside), signed as written (a minus, or the
    accountants' parentheses around it: "( 5 ) %"): (its index among the cell's numbers,
    its value, decimals, percent form). A cell with words (a label: "other revenues ( 1 )")
    has none."""
    if re.search(r"[a-z]", _SCALE.sub("", cell), re.IGNORECASE):
        return None
    for i, w in enumerate(find_numbers(cell)):
        if is_year(w) and not (year_is_amount and w.value not in DASHES):
            continue
        head = cell[: w.start].replace("$", "").strip()
        value = -abs(w.value) if (w.value < 0 or head.endswith("(")) else w.value
        percent = w.percent or cell[w.end :].lstrip(" )").startswith("%")  # "( 5 ) %"
        return i, value, w.decimals, percent
    return None


def cell_value(cell: str, year_is_amount: bool = False) -> tuple[float, int, bool] | None:
    """A cell's figure (:func:`figure`): its signed value, decimals and percent form."""
    found = figure(cell, year_is_amount)
    return None if found is None else found[1:]


def amount_years(table: Sequence[Sequence[str]]) -> set[tuple[int, int]]:
    """The data cells whose figure looks like a year but is an amount: a column whose other
    data cells are mostly amounts ("1952" among sales of 1315 and 3399)."""
    out = set()
    width = max((len(row) for row in table), default=0)
    for c in range(1, width):
        cells = [(r, row[c]) for r, row in enumerate(table) if r and c < len(row)]
        amounts = [r for r, cell in cells if cell_value(cell) is not None]
        years = [r for r, cell in cells if cell_value(cell) is None and cell_value(cell, True)]
        if years and len(amounts) > len(cells) / 2:
            out |= {(r, c) for r in years}
    return out


def _grid(
    table: Sequence[Sequence[str]], years: set[tuple[int, int]] | None = None
) -> dict[tuple[int, int], tuple[float, int, bool]]:
    years = amount_years(table) if years is None else years
    return {
        (r, c): v
        for r, row in enumerate(table)
        for c, cell in enumerate(row)
        if (v := cell_value(str(cell), (r, c) in years)) is not None
    }


def _holds(total: float, places: int, parts: Sequence[float]) -> bool:
    return abs(sum(parts) - total) <= 0.5 * 10.0**-places + 1e-9


def table_relations(
    table: Sequence[Sequence[str]],
) -> list[tuple[tuple[int, int], tuple[tuple[int, int], ...]]]:
    """Every relation the table holds: a cell (nonzero) equal, at its written precision, to
    the sum of the signed figures of 2 to :data:`AUDIT_SUBSET` other nonzero cells of its
    column or row (anywhere in the line), or of a run of adjacent cells of any length, all
    of one form (percentages with percentages): (the total's cell, its parts' cells)."""
    grid = _grid(table)
    lines: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for r, c in sorted(grid):
        lines.setdefault(("column", c), []).append((r, c))
        lines.setdefault(("row", r), []).append((r, c))
    found: set[tuple[tuple[int, int], tuple[tuple[int, int], ...]]] = set()
    for cells in lines.values():
        places = max(grid[p][1] for p in cells)
        for t in cells:
            total, decimals, percent = grid[t]
            if not total:
                continue
            tol = 0.5 * 10.0 ** (places - decimals) + 1e-6
            others = [p for p in cells if p != t and grid[p][0] and grid[p][2] == percent]
            scaled = {p: round(grid[p][0] * 10**places) for p in others}
            target = round(total * 10**places)
            # subsets of 2 to AUDIT_SUBSET cells, by pair sums (meet in the middle)
            pairs: dict[int, list[tuple[int, int]]] = {}
            for i, first in enumerate(others):
                for j in range(i + 1, len(others)):
                    pairs.setdefault(scaled[first] + scaled[others[j]], []).append((i, j))
            reach = int(tol)
            for offset in range(-reach, reach + 1):
                goal = target + offset
                for i, j in pairs.get(goal, []):
                    found.add((t, (others[i], others[j])))
                for k, third in enumerate(others):
                    for i, j in pairs.get(goal - scaled[third], []):
                        if k > j:
                            found.add((t, (others[i], others[j], third)))
                if AUDIT_SUBSET >= 4:
                    for s, ways in pairs.items():
                        for i, j in ways:
                            for k, m in pairs.get(goal - s, []):
                                if k > j:
                                    found.add((t, (others[i], others[j], others[k], others[m])))
            # runs of adjacent cells of any length (one form, nonzero or not)
            line = [p for p in cells if p != t]
            for a in range(len(line)):
                run_sum = 0
                for b in range(a, len(line)):
                    if grid[line[b]][2] != percent:
                        break
                    run_sum += round(grid[line[b]][0] * 10**places)
                    if b - a >= AUDIT_SUBSET and abs(run_sum - target) <= tol:
                        found.add((t, tuple(line[a : b + 1])))
    return sorted(found)


CHANGE_WORDS = re.compile(r"change|increase|decrease|growth|\bvs\b", re.IGNORECASE)
"""Words of a column header (or a row label) that name a percent change."""

Cell = tuple[int, int]


def percent_change(a: float, b: float) -> float | None:
    return None if not b else (a - b) / abs(b) * 100


def _percent_holds(target: tuple[float, int, bool], a: float, b: float) -> bool:
    change = percent_change(a, b)
    return change is not None and abs(change - target[0]) <= 0.5 * 10.0 ** -target[1] + 1e-9


def percent_relations(table: Sequence[Sequence[str]]) -> list[tuple[Cell, Cell, Cell]]:
    """Each percent cell of a change column (its header, or its row's label, says "change",
    "increase", "vs", ...) equal, at its written precision, to the percent change
    ``(a - b) / |b|`` of two amounts of its row (of its column): (the cell, a, b), the
    nearest such pair."""
    grid = _grid(table)
    found = []
    for (r, c), target in sorted(grid.items()):
        if not target[2] or not target[0]:
            continue
        header = str(table[0][c]) if c < len(table[0]) else ""
        label = str(table[r][0]) if table[r] else ""
        lines = []
        if CHANGE_WORDS.search(header):
            lines.append([p for p in sorted(grid) if p[0] == r and not grid[p][2]])
        if CHANGE_WORDS.search(label):
            lines.append([p for p in sorted(grid) if p[1] == c and not grid[p][2]])
        pairs = [(a, b) for line in lines for a in line for b in line if a != b]
        pairs.sort(key=lambda ab: abs(ab[0][0] - ab[1][0]) + abs(ab[0][1] - ab[1][1]))
        for a, b in pairs:
            if _percent_holds(target, grid[a][0], grid[b][0]):
                found.append(((r, c), a, b))
                break
    return found


def broken_relations(
    original: Mapping[str, Any],
    variant: Mapping[str, Any],
    relations: Sequence[tuple[tuple[int, int], tuple[tuple[int, int], ...]]] | None = None,
    changes: Sequence[tuple[Cell, Cell, Cell]] | None = None,
) -> list[str]:
    """Each relation of the original's table (:func:`table_relations` and
    :func:`percent_relations`, or ``relations`` and ``changes`` found on it before) that the
    variant's table no longer holds at its written precision, as a line naming the cells:
    read from the two records alone (a FinQA record or a sample's metadata each)."""
    before, after = _fields(original)["table"], _fields(variant)["table"]
    new = _grid(after, amount_years(before))
    out = []
    for t, a, b in percent_relations(before) if changes is None else changes:
        if any(p not in new for p in (t, a, b)):
            out.append(f"cell {t[0]},{t[1]}: a cell of its percent change has no figure")
        elif not _percent_holds(new[t], new[a][0], new[b][0]):
            out.append(
                f"cell {t[0]},{t[1]} {after[t[0]][t[1]].strip()!r} was the percent change "
                f"from cell {b[0]},{b[1]} to cell {a[0]},{a[1]} and is not now"
            )
    for t, parts in table_relations(before) if relations is None else relations:
        cells = [t, *parts]
        if any(p not in new for p in cells):
            out.append(f"cell {t[0]},{t[1]}: a cell of its relation has no figure in the variant")
            continue
        if not _holds(new[t][0], new[t][1], [new[p][0] for p in parts]):
            names = " + ".join(f"{after[r][c].strip()!r}" for r, c in parts)
            out.append(
                f"cell {t[0]},{t[1]} {after[t[0]][t[1]].strip()!r} was the sum of the cells "
                f"{', '.join(f'{r},{c}' for r, c in parts)} and is not now ({names})"
            )
    return out


# --- relations the draw holds or recomputes: three numbers, short ratios --------------------

SMALL_LINE = 12
"""Three-number relations and short ratios are looked for in lines of at most this many
figures (in a longer line four figures meet ``a + b - c = d`` by chance)."""
TOTAL_LABEL = re.compile(
    r"\b(?:total|totals|subtotal|sub-total|net|sum|combined|aggregate|overall|balance|"
    r"ending|closing)\b",
    re.IGNORECASE,
)
"""Words of a label that name a figure computed from others."""
RATIO_LABEL = re.compile(r"ratio|\bto\b|times|multiple|coverage|per\b|\bx\b", re.IGNORECASE)
"""Words of a label that name a ratio."""

Grid = dict[Cell, tuple[float, int, bool]]


def _line_label(table: Sequence[Sequence[str]], cell: Cell, vertical: bool) -> str:
    """A figure's label along its line: its row's label in a column, its column's header
    (the text cells above its column's first figure) in a row."""
    if vertical:
        row = table[cell[0]]
        return " ".join(str(x) for x in row if cell_value(str(x)) is None)
    return " ".join(
        str(row[cell[1]])
        for row in table[: cell[0]]
        if cell[1] < len(row) and cell_value(str(row[cell[1]])) is None
    )


def _small_lines(grid: Grid) -> list[tuple[bool, list[Cell]]]:
    """Every column (True) and row (False) of at most :data:`SMALL_LINE` amounts."""
    lines: dict[tuple[bool, int], list[Cell]] = {}
    for r, c in sorted(grid):
        if not grid[(r, c)][2]:
            lines.setdefault((True, c), []).append((r, c))
            lines.setdefault((False, r), []).append((r, c))
    return [(v, cells) for (v, _), cells in lines.items() if len(cells) <= SMALL_LINE]


def _parallel_cells(grid: Grid, cells: Sequence[Cell], vertical: bool) -> list[list[Cell]]:
    """The same rows in every other column (``vertical``), or the same columns in every
    other row, where all of them are written."""
    axis = 1 if vertical else 0
    others = {k[axis] for k in grid} - {cells[0][axis]}
    out = []
    for o in sorted(others):
        moved = [(k[0], o) if vertical else (o, k[1]) for k in cells]
        if all(k in grid and not grid[k][2] for k in moved):
            out.append(moved)
    return out


def _three_holds(grid: Grid, d: Cell, a: Cell, b: Cell, c: Cell) -> bool:
    places = max(grid[k][1] for k in (a, b, c, d))
    value = grid[a][0] + grid[b][0] - grid[c][0]
    return grid[d][0] != 0 and abs(value - grid[d][0]) <= 0.5 * 10.0**-places + 1e-9


def three_relations(table: Sequence[Sequence[str]]) -> list[tuple[Cell, Cell, Cell, Cell]]:
    """The relations ``d = a + b - c`` over four amounts of a column or row of at most
    :data:`SMALL_LINE` figures (a cost, its gains and losses, its fair value; an earnings
    per share as reported and pro forma, basic and diluted) that the table marks: ``d``'s
    label names a total, or the same cells hold it in every parallel line (one at least):
    (d, a, b, c), each at its written precision."""
    grid = _grid(table)
    found: set[tuple[Cell, Cell, Cell, Cell]] = set()
    seen: set[frozenset[frozenset[Cell]]] = set()
    for vertical, cells in _small_lines(grid):
        if len(cells) < 4:
            continue
        for d in cells:
            others = [k for k in cells if k != d and grid[k][0]]
            for a, b in itertools.combinations(others, 2):
                for c in others:
                    if c in (a, b) or grid[c][0] <= 0 or not _three_holds(grid, d, a, b, c):
                        continue
                    parallel = _parallel_cells(grid, [d, a, b, c], vertical)
                    marked = TOTAL_LABEL.search(_line_label(table, d, vertical))
                    equation = frozenset((frozenset((a, b)), frozenset((c, d))))
                    if equation in seen:
                        continue  # d + c = a + b, met again from another of its cells
                    if marked or (parallel and all(_three_holds(grid, *p) for p in parallel)):
                        seen.add(equation)
                        found.add((d, a, b, c))
    return sorted(found)


def _ratio_holds(grid: Grid, r: Cell, a: Cell, b: Cell) -> bool:
    if not grid[b][0] or not grid[r][0]:
        return False
    return abs(grid[a][0] / grid[b][0] - grid[r][0]) <= 0.5 * 10.0 ** -grid[r][1] + 1e-9


def ratio_relations(table: Sequence[Sequence[str]]) -> list[tuple[Cell, Cell, Cell]]:
    """The figures of one or two significant digits with decimals (a net debt to EBITDA of
    0.8) equal at their written places to ``a / b`` of two larger amounts of their column or
    row (of at most :data:`SMALL_LINE` figures), where the label names a ratio or the same
    cells give it in every parallel line: (r, a, b). A draw holds them (they are not
    recomputed: one of several pairs giving a short figure may be chance)."""
    grid = _grid(table)
    found: list[tuple[Cell, Cell, Cell]] = []
    for vertical, cells in _small_lines(grid):
        for r in cells:
            value, decimals, _ = grid[r]
            text = f"{abs(value):.{decimals}f}".replace(".", "").strip("0")
            if not decimals or not value or len(text) > 2:
                continue
            others = [k for k in cells if k != r and abs(grid[k][0]) > abs(value)]
            for a, b in itertools.permutations(others, 2):
                if not _ratio_holds(grid, r, a, b):
                    continue
                parallel = _parallel_cells(grid, [r, a, b], vertical)
                marked = RATIO_LABEL.search(_line_label(table, r, vertical))
                if marked or (parallel and all(_ratio_holds(grid, *p) for p in parallel)):
                    found.append((r, a, b))
    return found


def broken_small(
    original: Mapping[str, Any],
    variant: Mapping[str, Any],
    threes: Sequence[tuple[Cell, Cell, Cell, Cell]] | None = None,
    ratios: Sequence[tuple[Cell, Cell, Cell]] | None = None,
) -> list[str]:
    """Each three-number relation and short ratio of the original's table
    (:func:`three_relations`, :func:`ratio_relations`) the variant's no longer holds (a
    ratio figure holds when one of the pairs that gave it still does)."""
    before, after = _fields(original)["table"], _fields(variant)["table"]
    threes = three_relations(before) if threes is None else threes
    ratios = ratio_relations(before) if ratios is None else ratios
    new = _grid(after, amount_years(before))
    out = []
    for d, a, b, c in threes:
        if any(k not in new for k in (d, a, b, c)) or not _three_holds(new, d, a, b, c):
            out.append(
                f"cell {d[0]},{d[1]} {after[d[0]][d[1]].strip()!r} was cell {a[0]},{a[1]} + "
                f"cell {b[0]},{b[1]} - cell {c[0]},{c[1]} and is not now"
            )
    by_target: dict[Cell, list[tuple[Cell, Cell]]] = {}
    for r, a, b in ratios:
        by_target.setdefault(r, []).append((a, b))
    for r, pairs in by_target.items():
        if not any(
            all(k in new for k in (r, a, b)) and _ratio_holds(new, r, a, b) for a, b in pairs
        ):
            out.append(
                f"cell {r[0]},{r[1]} {after[r[0]][r[1]].strip()!r} was the ratio of cells "
                f"{pairs[0][0][0]},{pairs[0][0][1]} and {pairs[0][1][0]},{pairs[0][1][1]} "
                "and is not now"
            )
    return out
