"""A TAT-QA question's document as numbers in place: the question, the paragraphs' sentences
and the table's cells, each number with where it is written, its signed value, and the
groups it is written with (a row, a column, a sentence), for fresh variants.

A place is a text (``("question", 0, 0)``, ``("paragraph", i, 0)`` or ``("cell", row,
column)``) and the ordinal of the number among the numbers
:func:`finmath_tasks.variants.find_numbers` reads in it. A table writes a negative
figure in parentheses ("(1,234)"); a paragraph with a minus sign.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from finmath_tasks.tasks.tatqa.dataset import render_context
from finmath_tasks.variant_rules import Total, find_totals, parallel_totals
from finmath_tasks.variants import Written, find_numbers, format_like, is_year, replace_spans

Key = tuple[str, int, int]
Place = tuple[Key, int]
QUESTION: Key = ("question", 0, 0)

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z(\"'$])")


def sentences(text: str) -> list[tuple[int, int]]:
    """The spans of ``text``'s sentences (a full stop, ! ? or ; and a capital after it)."""
    spans, at = [], 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((at, m.start()))
        at = m.end()
    spans.append((at, len(text)))
    return spans


def _negative_in_cell(text: str, w: Written) -> bool:
    if w.value < 0:
        return True
    before = text[: w.start].rstrip(" $€£")
    after = text[w.end :].lstrip(" %")
    return before.endswith("(") and after.startswith(")")


def _line(total: Total) -> str:
    """Whether ``total`` sums cells of its column or of its row."""
    return "column" if all(c == total.cell[1] for _, c in total.parts) else "row"


@dataclass
class Document:
    texts: dict[Key, str]
    rows: int
    columns: int
    _numbers: dict[Key, list[Written]] = field(default_factory=dict, repr=False)
    _places: list[tuple[Place, Written]] | None = field(default=None, repr=False)
    _values: dict[Place, float] = field(default_factory=dict, repr=False)
    _by_magnitude: dict[float, list[Place]] | None = field(default=None, repr=False)

    @classmethod
    def of(cls, metadata: Mapping[str, Any]) -> Document:
        texts: dict[Key, str] = {QUESTION: str(metadata["question"])}
        for i, text in enumerate(metadata["paragraphs"]):
            texts[("paragraph", i, 0)] = str(text)
        table = metadata["table"]
        for r, row in enumerate(table):
            for c, cell in enumerate(row):
                texts[("cell", r, c)] = str(cell if cell is not None else "")
        width = max((len(row) for row in table), default=0)
        return cls(texts, len(table), width)

    def numbers(self, key: Key) -> list[Written]:
        if key not in self._numbers:
            self._numbers[key] = find_numbers(self.texts[key])
        return self._numbers[key]

    def places(self) -> list[tuple[Place, Written]]:
        """Every number that is not a year, with its place."""
        if self._places is None:
            self._places = [
                ((key, i), w)
                for key in self.texts
                for i, w in enumerate(self.numbers(key))
                if not is_year(w)
            ]
        return self._places

    def written(self, place: Place) -> Written:
        return self.numbers(place[0])[place[1]]

    def value(self, place: Place) -> float:
        """The signed value written at ``place``."""
        found = self._values.get(place)
        if found is None:
            w = self.written(place)
            found = w.value
            if place[0][0] == "cell" and _negative_in_cell(self.texts[place[0]], w):
                found = -abs(w.value)
            self._values[place] = found
        return found

    def occurrences(self, magnitude: float) -> list[Place]:
        """The places writing ``magnitude`` (a year is none), in the order of :meth:`places`."""
        if self._by_magnitude is None:
            self._by_magnitude = {}
            for place, w in self.places():
                self._by_magnitude.setdefault(abs(w.value), []).append(place)
        return list(self._by_magnitude.get(abs(magnitude), []))

    def kind(self, place: Place) -> tuple[float, bool]:
        """The signed value at ``place`` and whether it is a percentage (a ``%`` after it,
        or in its cell: "(6)%")."""
        w = self.written(place)
        percent = w.percent or (place[0][0] == "cell" and "%" in self.texts[place[0]])
        return self.value(place), percent

    def cell_place(self, r: int, c: int) -> Place | None:
        """The cell's figure: its first number that is not a year."""
        key = ("cell", r, c)
        if key not in self.texts:
            return None
        for i, w in enumerate(self.numbers(key)):
            if not is_year(w):
                return (key, i)
        return None

    def grid(self) -> dict[tuple[int, int], Place]:
        found = {}
        for r in range(self.rows):
            for c in range(self.columns):
                place = self.cell_place(r, c)
                if place is not None:
                    found[(r, c)] = place
        return found

    def totals(self) -> list[Total]:
        """The table's totals (:func:`finmath_tasks.variant_rules.find_totals`), and those
        found with amounts and percentages apart: a column that gives each amount's
        percentage of revenue in the row below it has its amounts' total found across
        those percentages (a cell already a total in that line keeps its parts)."""
        grid = self.grid()
        values = {cell: self.value(place) for cell, place in grid.items()}
        found = find_totals(values)
        known = {(t.cell, _line(t)) for t in found}
        for percent in (False, True):
            kind = {c: v for c, v in values.items() if self.written(grid[c]).percent == percent}
            apart = find_totals(kind)
            found += [t for t in apart if (t.cell, _line(t)) not in known]
            known |= {(t.cell, _line(t)) for t in apart}
        runs = {(t.cell, frozenset(t.parts)) for t in found}
        found += [t for t in parallel_totals(values) if (t.cell, frozenset(t.parts)) not in runs]
        return found

    def groups(self) -> list[tuple[str, list[Place]]]:
        """The numbers written together, each group named: every row, every column, every
        sentence of the paragraphs and the question."""
        out: list[tuple[str, list[Place]]] = []
        by_row: dict[int, list[Place]] = {}
        by_column: dict[int, list[Place]] = {}
        for place, _ in self.places():
            kind, r, c = place[0]
            if kind == "cell":
                by_row.setdefault(r, []).append(place)
                by_column.setdefault(c, []).append(place)
        out += [(f"row {r}", places) for r, places in sorted(by_row.items())]
        out += [(f"column {c}", places) for c, places in sorted(by_column.items())]
        for key, text in self.texts.items():
            if key[0] == "cell":
                continue
            numbers = [(i, w) for i, w in enumerate(self.numbers(key)) if not is_year(w)]
            for n, (start, end) in enumerate(sentences(text)):
                inside = [(key, i) for i, w in numbers if start <= w.start < end]
                name = "the question" if key == QUESTION else f"paragraph {key[1]} sentence {n}"
                out.append((name, inside))
        return [(name, places) for name, places in out if len(places) > 1]

    def relation_groups(self) -> list[tuple[str, list[Place]]]:
        """The groups in which a number may be computed from others: :meth:`groups`, and each
        sentence that restates a table cell (three or more significant digits) with the
        cells of that cell's row before it: "a decrease of $50.1 million" beside the
        restated 793.4 is its row's 843.5 - 793.4."""
        out = self.groups()
        grid = self.grid()
        by_value: dict[float, list[int]] = {}
        for (r, _c), place in grid.items():
            w = self.written(place)
            if len(w.text.replace(",", "").replace(".", "").lstrip("-").strip("0")) >= 3:
                by_value.setdefault(abs(w.value), []).append(r)
        for name, places in list(out):
            if name.startswith(("row ", "column ")):
                continue
            rows = sorted({r for p in places for r in by_value.get(abs(self.written(p).value), [])})
            cells = [place for (r, _c), place in sorted(grid.items()) if r in rows]
            if cells:
                out.append((f"{name} with its rows", cells + list(places)))
        return out

    def edited(self, magnitudes: Mapping[Place, float]) -> Document:
        """The document with the number at each place written with a new magnitude (its
        sign, precision and separators as before)."""
        spans: dict[Key, list[tuple[int, int, str]]] = {}
        for (key, i), magnitude in magnitudes.items():
            w = self.written((key, i))
            text = format_like(math.copysign(abs(magnitude), w.value), w)
            spans.setdefault(key, []).append((w.start, w.end, text))
        texts = {key: replace_spans(text, spans.get(key, [])) for key, text in self.texts.items()}
        known = {key: self._numbers[key] for key in self._numbers if key not in spans}
        return Document(texts, self.rows, self.columns, known)

    def same_shape(self, other: Document) -> bool:
        """Does ``other`` read as many numbers in each text, the same ones as years?"""
        for key in self.texts:
            if self.texts[key] == other.texts.get(key):
                continue
            a, b = self.numbers(key), other.numbers(key)
            if len(a) != len(b) or any(is_year(x) != is_year(y) for x, y in zip(a, b, strict=True)):
                return False
        return True

    def table(self) -> list[list[str]]:
        return [
            [
                self.texts[("cell", r, c)]
                for c in range(self.columns)
                if ("cell", r, c) in self.texts
            ]
            for r in range(self.rows)
        ]

    def paragraphs(self) -> list[str]:
        count = sum(1 for key in self.texts if key[0] == "paragraph")
        return [self.texts[("paragraph", i, 0)] for i in range(count)]

    def context(self) -> str:
        """The document rendered as the task renders it."""
        return render_document(self.paragraphs(), self.table())


def render_document(paragraphs: Sequence[str], table: Sequence[Sequence[Any]]) -> str:
    record = {
        "paragraphs": [{"text": text, "order": i} for i, text in enumerate(paragraphs)],
        "table": {"table": [list(row) for row in table]},
    }
    return render_context(record)
