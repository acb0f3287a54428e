"""Fresh variants of FinQA questions: new values for the numbers the gold program reads.

A question's variables are the numeric arguments of its gold program (FinQA's DSL)
found in the report: in the supporting facts (``gold_inds``: table rows and
sentences) first, else anywhere in the document. Each written occurrence gets the
new value, written as the original was (precision, thousands separators, the
parenthesised repeat of a negative cell, the sign); a figure of three or more
significant digits is the same figure wherever it is restated in the document and
changes everywhere. The gold is the program with the new arguments, run by the
DSL's executor (:func:`finmath_tasks.tasks.finqa.dsl.execute`): a pure calculator
over the arguments, no model code, so it needs no sandbox. A draw whose numeric
answer is not finite, changes sign or moves by more than a factor of 10, or that
breaks a rule of :mod:`finmath_tasks.tasks.finqa.variant_rules` (each step's sign
and branch, order within a row, column or sentence, totals, a gold that moves), is
redrawn; a yes/no answer (``greater``) keeps its branch, so it stays.

A table operation varies the cells of the row it reads. A varied table total varies
all its parts and is recomputed from them (nested totals follow). Held at its
original value (the variant records why): an argument written in more than one place
of the supporting facts (its role cannot be told apart). Left out, with the reason:
no argument located; a number beside a varied one (same row, column or sentence)
equal to it combined with another (:func:`finmath_tasks.variants.derived_from`); a
recomputed total written again elsewhere; every draw rejected.
"""

from __future__ import annotations

import math
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
from finmath_tasks.tasks.finqa.variant_rules import numbers as written_numbers
from finmath_tasks.tasks.finqa.variant_rules import violation
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
)

RESTATED_DIGITS = 3
"""A figure with at least this many significant digits is one figure wherever written."""
DERIVED_DIGITS = 3
"""Numbers of the report checked for being derived from a varied one have at least this many
significant digits (a report writes hundreds of numbers: shorter ones equal some sum of
two others by chance, "31" of "December 31" among them)."""
"""A figure with at least this many significant digits is one figure wherever written."""


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
    totals: list[tuple[tuple[int, int], list[tuple[int, int]]]] = field(default_factory=list)
    """Table totals recomputed from the new values (the total's cell, the run it sums)."""
    derived: set[int] = field(default_factory=set)
    """Variables that are such totals: their new value is computed, not drawn."""


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


def recomputed_totals(
    totals: Sequence[tuple[Cell, list[Cell]]], varied: set[Cell]
) -> tuple[list[tuple[Cell, list[Cell]]], str | None]:
    """The totals to recompute when the ``varied`` cells change (a total of a run that
    holds a varied or recomputed cell, in the order to compute them), or the reason the
    question is left out (a varied cell is itself a total of cells that stay)."""
    changed = set(varied)
    order: list[tuple[Cell, list[Cell]]] = []
    for _ in range(len(totals) + 1):
        grew = False
        for total, part in totals:
            if total in varied and not changed & set(part):
                return [], f"the varied cell {total[0]},{total[1]} is a total of other cells"
            if total in varied and changed & set(part) and (total, part) not in order:
                order.append((total, part))
                grew = True
            elif total not in changed and changed & set(part):
                changed.add(total)
                order.append((total, part))
                grew = True
        if not grew:
            break
    for total, part in totals:
        if total in varied and changed & set(part) and (total, part) not in order:
            order.append((total, part))  # a varied total of varied cells: computed, not drawn
    return order, None


def _restated_total(
    table: Sequence[Sequence[str]], places: Sequence[Where], totals: set[Cell], varied: set[Cell]
) -> str | None:
    """A recomputed total whose value is written again elsewhere in the report (a closing
    balance that is the next year's opening one): the reason, or None."""
    for r, c in totals:
        value = _first(table[r][c])
        if significant_digits(value) < 2:
            continue
        for p in places:
            if p.kind == "table" and ((p.index, p.column) in totals | varied):
                continue
            if abs(p.written.value) == abs(value):
                return f"the total {table[r][c].strip()!r} (cell {r},{c}) is written again"
    return None


def _together(a: Where, b: Where) -> bool:
    """Are two numbers written together: in one sentence, one table row or one column?"""
    if a.kind != b.kind:
        return False
    if a.kind == "table":
        return a.index == b.index or a.column == b.column
    return a.index == b.index


def _table_op_values(metadata: dict[str, Any], steps: Sequence[Any]) -> dict[float, int]:
    """The cells a table operation reads (its row), as arguments to vary."""
    rows = {str(row[0]): row[1:] for row in metadata["table"] if row}
    found: dict[float, int] = {}
    for step in steps:
        if step.op in TABLE_OPS:
            for cell in rows.get(step.args[0], []):
                numbers = [w for w in find_numbers(cell) if not is_year(w)]
                if numbers and numbers[0].value:
                    found[abs(numbers[0].value)] = numbers[0].decimals
    return found


def _locate(
    value: float, decimals: int, places: Sequence[Where], gold: set[tuple[str, int]]
) -> Variable | str | None:
    """The places of a value to vary (a figure of three or more significant digits
    everywhere it is written, a shorter one in the supporting facts, and beside them, in
    the same row, column or sentence, where it is written again); a reason to hold it
    when it is written in several places of the supporting facts; None: not written."""
    same = [p for p in places if math.isclose(abs(p.written.value), value, rel_tol=1e-12)]
    if not same:
        return None
    in_gold = [p for p in same if (p.kind, p.index) in gold and p.kind != "question"]
    primary = in_gold or same
    if len({_unit(p) for p in primary}) > 1:
        return f"{value:g}: written in {len({_unit(p) for p in primary})} places"
    chosen = {_unit(p) for p in primary}
    if significant_digits(value) >= RESTATED_DIGITS:
        chosen = {_unit(p) for p in same}
    occurrences = [p for p in same if _unit(p) in chosen]
    occurrences += [
        p for p in same if p not in occurrences and any(_together(p, q) for q in occurrences)
    ]
    decimals = min([decimals, *(p.written.decimals for p in occurrences)])
    return Variable(value, decimals, occurrences)


def _vary_parts(
    metadata: dict[str, Any],
    variables: list[Variable],
    places: Sequence[Where],
    gold: set[tuple[str, int]],
) -> None:
    """A varied cell that is a total: all its parts vary (it is then recomputed from them), so
    that a difference between a total and one of its parts (the change of a year, read
    off a bridge from one year's figure to the next) moves too."""
    totals = table_totals(metadata["table"])
    for _ in range(4):
        cells = {(p.index, p.column) for v in variables for p in v.places if p.kind == "table"}
        grew = False
        for total, part in totals:
            if total not in cells:
                continue
            for r, c in part:
                numbers = [w for w in find_numbers(metadata["table"][r][c]) if not is_year(w)]
                value = abs(numbers[0].value) if numbers else 0.0
                if not value or any(v.value == value for v in variables):
                    continue
                located = _locate(value, numbers[0].decimals, places, gold)
                if isinstance(located, Variable):
                    variables.append(located)
                    grew = True
        if not grew:
            return


def plan(metadata: dict[str, Any]) -> Plan:
    """The question's variables, or the reason it is left out."""
    program = str(metadata["program"])
    steps = parse_program(program)
    places = places_of(metadata)
    gold = _gold_units(metadata)
    values: dict[float, int] = {}
    for arg in _args(program):
        parsed = _argument_value(arg)
        if parsed is not None and parsed[0] != 0:
            values[parsed[0]] = min(values.get(parsed[0], parsed[1]), parsed[1])
    values.update(_table_op_values(metadata, steps))
    held: list[str] = []
    variables: list[Variable] = []
    for value, decimals in values.items():
        located = _locate(value, decimals, places, gold)
        if isinstance(located, str):
            held.append(located)
        elif located is not None:
            variables.append(located)
    if not variables:
        if held:
            return Plan(reason="every argument is ambiguous (" + "; ".join(held) + ")")
        return Plan(reason="no argument of the program is written in the report")
    _vary_parts(metadata, variables, places, gold)
    cells = {(p.index, p.column) for v in variables for p in v.places if p.kind == "table"}
    totals, why = recomputed_totals(table_totals(metadata["table"]), cells)
    if why is not None:
        return Plan(reason=f"{why}: it would contradict the new values")
    mine = {(p.kind, p.index, p.column, p.written.start) for v in variables for p in v.places}
    recomputed = {cell for cell, _ in totals}
    restated = _restated_total(metadata["table"], places, recomputed, cells)
    if restated is not None:
        return Plan(reason=f"{restated}: it would contradict the new values")
    mine |= {
        (p.kind, p.index, p.column, p.written.start)
        for p in places
        if p.kind == "table" and (p.index, p.column) in recomputed
    }
    others = [p for p in places if (p.kind, p.index, p.column, p.written.start) not in mine]
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
        if p.kind == "table" and (p.index, p.column) in recomputed
    }
    if len(computed) == len(variables):
        return Plan(reason="every varied cell is a total of the others")
    return Plan(variables, held=held, totals=totals, derived=computed)


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
    return next(w.value for w in find_numbers(cell) if not is_year(w))


def _number_at(original: str, cell: str) -> float:
    """The value of ``cell`` (a rewritten cell) at the place of ``original``'s first number
    that is not a year (a new value may look like a year; its place is what counts)."""
    index = next(i for i, w in enumerate(find_numbers(original)) if not is_year(w))
    return find_numbers(cell)[index].value


def rewrite(
    metadata: dict[str, Any],
    variables: Sequence[Variable],
    new: Sequence[float],
    totals: Sequence[tuple[tuple[int, int], list[tuple[int, int]]]] = (),
) -> dict[str, Any]:
    """The record's fields (question, sentences, table, program, facts) with new values."""
    spans: dict[tuple[str, int, int], list[tuple[int, int, str]]] = {}
    for variable, value in zip(variables, new, strict=True):
        for p in variable.places:
            key = (p.kind, p.index, p.column)
            spans.setdefault(key, []).append((p.written.start, p.written.end, _new_text(p, value)))
    question = replace_spans(metadata["question"], spans.get(("question", 0, 0), []))
    sentences = [
        replace_spans(s, spans.get(("text", i, 0), []))
        for i, s in enumerate([*metadata["pre_text"], *metadata["post_text"]])
    ]
    pre = sentences[: len(metadata["pre_text"])]
    post = sentences[len(metadata["pre_text"]) :]
    table = [
        [replace_spans(cell, spans.get(("table", r, c), [])) for c, cell in enumerate(row)]
        for r, row in enumerate(metadata["table"])
    ]
    original = metadata["table"]
    for (r, c), part in totals:
        value = sum(_number_at(original[pr][pc], table[pr][pc]) for pr, pc in part)
        numbers = find_numbers(table[r][c])
        edits = [
            (w.start, w.end, format_like(math.copysign(abs(round(value, w.decimals)), value), w))
            for i, w in enumerate(find_numbers(original[r][c]))
            if not is_year(w)
            for w in [numbers[i]]
        ]
        table[r][c] = replace_spans(table[r][c], edits)
    mapping = {v.value: n for v, n in zip(variables, new, strict=True)}
    facts = {}
    for key, text in (metadata.get("gold_inds") or {}).items():
        edits = [
            (w.start, w.end, format_like(math.copysign(mapping[abs(w.value)], w.value), w))
            for w in find_numbers(text)
            if abs(w.value) in mapping and not is_year(w)
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
    }


def _accept(original: Any, new: Any) -> str | None:
    if isinstance(original, str) or isinstance(new, str):
        return None if isinstance(original, str) == isinstance(new, str) else "answer type changes"
    return accept_gold(float(original), new)


def variant_of(sample: Sample, seed: int) -> tuple[Sample | None, str | None, Any]:
    """(the variant, None, original value) or (None, why it has none, original value)."""
    metadata = dict(sample.metadata or {})
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
            table = rewrite(metadata, p.variables, new, p.totals)["table"]
            for i in p.derived:
                cell = next(pl for pl in p.variables[i].places if pl.kind == "table")
                before = metadata["table"][cell.index][cell.column]
                new[i] = abs(_number_at(before, table[cell.index][cell.column]))
        cells = {
            (pl.index, pl.column)
            for i in p.derived
            for pl in p.variables[i].places
            if pl.kind == "table"
        }
        fields = rewrite(metadata, p.variables, new, [t for t in p.totals if t[0] not in cells])
        result = execute(fields["program"], fields["table"])
        why = result.error if not result.ok else _accept(first.value, result.value)
        if why is None:
            why = violation(sample.metadata or {}, fields, totals)
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
    return Instantiation(seed, kept, left_out, originals)


DEFAULT_SPLIT = "test"
"""The split ``finmath variants`` reads by default."""


def describe(metadata: dict[str, Any]) -> tuple[str, str]:
    """A question as ``finmath variants --show`` prints it: (its text, its gold and program)."""
    return _text(metadata), f"gold {metadata['exe_ans']!r}\n{metadata['program']}"


def _text(metadata: dict[str, Any]) -> str:
    return f"{metadata['question']}\n\n{metadata['context']}"


__all__ = ["DEFAULT_SPLIT", "describe", "instantiate", "load_dataset", "plan"]
