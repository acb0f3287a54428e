"""The records the variant audit reads (:mod:`finmath_tasks.variant_audit`): a record's
table cells, with their row labels and column headers, and its texts; the relations found
between their numbers."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from finmath_tasks.variants import find_numbers

Key = tuple[int, int, int]
"""A cell: (table, row, column)."""


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
    terms: tuple[tuple[float, Any], ...]
    """(coefficient, a cell's key or ("text", text index, number index))."""
    real: bool
    why: str
    """What makes it real (its structure), or ``chance``."""

    def describe(self) -> str:
        parts = " ".join(f"{'+' if c > 0 else '-'}{k}" for c, k in self.terms)
        return f"{self.kind} {self.target} = {parts} ({self.why})"


# --- reading records -------------------------------------------------------------------


def is_year(text: str, value: float, decimals: int) -> bool:
    return decimals == 0 and "," not in text and len(text) == 4 and 1900 <= value <= 2100


def read_cell(text: str) -> Cell | None:
    """The cell's figure (its first number that is not a year), signed as written; None when
    it writes none."""
    for w in find_numbers(text):
        digits = w.text.lstrip("-")
        if is_year(digits, abs(w.value), w.decimals):
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


def significant(text: str) -> int:
    return len(text.replace(",", "").replace(".", "").lstrip("-").strip("0"))


def lines_of(record: Record) -> list[tuple[str, int, int, list[Key]]]:
    """Every column and row: (kind, table, index, its numeric cells in order)."""
    lines: dict[tuple[str, int, int], list[Key]] = {}
    for key in sorted(record.grid):
        t, r, c = key
        lines.setdefault(("column", t, c), []).append(key)
        lines.setdefault(("row", t, r), []).append(key)
    return [(kind, t, i, cells) for (kind, t, i), cells in lines.items()]
