"""The rules a fresh variant keeps, checked on every draw (benchmark-neutral).

A variant must still mean what its question says. A draw is redrawn unless:

- **the gold computation keeps its path**: every intermediate value of the gold
  program keeps its sign (zero stays zero) and every branch (an ``if``, ``max``,
  ``min``, a comparison) goes the same way. A program's run is written as a *trace
  signature*, one symbol per event (:func:`trace_violation` compares two);
  :func:`instrument_python` makes a Python program print its own, and a benchmark
  whose programs are a list of steps writes it with :func:`signature`;
- **values written together keep their relations** (:func:`order_violation`): in a
  table row, a table column or a sentence, two numbers of the same form keep their
  order, equal ones stay equal and distinct ones distinct;
- **totals are still the sum of their parts** (:func:`sum_relations` finds them in
  a table line, :func:`sum_violation` checks them), and a figure written again
  elsewhere is still the same figure (:func:`restated_violation`);
- **rates stay in range**: a percentage between 0 and 100 stays there
  (:func:`range_violation`);
- **the gold moves**: a variant whose gold the published answer still matches
  (under the benchmark's own comparison) is redrawn, so reciting the published
  answers does not score on it (each benchmark applies its comparison).

Checks over plain sequences of numbers, for benchmarks that trace a computation
themselves (a derivation written as arithmetic): :func:`sign_changed`, :func:`order_changed`,
:func:`range_changed`, and :func:`find_totals` / :func:`total_of` / :func:`totals_hold`
(the totals a table grid writes, sub-totals inside a run counted once, found on the
original and recomputed on the variant).
"""

from __future__ import annotations

import ast
import itertools
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from finmath_tasks.variants import Written, find_numbers

ZERO = 1e-9
"""An intermediate value closer to zero than this is zero (floating-point residue)."""

TRACE_MARK = "@@variant-trace@@"
"""The line an instrumented program prints last: its trace's length, and its symbols."""
TRACE_CHARS = 3000
"""Trace symbols printed (the sandbox keeps the last 4096 characters of the output); a
longer trace is compared by its prefix and its length."""


def sign(value: float) -> int:
    if not math.isfinite(value):
        return 2
    return 0 if abs(value) < ZERO else (1 if value > 0 else -1)


def symbol(value: object) -> str:
    """One event of a trace: ``+ - 0`` for a number, ``T F`` for a truth value, ``?``
    for anything else (not compared)."""
    if isinstance(value, bool):
        return "T" if value else "F"
    if isinstance(value, int | float):
        return {1: "+", -1: "-", 0: "0"}.get(sign(float(value)), "n")
    return ""


def signature(values: Iterable[object]) -> str:
    """The trace of a sequence of intermediate values (a step program's results)."""
    out = []
    for value in values:
        if isinstance(value, str) and value in ("yes", "no"):
            out.append("T" if value == "yes" else "F")
        else:
            out.append(symbol(value))
    return "".join(out)


def trace_violation(original: str, new: str) -> str | None:
    """Why the variant's trace differs from the original's (None: the same path)."""
    if original == new:
        return None
    for i, (a, b) in enumerate(zip(original, new, strict=False)):
        if a != b:
            what = {"+": "positive", "-": "negative", "0": "zero", "T": "true", "F": "false"}
            if a in "+-0" and b in "+-0":
                return f"intermediate value {i + 1} turns {what[a]} to {what[b]}"
            if a in "TF" and b in "TF":
                return f"branch {i + 1} goes the other way ({what[a]} to {what[b]})"
            return f"choice {i + 1} of a max/min changes"
    return f"the program takes another path ({len(original)} steps, now {len(new)})"


# --- tracing a Python program ------------------------------------------------------------

_PRELUDE = """
_fm_trace = []
def _fm_r(value):
    if len(_fm_trace) < 200000:
        if isinstance(value, bool):
            _fm_trace.append("T" if value else "F")
        elif isinstance(value, (int, float)):
            _fm_trace.append("0" if abs(value) < 1e-9 else ("+" if value > 0 else "-"))
        elif hasattr(value, "dtype") and hasattr(value, "tolist"):
            try:
                flat = value.tolist()
            except Exception:
                flat = None
            items = flat if isinstance(flat, list) else [flat]
            while items and isinstance(items[0], list):
                items = [x for row in items for x in row]
            for item in items[:50]:
                _fm_r(item)
        elif isinstance(value, (list, tuple)) and len(value) <= 50:
            for item in value:
                if isinstance(item, (int, float)):
                    _fm_r(item)
    return value
def _fm_b(value):
    _fm_trace.append("T" if value else "F")
    return value
def _fm_mm(fn, *args):
    values = list(args[0]) if len(args) == 1 else list(args)
    result = fn(*args)
    try:
        index = values.index(result)
    except Exception:
        index = 0
    _fm_trace.append(chr(97 + index) if index < 26 else "~")
    return result
"""

_EPILOGUE = """
_fm_solution = {entry}
def {entry}():
    del _fm_trace[:]
    try:
        return _fm_solution()
    finally:
        _t = "".join(_fm_trace)
        print("\\n{mark} %d %s" % (len(_t), _t[:{chars}]))
"""


class _Instrument(ast.NodeTransformer):
    """Every computed value (an operation, a call, a comparison) is recorded; every
    branch's test and every ``max``/``min`` choice too."""

    def _wrap(self, node: ast.expr, fn: str = "_fm_r") -> ast.expr:
        return ast.Call(func=ast.Name(fn, ast.Load()), args=[node], keywords=[])

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        self.generic_visit(node)
        return self._wrap(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        self.generic_visit(node)
        if isinstance(node.operand, ast.Constant):
            return node  # a negative literal is a constant, not a computation
        return self._wrap(node)

    def visit_Compare(self, node: ast.Compare) -> Any:
        self.generic_visit(node)
        return self._wrap(node, "_fm_b")

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        self.generic_visit(node)
        return self._wrap(node, "_fm_b")

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        func = node.func
        name = func.id if isinstance(func, ast.Name) else None
        if (
            name in ("max", "min")
            and not node.keywords
            and node.args
            and not any(isinstance(a, ast.Starred) for a in node.args)
        ):
            return ast.Call(
                func=ast.Name("_fm_mm", ast.Load()),
                args=[ast.Name(name, ast.Load()), *node.args],
                keywords=[],
            )
        return self._wrap(node)

    def _test(self, node: ast.If | ast.While | ast.IfExp) -> Any:
        self.generic_visit(node)
        if not isinstance(node.test, ast.Call) or not (
            isinstance(node.test.func, ast.Name) and node.test.func.id == "_fm_b"
        ):
            node.test = self._wrap(node.test, "_fm_b")
        return node

    visit_If = _test
    visit_While = _test
    visit_IfExp = _test

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        self.generic_visit(node)
        if isinstance(node.target, ast.Name):
            after = ast.Expr(self._wrap(ast.Name(node.target.id, ast.Load())))
            return [node, after]
        return node


def instrument_python(program: str, entry: str = "solution") -> str:
    """``program`` rewritten to print its trace signature after ``entry()`` returns
    (:func:`read_trace` reads it from the output); its result is unchanged."""
    tree = _Instrument().visit(ast.parse(program))
    ast.fix_missing_locations(tree)
    body = ast.unparse(tree)
    epilogue = _EPILOGUE.format(entry=entry, mark=TRACE_MARK, chars=TRACE_CHARS)
    return f"{_PRELUDE}\n{body}\n{epilogue}"


def read_trace(stdout: str) -> str | None:
    """The trace signature an instrumented program printed (None: none printed). A trace
    longer than :data:`TRACE_CHARS` is its prefix followed by ``#`` and its length."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(TRACE_MARK):
            parts = line.split(" ", 2)
            length = int(parts[1])
            symbols = parts[2] if len(parts) > 2 else ""
            return symbols if length <= len(symbols) else f"{symbols}#{length}"
    return None


# --- values written together -------------------------------------------------------------


def _cmp(a: float, b: float) -> int:
    if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):
        return 0
    return 1 if a > b else -1


def order_violation(
    original: Sequence[float],
    new: Sequence[float],
    groups: Iterable[Sequence[int]],
    label: Sequence[str] = (),
) -> str | None:
    """Why the new values break the order of values written together (None: every group
    keeps its order, its equal values equal and its distinct values distinct).

    ``groups``: indices of values written together (a row, a column, the numbers of one
    form in a sentence)."""
    for group in groups:
        for i, j in itertools.combinations(group, 2):
            if _cmp(original[i], original[j]) != _cmp(new[i], new[j]):
                a = label[i] if label else f"{original[i]:g}"
                b = label[j] if label else f"{original[j]:g}"
                return (
                    f"{a} and {b}, written together, no longer compare the same way "
                    f"({new[i]:g} and {new[j]:g})"
                )
    return None


def range_violation(
    original: Sequence[float], new: Sequence[float], percent: Sequence[bool]
) -> str | None:
    """A percentage written between 0 and 100 that leaves that range (None: none)."""
    for o, n, p in zip(original, new, percent, strict=True):
        if p and 0 <= o <= 100 and not 0 <= n <= 100:
            return f"the percentage {o:g}% becomes {n:g}%, out of its range"
    return None


# --- totals ------------------------------------------------------------------------------

MAX_SUBSET = 24
"""A total found as a sum of non-adjacent cells is looked for among at most this many cells
on its side (meet in the middle: 2 x 2^12 sums)."""


def _scaled(values: Sequence[float], decimals: int) -> list[int]:
    return [round(v * 10**decimals) for v in values]


def _subsets(items: Sequence[tuple[int, int]]) -> dict[int, list[tuple[int, ...]]]:
    found: dict[int, list[tuple[int, ...]]] = {0: [()]}
    for index, value in items:
        grown: dict[int, list[tuple[int, ...]]] = {}
        for total, ways in found.items():
            grown.setdefault(total, []).extend(ways)
            if len(ways) < 3:
                grown.setdefault(total + value, []).extend((*w, index) for w in ways[:2])
        found = {k: v[:2] for k, v in grown.items()}
    return found


def _unique_subset(items: Sequence[tuple[int, int]], target: int) -> tuple[int, ...] | None:
    """The one subset (2+ members) of ``items`` (index, value) summing to ``target``;
    None when there is none or more than one."""
    half = len(items) // 2
    left, right = _subsets(items[:half]), _subsets(items[half:])
    ways: list[tuple[int, ...]] = []
    for total, lw in left.items():
        for rw in right.get(target - total, []):
            for lpart in lw:
                ways.append(lpart + rw)
                if len(ways) > 1:
                    return None
    if len(ways) == 1 and len(ways[0]) >= 2:
        return ways[0]
    return None


def sum_relations(
    line: Sequence[float | None], decimals: Sequence[int] = (), min_digits: int = 3
) -> list[tuple[int, list[int]]]:
    """The totals of one table line (a column or a row, in order; None for a cell with no
    number): each as (the total's index, its parts' indices).

    A total is the sum of a run (2+) of the cells just above or below it (left or right),
    where the parts of a total already found count as that total (nested sub-totals); or, for the line's largest figure (at least ``min_digits`` significant digits), of a
    unique set of the cells on one side of it, parts separated by sub-rows (a total of
    segment totals whose product lines sit between them). A sum matches exactly at the
    finest written precision."""
    places = max(decimals, default=0)
    cells = [(i, v) for i, v in enumerate(line) if v is not None]
    found: list[tuple[int, list[int]]] = []
    scaled = {i: round(v * 10**places) for i, v in cells}
    order = [i for i, _ in cells]
    grew = True
    while grew:  # a found total stands for its parts (sub-rows collapse into their total)
        grew = False
        for pos, t in enumerate(order):
            if scaled[t] == 0 or any(t == f for f, _ in found):
                continue
            runs = [order[j:pos] for j in range(pos - 1)]
            runs += [order[pos + 1 : k] for k in range(pos + 3, len(order) + 1)]
            for run in runs:
                if sum(scaled[p] for p in run) == scaled[t]:
                    found.append((t, list(run)))
                    order = [i for i in order if i not in run]
                    grew = True
                    break
            if grew:
                break
    if cells:
        top = max(order, key=lambda i: abs(scaled[i]))
        value = abs(line[top] or 0.0)
        digits = len(f"{value:.10g}".replace(".", "").strip("0"))
        if digits >= min_digits and not any(t == top for t, _ in found):
            pos = order.index(top)
            for side in (order[pos + 1 :], order[:pos]):
                if 2 <= len(side) <= MAX_SUBSET:
                    subset = _unique_subset([(i, scaled[i]) for i in side], scaled[top])
                    if subset is not None:
                        found.append((top, sorted(subset)))
                        break
    return found


def sum_violation(
    relations: Iterable[tuple[int, Sequence[int]]],
    new: Sequence[float],
    decimals: Sequence[int],
    label: Sequence[str] = (),
) -> str | None:
    """A total that is no longer the sum of its parts (at its written precision: the sum of
    the parts as written, rounded to the total's places); None when every one is."""
    for total, parts in relations:
        places = max(decimals[i] for i in [total, *parts])
        got = round(sum(new[p] for p in parts), places)
        if not math.isclose(got, round(new[total], places), rel_tol=1e-12, abs_tol=1e-9):
            name = label[total] if label else f"{new[total]:g}"
            return (
                f"the total {name} (now {new[total]:g}) is no longer the sum of its parts ({got:g})"
            )
    return None


def restated_violation(
    original: Sequence[float],
    new: Sequence[float],
    min_digits: int = 3,
    label: Sequence[str] = (),
) -> str | None:
    """A figure (``min_digits`` significant digits or more) written in several places that
    no longer reads the same everywhere (None: every restatement follows)."""
    by_value: dict[float, list[int]] = {}
    for i, value in enumerate(original):
        digits = len(f"{abs(value):.10g}".replace(".", "").strip("0"))
        if digits >= min_digits:
            by_value.setdefault(abs(value), []).append(i)
    for indices in by_value.values():
        if len({abs(new[i]) for i in indices}) > 1:
            name = label[indices[0]] if label else f"{original[indices[0]]:g}"
            return f"the figure {name}, written in {len(indices)} places, no longer agrees"
    return None


# --- a document's written numbers, before and after ----------------------------------------


@dataclass(frozen=True)
class Number:
    """A number of the document, as the original and the variant write it."""

    old: float
    new: float
    decimals: int
    percent: bool
    groups: tuple[Hashable, ...]
    """The keys of what it is written together with (its row, its column, its sentence
    and form); numbers sharing a key keep their order."""
    label: str = ""


def pair_numbers(old: str, new: str) -> list[tuple[Written, Written]] | None:
    """The numbers of a text and of its variant, side by side (None: they do not align,
    which a variant never does: it changes digits only)."""
    a, b = find_numbers(old), find_numbers(new)
    if len(a) != len(b):
        return None
    return list(zip(a, b, strict=True))


def table_lines(
    cells: Mapping[tuple[Hashable, int, int], int],
) -> list[list[int | None]]:
    """The columns and rows of tables, as lists of number indices (None: an empty cell):
    ``cells`` maps (table, row, column) to the index of the cell's first number."""
    lines: dict[tuple[Hashable, str, int], dict[int, int]] = {}
    for (table, r, c), index in cells.items():
        lines.setdefault((table, "column", c), {})[r] = index
        lines.setdefault((table, "row", r), {})[c] = index
    out: list[list[int | None]] = []
    for line in lines.values():
        out.append([line[k] for k in sorted(line)])
    return out


def totals_of(
    numbers: Sequence[Number], lines: Iterable[Sequence[int | None]]
) -> list[tuple[int, list[int]]]:
    """The totals written in the original tables (:func:`sum_relations` on each line)."""
    found = []
    for line in lines:
        indices = [i for i in line if i is not None]
        values = [numbers[i].old for i in indices]
        decimals = [numbers[i].decimals for i in indices]
        for total, parts in sum_relations(values, decimals):
            found.append((indices[total], [indices[p] for p in parts]))
    return found


def written_violation(
    numbers: Sequence[Number], totals: Iterable[tuple[int, Sequence[int]]] = ()
) -> str | None:
    """Why the variant's written numbers break a rule (None: they keep every relation):
    order within what is written together, totals, restated figures, percentages' range."""
    if not any(n.old != n.new for n in numbers):
        return None
    old = [n.old for n in numbers]
    new = [n.new for n in numbers]
    labels = [n.label or f"{n.old:g}" for n in numbers]
    groups: dict[Hashable, list[int]] = {}
    for i, n in enumerate(numbers):
        for key in n.groups:
            groups.setdefault(key, []).append(i)
    moved = {i for i, n in enumerate(numbers) if n.old != n.new}
    relevant = [g for g in groups.values() if moved & set(g)]
    return (
        order_violation(old, new, relevant, labels)
        or sum_violation(list(totals), new, [n.decimals for n in numbers], labels)
        or restated_violation(old, new, label=labels)
        or range_violation(old, new, [n.percent for n in numbers])
    )


# Checks over sequences of numbers and table grids (a derivation traced by its benchmark)

Cell = tuple[int, int]
"""(row, column) of a table cell."""


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


def _run_holds(
    grid: Mapping[Cell, float],
    total: Cell,
    run: Sequence[Cell],
    known: Mapping[Cell, tuple[Cell, ...]],
) -> tuple[Cell, ...] | None:
    """The parts of ``run`` counted for ``total`` (sub-totals inside it counted once, through
    their total) when they sum to it, else None."""
    inside = set(run)
    covered = {p for t, parts in known.items() if t in inside for p in parts}
    counted = [p for p in run if p not in covered]
    if len(counted) < 2 and not any(p in known for p in counted):
        return None
    if grid[total] == 0:
        return None
    if not _same(sum(grid[p] for p in counted), grid[total]):
        if (
            len(run) < 3
            or counted == list(run)
            or not _same(sum(grid[p] for p in run), grid[total])
        ):
            return None
        counted = list(run)  # a sub-total inside the run that is a chance pair: the run itself
    if all(_same(grid[p], grid[total]) for p in counted if grid[p]):
        return None  # a run of one nonzero cell and zeros
    return tuple(counted)


def find_totals(grid: Mapping[Cell, float]) -> list[Total]:
    """Every cell of ``grid`` (numeric cells; their signed values) equal to the sum of a run
    of two or more cells next to it in its column or row (just above or below it, just left
    or right of it), cells that are totals of cells inside the run counted once (through
    their total, not twice).

    Each cell's shortest run is found first (so that a sub-total is known before a total
    that spans it); then every longer run of three or more cells that also sums to it, on
    either side, is kept too: a cell that is the total of the rows above it and of the rows
    below it (an income from operations, restated as the sum of its segments) is checked
    both ways, and a total whose shortest run is a chance pair keeps its real run."""
    lines: dict[tuple[str, int], list[Cell]] = {}
    for r, c in sorted(grid):
        lines.setdefault(("column", c), []).append((r, c))
        lines.setdefault(("row", r), []).append((r, c))
    found: list[Total] = []
    for _, cells in sorted(lines.items()):
        known: dict[Cell, tuple[Cell, ...]] = {}
        more: list[Total] = []
        # small runs first, so a sub-total is known before a total that spans it
        for length in range(2, len(cells)):
            for i, total in enumerate(cells):
                for run in (
                    cells[i - length : i] if i >= length else None,
                    cells[i + 1 : i + 1 + length],
                ):
                    if not run or len(run) != length:
                        continue
                    if total in known and length < 3:
                        continue
                    parts = _run_holds(grid, total, run, known)
                    if parts is None:
                        continue
                    if total not in known:
                        known[total] = parts
                    elif set(parts) != set(known[total]) and not set(parts) & set(known[total]):
                        more.append(Total(total, parts))
        found += [Total(cell, parts) for cell, parts in known.items()] + more
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


THREE_LINE = 12
"""Three-number relations are looked for in rows of at most this many cells."""


def three_relations(grid: Mapping[Cell, float]) -> list[tuple[Cell, Cell, Cell, Cell]]:
    """The relations ``a + b - c = d`` over four cells of a row (a cost, its gains and its
    losses, its fair value) that hold exactly in every row writing those four columns,
    two rows or more (a relation of one row alone is taken for chance): (a, b, c, d)."""
    rows: dict[int, dict[int, float]] = {}
    for (r, c), value in grid.items():
        rows.setdefault(r, {})[c] = value
    found: set[tuple[Cell, Cell, Cell, Cell]] = set()
    patterns: set[tuple[int, int, int, int]] = set()
    for cells in rows.values():
        columns = [c for c in sorted(cells) if cells[c] > 0]
        if not 4 <= len(columns) <= THREE_LINE:
            continue
        for a, b in itertools.combinations(columns, 2):
            for c in columns:
                for d in columns:
                    if len({a, b, c, d}) == 4 and _same(cells[a] + cells[b] - cells[c], cells[d]):
                        patterns.add((a, b, c, d))
    for a, b, c, d in patterns:
        holding = [r for r, cells in rows.items() if all(k in cells for k in (a, b, c, d))]
        if len(holding) >= 2 and all(
            _same(rows[r][a] + rows[r][b] - rows[r][c], rows[r][d]) and rows[r][d] != 0
            for r in holding
        ):
            found.update(((r, a), (r, b), (r, c), (r, d)) for r in holding)
    return sorted(found)


def three_violation(
    relations: Iterable[tuple[Cell, Cell, Cell, Cell]],
    grid: Mapping[Cell, float],
    decimals: Mapping[Cell, int],
) -> tuple[Cell, Cell, Cell, Cell] | None:
    """The first relation ``a + b - c = d`` that no longer holds at ``d``'s precision."""
    for a, b, c, d in relations:
        places = max(decimals.get(k, 0) for k in (a, b, c, d))
        if abs(grid[a] + grid[b] - grid[c] - grid[d]) > 0.5 * 10**-places + 1e-9:
            return (a, b, c, d)
    return None


PARALLEL_CELLS = 16
"""Totals of non-adjacent cells are looked for in lines of at most this many cells."""
PARALLEL_WAYS = 4
"""Sets of parts kept per cell and line in that search."""


def _ways(items: Sequence[tuple[Cell, int]], target: int) -> list[tuple[Cell, ...]]:
    """Up to :data:`PARALLEL_WAYS` sets (two or more) of ``items`` summing to ``target``,
    meeting in the middle (each half's sums listed once)."""

    def sums(half: Sequence[tuple[Cell, int]]) -> dict[int, list[tuple[Cell, ...]]]:
        out: dict[int, list[tuple[Cell, ...]]] = {0: [()]}
        for cell, value in half:
            for total, ways in list(out.items()):
                into = out.setdefault(total + value, [])
                into += [(*w, cell) for w in ways[: PARALLEL_WAYS - len(into)]]
        return out

    left, right = sums(items[: len(items) // 2]), sums(items[len(items) // 2 :])
    found: list[tuple[Cell, ...]] = []
    for total, lw in left.items():
        for rw in right.get(target - total, ()):
            found += [lp + rw for lp in lw if len(lp) + len(rw) >= 2]
            if len(found) >= PARALLEL_WAYS:
                return found[:PARALLEL_WAYS]
    return found


def parallel_totals(grid: Mapping[Cell, float]) -> list[Total]:
    """Cells equal to the sum of three or more cells of their column, adjacent or not, where
    the same rows add up the same way in every other column that writes them all (one at
    least): a net figure written below the figure it nets and the deductions between them
    (recorded investment = its allowances + net receivables). And the same across a row,
    the same columns in every other row. Lines of more than :data:`PARALLEL_CELLS` cells are
    not searched (a run next to a total is :func:`find_totals`'s)."""
    found: list[Total] = []
    for axis in (0, 1):  # 0: a column's cells (parts are rows); 1: a row's
        lines: dict[int, list[Cell]] = {}
        for cell in sorted(grid):
            lines.setdefault(cell[1 - axis], []).append(cell)
        for key, cells in lines.items():
            cells = [c for c in cells if abs(grid[c]) > ZERO]
            if not 3 <= len(cells) <= PARALLEL_CELLS:
                continue
            scaled = {c: round(grid[c] * 1000) for c in cells}
            for target in cells:
                others = [(c, scaled[c]) for c in cells if c != target]
                for way in _ways(others, scaled[target]):
                    if len(way) < 3:
                        continue  # a difference of two: a change column, recomputed as such
                    index = [c[axis] for c in (target, *way)]
                    holds = []
                    for other in lines:
                        if other == key:
                            continue
                        at = [(i, other) if axis == 0 else (other, i) for i in index]
                        if all(c in grid for c in at) and abs(grid[at[0]]) > ZERO:
                            holds.append(_same(sum(grid[c] for c in at[1:]), grid[at[0]]))
                    if holds and all(holds):
                        found.append(Total(target, tuple(way)))
    return found


RATIO_LINE = 12
"""Ratios are looked for in lines of at most this many cells."""


def parallel_ratios(
    grid: Mapping[Cell, float], decimals: Mapping[Cell, int], short: Iterable[Cell]
) -> list[tuple[Cell, Cell, Cell]]:
    """The ``short`` cells (a ratio, a per-share figure: few digits, with decimals) equal at
    their written places to ``a / b`` of two cells of their column, where the same rows
    give the same way in every other column that writes them (one at least), or the same
    across a row: (the ratio, a, b). Net income 116 over 268 shares is a basic 0.43 in
    every year's column; a draw that changes one of them must keep the other two."""

    def holds(r: Cell, a: Cell, b: Cell) -> bool:
        if not all(c in grid for c in (r, a, b)) or abs(grid[b]) < ZERO:
            return False
        return round(grid[a] / grid[b], decimals.get(r, 0)) == round(grid[r], decimals.get(r, 0))

    found: list[tuple[Cell, Cell, Cell]] = []
    for target in short:
        for axis in (0, 1):
            line = [c for c in grid if c[1 - axis] == target[1 - axis] and c != target]
            if len(line) >= RATIO_LINE or abs(grid[target]) < ZERO:
                continue
            others = {c[1 - axis] for c in grid if c[1 - axis] != target[1 - axis]}
            for a, b in itertools.permutations(line, 2):
                if abs(grid[a]) <= abs(grid[target]) or not holds(target, a, b):
                    continue
                parallel = [
                    (_moved(target, o, axis), _moved(a, o, axis), _moved(b, o, axis))
                    for o in others
                    if all(_moved(c, o, axis) in grid for c in (target, a, b))
                ]
                if parallel and all(holds(*cells) for cells in parallel):
                    found.append((target, a, b))
    return found


def _moved(cell: Cell, other: int, axis: int) -> Cell:
    """``cell`` in the parallel line ``other`` (another column for axis 0, another row)."""
    return (cell[0], other) if axis == 0 else (other, cell[1])


def ratio_violation(
    ratios: Iterable[tuple[Cell, Cell, Cell]],
    grid: Mapping[Cell, float],
    decimals: Mapping[Cell, int],
) -> Cell | None:
    """The first ratio cell no longer ``a / b`` at its written places."""
    for r, a, b in ratios:
        places = decimals.get(r, 0)
        if abs(grid[b]) < ZERO or round(grid[a] / grid[b], places) != round(grid[r], places):
            return r
    return None
