"""FinanceMath's official scoring: its number comparison and its answer-extraction prompt.

``financemath`` (the official comparison, quirks included)
    The number as written (scale words and "%" stripped, as the reference
    normalisation does) matches when, on absolute values: the ratio is an
    exact power of ten (so 10x, 1000x and sign flips pass); the smaller
    times 100, 1000 or 100000 is within 0.15% of the larger (each only when
    the values are that far apart); both round UP to the same value at 3
    decimals; or the signed prediction is within 0.15% of the gold.

The reference asks gpt-4o-mini for the final number of a chain-of-thought
answer with the prompt in ``prompts/answer_extraction.txt`` and asks once more
when it answers "None"; ``-T extractor=model`` does the same on the ``grader``
role.
"""

from __future__ import annotations

import math
from pathlib import Path

from finmath_tasks.scorers.comparisons import Match
from finmath_tasks.scorers.extraction import ParsedNumber
from finmath_tasks.scorers.model_extraction import ModelExtraction

FINANCEMATH_EPS = 0.0015
OFFICIAL = "financemath"
"""Score key of the official comparison."""

ANSWER_EXTRACTION = ModelExtraction(
    template=(Path(__file__).parent / "prompts" / "answer_extraction.txt").read_text("utf-8"),
    retries_on_none=1,
)


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


def financemath(pred: ParsedNumber, gold: float) -> Match:
    """The official comparison applied to the number as written (the reference's normalisation)."""
    return financemath_compare(pred.written_value, gold)
