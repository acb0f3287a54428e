"""The written numbers of a FinanceMath question and the program literals they give, and the
written numbers recomputed beside them (a total or a difference of varied ones), for
:mod:`finmath_tasks.tasks.knowledgefmath.variants`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from finmath_tasks.tasks.knowledgefmath.variant_rules import _sentence_of
from finmath_tasks.variants import Written, factor_of, find_numbers


@dataclass(frozen=True)
class Literal:
    """One numeric literal of the program: where it is and what it is."""

    line: int
    start: int
    end: int
    """Byte offsets in its line (as ``ast`` reports them)."""
    value: float
    integer: bool


@dataclass(frozen=True)
class Place:
    """A written number: in the question (``part`` -1) or table ``part``."""

    part: int
    written: Written


@dataclass
class Variable:
    """A literal of the program and its written occurrences."""

    literal: Literal
    places: list[Place]
    factor: float
    """literal = sign * |written| * factor (1, 0.01 for a percent, a scale word's factor)."""
    linked: list[tuple[Literal, int]] = field(default_factory=list)
    """Literals written as ``1 + r`` (+1) or ``1 - r`` (-1) of this one, ``r``."""
    same: list[Literal] = field(default_factory=list)
    """Further literals of the program with this value, all reading its one written number
    (:func:`_read_together`): they take its new value too."""

    def written_at(self, place: Place, value: float) -> float:
        """The new ``value`` (in the first place's form) as ``place`` writes it (the
        same number in a percent here, a fraction there), with ``place``'s sign."""
        factor = factor_of(self.literal.value, place.written) or self.factor
        return math.copysign(abs(value) * self.factor / factor, place.written.value)

    @property
    def written(self) -> Written:
        return self.places[0].written

    @property
    def draw_decimals(self) -> int:
        # a whole-number literal read from "19.0" stays whole
        if self.literal.integer and self.factor >= 1:
            return 0
        return self.written.decimals


RECOMPUTED_DIGITS = 2
"""A written number equal to a sum or difference involving a varied one written beside it (in
its sentence, table row or column) is recomputed when it has at least this many significant
digits; a one-digit number equals such a sum by chance too often, and is left as written."""


def together_keys(parts: Sequence[str]) -> dict[tuple[int, int], set[tuple[Any, ...]]]:
    """For each written number (part, start): what it is written together with (its
    sentence in the question, its row and column in a table)."""
    keys: dict[tuple[int, int], set[tuple[Any, ...]]] = {}
    for index, text in enumerate(parts):
        part = index - 1
        if part < 0:
            for w in find_numbers(text):
                keys[(part, w.start)] = {("sentence", _sentence_of(text, w.start))}
            continue
        at = 0
        for r, line in enumerate(text.split("\n")):
            for w in find_numbers(line):
                c = line.count("|", 0, w.start)
                keys[(part, at + w.start)] = {("row", part, r), ("column", part, c)}
            at += len(line) + 1
    return keys


def _near(a: Place, b: Place, keys: dict[tuple[int, int], set[tuple[Any, ...]]]) -> bool:
    return bool(
        keys.get((a.part, a.written.start), set()) & keys.get((b.part, b.written.start), set())
    )


@dataclass(frozen=True)
class Sum:
    """A written number equal to ``left_sign * x + right_sign * y``: ``x`` the variable at
    ``left``, ``y`` the variable at ``right`` or, when ``right`` is None, ``constant``."""

    place: Place
    left: int
    left_sign: int
    right: int | None
    right_sign: int
    constant: float
    op: str = "+"
    """``+`` (the signed sum above), or ``*`` (x * y), ``/`` (x / y), ``\\`` (y / x)."""

    def value(self, new: Sequence[float], variables: Sequence[Variable]) -> float:
        def signed(i: int) -> float:
            return math.copysign(abs(new[i]), variables[i].written.value)

        y = self.constant if self.right is None else signed(self.right)
        x = signed(self.left)
        if self.op == "*":
            return x * y
        if self.op == "/":
            return x / y
        if self.op == "\\":
            return y / x
        return self.left_sign * x + self.right_sign * y


def _multiplicative(x: float, y: float, target: Written) -> str | None:
    """The product or ratio of ``x`` and ``y`` that ``target`` writes (at its precision,
    three significant digits or more, neither operand itself), if any."""
    digits = len(target.text.replace(",", "").replace(".", "").lstrip("-").lstrip("0"))
    if digits < 3 or 1.0 in (abs(x), abs(y)) or not x or not y:
        return None
    places = target.decimals
    for op, result in (("*", x * y), ("/", x / y), ("\\", y / x)):
        near = round(result, places) == round(target.value, places)
        if near and round(result, places) not in (round(x, places), round(y, places)):
            return op
    return None


def _sums(
    variables: Sequence[Variable],
    others: Sequence[Place],
    program_values: Any,
    keys: dict[tuple[int, int], set[tuple[Any, ...]]],
) -> list[Sum]:
    """The written numbers (not a value the program uses) beside a varied number that equal
    a sum or difference of it and another number of the document (two significant digits
    or more), or a product or ratio (three or more, at the written precision)."""
    found: list[Sum] = []
    totals: set[int] = set()
    constants: set[int] = set()
    # the largest first (a total before its parts); a total is never another's constant
    # and a constant never becomes a total, so every recomputed number stays consistent
    for k in sorted(range(len(others)), key=lambda k: -abs(others[k].written.value)):
        place = others[k]
        target = place.written.value
        text = place.written.text.replace(",", "")
        if "." in text:  # 27.0 is a two-digit number for this purpose
            text = text.rstrip("0").rstrip(".")
        digits = len(text.replace(".", "").lstrip("-0"))
        if digits < RECOMPUTED_DIGITS or abs(target) in program_values or k in constants:
            continue
        match = None
        for i, v in enumerate(variables):
            if not any(_near(place, q, keys) for q in v.places):
                continue
            x = v.written.value
            pool: list[tuple[int | None, int | None, float]] = [
                (j, None, w.written.value) for j, w in enumerate(variables) if j != i
            ]
            pool += [
                (None, m, p.written.value)
                for m, p in enumerate(others)
                if m != k and m not in totals
            ]
            for j, m, y in pool:
                for sl, sr in ((1, 1), (1, -1), (-1, 1)):
                    result = sl * x + sr * y
                    if round(result, 9) == round(target, 9) and result not in (x, y):
                        match = (Sum(place, i, sl, j, sr, y if j is None else 0.0), m)
                        break
                op = None if match else _multiplicative(x, y, place.written)
                if op is not None:
                    match = (Sum(place, i, 1, j, 1, y if j is None else 0.0, op), m)
                if match:
                    break
            if match:
                break
        if match:
            found.append(match[0])
            totals.add(k)
            if match[1] is not None:
                constants.add(match[1])
    return found
