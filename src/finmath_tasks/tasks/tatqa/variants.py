"""Fresh variants of TAT-QA's arithmetic questions: new values for the numbers of the gold
derivation, written in the table and paragraphs, and the answer recomputed.

A question's variables are the numbers of its derivation (``derivation``: plain
arithmetic over the document's figures, :mod:`finmath_tasks.tasks.tatqa.derivation`)
that the document writes, in a cell, a paragraph or the question. Every written
occurrence of a figure of three or more significant digits changes (it is one figure
wherever restated); a shorter number written in several places is held (its role
cannot be told). A number the derivation holds that the document does not write (the
2 of an average, the 100 of a percentage) stays.

The answer is the derivation on the new values, at the question's scale and written
precision: the reading of the published answer (a fraction given in percent, the
annotators' 2 decimal places or the answer's own, a number alone in parentheses read as
negative) is found on the original values (:func:`derivation.reading_of`) and kept.

The table's totals (:meth:`Document.totals`: a cell that is the sum of a run of cells next
to it in its column or row, sub-totals inside the run counted once, amounts and
percentages also read apart) are recomputed from their new parts, and rewritten wherever
the document writes their figure again (a closing balance that opens the next period is
followed into that period's total). A varied figure that is itself such a total is not drawn: its
largest part is, and the total is recomputed from its parts.

A number written with numbers that change (same row, column or sentence) that equals one
of them combined with another number written there
(:func:`finmath_tasks.variants.relation_of`: a change column, a difference or percent
change in a sentence, a subtotal) is recomputed from their new values at its written
precision and rewritten where restated; the later written of two such numbers is taken
as the computed one. A number of the derivation is never recomputed: the gold reads it
as written.

Each draw is checked by :func:`violations` (the rules of ``docs/variants.md``) and
redrawn when it breaks one: every intermediate value of the derivation keeps its sign;
the numbers of a row, a column, a sentence keep their order and equalities; every total
still adds up, and every number computed beside a changed one is recomputed; a
percentage within [0, 100] stays within it; the new answer is not the published one
under the official EM, ``rounding``, ``tolerant`` or ``exact``, and within a factor of
10 of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.dataset import MemoryDataset, Sample

from finmath_tasks.scorers.comparisons import GOLD_WRITTEN_KEY
from finmath_tasks.tasks.tatqa import dataset as tatqa_dataset
from finmath_tasks.tasks.tatqa.dataset import number_text
from finmath_tasks.tasks.tatqa.derivation import (
    DerivationError,
    Leaf,
    Node,
    Reading,
    evaluate,
    leaves,
    parse,
    reading_of,
    rewrite,
    rounded,
)
from finmath_tasks.tasks.tatqa.document import Document, Place
from finmath_tasks.tasks.tatqa.variant_checks import (
    Original,
    SignedChange,
    anchored,
    derivation_constants,
    line_relation,
    read_values,
)
from finmath_tasks.variant_rules import Total
from finmath_tasks.variants import (
    VARIANT_KEY,
    Instantiation,
    Relation,
    draw_written,
    question_rng,
    table_too_large,
)

RULES = "4"
"""The version of these rules, in a variant's data fingerprint (1, unnamed: before
numbers computed beside the changed ones were recomputed; a seed then gave other
documents for about one question in ten; 2: before a total was checked against every run
that sums to it, short percent changes and ratios of a table line were recomputed, the
text's figures in millions followed their cells in thousands and three-number relations
held; seed 1 then gave other documents for about one dev question in seven; 3: before
percent changes were read on signed figures and with a "%" after a parenthesis, a
percentage that is its row's change of figures that stay was held, a "2%" was no longer
taken for the 2 of an average, a total's run on its other side took its change, the
text's differences of cells and of its own figures were recomputed, and two-digit
figures in millions followed their cells in thousands)."""

TRIES = 50
"""Draws tried per question before it is left out: a draw must keep the order of every
row, column and sentence it touches, which a wide table refuses more often than the
shared :data:`finmath_tasks.variants.TRIES` allows for."""
RESTATED_DIGITS = 3
"""A figure with at least this many significant digits is one figure wherever written."""
SHRINK = (1.0, 1.0, 0.5, 0.25, 0.1)
"""After each fifth of the draws is refused, a new value moves this share of its drawn
distance from the original (a number between close neighbours in its row or column
keeps its place only with a smaller move)."""
DEFAULT_SPLIT = "dev"
"""The split ``finmath variants tatqa`` reads by default (the task's)."""


def significant(text: str) -> int:
    return len(text.replace(",", "").replace(".", "").lstrip("-").lstrip("0"))


@dataclass
class Variable:
    magnitude: float
    decimals: int
    places: list[Place]
    leaf: bool = True
    """A number of the derivation (else a part of a varied total, drawn for it)."""


@dataclass(frozen=True)
class Derived:
    """A number the document writes beside numbers that change, equal to ``x op y`` of two
    numbers written with it (a change column, a difference in a sentence, a percent
    change): recomputed from their new values at its written precision, and rewritten
    wherever its figure is written again (``restated``)."""

    place: Place
    op: str
    x: Place
    y: Place
    negative: bool
    """The relation's sign on the original numbers (the written figure is its magnitude)."""
    decimals: int
    restated: tuple[Place, ...] = ()
    signs: tuple[float, float] = (1.0, 1.0)
    """The written signs of ``x`` and ``y`` for a percent change read on signed figures
    (``op`` "s%")."""

    def value(self, magnitude: Callable[[Place], float]) -> float | None:
        relation = Relation(self.op, 0, 1)
        if self.op == "s%":
            relation = SignedChange(self.op, 0, 1, *self.signs)
        return relation.apply([magnitude(self.x), magnitude(self.y)])


@dataclass(frozen=True)
class Absorbed:
    """A total's other run, on the other side of it from the run it is drawn from (the
    segments below an income summed from the lines above it; a tax and the net figure
    below the total of the lines above): its largest part ``place`` takes the change,
    recomputed as the total minus the run's other ``parts`` (signed values)."""

    place: Place
    total: Place
    parts: tuple[Place, ...]


@dataclass
class Plan:
    node: Node | None = None
    reading: Reading | None = None
    drawn: list[Variable] = field(default_factory=list)
    """The variables drawn."""
    leaf_places: dict[tuple[int, int], Place] = field(default_factory=dict)
    """A varied leaf's span in the derivation -> the place its new value is read from."""
    totals: list[Total] = field(default_factory=list)
    derived: list[Derived] = field(default_factory=list)
    """The numbers written beside changing ones and computed from them, recomputed."""
    absorbed: list[Absorbed] = field(default_factory=list)
    thousands: dict[Place, list[Place]] = field(default_factory=dict)
    """A cell's places in the text writing it in thousands (:func:`in_thousands`)."""
    held: list[str] = field(default_factory=list)
    reason: str | None = None


def nearer(value: float, new: float, decimals: int, shrink: float) -> float | None:
    """``new`` moved to ``shrink`` of its distance from ``value``, at ``value``'s written
    precision (a whole number keeps its trailing zeros); None when that is ``value``."""
    if shrink == 1.0:
        return new
    if decimals:
        unit = 10.0**-decimals
    else:
        digits = str(int(abs(value)))
        unit = 10.0 ** min(len(digits) - len(digits.rstrip("0")), len(digits) - 1)
    moved = round((value + (new - value) * shrink) / unit) * unit
    moved = round(moved, decimals)
    return None if moved == value or moved == 0 else moved


def _occurrences(document: Document, magnitude: float) -> list[Place]:
    return document.occurrences(magnitude)


def _chosen(document: Document, leaf: Leaf, found: list[Place]) -> tuple[list[Place], str]:
    """The occurrences that change with the leaf ([] with the reason: held)."""
    if not found:
        return [], f"{leaf.text}: not written in the document"
    if len(found) == 1:
        return found, ""
    digits = max(significant(document.written(p).text) for p in found)
    if max(digits, significant(leaf.text)) >= RESTATED_DIGITS:
        return found, ""
    return [], f"{leaf.text}: written in {len(found)} places"


def _expand(cell: tuple[int, int], by_cell: dict[tuple[int, int], Total]) -> list[tuple[int, int]]:
    """The cells a total is made of, through its sub-totals."""
    out: list[tuple[int, int]] = []
    for part in by_cell[cell].parts:
        out += _expand(part, by_cell) if part in by_cell else [part]
    return out


def plan(metadata: dict[str, Any]) -> Plan:
    """The question's variables, or the reason it is left out."""
    if metadata.get("answer_type") != "arithmetic":
        return Plan(reason="not an arithmetic question (only those have a derivation)")
    too_large = table_too_large(metadata.get("table") or [])
    if too_large is not None:  # the checks below grow faster than the table
        return Plan(reason=too_large)
    try:
        node = parse(str(metadata.get("derivation") or ""))
    except DerivationError as e:
        return Plan(reason=f"the derivation is not plain arithmetic ({e})")
    reading = reading_of(node, float(metadata["answer"]))
    if reading is None:
        return Plan(reason="the derivation does not reproduce the published answer")
    document = Document.of(metadata)
    grid = document.grid()
    totals = document.totals()
    by_cell: dict[tuple[int, int], Total] = {}
    for t in totals:  # a total's longest run gives its parts to draw from
        if t.cell not in by_cell or len(t.parts) > len(by_cell[t.cell].parts):
            by_cell[t.cell] = t
    cell_of = {place: cell for cell, place in grid.items()}
    constants = derivation_constants(node)
    result = Plan(node, reading, totals=totals)
    by_magnitude: dict[float, list[Leaf]] = {}
    for leaf in leaves(node):
        if (leaf.start, leaf.end) not in constants:
            by_magnitude.setdefault(leaf.value, []).append(leaf)
    taken: set[Place] = set()
    for magnitude, same in by_magnitude.items():
        places, why = _chosen(document, same[0], _occurrences(document, magnitude))
        if not places:
            result.held.append(why)
            continue
        for leaf in same:
            result.leaf_places[(leaf.start, leaf.end)] = places[0]
        totals_here = [cell_of[p] for p in places if cell_of.get(p) in by_cell]
        if totals_here:  # a total: its largest part is drawn, the total recomputed from it
            parts = [grid[c] for c in _expand(totals_here[0], by_cell)]
            parts = [q for q in parts if q not in taken and document.value(q) != 0]
            if not parts:
                continue
            place = max(parts, key=lambda q: abs(document.value(q)))
            written = document.written(place)
            found = _occurrences(document, abs(written.value))
            chosen = found if significant(written.text) >= RESTATED_DIGITS else [place]
            taken.update(chosen)
            result.drawn.append(Variable(abs(written.value), written.decimals, chosen, leaf=False))
            continue
        if taken & set(places):
            continue
        decimals = min(document.written(p).decimals for p in places)
        taken.update(places)
        result.drawn.append(Variable(magnitude, decimals, places))
    if not result.leaf_places:
        if result.held:
            return Plan(
                reason="no number of the derivation can vary (" + "; ".join(result.held) + ")"
            )
        return Plan(reason="the derivation reads no number of the document")
    if not result.drawn:
        return Plan(reason="no varied total has parts that can vary")
    result.absorbed = _absorbed(document, totals, result.drawn)
    result.thousands = in_thousands(document)
    result.derived = _derived(
        document, result.drawn, totals, read_values(node), result.absorbed, result.thousands
    )
    return result


def _absorbed(
    document: Document, totals: Sequence[Total], drawn: Sequence[Variable]
) -> list[Absorbed]:
    """For each total with runs on both sides of it in its line, the largest part of each
    run but its longest that takes the total's change (:class:`Absorbed`): a draw that
    changes the lines above an income changes its segments below too, and a total whose
    parts change changes the net figure it is split into below it."""
    grid = document.grid()
    drawn_places = {place for v in drawn for place in v.places}
    runs: dict[tuple[int, int], list[Total]] = {}
    for t in totals:
        runs.setdefault(t.cell, []).append(t)

    def side(t: Total) -> tuple[int, int]:
        axis = 0 if all(c == t.cell[1] for _, c in t.parts) else 1
        at = [q[axis] for q in t.parts]
        where = 1 if min(at) > t.cell[axis] else (-1 if max(at) < t.cell[axis] else 0)
        return axis, where

    out: dict[Place, Absorbed] = {}
    for cell, found in runs.items():
        primary = max(found, key=lambda t: len(t.parts))
        axis, where = side(primary)
        for t in found:
            if t is primary or set(t.parts) & set(primary.parts) or where == 0:
                continue
            if side(t) != (axis, -where):
                continue
            part = max(t.parts, key=lambda q: abs(document.value(grid[q])))
            if grid[part] in drawn_places or grid[part] in out:
                continue
            others = tuple(grid[q] for q in t.parts if q != part)
            out[grid[part]] = Absorbed(grid[part], grid[cell], others)
    return list(out.values())


def _derived(
    document: Document,
    drawn: Sequence[Variable],
    totals: Sequence[Total],
    leaf_values: set[float],
    absorbed: Sequence[Absorbed] = (),
    thousands: Mapping[Place, Sequence[Place]] | None = None,
) -> list[Derived]:
    """The numbers written with changing ones (same row, column or sentence) that equal one
    of them combined with another number written there
    (:func:`finmath_tasks.variants.relation_of`: a sum, a difference, a percent change, a
    product or a ratio), followed through what they change in turn. A number is changing
    when drawn, a total with a changing part, or itself derived; a number of the
    derivation held as written is never recomputed (the gold reads it)."""
    grid = document.grid()
    cell_of = {place: cell for cell, place in grid.items()}
    changing = {place for v in drawn for place in v.places}
    found: list[Derived] = []
    reads: dict[Place, tuple[Place, Place]] = {}
    groups = document.relation_groups()
    lines = [places for name, places in groups if name.startswith(("row ", "column "))]
    fixed = {q for a in absorbed for q in a.parts}  # the other parts of an absorbing run
    grew = True
    while grew:
        grew = False
        cells = {cell_of[p] for p in changing if p in cell_of}
        for total in totals:  # a total with a changing part is recomputed, and restated
            place = grid[total.cell]
            if place not in changing and cells & set(total.parts):
                changing.add(place)
                if significant(document.written(place).text) >= RESTATED_DIGITS:
                    changing.update(_occurrences(document, abs(document.value(place))))
                grew = True
        for place, again in (thousands or {}).items():  # its figure in millions follows
            if place in changing and not set(again) <= changing:
                changing.update(again)
                grew = True
        for a in absorbed:  # the part of a total's other run that takes its change
            if a.total in changing and a.place not in changing:
                changing.add(a.place)
                if significant(document.written(a.place).text) >= RESTATED_DIGITS:
                    changing.update(_occurrences(document, abs(document.value(a.place))))
                grew = True
        for name, places in groups:
            moving = [p for p in places if p in changing]
            if not moving:
                continue
            for place in reversed(places):  # a change column, a total: written after
                written = document.written(place)
                if place in changing or abs(written.value) in leaf_values or place in fixed:
                    continue
                if name.endswith("with its rows") and place[0][0] == "cell":
                    continue  # a cell's own relations are its row's and column's
                operands = moving + [p for p in places if p not in changing and p != place]
                values = [abs(document.value(p)) for p in operands]
                text = document.texts[place[0]]
                signed = [document.kind(p) for p in operands]
                negative = document.value(place) < 0
                relation = line_relation(
                    written, values, len(moving), places, text, signed, negative
                )
                if relation is None:
                    continue
                x, y = operands[relation.x], operands[relation.y]
                if place in reads.get(x, ()) or place in reads.get(y, ()):
                    continue  # the other way round of a number derived from this one
                if anchored(document, place, lines, lambda q: q not in changing):
                    continue  # its row's percent change of amounts that stay
                result = relation.apply(values)
                assert result is not None
                restated = tuple(
                    again
                    for again in _occurrences(document, abs(written.value))
                    if again != place and significant(written.text) >= RESTATED_DIGITS
                )
                signs = (1.0, 1.0)
                if isinstance(relation, SignedChange):
                    signs = (relation.sx, relation.sy)
                found.append(
                    Derived(place, relation.op, x, y, result < 0, written.decimals, restated, signs)
                )
                reads[place] = (x, y)
                changing.update((place, *restated))
                moving.append(place)
                grew = True
    return found


def _recompute(
    document: Document,
    new: dict[Place, float],
    totals: Sequence[Total],
    derived: Sequence[Derived] = (),
    absorbed: Sequence[Absorbed] = (),
    thousands: Mapping[Place, Sequence[Place]] | None = None,
) -> dict[Place, float] | str:
    """The new magnitudes with every total whose parts change and every derived number
    whose operands change recomputed (each rewritten where the document writes its figure
    again: a closing balance that is the next period's opening one, itself a part of that
    period's total), or why the draw is refused."""
    grid = document.grid()
    thousands = in_thousands(document) if thousands is None else thousands
    cell_of = {place: cell for cell, place in grid.items()}
    signed = {cell: document.value(place) for cell, place in grid.items()}
    current = dict(signed)
    out = dict(new)
    changed: set[tuple[int, int]] = set()
    for cell, place in grid.items():
        if place in new:
            current[cell] = math.copysign(new[place], signed[cell])
            changed.add(cell)

    def magnitude(place: Place) -> float:
        return out[place] if place in out else abs(document.value(place))

    def rewrite(place: Place, value: float) -> None:
        out[place] = value
        cell = cell_of.get(place)
        if cell is not None and current[cell] != math.copysign(value, signed[cell]):
            current[cell] = math.copysign(value, signed[cell])
            changed.add(cell)

    parts_of = [(total, set(total.parts)) for total in totals]
    seen: set[frozenset[tuple[Place, float]]] = set()
    for _ in range(2 * (len(totals) + len(derived) + len(absorbed)) + 2):
        state = frozenset(out.items())
        if state in seen:  # two relations rewrite one figure in turn: they never settle
            return "a total and a number computed beside it keep rewriting each other"
        seen.add(state)
        grew = False
        for a in absorbed:
            whole, part = cell_of[a.total], cell_of[a.place]
            if whole not in changed:
                continue
            w = document.written(a.place)
            value = rounded(current[whole] - sum(current[cell_of[q]] for q in a.parts), w.decimals)
            if value == current[part]:
                continue
            if (value > 0) != (signed[part] > 0) or value == 0:
                return f"the cell {part}, taking its total's change, would change sign"
            for again in (a.place, *_restated(document, a.place)):
                if again in new:
                    return f"the cell {part}, taking its total's change, is a varied number"
                rewrite(again, abs(value))
            grew = True
        for total, parts in parts_of:
            if not changed & parts:
                continue
            w = document.written(grid[total.cell])
            value = rounded(sum(current[p] for p in total.parts), w.decimals)
            if value == current[total.cell]:
                continue
            if (value > 0) != (signed[total.cell] > 0) or value == 0:
                return f"the total in cell {total.cell} would change sign"
            current[total.cell] = value
            changed.add(total.cell)
            out[grid[total.cell]] = abs(value)
            grew = True
            if significant(w.text) < RESTATED_DIGITS:
                continue
            for again in _occurrences(document, abs(signed[total.cell])):
                if again == grid[total.cell]:
                    continue
                if again in new:
                    return f"the total in cell {total.cell} is written again as a varied number"
                rewrite(again, abs(value))  # the total written again
        for d in derived:
            if d.x not in out and d.y not in out:
                continue
            result = d.value(magnitude)
            text = document.written(d.place).text
            if result is None or (result < 0) != d.negative:
                return f"the number {text!r}, computed from changing numbers, would change sign"
            value = rounded(abs(result), d.decimals)
            if value == 0:
                return f"the number {text!r}, computed from changing numbers, would be 0"
            if value == magnitude(d.place):
                continue
            for place in (d.place, *d.restated):
                rewrite(place, value)
            grew = True
        for place, shown in thousands.items():  # "$299.3 million" in the text for 299,253
            if place not in out:
                continue
            for text_place in shown:
                w = document.written(text_place)
                value = rounded(out[place] / 1000, w.decimals)
                if text_place not in new and out.get(text_place, abs(w.value)) != value:
                    out[text_place] = value
                    grew = True
        if not grew:
            break
    for d in derived:  # figures rounded apart ("$87.0 million" + "$6.6 million", "$93.5 million")
        result = d.value(magnitude)
        if result is None or rounded(abs(result), d.decimals) != magnitude(d.place):
            text = document.written(d.place).text
            return f"the number {text!r} and the numbers it is computed from disagree, rounded"
    return out


def _restated(document: Document, place: Place) -> list[Place]:
    """The other places writing the figure at ``place`` (three or more significant digits)."""
    written = document.written(place)
    if significant(written.text) < RESTATED_DIGITS:
        return []
    return [p for p in _occurrences(document, abs(written.value)) if p != place]


def in_thousands(document: Document) -> dict[Place, list[Place]]:
    """Each whole cell's places in the text that write its figure in thousands rounded, with
    a scale word and decimals ("$299.3 million" for 299,253; "$9.8 million" for 9,834: two
    significant digits for a cell of four or more), found once for every draw."""
    texts = [
        (place, w)
        for place, w in document.places()
        if place[0][0] != "cell" and w.scale > 1 and w.decimals > 0 and not w.percent
    ]
    out: dict[Place, list[Place]] = {}
    if not texts:
        return out
    for place in document.grid().values():
        old = abs(document.value(place))
        digits = significant(document.written(place).text)
        if old != round(old) or document.kind(place)[1]:
            continue
        for again, w in texts:
            shown = significant(w.text)
            enough = shown >= RESTATED_DIGITS or (shown == 2 and digits >= 4)
            if enough and round(old / 1000, w.decimals) == abs(w.value):
                out.setdefault(place, []).append(again)
    return out


def _variant(
    metadata: dict[str, Any], document: Document, p: Plan, new: dict[Place, float]
) -> tuple[dict[str, Any], list[dict[str, str]], Document]:
    """The variant's metadata fields for the new magnitudes at their places."""
    assert p.node is not None and p.reading is not None
    edited = document.edited(new)
    values: dict[tuple[int, int], float] = {}
    spans = []
    for leaf in leaves(p.node):
        place = p.leaf_places.get((leaf.start, leaf.end))
        if place is None or place not in new:
            continue
        magnitude = abs(new[place])
        values[(leaf.start, leaf.end)] = magnitude
        decimals = max(leaf.decimals, document.written(place).decimals)
        text = f"{magnitude:,.{decimals}f}" if "," in leaf.text else f"{magnitude:.{decimals}f}"
        spans.append((leaf.start, leaf.end, text))
    value, _ = evaluate(p.node, p.reading.negative_alone, values)
    answer = rounded(value * p.reading.factor, p.reading.decimals)
    number: float | int = int(answer) if answer == int(answer) and abs(answer) < 1e15 else answer
    replaced = [
        {"from": document.written(place).text, "to": edited.written(place).text}
        for place in sorted(new)
        if document.written(place).text != edited.written(place).text
    ]
    fields = {
        "question": edited.texts[("question", 0, 0)],
        "paragraphs": edited.paragraphs(),
        "table": edited.table(),
        "context": edited.context(),
        "derivation": rewrite(str(metadata["derivation"]), spans),
        "answer": number,
        GOLD_WRITTEN_KEY: number_text(number),
    }
    return fields, replaced, edited


def variant_of(sample: Sample, seed: int) -> tuple[Sample | None, str | None]:
    """(the variant, None) or (None, why it has none)."""
    metadata = dict(sample.metadata or {})
    p = plan(metadata)
    if p.reason is not None:
        return None, p.reason
    original = Original(metadata)
    document = original.document
    rng = question_rng(seed, str(sample.id))
    last = ""
    for draw in range(1, TRIES + 1):
        new: dict[Place, float] = {}
        shrink = SHRINK[min((draw - 1) * len(SHRINK) // TRIES, len(SHRINK) - 1)]
        drawable = False
        for variable in p.drawn:
            value = draw_written(variable.magnitude, variable.decimals, rng)
            drawable = drawable or value is not None
            if value is not None:
                value = nearer(variable.magnitude, value, variable.decimals, shrink)
            if value is not None:
                for place in variable.places:
                    new[place] = value
        if not drawable:
            return None, "no number of the derivation can change at its written precision"
        if not new:
            last = "every new value rounds back to the original"
            continue
        recomputed = _recompute(document, new, p.totals, p.derived, p.absorbed, p.thousands)
        if isinstance(recomputed, str):
            last = recomputed
            continue
        if not any(place in recomputed for place in p.leaf_places.values()):
            return None, "no number of the derivation changes"
        try:
            fields, replaced, edited = _variant(metadata, document, p, recomputed)
        except (ZeroDivisionError, OverflowError) as e:
            last = f"the derivation fails: {e!r}"
            continue
        after = {**metadata, **fields}
        problems = original.violations(after, edited, first=True)
        if problems:
            last = problems[0]
            continue
        after[VARIANT_KEY] = {
            "seed": seed,
            "replaced": replaced,
            "original_answer": metadata.get("answer"),
            "original_derivation": metadata.get("derivation"),
            "held": list(p.held),
            "draws": draw,
        }
        target = str(fields[GOLD_WRITTEN_KEY])
        return Sample(id=sample.id, input=after["question"], target=target, metadata=after), None
    return None, f"every one of {TRIES} draws was rejected (last: {last})"


def instantiate(samples: Sequence[Sample], seed: int) -> Instantiation:
    """Each sample's fresh variant under ``seed``, or the reason it has none."""
    kept: list[Sample] = []
    left_out: dict[str, str] = {}
    for sample in samples:
        try:
            variant, why = variant_of(sample, seed)
        except (ValueError, IndexError, KeyError, TypeError, ArithmeticError) as e:
            # one record that breaks the rules never ends the instantiation: it is left out
            variant, why = None, f"could not be re-instantiated: {e!r}"
        if variant is None:
            left_out[str(sample.id)] = str(why)
        else:
            kept.append(variant)
    return Instantiation(seed, kept, left_out)


def describe(metadata: dict[str, Any]) -> tuple[str, str]:
    """A question as ``finmath variants --show`` prints it: (its text, its gold and derivation)."""
    text = f"{metadata['question']}\n\n{metadata['context']}"
    scale = metadata.get("scale") or ""
    return text, f"gold {metadata['answer']!r} {scale}".rstrip() + f"\n{metadata['derivation']}"


def load_dataset(split: str, data_dir: str | None = None) -> MemoryDataset:
    """The split's arithmetic questions (what ``finmath variants tatqa`` reads)."""
    return tatqa_dataset.load_dataset(split, "arithmetic", data_dir)


__all__ = ["DEFAULT_SPLIT", "RULES", "describe", "instantiate", "load_dataset", "plan"]
