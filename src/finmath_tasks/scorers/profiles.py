"""Comparison profiles: when does a predicted number match the gold number?

Every comparison returns the rule that decided it, so a score can say why.

``tolerant`` (our default, strict about what matters)
    The prediction is read as stated (scale word applied, "5%" read as 5),
    as written without its scale word ("1.2 million" read as 1.2, for golds
    stated in millions), and each of those divided or multiplied by 100
    (percent vs fraction). A reading matches when it equals the gold, is
    within 0.2% relative of it, or equals the gold rounded to the precision
    the reading shows, provided that precision keeps at least 3 significant
    digits (0.578 matches 0.5782; 0.58 does not). Never a sign flip, never
    any other power-of-ten rescaling.

``financemath`` (the official FinanceMath comparison, quirks included)
    The number as written (scale words and "%" stripped, as the reference
    normalisation does) matches when, on absolute values: the ratio is an
    exact power of ten (so 10x, 1000x and sign flips pass); the smaller
    times 100, 1000 or 100000 is within 0.15% of the larger (each only when
    the values are that far apart); both round UP to the same value at 3
    decimals; or the signed prediction is within 0.15% of the gold.

``rounding`` (the financial-agents paper)
    Equal, or equal to the gold rounded to some number of decimal places
    (0 to 15, half-up or half-even).

``exact``
    Numeric equality of the value as stated with the gold.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal

from finmath_tasks.scorers.extraction import ParsedNumber

TOLERANT_REL_TOL = 0.002
TOLERANT_MIN_SIG_DIGITS = 3
FINANCEMATH_EPS = 0.0015


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


def _ceil3(x: float) -> float:
    # the reference rounds UP to 3 decimals: ceil(x * 1000) / 1000; where x * 1000
    # overflows (the reference raises), NaN makes the rule not apply
    y = x * 10**3
    return math.ceil(y) / 10**3 if math.isfinite(y) else math.nan


def _within(pred: float, gt: float) -> bool:
    eps = abs(gt) * FINANCEMATH_EPS
    return gt - eps <= pred <= gt + eps


def financemath_compare(p: float, gt: float) -> Match:
    """The official FinanceMath number comparison, evaluated with the same float operations."""
    v1, v2 = max(abs(gt), abs(p)), min(abs(gt), abs(p))
    if v1 != 0 and v2 != 0:
        ratio_log = math.log10(v1 / v2)  # inf when v1 / v2 overflows: never a power of ten
        if ratio_log.is_integer():
            return Match(True, "power_of_ten_or_sign" if ratio_log else "equal_absolute_value")
    if v2 <= v1 / 50 and _within(v2 * 100, v1):
        return Match(True, "x100")
    elif v2 <= v1 / 500 and _within(v2 * 1000, v1):
        return Match(True, "x1000")
    elif v2 <= v1 / 50000 and _within(v2 * 100000, v1):
        return Match(True, "x100000")
    if _ceil3(v1) == _ceil3(v2):
        return Match(True, "ceil_3_decimals")
    if _within(p, gt):
        return Match(True, "relative_tolerance_0.15%")
    return Match(False, "no_match")


def _financemath(pred: ParsedNumber, gold: float) -> Match:
    return financemath_compare(pred.written_value, gold)


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


PROFILES: dict[str, Callable[[ParsedNumber, float], Match]] = {
    "tolerant": _tolerant,
    "financemath": _financemath,
    "rounding": _rounding,
    "exact": _exact,
}


def check_profile(name: str) -> str:
    if name not in PROFILES:
        raise ValueError(
            f"Unknown comparison profile {name!r}; choose one of: {', '.join(PROFILES)}"
        )
    return name


def compare(profile: str, pred: ParsedNumber, gold: float) -> Match:
    """Does ``pred`` match ``gold`` under ``profile``?

    Never raises for any numbers: a non-finite gold (an input error) or
    prediction is a no-match whose rule says so.
    """
    if not math.isfinite(gold):
        return Match(False, "gold_not_finite")  # an input error: never a match, never a raise
    if not math.isfinite(pred.value):
        return Match(False, "prediction_not_finite")
    return PROFILES[check_profile(profile)](pred, gold)
