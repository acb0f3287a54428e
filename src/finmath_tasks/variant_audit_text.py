"""Relations of a record's text numbers for the variant audit
(:mod:`finmath_tasks.variant_audit`): a number of a text restating a table cell, and a
number of a text equal to the sum or difference of two others of its sentence, or of two
cells of a table line its sentence restates."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

from finmath_tasks.variant_audit_records import (
    Key,
    Record,
    Relation,
    is_year,
    lines_of,
    significant,
)
from finmath_tasks.variants import find_numbers

LONGEST_LINE = 200
"""Table lines of more numbers than this are not read for a text's differences."""


def _restating(record: Record) -> list[Relation]:
    """Numbers of the texts equal to a table cell, or (a number with a scale word, three or
    more significant digits) the cell in thousands rounded to it: "$299.3 million" for a
    cell of 299,253 in a table in thousands."""
    found: list[Relation] = []
    by_value: dict[tuple[float, bool], list[Key]] = {}
    for key, cell in record.grid.items():
        by_value.setdefault((abs(cell.value), cell.percent), []).append(key)
    for i, text in enumerate(record.texts):
        for j, w in enumerate(find_numbers(text)):
            if is_year(w.text.lstrip("-"), abs(w.value), w.decimals) or w.value == 0:
                continue
            real = significant(w.text) >= 3
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


SENTENCE_END = re.compile(r"(?<=[.;!?])\s+(?=[A-Z(\"'$])")
"""Where a text's sentence ends (a stop and a capital after it)."""


MONTH = re.compile(
    r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s*$", re.IGNORECASE
)
"""A month name just before a number: the number is a day ("December 31")."""


def _scaled_text(w: Any) -> float:
    return abs(w.value) * w.scale


def _sums(record: Record) -> list[Relation]:
    """Numbers of the texts (three or more significant digits, not a percentage) equal to
    the sum or difference of two other numbers of their sentence ("increased $90.5 million
    to $601.3 million from $510.8 million"), or of two cells of a table line whose figure
    the sentence restates ("$793.4 million, a decrease of $50.1 million" beside 793.4 and
    843.5 in one row), at the text number's written places (the cells in thousands rounded
    to a figure in millions too)."""
    found: list[Relation] = []
    restating: dict[float, list[Key]] = {}
    for key, cell in record.grid.items():
        if not cell.percent and significant(cell.text) >= 3:
            restating.setdefault(abs(cell.value), []).append(key)
    lines = lines_of(record)
    for i, text in enumerate(record.texts):
        numbers = list(enumerate(find_numbers(text)))
        at = 0
        for m in [*SENTENCE_END.finditer(text), None]:
            end = len(text) if m is None else m.start()
            sentence = [
                (j, w)
                for j, w in numbers
                if at <= w.start < end
                and w.value != 0
                and not w.percent
                and not is_year(w.text.lstrip("-"), abs(w.value), w.decimals)
                and not MONTH.search(text[max(0, w.start - 12) : w.start])
            ]
            at = end if m is None else m.end()
            shown = {k for _, w in sentence for k in restating.get(abs(w.value), [])}
            cells = [
                line
                for _kind, _t, _n, line in lines
                if shown & set(line) and len(line) <= LONGEST_LINE
            ]
            for j, w in sentence:
                if significant(w.text) < 3:
                    continue
                found += _text_sum(record, i, j, w, sentence, cells)
    return found


def _text_sum(
    record: Record,
    i: int,
    j: int,
    w: Any,
    sentence: Sequence[tuple[int, Any]],
    lines: Sequence[Sequence[Key]],
) -> list[Relation]:
    unit = 0.5 * 10**-w.decimals + 1e-9
    target = abs(w.value)
    out: list[Relation] = []
    why = "a sum or difference of figures its sentence writes"
    for (ja, a), (jb, b) in itertools.combinations(sentence, 2):
        if j in (ja, jb):
            continue
        x, y = _scaled_text(a) / w.scale, _scaled_text(b) / w.scale
        for cx, cy in ((1.0, 1.0), (1.0, -1.0), (-1.0, 1.0)):
            if abs(cx * x + cy * y - target) <= unit and target not in (x, y):
                pair: tuple[tuple[float, Any], ...] = ((cx, ("text", i, ja)), (cy, ("text", i, jb)))
                out.append(Relation("text sum", ("text", i, j), pair, True, why))
    factors = (1.0, 1e-3) if w.scale > 1 else (1.0,)
    for line in lines:
        amounts = [k for k in line if not record.grid[k].percent]
        for ka, kb in itertools.combinations(amounts, 2):
            va, vb = abs(record.grid[ka].value), abs(record.grid[kb].value)
            for f in factors:
                if f != 1.0 and (record.grid[ka].decimals or record.grid[kb].decimals):
                    continue
                for cx, cy in ((f, f), (f, -f), (-f, f)):
                    if abs(cx * va + cy * vb - target) <= unit and target not in (va, vb):
                        terms = ((cx, ka), (cy, kb))
                        how = "a sum or difference of cells of a line its sentence restates"
                        out.append(Relation("text sum", ("text", i, j), terms, True, how))
    return out


def text_relations(record: Record) -> list[Relation]:
    """Every relation of the record's text numbers (kinds ``text`` and ``text sum``)."""
    return _restating(record) + _sums(record)


def _written_at(record: Record, key: Any) -> Any:
    """The number a ("text", i, j) key names (None: the text writes no such number)."""
    _, i, j = key
    if i >= len(record.texts):
        return None
    numbers = find_numbers(record.texts[i])
    return numbers[j] if j < len(numbers) else None


def text_sum_holds(relation: Relation, variant: Record) -> bool:
    w = _written_at(variant, relation.target)
    if w is None:
        return False
    total = 0.0
    for c, k in relation.terms:
        if k[0] == "text":
            part = _written_at(variant, k)
            if part is None:
                return False
            total += c * _scaled_text(part) / w.scale
        elif k in variant.grid:
            total += c * abs(variant.grid[k].value)
        else:
            return False
    return abs(total - abs(w.value)) <= 0.5 * 10**-w.decimals + 1e-9
