"""An independent audit of fresh variants: every relation between the written numbers that
holds in a question's original record and no longer holds in its variant.

It reads only the two records (the table cells and the texts as the sample metadata holds
them) and shares nothing with the code that makes the variants but the number reader
(:func:`finmath_tasks.variants.find_numbers`), so a rule the variant maker forgets is
still caught here. A per-benchmark adapter turns a record into a :class:`Record` (a grid
of cells and the texts): each benchmark's ``audit_adapter`` module (:func:`adapter`).

The relations found in the original, each checked on the variant at its written
precision (:func:`relations`):

- ``sum``: a cell equal to the sum of two or more cells of its column or row (signed as
  written, adjacent or not; a difference ``a - b = c`` is the sum ``a = b + c``), found by
  a bounded subset-sum search (meet in the middle over at most :data:`NEAREST` cells);
- ``percent change``: a cell written with ``%`` equal to ``(a - b) / |b|`` of two cells
  of its line, in percent at its written places;
- ``three``: ``a + b - c = d`` over four cells of a line (a cost, its gains and losses,
  its fair value);
- ``ratio``: a cell of one or two significant digits with decimals equal to ``a / b`` of
  two cells of its line at its written places (a net-debt-to-EBITDA of 0.8);
- ``text``: a number of the texts equal to a table cell (the text restating the table).

Chance equalities are told from real relations by structure (:func:`_real`): a relation
is real when its target's label names a total (total, net, subtotal, ...), when its
parts are a run of three or more cells next to it (last or first in its block), when it
holds in every parallel line (the same rows in every column of the table, or the same
columns in every row: a change column computed in each row), or, for a text number,
when it has three or more significant digits. The others are reported apart
(``real=False``): a gate counts only the real ones.

:func:`audit_split` runs the audit over a benchmark's split and seeds (no CLI);
``benchmarks/variant_relations.py`` prints its figures.
"""

from __future__ import annotations

import importlib
import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from finmath_tasks.variants import find_numbers

Key = tuple[int, int, int]
"""A cell: (table, row, column)."""

NEAREST = 22
"""A sum's parts are looked for among at most this many cells of its line nearest to it
(meet in the middle: two halves of 2^11 subsets per cell)."""
MAX_LINE = 200
"""A line with more numeric cells than this is searched for runs next to a cell only."""
MAX_RUN = 30
"""The longest run of adjacent parts looked for in such a line."""
MAX_WAYS = 6
"""Sets of parts kept per cell and line (the search stops at this many)."""
ROUNDED = ("percent change", "ratio")
"""Relations at a few written digits: of several a cell has, one holding is enough."""
SMALL_LINE = 12
"""Three-number relations and ratios are looked for in lines of at most this many cells."""

TOTAL_WORDS = re.compile(
    r"\b(total|totals|subtotal|sub-total|net|sum|combined|aggregate|overall|balance|"
    r"ending|closing)\b",
    re.IGNORECASE,
)
CHANGE_WORDS = re.compile(
    r"change|increase|decrease|growth|percent|variance|\binc\b", re.IGNORECASE
)
RATIO_WORDS = re.compile(r"ratio|\bto\b|times|multiple|coverage|per\b|\bx\b", re.IGNORECASE)


@dataclass(frozen=True)
class Cell:
    value: float
    """Signed as written: parentheses or a minus sign make it negative."""
    decimals: int
    percent: bool
    text: str


@dataclass
class Record:
    """A record's written numbers: its table cells (the first number of each cell that is
    not a year) with the cell's row label and column header, and its texts."""

    grid: dict[Key, Cell]
    labels: dict[tuple[int, int], str] = field(default_factory=dict)
    """(table, row) -> the row's label (its text cells)."""
    headers: dict[tuple[int, int], str] = field(default_factory=dict)
    """(table, column) -> the column's header (text cells above its first number)."""
    texts: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Relation:
    """A relation of the original's numbers: ``target`` equals the combination of
    ``terms`` (cells, with coefficients) under ``kind``."""

    kind: str
    target: Key | tuple[str, int, int]
    """A cell, or ("text", text index, number index)."""
    terms: tuple[tuple[float, Key], ...]
    real: bool
    why: str
    """What makes it real (its structure), or ``chance``."""

    def describe(self) -> str:
        parts = " ".join(f"{'+' if c > 0 else '-'}{k}" for c, k in self.terms)
        return f"{self.kind} {self.target} = {parts} ({self.why})"


# --- reading records -------------------------------------------------------------------


def _is_year(text: str, value: float, decimals: int) -> bool:
    return decimals == 0 and "," not in text and len(text) == 4 and 1900 <= value <= 2100


def read_cell(text: str) -> Cell | None:
    """The cell's figure (its first number that is not a year), signed as written; None when
    it writes none."""
    for w in find_numbers(text):
        digits = w.text.lstrip("-")
        if _is_year(digits, abs(w.value), w.decimals):
            continue
        before = text[: w.start].rstrip(" $€£")
        negative = w.value < 0 or before.endswith("(")
        return Cell(
            value=-abs(w.value) if negative else abs(w.value),
            decimals=w.decimals,
            percent=w.percent or "%" in text,
            text=w.text,
        )
    return None


def from_rows(tables: Sequence[Sequence[Sequence[Any]]], texts: Sequence[str]) -> Record:
    """A record from tables given as rows of cell texts, and its texts."""
    record = Record({}, texts=[str(t) for t in texts])
    for t, table in enumerate(tables):
        first_number: dict[int, int] = {}
        for r, row in enumerate(table):
            label = []
            for c, raw in enumerate(row):
                text = "" if raw is None else str(raw)
                cell = read_cell(text)
                if cell is None:
                    if text.strip():
                        label.append(text.strip())
                    continue
                record.grid[(t, r, c)] = cell
                first_number.setdefault(c, r)
            record.labels[(t, r)] = " ".join(label)
        for c, r0 in first_number.items():
            above = [str(row[c]) for row in table[:r0] if c < len(row) and row[c]]
            record.headers[(t, c)] = " ".join(above)
    return record


def markdown_rows(table: str) -> list[list[str]]:
    """A markdown table's rows (its separator line dropped; text outside it ignored)."""
    rows = []
    for line in table.splitlines():
        line = line.strip()
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
            continue
        rows.append(cells)
    return rows


ADAPTER = "finmath_tasks.tasks.{}.audit_adapter"
"""A benchmark whose variants are audited has this module, with ``record(metadata) ->
Record`` (its sample metadata as a table grid and texts, through :func:`from_rows`)."""


def adapter(benchmark: str) -> Callable[[Mapping[str, Any]], Record]:
    """The benchmark's adapter (:data:`ADAPTER`)."""
    if not benchmark.isidentifier():
        raise ValueError(f"variant audit: no benchmark {benchmark!r}")
    try:
        module = importlib.import_module(ADAPTER.format(benchmark))
    except ModuleNotFoundError:
        raise ValueError(f"variant audit: the benchmark {benchmark!r} has no adapter") from None
    return module.record


# --- finding the original's relations --------------------------------------------------


def _significant(text: str) -> int:
    return len(text.replace(",", "").replace(".", "").lstrip("-").strip("0"))


def _lines(record: Record) -> list[tuple[str, int, int, list[Key]]]:
    """Every column and row: (kind, table, index, its numeric cells in order)."""
    lines: dict[tuple[str, int, int], list[Key]] = {}
    for key in sorted(record.grid):
        t, r, c = key
        lines.setdefault(("column", t, c), []).append(key)
        lines.setdefault(("row", t, r), []).append(key)
    return [(kind, t, i, cells) for (kind, t, i), cells in lines.items()]


def _subsets(items: Sequence[tuple[Key, int]]) -> dict[int, list[tuple[Key, ...]]]:
    found: dict[int, list[tuple[Key, ...]]] = {0: [()]}
    for key, value in items:
        grown: dict[int, list[tuple[Key, ...]]] = {k: list(v) for k, v in found.items()}
        for total, ways in found.items():
            into = grown.setdefault(total + value, [])
            for way in ways:
                if len(into) >= MAX_WAYS:
                    break
                into.append((*way, key))
        found = grown
    return found


def _sum_ways(items: Sequence[tuple[Key, int]], target: int) -> list[tuple[Key, ...]]:
    """Up to :data:`MAX_WAYS` subsets (two or more members) of ``items`` summing to
    ``target`` (meet in the middle)."""
    half = len(items) // 2
    left, right = _subsets(items[:half]), _subsets(items[half:])
    ways: list[tuple[Key, ...]] = []
    for total, lw in left.items():
        for rw in right.get(target - total, ()):
            for lpart in lw:
                if len(lpart) + len(rw) >= 2:
                    ways.append(lpart + rw)
                    if len(ways) >= MAX_WAYS:
                        return ways
    return ways


def _runs(cells: Sequence[Key], at: int, scaled: Mapping[Key, int]) -> list[tuple[Key, ...]]:
    """Runs of adjacent cells just before or after position ``at`` summing to it."""
    target = scaled[cells[at]]
    found = []
    for step in (-1, 1):
        total, run = 0, list[Key]()
        j = at + step
        while 0 <= j < len(cells) and len(run) < MAX_RUN:
            total += scaled[cells[j]]
            run.append(cells[j])
            if len(run) >= 2 and total == target:
                found.append(tuple(run))
            j += step
    return found


def _parallel(record: Record, kind: str, target: Key, parts: Sequence[Key]) -> list[list[Key]]:
    """The same cells in every other line parallel to the target's (the same rows in
    another column, or the same columns in another row), where all are written."""
    t, r, c = target
    out = []
    if kind == "column":
        others = {k[2] for k in record.grid if k[0] == t and k[2] != c}
        for c2 in sorted(others):
            keys = [(t, k[1], c2) for k in (target, *parts)]
            if all(k in record.grid for k in keys):
                out.append(keys)
    else:
        others = {k[1] for k in record.grid if k[0] == t and k[1] != r}
        for r2 in sorted(others):
            keys = [(t, r2, k[2]) for k in (target, *parts)]
            if all(k in record.grid for k in keys):
                out.append(keys)
    return out


def _label(record: Record, kind: str, key: Key) -> str:
    t, r, c = key
    return record.labels.get((t, r), "") if kind == "column" else record.headers.get((t, c), "")


Holds = Callable[[Sequence[float], Sequence[int]], bool]
"""Whether a relation holds over values (target first) written at these places."""


def _real(
    record: Record,
    kind: str,
    target: Key,
    parts: Sequence[Key],
    holds: Holds,
    words: re.Pattern[str],
    line: Sequence[Key] = (),
) -> str:
    """What makes a relation of a line real, or ``chance``. With ``line`` (a sum), a label
    counts only for parts next to the target: a total's label does not make any subset of
    its column that adds up to it a real relation."""
    adjacent = False
    if line:
        at = line.index(target)
        ordered = sorted(line.index(p) for p in parts)
        adjacent = ordered in (
            list(range(at + 1, at + 1 + len(parts))),
            list(range(at - len(parts), at)),
        )
        if adjacent and len(parts) >= 3:
            return "run next to it"
    if (adjacent or not line) and words.search(_label(record, kind, target)):
        return "label"
    parallel = _parallel(record, kind, target, parts)
    if parallel and all(
        holds([record.grid[k].value for k in keys], [record.grid[k].decimals for k in keys])
        for keys in parallel
    ):
        return f"holds in all {len(parallel) + 1} parallel lines"
    return "chance"


def _sum_holds(values: Sequence[float], decimals: Sequence[int]) -> bool:
    return abs(sum(values[1:]) - values[0]) <= 0.5 * 10 ** -decimals[0] + 1e-9 and values[0] != 0


def _percent_change_holds(values: Sequence[float], decimals: Sequence[int]) -> bool:
    target, a, b = values[:3]
    if b == 0 or target == 0:
        return False
    return abs((a - b) / abs(b) * 100 - target) <= 0.5 * 10 ** -decimals[0] + 1e-9


def _three_holds(values: Sequence[float], decimals: Sequence[int]) -> bool:
    d, a, b, c = values[:4]
    return d != 0 and abs(a + b - c - d) <= 0.5 * 10 ** -max(decimals) + 1e-9


def _ratio_holds(values: Sequence[float], decimals: Sequence[int]) -> bool:
    target, a, b = values[:3]
    return b != 0 and target != 0 and abs(a / b - target) <= 0.5 * 10 ** -decimals[0] + 1e-9


def _sums(record: Record, kind: str, cells: Sequence[Key]) -> list[Relation]:
    found: list[Relation] = []
    for percent in (False, True):
        line = [k for k in cells if record.grid[k].percent == percent]
        if len(line) < 3:
            continue
        places = max(record.grid[k].decimals for k in line)
        scaled = {k: round(record.grid[k].value * 10**places) for k in line}
        seen: set[tuple[Key, frozenset[Key]]] = set()
        for at, target in enumerate(line):
            if scaled[target] == 0:
                continue
            ways = _runs(line, at, scaled)
            if len(line) <= MAX_LINE:
                near = sorted(
                    (k for k in line if k != target and scaled[k] != 0),
                    key=lambda k: abs(line.index(k) - at),
                )[:NEAREST]
                near.sort(key=line.index)
                ways += _sum_ways([(k, scaled[k]) for k in near], scaled[target])
            for way in ways:
                if (target, frozenset(way)) in seen:
                    continue
                seen.add((target, frozenset(way)))
                why = _real(record, kind, target, way, _sum_holds, TOTAL_WORDS, line)
                terms = tuple((1.0, k) for k in way)
                found.append(Relation("sum", target, terms, why != "chance", why))
    return found


def _small_relations(record: Record, kind: str, cells: Sequence[Key]) -> list[Relation]:
    """Percent changes, ratios and three-number relations of a short line."""
    found: list[Relation] = []
    if len(cells) > SMALL_LINE:
        return found
    grid = record.grid
    amounts = [k for k in cells if not grid[k].percent]
    for target in cells:
        cell = grid[target]
        if cell.value == 0:
            continue
        if cell.percent:
            for a, b in itertools.permutations(amounts, 2):
                values = [cell.value, grid[a].value, grid[b].value]
                if _percent_change_holds(values, [cell.decimals]):
                    why = _real(record, kind, target, (a, b), _percent_change_holds, CHANGE_WORDS)
                    terms = ((1.0, a), (-1.0, b))
                    found.append(Relation("percent change", target, terms, why != "chance", why))
        elif cell.decimals >= 1 and _significant(cell.text) <= 2:
            for a, b in itertools.permutations([k for k in amounts if k != target], 2):
                values = [cell.value, grid[a].value, grid[b].value]
                if abs(grid[a].value) > abs(cell.value) and _ratio_holds(values, [cell.decimals]):
                    why = _real(record, kind, target, (a, b), _ratio_holds, RATIO_WORDS)
                    found.append(
                        Relation("ratio", target, ((1.0, a), (-1.0, b)), why != "chance", why)
                    )
    equations: set[frozenset[frozenset[Key]]] = set()
    if len(amounts) >= 4:
        for d in amounts:
            others = [k for k in amounts if k != d and grid[k].value != 0]
            for a, b in itertools.combinations(others, 2):
                for c in others:
                    if c in (a, b) or grid[d].value == 0:
                        continue
                    keys = (d, a, b, c)
                    values = [grid[k].value for k in keys]
                    decimals = [grid[k].decimals for k in keys]
                    equation = frozenset((frozenset((a, b)), frozenset((c, d))))
                    if equation in equations:
                        continue
                    if _three_holds(values, decimals) and grid[c].value > 0:
                        equations.add(equation)
                        why = _real(record, kind, d, (a, b, c), _three_holds, TOTAL_WORDS)
                        three = ((1.0, a), (1.0, b), (-1.0, c))
                        found.append(Relation("three", d, three, why != "chance", why))
    return found


def _text_relations(record: Record) -> list[Relation]:
    """Numbers of the texts equal to a table cell, or (a number with a scale word, three or
    more significant digits) the cell in thousands rounded to it: "$299.3 million" for a
    cell of 299,253 in a table in thousands."""
    found: list[Relation] = []
    by_value: dict[tuple[float, bool], list[Key]] = {}
    for key, cell in record.grid.items():
        by_value.setdefault((abs(cell.value), cell.percent), []).append(key)
    for i, text in enumerate(record.texts):
        for j, w in enumerate(find_numbers(text)):
            if _is_year(w.text.lstrip("-"), abs(w.value), w.decimals) or w.value == 0:
                continue
            real = _significant(w.text) >= 3
            why = "three or more significant digits" if real else "chance"
            cells = by_value.get((abs(w.value), w.percent), [])
            terms = tuple((1.0, k) for k in cells)
            if not cells and real and w.scale > 1 and w.decimals > 0:
                unit = 0.5 * 10**-w.decimals
                terms = tuple(
                    (1e-3, k)
                    for k, cell in record.grid.items()
                    if not cell.percent
                    and cell.decimals == 0
                    and abs(abs(cell.value) / 1000 - abs(w.value)) <= unit + 1e-9
                )
                why = "the table's figure in thousands, rounded"
            if terms:
                found.append(Relation("text", ("text", i, j), terms, real, why))
    return found


def relations(record: Record) -> list[Relation]:
    """Every relation of the record's numbers (each line searched within its bounds)."""
    found: list[Relation] = []
    for kind, _t, _i, cells in _lines(record):
        found += _sums(record, kind, cells)
        found += _small_relations(record, kind, cells)
    found += _text_relations(record)
    return found


# --- checking the variant ----------------------------------------------------------------


def _text_number(record: Record, i: int, j: int) -> tuple[float, int] | None:
    if i >= len(record.texts):
        return None
    numbers = find_numbers(record.texts[i])
    return (abs(numbers[j].value), numbers[j].decimals) if j < len(numbers) else None


def still_holds(relation: Relation, variant: Record) -> bool:
    """Does ``relation`` of the original hold in ``variant`` at its written precision?"""
    grid = variant.grid
    keys = [k for _, k in relation.terms]
    if any(k not in grid for k in keys):
        return False
    if relation.kind == "text":
        _, i, j = relation.target
        number = _text_number(variant, int(i), int(j))
        if number is None:
            return False
        follows = [
            abs(abs(grid[k].value) * c - number[0]) <= 0.5 * 10 ** -number[1] + 1e-9
            for c, k in relation.terms
        ]
        # a figure written again equals each cell writing it; a figure in millions rounds
        # one of the cells in thousands it could stand for
        return all(follows) if relation.terms[0][0] == 1 else any(follows)
    target = relation.target
    assert isinstance(target[0], int)
    cell = grid.get(target)
    if cell is None:
        return False
    values = [cell.value, *(grid[k].value for k in keys)]
    decimals = [cell.decimals, *(grid[k].decimals for k in keys)]
    check = {
        "sum": _sum_holds,
        "percent change": _percent_change_holds,
        "ratio": _ratio_holds,
        "three": lambda v, d: _three_holds([v[0], v[1], v[2], v[3]], d),
    }[relation.kind]
    return check(values, decimals)


@dataclass
class Audit:
    """One variant against its original."""

    checked: list[Relation]
    broken: list[Relation]
    shape: str | None = None
    """Why the two records cannot be compared cell by cell (None: they can)."""

    @property
    def real(self) -> list[Relation]:
        return [r for r in self.broken if r.real]

    @property
    def chance(self) -> list[Relation]:
        return [r for r in self.broken if not r.real]


def _shape(original: Record, variant: Record) -> str | None:
    if set(original.grid) != set(variant.grid):
        return "the variant's table has numbers in other cells"
    for i, (a, b) in enumerate(zip(original.texts, variant.texts, strict=False)):
        if len(find_numbers(a)) != len(find_numbers(b)):
            return f"text {i} of the variant writes another count of numbers"
    return None


def audit(original: Record, variant: Record, found: Sequence[Relation] | None = None) -> Audit:
    """The relations of ``original`` (``found``: already computed) that ``variant`` breaks."""
    found = relations(original) if found is None else found
    shape = _shape(original, variant)
    if shape is not None:
        return Audit(list(found), [], shape)
    holding = {r: still_holds(r, variant) for r in found}
    kept = {(r.kind, r.target) for r, held in holding.items() if held and r.real}
    broken = []
    for relation, held in holding.items():
        if held:
            continue
        if relation.real and relation.kind in ROUNDED and (relation.kind, relation.target) in kept:
            # a rounded figure that two pairs of its line gave: the one still giving it is
            # its relation, the other a chance equality at its few digits
            relation = replace(relation, real=False, why="another relation of it holds")
        broken.append(relation)
    return Audit(list(found), broken)


def audit_records(benchmark: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> Audit:
    """:func:`audit` on two records (sample metadata) of ``benchmark``."""
    read = adapter(benchmark)
    return audit(read(before), read(after))


# --- a split's variants --------------------------------------------------------------------


@dataclass
class SplitAudit:
    """The audit of one benchmark split's variants under one seed."""

    benchmark: str
    split: str
    seed: int
    questions: int
    """The split's questions (what the variants could cover)."""
    variants: int
    relations_real: int
    relations_chance: int
    broken_real: dict[str, list[str]]
    """Question id -> the real relations its variant breaks."""
    broken_chance: dict[str, list[str]]
    shape: dict[str, str]

    @property
    def coverage(self) -> float:
        return self.variants / self.questions if self.questions else 0.0


def audit_split(
    benchmark: str,
    split: str,
    seeds: Iterable[int],
    data_dir: str | None = None,
    ids: Iterable[str] | None = None,
) -> list[SplitAudit]:
    """Each seed's variants of ``benchmark``'s ``split`` (made by the benchmark's own
    ``variants`` module) audited against their originals; ``ids`` keeps only these
    questions. The originals' relations are found once for every seed."""
    module = importlib.import_module(f"finmath_tasks.tasks.{benchmark}.variants")
    read = adapter(benchmark)
    samples = list(module.load_dataset(split, data_dir))
    if ids is not None:
        wanted = set(ids)
        samples = [s for s in samples if str(s.id) in wanted]
    originals = {str(s.id): read(s.metadata or {}) for s in samples}
    found: dict[str, list[Relation]] = {}
    out = []
    for seed in seeds:
        result = module.instantiate(samples, seed)
        row = SplitAudit(benchmark, split, seed, len(samples), 0, 0, 0, {}, {}, {})
        for variant in result.samples:
            sid = str(variant.id)
            if sid not in found:
                found[sid] = relations(originals[sid])
            checked = audit(originals[sid], read(variant.metadata or {}), found[sid])
            row.variants += 1
            row.relations_real += sum(r.real for r in checked.checked)
            row.relations_chance += sum(not r.real for r in checked.checked)
            if checked.shape:
                row.shape[sid] = checked.shape
            if checked.real:
                row.broken_real[sid] = [r.describe() for r in checked.real]
            if checked.chance:
                row.broken_chance[sid] = [r.describe() for r in checked.chance]
        out.append(row)
    return out


__all__ = [
    "ADAPTER",
    "Audit",
    "Cell",
    "Record",
    "Relation",
    "SplitAudit",
    "adapter",
    "audit",
    "audit_records",
    "audit_split",
    "from_rows",
    "markdown_rows",
    "relations",
    "still_holds",
]
