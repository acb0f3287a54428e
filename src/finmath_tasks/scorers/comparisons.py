"""Generic number comparisons: when does a predicted number match the gold number?

A comparison is a function ``(predicted: ParsedNumber, gold: float) -> Match``;
every comparison returns the rule that decided it, so a score can say why.
A benchmark's official comparison (with the paper's quirks) lives in the
benchmark's folder and has the same signature; a task offers its users the
comparisons in :data:`COMPARISONS` plus its own.

``tolerant`` (our default, strict about what matters)
    The prediction is read as stated (scale word applied, "5%" read as 5),
    as written without its scale word ("1.2 million" read as 1.2, for golds
    stated in millions), and each of those divided or multiplied by 100
    (percent vs fraction). A reading matches when it equals the gold, is
    within 0.2% relative of it, or equals the gold rounded to the precision
    the reading shows, provided that precision keeps at least 3 significant
    digits (0.578 matches 0.5782; 0.58 does not). Never a sign flip, never
    any other power-of-ten rescaling.

``rounding`` (the financial-agents paper)
    Equal, or equal to the gold rounded to some number of decimal places
    (0 to 15, half-up or half-even).

``exact``
    Numeric equality of the value as stated with the gold.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal

from finmath_tasks.scorers.extraction import ParsedNumber

TOLERANT_REL_TOL = 0.002
TOLERANT_MIN_SIG_DIGITS = 3


@dataclass(frozen=True)
class Match:
    correct: bool
    rule: str
    """The rule that matched, or "no_match"."""


def number_from_float(value: float) -> ParsedNumber:
    """A number computed by a program: every digit of its shortest repr counts.

    Never raises: NaN and infinities give a number that matches nothing
    (``compare`` answers "prediction_not_finite").
    """
    text = repr(float(value))
    if not math.isfinite(value):
        return ParsedNumber(
            text=text,
            written=Decimal(text),
            scale_exp=0,
            percent=False,
            quantum_exp=0,
            sig_digits=0,
        )
    exact = Decimal(text)
    exponent = exact.as_tuple().exponent
    assert isinstance(exponent, int)
    digits = exact.as_tuple().digits
    sig = len("".join(map(str, digits)).lstrip("0")) or 1
    return ParsedNumber(
        text=text, written=exact, scale_exp=0, percent=False, quantum_exp=exponent, sig_digits=sig
    )


def _gold_decimal(gold: float) -> Decimal:
    return Decimal(repr(float(gold)))


def _rounds_to(gold: float, quantum_exp: int, value: Decimal) -> bool:
    g = _gold_decimal(gold)
    exponent = g.as_tuple().exponent
    assert isinstance(exponent, int)
    if quantum_exp <= exponent:
        # rounding to a finer quantum than the gold's last digit leaves it unchanged
        # (and quantize could need more digits than the context's precision)
        return g == value
    quantum = Decimal(1).scaleb(quantum_exp)
    return any(
        g.quantize(quantum, rounding=mode) == value for mode in (ROUND_HALF_UP, ROUND_HALF_EVEN)
    )


def _tolerant(pred: ParsedNumber, gold: float) -> Match:
    stated = pred.written.scaleb(pred.scale_exp)
    readings: list[tuple[str, Decimal, int]] = [("", stated, pred.quantum_exp + pred.scale_exp)]
    if pred.scale_exp:
        readings.append(("without_scale_word", pred.written, pred.quantum_exp))
    for name, value, q in list(readings):
        prefix = f"{name}+" if name else ""
        readings.append((f"{prefix}percent_as_fraction", value.scaleb(-2), q - 2))
        readings.append((f"{prefix}fraction_as_percent", value.scaleb(2), q + 2))
    for name, value, quantum_exp in readings:
        suffix = f" ({name})" if name else ""
        v = float(value)
        if v == gold:
            return Match(True, f"equal{suffix}")
        if gold != 0 and abs(v - gold) <= TOLERANT_REL_TOL * abs(gold):
            return Match(True, f"relative_tolerance_0.2%{suffix}")
        if pred.sig_digits >= TOLERANT_MIN_SIG_DIGITS and _rounds_to(gold, quantum_exp, value):
            return Match(True, f"gold_rounded_to_shown_precision{suffix}")
    return Match(False, "no_match")


def _rounding(pred: ParsedNumber, gold: float) -> Match:
    stated = pred.written.scaleb(pred.scale_exp)
    if float(stated) == gold:
        return Match(True, "equal")
    for places in range(16):
        if _rounds_to(gold, -places, stated):
            return Match(True, f"gold_rounded_to_{places}_decimals")
    return Match(False, "no_match")


def _exact(pred: ParsedNumber, gold: float) -> Match:
    return Match(True, "equal") if pred.value == gold else Match(False, "no_match")


Comparison = Callable[[ParsedNumber, float], Match]
"""``(predicted, gold) -> Match``; ``gold`` is finite, and so is ``predicted.value``."""

tolerant: Comparison = _tolerant
rounding: Comparison = _rounding
exact: Comparison = _exact

COMPARISONS: Mapping[str, Comparison] = {"tolerant": tolerant, "rounding": rounding, "exact": exact}
"""The generic comparisons every numeric task can offer (``-T profile=``)."""


def compare(comparison: Comparison, pred: ParsedNumber, gold: float) -> Match:
    """Does ``pred`` match ``gold`` under ``comparison``?

    Never raises for any numbers: a non-finite gold (an input error) or
    prediction is a no-match whose rule says so.
    """
    if not math.isfinite(gold):
        return Match(False, "gold_not_finite")
    if not math.isfinite(pred.value):
        return Match(False, "prediction_not_finite")
    return comparison(pred, gold)
