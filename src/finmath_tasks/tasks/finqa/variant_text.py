"""FinQA sentences' figures that follow the table: a figure in millions of a cell in
thousands (:func:`scaled_copies`), and the sums a sentence writes, kept when a figure of it
follows a moved cell.

A figure of a sentence that restates a table cell follows it (:func:`scaled_copies`:
"$ 4.58 billion" for 4,578 in millions). Where that figure is also the sum or difference of
two other figures of its sentence ("$ 4.58 billion , including $ 3.82 billion of net gains
from private equities and $ 762 million from public equities"; "increased $ 88.6 million to
$ 461.0 million from $ 372.4 million"), one figure of the relation that nothing else moves
is recomputed from the other two, at its written places and in its own unit (the total when
it is free, else the largest free part): :func:`sentence_follows` finds them once per
question, :func:`follow` writes them on each draw.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from finmath_tasks.tasks.finqa.variant_rules import cell_value
from finmath_tasks.variants import format_like, is_year, significant_digits

Place = Any
"""A written number of the record (``variants.Where``: kind, index, column, written)."""
PlaceKey = tuple[str, int, int, int]
Cell = tuple[int, int]

TARGET_DIGITS = 3
"""A sentence's sum has at least this many significant digits (shorter ones match by
chance: a "31" of "December 31")."""


def key_of(place: Place) -> PlaceKey:
    return (place.kind, place.index, place.column, place.written.start)


def _amount(place: Place) -> float:
    return abs(place.written.value) * place.written.scale


@dataclass(frozen=True)
class Follow:
    """A figure of a sentence recomputed as ``sum(coefficient * amount)`` of other places
    (amounts in units, scale words applied)."""

    place: Place
    terms: tuple[tuple[float, Place], ...]
    check: bool = False
    """Not recomputed: the draw must keep it (its figures move with their cells)."""


def _usable(place: Place) -> bool:
    w = place.written
    return place.kind != "table" and w.value != 0 and not w.percent and not is_year(w)


def sentence_follows(
    places: Sequence[Place], moved: set[PlaceKey], fixed: set[PlaceKey]
) -> list[Follow]:
    """For each sentence (and the question) with a ``moved`` figure (one that follows a
    cell), each relation ``t = ±a ± b`` of three of its figures, at ``t``'s written places,
    that holds in the original and has a moved figure: its first figure neither moved nor
    ``fixed`` (the total first, then the largest part) is recomputed. A relation with no
    such figure is checked on each draw (``check``: a draw that breaks it is redrawn)."""
    groups: dict[tuple[str, int], list[Place]] = {}
    for p in places:
        if _usable(p):
            groups.setdefault((p.kind, p.index), []).append(p)
    taken = set(moved) | set(fixed)
    out: list[Follow] = []
    seen: set[frozenset[PlaceKey]] = set()
    for numbers in groups.values():
        if not any(key_of(p) in moved for p in numbers):
            continue
        for t in numbers:
            if significant_digits(t.written.value) < TARGET_DIGITS:
                continue
            unit = 0.5 * 10.0**-t.written.decimals * t.written.scale + 1e-9
            for a, b in itertools.combinations([p for p in numbers if p is not t], 2):
                for ca, cb in ((1.0, 1.0), (1.0, -1.0), (-1.0, 1.0)):
                    total = ca * _amount(a) + cb * _amount(b)
                    if abs(total - _amount(t)) > unit or _amount(t) in (_amount(a), _amount(b)):
                        continue
                    three = frozenset(key_of(p) for p in (t, a, b))
                    if not three & moved or three in seen:
                        continue  # (one relation, met again from another of its figures)
                    seen.add(three)
                    free = [p for p in sorted((a, b), key=_amount, reverse=True)]
                    free = [p for p in (t, *free) if key_of(p) not in taken]
                    if not free:  # every figure of it moves or stays: checked on each draw
                        out.append(Follow(t, ((ca, a), (cb, b)), check=True))
                        continue
                    x = free[0]
                    if x is t:
                        terms = ((ca, a), (cb, b))
                    elif x is a:
                        terms = ((1 / ca, t), (-cb / ca, b))
                    else:
                        terms = ((1 / cb, t), (-ca / cb, a))
                    taken.add(key_of(x))
                    out.append(Follow(x, terms))
    return out


def follow(
    follows: Sequence[Follow], new: Mapping[PlaceKey, float]
) -> tuple[list[tuple[Place, str]], str | None]:
    """Each follow's place with its new text, from ``new`` (a place's new magnitude as
    written, for the places that changed; the others keep theirs), in order; the reason
    the draw is rejected (a figure that would become zero or negative), or None."""
    amounts = dict(new)
    out = []
    for f in sorted(follows, key=lambda f: f.check):  # the checks once all are written
        value = 0.0
        for c, p in f.terms:
            written = amounts.get(key_of(p), abs(p.written.value))
            value += c * written * p.written.scale
        w = f.place.written
        if f.check:
            written = amounts.get(key_of(f.place), abs(w.value)) * w.scale
            if abs(value - written) > 0.5 * 10.0**-w.decimals * w.scale + 1e-9:
                return [], f"the figure {w.text!r} of a sentence is no longer the sum it was"
            continue
        magnitude = round(value / w.scale, w.decimals)
        if magnitude <= 0 or not math.isfinite(magnitude):
            return [], f"the figure {w.text!r} of a sentence would become zero or negative"
        amounts[key_of(f.place)] = magnitude
        out.append((f.place, format_like(math.copysign(magnitude, w.value), w)))
    return out, None


SCALE_DIGITS = 3
"""A figure of the text with a scale word stands for a rounded cell from this many
significant digits ("$461.0 million" for 460,961 in a table in thousands)."""


def scaled_copies(
    table: Sequence[Sequence[str]],
    places: Sequence[Place],
    moved: set[Cell],
    mine: set[tuple[str, int, int, int]],
    every: bool = True,
) -> list[tuple[Cell, Place, float]]:
    """The figures of the sentences and the question written with a scale word and
    decimals that round a whole cell divided by 1000 (the text in millions, the table in
    thousands; or billions and millions), where every cell it could stand for moves: the
    place takes that cell's new value in the text's unit. A figure that an unmoved cell
    still gives, or that a cell writes as it is, stays. With ``every`` False: each place
    with each cell it could stand for, moved or not."""
    grid = {
        (r, c): found
        for r, row in enumerate(table)
        for c, cell in enumerate(row)
        if (found := cell_value(str(cell))) is not None and not found[2] and found[1] == 0
    }
    exact = {abs(v[0]) for v in grid.values()}
    out = []
    for p in places:
        w = p.written
        key = (p.kind, p.index, p.column, w.start)
        if p.kind == "table" or key in mine or w.scale == 1 or not w.decimals or w.percent:
            continue
        if len(w.text.replace(",", "").replace(".", "").lstrip("-").strip("0")) < SCALE_DIGITS:
            continue
        if abs(w.value) in exact:
            continue
        unit = 0.5 * 10.0**-w.decimals + 1e-9
        stands = sorted(k for k, v in grid.items() if abs(abs(v[0]) / 1000 - abs(w.value)) <= unit)
        if not every:
            out += [(k, p, 1e-3) for k in stands]
        elif stands and all(k in moved for k in stands):
            out.append((stands[0], p, 1e-3))
    return out


def scaled_text_variable(table: Sequence[Sequence[str]], variables: Sequence[Any]) -> str | None:
    """A varied figure of the text with a scale word that stands for a whole cell of the
    table in a smaller unit ("$1.136 billion" for a balance of 1,136 in millions; see
    :func:`scaled_copies`), the cell itself not varied: the reason to leave the question
    out (the cell's other digits cannot be drawn from the text's), or None."""
    varied = {(p.index, p.column) for v in variables for p in v.places if p.kind == "table"}
    for variable in variables:
        for p in variable.places:
            w = p.written
            if p.kind == "table" or w.scale == 1 or not w.decimals or w.percent:
                continue
            found = scaled_copies(table, [p], set(), set(), every=False)
            cells = [cell for cell, _, _ in found if cell not in varied]
            if cells:
                r, c = cells[0]
                return (
                    f"the figure {w.text!r} of the text stands for the cell {r},{c} "
                    f"({str(table[r][c]).strip()!r}) in another unit: it would contradict the "
                    "new values"
                )
    return None
