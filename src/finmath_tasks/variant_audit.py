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
- ``text``: a number of the texts equal to a table cell (the text restating the table);
- ``text sum``: a number of a text (three or more significant digits) equal to the sum or
  difference of two other numbers of its sentence, or of two cells of a table line whose
  figure the sentence restates ("$793.4 million, a decrease of $50.1 million" beside 793.4
  and 843.5): :mod:`finmath_tasks.variant_audit_text`.

Chance equalities are told from real relations by structure (:func:`_real`): a relation
is real when its target's label names a total (total, net, subtotal, ...), when its
parts are a run of three or more cells next to it (last or first in its block), when it
holds in every parallel line (the same rows in every column of the table, or the same
columns in every row: a change column computed in each row), or, for a text number,
when it has three or more significant digits. A parallel line that is the target's
line plus or minus a line writing nothing at the target (an "as revised" column, the
preliminary one plus its adjustments) is no evidence; a three-number relation that a
parallel line breaks is chance whatever its label. The others are reported apart
(``real=False``): a gate counts only the real ones.

:func:`audit_split` runs the audit over a benchmark's split and seeds (no CLI);
``benchmarks/variant_relations.py`` prints its figures.
"""

from __future__ import annotations

import importlib
import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from finmath_tasks.variant_audit_records import (
    Cell,
    Key,
    Record,
    Relation,
    from_rows,
    lines_of,
    markdown_rows,
    read_cell,
    significant,
)
from finmath_tasks.variant_audit_text import text_relations, text_sum_holds
from finmath_tasks.variants import find_numbers

NEAREST = 22
"""A sum's parts are looked for among at most this many cells of its line nearest to it
(meet in the middle: two halves of 2^11 subsets per cell)."""
MAX_LINE = 200
"""A line with more numeric cells than this is searched for runs next to a cell only."""
MAX_RUN = 30
"""The longest run of adjacent parts looked for in such a line."""
MAX_WAYS = 6
"""Sets of parts kept per cell and line (the search stops at this many)."""
ROUNDED = ("percent change", "ratio", "text sum")
"""Relations at a few written digits, and a text's sums: of several a number has, one
holding is enough."""
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
RATIO_WORDS = re.compile(r"\bratio|\bto\b|times|multiple|coverage|\bper\b|\bx\b", re.IGNORECASE)


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


def _at(kind: str, key: Key, line: int) -> Key:
    """``key``'s cell in the parallel ``line`` (a column for a column's cell, else a row)."""
    return (key[0], key[1], line) if kind == "column" else (key[0], line, key[2])


def _value_at(record: Record, key: Key) -> float:
    cell = record.grid.get(key)
    return 0.0 if cell is None else cell.value


def _follows(record: Record, kind: str, keys: Sequence[Key], line: int, lines: set[int]) -> bool:
    """Whether the parallel ``line`` is, at every one of ``keys`` (the target first), the
    target's line plus or minus another line that writes no figure at the target ("—"):
    an "as revised" column equal to the preliminary one plus its adjustments. Such a line
    holds a relation of the target's line whenever the other line's parts cancel, which
    says nothing of the relation."""
    own = keys[0][2] if kind == "column" else keys[0][1]
    for third in lines - {own, line}:
        if _value_at(record, _at(kind, keys[0], third)) != 0:
            continue
        for sign in (1, -1):
            if all(
                abs(
                    _value_at(record, _at(kind, k, line))
                    - _value_at(record, k)
                    - sign * _value_at(record, _at(kind, k, third))
                )
                < 1e-6
                for k in keys
            ):
                return True
    return False


def _parallel(record: Record, kind: str, target: Key, parts: Sequence[Key]) -> list[list[Key]]:
    """The same cells in every other line parallel to the target's (the same rows in
    another column, or the same columns in another row), where all are written, but for a
    line that only follows the target's (:func:`_follows`)."""
    t, r, c = target
    own = c if kind == "column" else r
    lines = {k[2] if kind == "column" else k[1] for k in record.grid if k[0] == t}
    out = []
    for line in sorted(lines - {own}):
        keys = [_at(kind, k, line) for k in (target, *parts)]
        if all(k in record.grid for k in keys) and not _follows(
            record, kind, [target, *parts], line, lines
        ):
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
    against: bool = False,
) -> str:
    """What makes a relation of a line real, or ``chance``. With ``line`` (a sum), a label
    counts only for parts next to the target: a total's label does not make any subset of
    its column that adds up to it a real relation. With ``against`` (a three-number
    relation: in a long column some four cells add up so by chance), a label counts only
    where no parallel line writes the cells otherwise: "Net income" equal to interest
    income + depreciation - interest expense in one year's column alone is chance."""
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
    parallel = _parallel(record, kind, target, parts)
    holding = [
        holds([record.grid[k].value for k in keys], [record.grid[k].decimals for k in keys])
        for keys in parallel
    ]
    labelled = (adjacent or not line) and words.search(_label(record, kind, target))
    if labelled and (not against or all(holding)):
        return "label"
    if parallel and all(holding):
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
        elif cell.decimals >= 1 and significant(cell.text) <= 2:
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
                        why = _real(
                            record, kind, d, (a, b, c), _three_holds, TOTAL_WORDS, against=True
                        )
                        three = ((1.0, a), (1.0, b), (-1.0, c))
                        found.append(Relation("three", d, three, why != "chance", why))
    return found


def relations(record: Record) -> list[Relation]:
    """Every relation of the record's numbers (each line searched within its bounds)."""
    found: list[Relation] = []
    for kind, _t, _i, cells in lines_of(record):
        found += _sums(record, kind, cells)
        found += _small_relations(record, kind, cells)
    found += text_relations(record)
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
    if relation.kind == "text sum":
        return text_sum_holds(relation, variant)
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
    "read_cell",
    "relations",
    "still_holds",
]
