"""Fresh variants of FinQA questions: new values for the numbers the gold program reads.

A question's variables are the numeric arguments of its gold program (FinQA's DSL)
located in the report by value. A figure of three or more significant digits is the same
figure wherever it is written and changes everywhere. A shorter one written in several
places is placed by the supporting facts (``gold_inds``) where the record has them, else
(and where they still hold it twice) by the cell a table operation reads, the question's
words (a cell's row label and column header, a sentence's words) and the rows and columns
of the program's other arguments (:func:`_disambiguate`); it is held at its value where
nothing tells the places apart. The facts are optional. Each written occurrence gets the
new value, written as the original was (precision, thousands separators, the
parenthesised repeat of a negative cell, the sign). The gold is the program with the new
arguments, run by the DSL's executor (:func:`finmath_tasks.tasks.finqa.dsl.execute`): a
pure calculator over the arguments, no model code, so it needs no sandbox. A draw whose
numeric answer is not finite, changes sign or moves by more than a factor of 10, that
breaks a rule of :mod:`finmath_tasks.tasks.finqa.variant_rules` (each step's sign and
branch, order within a row, column or sentence, a gold that moves) or a relation of the
original table (:func:`~finmath_tasks.tasks.finqa.variant_rules.broken_relations`: its
sums and percent changes), is redrawn; a yes/no answer (``greater``) keeps its branch, so
it stays.

A table operation varies the cells of the row it reads. The table's totals and change
columns follow the varied cells (:mod:`finmath_tasks.tasks.finqa.variant_totals`). Left
out, with the reason: no argument located; a relation the table's structure does not mark
as a total touching a varied cell; a number beside a varied one (same row, column or
sentence) equal to it combined with another (:func:`finmath_tasks.variants.derived_from`)
outside the table's relations; a recomputed total written again where it cannot follow (a
cell another relation holds fixed, a figure of two significant digits); every draw rejected.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.dataset import Sample

from finmath_tasks.scorers.comparisons import GOLD_WRITTEN_KEY
from finmath_tasks.tasks.finqa.dataset import (
    answer_text,
    gold_as_written,
    load_dataset,
    render_context,
)
from finmath_tasks.tasks.finqa.dsl import TABLE_OPS, constant_value, execute, parse_program
from finmath_tasks.tasks.finqa.variant_rules import (
    amount_years,
    broken_relations,
    broken_small,
    cell_value,
    percent_relations,
    ratio_relations,
    table_relations,
    three_relations,
    violation,
)
from finmath_tasks.tasks.finqa.variant_rules import numbers as written_numbers
from finmath_tasks.tasks.finqa.variant_text import (
    Follow,
    follow,
    key_of,
    scaled_copies,
    scaled_text_variable,
    sentence_follows,
)
from finmath_tasks.tasks.finqa.variant_totals import (
    Equation,
    percent_equations,
    propagate,
    recompute,
    signed_at,
    three_equations,
)
from finmath_tasks.variant_rules import sum_relations, totals_of
from finmath_tasks.variants import (
    TRIES,
    VARIANT_KEY,
    Instantiation,
    Written,
    accept_gold,
    derived_from,
    draw_written,
    find_numbers,
    format_like,
    is_year,
    narrowed,
    question_rng,
    replace_spans,
    significant_digits,
    table_too_large,
)

RESTATED_DIGITS = 3
"""A figure with at least this many significant digits is one figure wherever written."""
DERIVED_DIGITS = 3
"""Numbers of the report checked for being derived from a varied one have at least this many
significant digits (a report writes hundreds of numbers: shorter ones equal some sum of
two others by chance, "31" of "December 31" among them)."""
"""A figure with at least this many significant digits is one figure wherever written."""


RULES = "3"
"""The version of the rules that make a variant (the data fingerprint is derived from it):
2 locates arguments without the supporting facts and keeps every sum relation of the table
(other golds than version 1's for the same seed); 3 makes a figure of the text in millions
follow the cell in thousands it rounds (or billions and millions), recomputes three-number
relations, holds short ratios, keeps a cell's year-like reading and leaves out a table
larger than any real one (other documents than version 2's for some questions)."""


@dataclass(frozen=True)
class Where:
    """A written number: in a sentence (``kind`` "text", pre_text + post_text index), a
    table cell (``kind`` "table", row and column) or the question (``kind`` "question")."""

    kind: str
    index: int
    column: int
    written: Written


@dataclass
class Variable:
    value: float
    """The argument's magnitude as written (5.3 for "5.3%")."""
    decimals: int
    places: list[Where]


@dataclass
class Plan:
    variables: list[Variable] = field(default_factory=list)
    reason: str | None = None
    held: list[str] = field(default_factory=list)
    equations: list[Equation] = field(default_factory=list)
    """Table cells recomputed from the new values, in order (:mod:`.variant_totals`)."""
    derived: set[int] = field(default_factory=set)
    """Variables that are such totals: their new value is computed, not drawn."""
    relations: list[Any] = field(default_factory=list)
    """Every relation of the original table (each draw keeps them all)."""
    changes: list[Any] = field(default_factory=list)
    """Every percent change of the original table's change columns (each draw keeps them)."""
    copies: list[tuple[Cell, Where, float]] = field(default_factory=list)
    """A moved cell's figure written again in a sentence or the question, with the factor
    it is written at (1, or 1/1000 for a figure in millions of a cell in thousands): the
    place takes the cell's new value at that factor."""
    threes: list[Any] = field(default_factory=list)
    """Every three-number relation of the original table (each draw keeps them)."""
    ratios: list[Any] = field(default_factory=list)
    """Every short ratio of the original table (each draw keeps them)."""
    follows: list[Follow] = field(default_factory=list)
    """Figures of a sentence recomputed where a figure of their sum follows a cell."""


def _args(program: str) -> list[str]:
    return [arg for step in parse_program(program) for arg in step.args]


def _argument_value(arg: str) -> tuple[float, int] | None:
    """A numeric argument's written magnitude and decimals ("5.3%" -> 5.3, 1)."""
    if arg.startswith("#") or constant_value(arg) is not None or arg == "none":
        return None
    text = arg.replace(",", "").rstrip("%").strip().lstrip("+-")
    try:
        value = float(text)
    except ValueError:
        return None
    decimals = len(text.split(".")[1]) if "." in text else 0
    return abs(value), decimals


def places_of(metadata: dict[str, Any]) -> list[Where]:
    """Every number written in the question, the sentences and the table cells."""
    found: list[Where] = []
    for w in find_numbers(metadata["question"]):
        found.append(Where("question", 0, 0, w))
    sentences = [*metadata["pre_text"], *metadata["post_text"]]
    for i, sentence in enumerate(sentences):
        found += [Where("text", i, 0, w) for w in find_numbers(sentence)]
    for r, row in enumerate(metadata["table"]):
        for c, cell in enumerate(row):
            found += [Where("table", r, c, w) for w in find_numbers(cell)]
    return [p for p in found if not is_year(p.written)]


def _unit(place: Where) -> tuple[str, int, int]:
    """The cell or sentence a number is written in (a cell "-2 ( 2 )" writes one figure)."""
    return (place.kind, place.index, place.column if place.kind == "table" else place.written.start)


def _gold_units(metadata: dict[str, Any]) -> set[tuple[str, int]]:
    units = set()
    for key in metadata.get("gold_inds") or {}:
        kind, _, index = str(key).partition("_")
        units.add((kind, int(index)))
    return units


Cell = tuple[int, int]


def table_totals(table: Sequence[Sequence[str]]) -> list[tuple[Cell, list[Cell]]]:
    """Each cell that is a total of others in its column or row
    (:func:`finmath_tasks.variant_rules.sum_relations`: a run next to it, or for the
    line's largest figure the cells on one side, sub-rows between them): (total, parts)."""
    grid: dict[Cell, Written] = {}
    for r, row in enumerate(table):
        for c, cell in enumerate(row):
            numbers = [w for w in find_numbers(cell) if not is_year(w)]
            if numbers:
                grid[(r, c)] = numbers[0]
    lines: dict[tuple[str, int], list[Cell]] = {}
    for r, c in sorted(grid):
        lines.setdefault(("column", c), []).append((r, c))
        lines.setdefault(("row", r), []).append((r, c))
    found = []
    for cells in lines.values():
        values = [grid[p].value for p in cells]
        decimals = [grid[p].decimals for p in cells]
        for total, parts in sum_relations(values, decimals):
            found.append((cells[total], [cells[p] for p in parts]))
    return found


def _restated_total(
    table: Sequence[Sequence[str]], places: Sequence[Where], totals: set[Cell], varied: set[Cell]
) -> str | None:
    """A recomputed total whose value is written again elsewhere in the report (a closing
    balance that is the next year's opening one): the reason, or None."""
    for r, c in totals:
        value = _figure_of(table, (r, c))
        if significant_digits(value) < 2:
            continue
        for p in places:
            if p.kind == "table" and ((p.index, p.column) in totals | varied):
                continue
            if abs(p.written.value) == abs(value) and p.written.percent == _is_percent(
                table, (r, c)
            ):
                return f"the total {table[r][c].strip()!r} (cell {r},{c}) is written again"
    return None


def _together(a: Where, b: Where) -> bool:
    """Are two numbers written together: in one sentence, one table row or one column?"""
    if a.kind != b.kind:
        return False
    if a.kind == "table":
        return a.index == b.index or a.column == b.column
    return a.index == b.index


def _table_op_values(metadata: dict[str, Any], steps: Sequence[Any]) -> dict[float, Cell]:
    """The cells a table operation reads (its row), as arguments to vary: value -> its cell."""
    rows = {str(row[0]): r for r, row in enumerate(metadata["table"]) if row}
    found: dict[float, Cell] = {}
    for step in steps:
        if step.op in TABLE_OPS and step.args[0] in rows:
            r = rows[step.args[0]]
            for c, cell in enumerate(metadata["table"][r]):
                if c == 0:
                    continue
                numbers = [w for w in find_numbers(cell) if not is_year(w)]
                if numbers and numbers[0].value:
                    found.setdefault(abs(numbers[0].value), (r, c))
    return found


_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "from",
        "with",
        "that",
        "this",
        "what",
        "was",
        "were",
        "are",
        "has",
        "have",
        "had",
        "its",
        "per",
        "than",
        "which",
        "into",
        "during",
        "total",
        "amount",
        "value",
        "based",
        "year",
        "years",
        "percent",
        "percentage",
        "change",
    ]
)


def words(text: str) -> set[str]:
    """The words of a text that tell one place from another: lowercase words of three or
    more letters (a few common ones aside) and four-digit years."""
    found = {w for w in re.findall(r"[a-z]{3,}", text.lower()) if w not in _STOP}
    return found | set(re.findall(r"(?<!\d)(?:19|20)\d\d(?!\d)", text))


def _context(metadata: dict[str, Any], place: Where) -> set[str]:
    """The words naming a written number: its sentence, or its cell's row label and column
    header."""
    if place.kind == "text":
        return words([*metadata["pre_text"], *metadata["post_text"]][place.index])
    if place.kind == "table":
        table = metadata["table"]
        label = table[place.index][0] if table[place.index] else ""
        header = table[0][place.column] if table and place.column < len(table[0]) else ""
        return words(f"{label} {header}")
    return set()


@dataclass
class Hints:
    """What tells apart the places a short figure is written in, beside the supporting facts:
    the question's words, the cell a table operation reads, and the rows and columns where
    the program's other arguments are written."""

    question: set[str] = field(default_factory=set)
    cells: dict[float, Cell] = field(default_factory=dict)
    rows: set[int] = field(default_factory=set)
    columns: set[int] = field(default_factory=set)


def _best(units: list[tuple[Any, ...]], score: dict[tuple[Any, ...], int]) -> list[Any]:
    top = max(score[u] for u in units)
    return [u for u in units if score[u] == top] if top > 0 else units


def _disambiguate(
    primary: list[Where], value: float, metadata: dict[str, Any] | None, hints: Hints | None
) -> list[Where]:
    """The places of ``primary`` (one value, written in several cells or sentences) that the
    hints single out: the cell a table operation reads; else the places whose row label,
    column header or sentence shares most words with the question; then those in a row or
    column of the program's other arguments. All of them when nothing tells them apart."""
    if hints is None or metadata is None:
        return primary
    units = sorted({_unit(p) for p in primary})
    cell = hints.cells.get(value)
    if cell is not None and ("table", *cell) in units:
        return [p for p in primary if _unit(p) == ("table", *cell)]
    by_unit = {u: [p for p in primary if _unit(p) == u] for u in units}
    score = {u: len(hints.question & _context(metadata, by_unit[u][0])) for u in units}
    units = _best(units, score)
    if len(units) > 1:
        near = {
            u: int(u[0] == "table" and (u[1] in hints.rows or u[2] in hints.columns)) for u in units
        }
        units = _best(units, near)
    return [p for u in units for p in by_unit[u]]


def _locate(
    value: float,
    decimals: int,
    places: Sequence[Where],
    gold: set[tuple[str, int]],
    metadata: dict[str, Any] | None = None,
    hints: Hints | None = None,
) -> Variable | str | None:
    """The places of a value to vary: a figure of three or more significant digits
    everywhere it is written (one figure, restated); a shorter one where the supporting
    facts write it, else where the hints single it out (:func:`_disambiguate`), and beside
    it, in the same row, column or sentence, where it is written again; a reason to hold
    it when it stays written in several places; None: not written."""
    same = [p for p in places if math.isclose(abs(p.written.value), value, rel_tol=1e-12)]
    if not same:
        return None
    if significant_digits(value) >= RESTATED_DIGITS:
        occurrences = list(same)
    else:
        in_gold = [p for p in same if (p.kind, p.index) in gold and p.kind != "question"]
        primary = in_gold or [p for p in same if p.kind != "question"] or same
        if len({_unit(p) for p in primary}) > 1:
            primary = _disambiguate(primary, value, metadata, hints)
        if len({_unit(p) for p in primary}) > 1:
            return f"{value:g}: written in {len({_unit(p) for p in primary})} places"
        occurrences = list(primary)
        occurrences += [
            p for p in same if p not in occurrences and any(_together(p, q) for q in occurrences)
        ]
    decimals = min([decimals, *(p.written.decimals for p in occurrences)])
    return Variable(value, decimals, occurrences)


def plan(metadata: dict[str, Any]) -> Plan:
    """The question's variables, or the reason it is left out (first: a table larger than
    any real one, :func:`finmath_tasks.variants.table_too_large`, whose totals would take
    too long to search on every draw)."""
    too_large = table_too_large(metadata.get("table") or [])
    if too_large is not None:
        return Plan(reason=too_large)
    program = str(metadata["program"])
    steps = parse_program(program)
    places = places_of(metadata)
    gold = _gold_units(metadata)
    values: dict[float, int] = {}
    for arg in _args(program):
        parsed = _argument_value(arg)
        if parsed is not None and parsed[0] != 0:
            values[parsed[0]] = min(values.get(parsed[0], parsed[1]), parsed[1])
    hints = Hints(question=words(str(metadata["question"])))
    hints.cells = _table_op_values(metadata, steps)
    for value, (r, c) in hints.cells.items():
        values.setdefault(value, _first_written(metadata["table"][r][c]).decimals)
    held: list[str] = []
    variables: list[Variable] = []
    located_at: dict[float, Variable | str | None] = {}
    for _ in range(2):  # once more with the rows and columns of the arguments located
        for value, decimals in values.items():
            if not isinstance(located_at.get(value), Variable):
                located_at[value] = _locate(value, decimals, places, gold, metadata, hints)
        for v in located_at.values():
            if isinstance(v, Variable):
                hints.rows |= {p.index for p in v.places if p.kind == "table"}
                hints.columns |= {p.column for p in v.places if p.kind == "table"}
    for located in located_at.values():
        if isinstance(located, str):
            held.append(located)
        elif located is not None:
            variables.append(located)
    if not variables:
        if held:
            return Plan(reason="every argument is ambiguous (" + "; ".join(held) + ")")
        return Plan(reason="no argument of the program is written in the report")
    table = metadata["table"]
    scaled = scaled_text_variable(table, variables)
    if scaled is not None:
        return Plan(reason=scaled)
    cells = {(p.index, p.column) for v in variables for p in v.places if p.kind == "table"}
    relations = table_relations(table)
    equations, turned, why = propagate(table, cells, relations)
    if why is not None:
        return Plan(reason=why)
    changes = percent_relations(table)
    percents, why = percent_equations(changes, cells | {eq.cell for eq in equations}, cells)
    if why is not None:
        return Plan(reason=why)
    equations += percents
    threes = three_relations(table)
    equations += three_equations(threes, cells | {eq.cell for eq in equations})
    ratios = ratio_relations(table)
    recomputed = {eq.cell for eq in equations} - cells
    copies = [
        (cell, p, 1.0)
        for cell in sorted(recomputed)
        if significant_digits(_figure_of(table, cell)) >= RESTATED_DIGITS
        for p in places
        if p.kind != "table"
        and abs(p.written.value) == abs(_figure_of(table, cell))
        and p.written.percent == _is_percent(table, cell)
    ]
    mine = {(p.kind, p.index, p.column, p.written.start) for v in variables for p in v.places}
    copies += scaled_copies(table, places, cells | recomputed, mine)
    copied = [q for _, q, _ in copies]
    # a figure of a sentence that restates a cell keeps doing so: it is not recomputed
    standing = {key_of(q) for _, q, _ in scaled_copies(table, places, set(), set(), every=False)}
    figures = {abs(_figure_of(table, cell)) for cell in table_cells(table)}
    standing |= {key_of(q) for q in places if q.kind != "table" and abs(q.written.value) in figures}
    follows = sentence_follows(places, {key_of(q) for q in copied}, mine | standing)
    restated = _restated_total(table, [p for p in places if p not in copied], recomputed, cells)
    if restated is not None:
        return Plan(reason=f"{restated}: it would contradict the new values")
    moved = cells | recomputed
    related = {c for t, parts in relations if moved & {t, *parts} for c in (t, *parts)}
    related |= {c for trio in changes if moved & set(trio) for c in trio}
    related |= {c for four in [*threes, *ratios] if moved & set(four) for c in four}
    mine |= {(p.kind, p.index, p.column, p.written.start) for p in copied}
    mine |= {key_of(f.place) for f in follows if not f.check}
    others = [
        p
        for p in places
        if (p.kind, p.index, p.column, p.written.start) not in mine
        and not (p.kind == "table" and (p.index, p.column) in related)
    ]
    for variable in variables:  # a relation in the same row, column or sentence only
        near = [p for p in others if any(_together(p, q) for q in variable.places)]
        derived = derived_from(
            [variable.value],
            [p.written.value for p in near] + [v.value for v in variables if v is not variable],
            [p.written for p in near],
            min_digits=DERIVED_DIGITS,
        )
        if derived is not None:
            written, formula = derived
            return Plan(
                reason=f"the number {written.text!r}, written beside a varied number, "
                f"equals {formula} (it would contradict the new values)"
            )
    computed = {
        i
        for i, v in enumerate(variables)
        for p in v.places
        if p.kind == "table" and (p.index, p.column) in turned
    }
    if len(computed) == len(variables):
        return Plan(reason="every varied cell is a total of the others")
    return Plan(
        variables,
        held=held,
        equations=equations,
        derived=computed,
        relations=relations,
        changes=changes,
        copies=copies,
        threes=threes,
        ratios=ratios,
        follows=follows,
    )


def _new_text(place: Where, value: float) -> str:
    return format_like(math.copysign(value, place.written.value), place.written)


def _rewrite_program(program: str, variables: Sequence[Variable], new: Sequence[float]) -> str:
    mapping = {v.value: n for v, n in zip(variables, new, strict=True)}
    parts = []
    for step in parse_program(program):
        args = []
        for arg in step.args:
            parsed = _argument_value(arg)
            if parsed is not None and parsed[0] in mapping:
                n = mapping[parsed[0]]
                text = f"{n:.{parsed[1]}f}"
                sign = "-" if arg.strip().startswith("-") else ""
                arg = f"{sign}{text}{'%' if arg.endswith('%') else ''}"
            args.append(arg)
        parts.append(f"{step.op}({', '.join(args)})")
    return ", ".join(parts)


def _first(cell: str) -> float:
    return _first_written(cell).value


def _figure_of(table: Sequence[Sequence[str]], cell: Cell) -> float:
    """A cell's signed figure, where it looks like a year too (a recomputed cell)."""
    found = cell_value(table[cell[0]][cell[1]], cell in amount_years(table))
    if found is None:
        raise ValueError(f"the cell {cell[0]},{cell[1]} has no figure")
    return found[0]


def table_cells(table: Sequence[Sequence[str]]) -> list[Cell]:
    """The cells with a figure."""
    years = amount_years(table)
    return [
        (r, c)
        for r, row in enumerate(table)
        for c, cell in enumerate(row)
        if cell_value(cell, (r, c) in years) is not None
    ]


def _is_percent(table: Sequence[Sequence[str]], cell: Cell) -> bool:
    """Is a cell's figure a percentage (a text's "15.4 million" is not its "15.4%")?"""
    found = cell_value(table[cell[0]][cell[1]], cell in amount_years(table))
    return bool(found and found[2])


def _first_written(cell: str) -> Written:
    return next(w for w in find_numbers(cell) if not is_year(w))


def rewrite(
    metadata: dict[str, Any],
    variables: Sequence[Variable],
    new: Sequence[float],
    equations: Sequence[Equation] = (),
    copies: Sequence[tuple[Cell, Where, float]] = (),
    follows: Sequence[Follow] = (),
) -> tuple[dict[str, Any], str | None]:
    """The record's fields (question, sentences, table, program, facts) with new values and
    the table's cells recomputed; with the reason the draw is rejected (a recomputed cell
    that changes sign or reads as a year), or None."""
    spans: dict[tuple[str, int, int], list[tuple[int, int, str]]] = {}
    for variable, value in zip(variables, new, strict=True):
        for p in variable.places:
            key = (p.kind, p.index, p.column)
            spans.setdefault(key, []).append((p.written.start, p.written.end, _new_text(p, value)))
    table = [
        [replace_spans(cell, spans.get(("table", r, c), [])) for c, cell in enumerate(row)]
        for r, row in enumerate(metadata["table"])
    ]
    rejected = recompute(metadata["table"], table, equations)
    years = amount_years(metadata["table"]) if copies else set()
    magnitudes = {key_of(p): n for v, n in zip(variables, new, strict=True) for p in v.places}
    for (r, c), place, factor in copies:
        value = signed_at(metadata["table"][r][c], table[r][c], (r, c) in years)
        key = (place.kind, place.index, place.column)
        magnitudes[key_of(place)] = round(abs(value) * factor, place.written.decimals)
        spans.setdefault(key, []).append(
            (place.written.start, place.written.end, _new_text(place, abs(value) * factor))
        )
    followed, why = follow(follows, magnitudes)
    rejected = rejected or why
    for place, text in followed:
        key = (place.kind, place.index, place.column)
        spans.setdefault(key, []).append((place.written.start, place.written.end, text))
    question = replace_spans(metadata["question"], spans.get(("question", 0, 0), []))
    sentences = [
        replace_spans(s, spans.get(("text", i, 0), []))
        for i, s in enumerate([*metadata["pre_text"], *metadata["post_text"]])
    ]
    pre = sentences[: len(metadata["pre_text"])]
    post = sentences[len(metadata["pre_text"]) :]
    mapping = {v.value: n for v, n in zip(variables, new, strict=True)}
    facts = {}
    for key, text in (metadata.get("gold_inds") or {}).items():
        here = dict(mapping)
        kind, _, index = str(key).partition("_")
        if kind == "table":  # a row's fact restates its cells: recomputed ones too
            for before, after in zip(metadata["table"][int(index)], table[int(index)], strict=True):
                here.update(
                    (abs(a.value), abs(b.value))
                    for a, b in zip(find_numbers(before), find_numbers(after), strict=True)
                    if a.value != b.value
                )
        edits = [
            (w.start, w.end, format_like(math.copysign(here[abs(w.value)], w.value), w))
            for w in find_numbers(text)
            if abs(w.value) in here and not is_year(w)
        ]
        facts[key] = replace_spans(text, edits)
    return {
        "question": question,
        "pre_text": pre,
        "post_text": post,
        "table": table,
        "context": render_context(pre, table, post),
        "gold_inds": facts,
        "program": _rewrite_program(metadata["program"], variables, new),
    }, rejected


def _accept(original: Any, new: Any) -> str | None:
    if isinstance(original, str) or isinstance(new, str):
        return None if isinstance(original, str) == isinstance(new, str) else "answer type changes"
    return accept_gold(float(original), new)


def variant_of(sample: Sample, seed: int) -> tuple[Sample | None, str | None, Any]:
    """(the variant, None, original value) or (None, why it has none, original value)."""
    metadata = dict(sample.metadata or {})
    too_large = table_too_large(metadata.get("table") or [])
    if too_large is not None:  # before the program and the table's numbers are read
        return None, too_large, None
    first = execute(metadata["program"], metadata["table"])
    if not first.ok:
        return None, f"the gold program fails on the original values: {first.error}", None
    p = plan(metadata)
    if p.reason:
        return None, p.reason, first.value
    rng = question_rng(seed, str(sample.id))
    last = ""
    found = written_numbers(metadata, metadata)
    totals = totals_of(*found) if found is not None else []
    for draw in range(1, TRIES + 1):
        new = []
        for v in p.variables:
            value = draw_written(v.value, v.decimals, rng, spread=narrowed(draw))
            new.append(v.value if value is None else value)
        for i in p.derived:
            new[i] = p.variables[i].value
        if all(n == v.value for n, v in zip(new, p.variables, strict=True)):
            return None, "no argument can change at its written precision", first.value
        if p.derived:  # the totals first, then every place of a total written elsewhere
            table = rewrite(metadata, p.variables, new, p.equations, p.copies, p.follows)[0][
                "table"
            ]
            for i in p.derived:
                cell = next(pl for pl in p.variables[i].places if pl.kind == "table")
                before = metadata["table"][cell.index][cell.column]
                new[i] = abs(signed_at(before, table[cell.index][cell.column]))
        cells = {
            (pl.index, pl.column)
            for i in p.derived
            for pl in p.variables[i].places
            if pl.kind == "table"
        }
        equations = [eq for eq in p.equations if eq.cell not in cells]
        fields, why = rewrite(metadata, p.variables, new, equations, p.copies, p.follows)
        result = execute(fields["program"], fields["table"])
        if why is None:
            why = result.error if not result.ok else _accept(first.value, result.value)
        if why is None:
            why = violation(sample.metadata or {}, fields, totals)
        if why is None:
            broken = broken_relations(metadata, fields, p.relations, p.changes)
            broken += broken_small(metadata, fields, p.threes, p.ratios)
            why = broken[0] if broken else None
        if why is None and result.value is not None:
            metadata.update(fields)
            metadata.update(
                exe_ans=result.value,
                answer="",
                answer_type="yes_no" if isinstance(result.value, str) else "number",
            )
            metadata[GOLD_WRITTEN_KEY] = gold_as_written(result.value)
            metadata[VARIANT_KEY] = {
                "seed": seed,
                "replaced": [
                    {"from": pl.written.text, "to": _new_text(pl, n)}
                    for v, n in zip(p.variables, new, strict=True)
                    for pl in v.places
                ],
                "original_exe_ans": (sample.metadata or {}).get("exe_ans"),
                "original_program": (sample.metadata or {}).get("program"),
                "held": list(p.held),
                "draws": draw,
            }
            variant = Sample(
                id=sample.id,
                input=fields["question"],
                target=answer_text(result.value),
                metadata=metadata,
            )
            return variant, None, first.value
        last = str(why)
    return None, f"every one of {TRIES} draws was rejected (last: {last})", first.value


def instantiate(samples: Sequence[Sample], seed: int) -> Instantiation:
    """Each sample's fresh variant under ``seed``, or the reason it has none."""
    kept: list[Sample] = []
    left_out: dict[str, str] = {}
    originals: dict[str, Any] = {}
    for sample in samples:
        try:
            variant, why, original = variant_of(sample, seed)
        except (ValueError, IndexError, StopIteration, ArithmeticError) as e:
            # one record that breaks the rules never ends the instantiation: it is left out
            variant, why, original = None, f"could not be re-instantiated: {e!r}", None
        originals[str(sample.id)] = original
        if variant is None:
            left_out[str(sample.id)] = str(why)
        else:
            kept.append(variant)
    return Instantiation(seed, kept, left_out, originals, rules=RULES)


DEFAULT_SPLIT = "test"
"""The split ``finmath variants`` reads by default."""


def describe(metadata: dict[str, Any]) -> tuple[str, str]:
    """A question as ``finmath variants --show`` prints it: (its text, its gold and program)."""
    return _text(metadata), f"gold {metadata['exe_ans']!r}\n{metadata['program']}"


def _text(metadata: dict[str, Any]) -> str:
    return f"{metadata['question']}\n\n{metadata['context']}"


__all__ = ["DEFAULT_SPLIT", "describe", "instantiate", "load_dataset", "plan"]
