"""SARA's additions to the shared error classes (:mod:`finmath_tasks.scorers.error_classes`).

``wrong_label`` (``entailment``)
    The verdict read is the other label (Entailment for Contradiction or the reverse).
``within_margin`` (``exact_dollar`` only)
    Not the exact dollar amount and more than 1% off, but inside the paper's margin
    (SARA's delta = |y_hat - y| / max(0.1 y, 5000) below 1).
``over_margin`` (both tax keys)
    Off by more than the paper's margin; the score's ``delta`` says by how much (in
    margins: 2.5 is two and a half times the margin).

Before them, for a tax amount: ``scale`` (the amount times a power of ten is accepted by
the key), ``sign``; ``exact_dollar`` also has ``within_1pct`` (within 1%) before
``within_margin``. A reply with no verdict or no dollar amount is ``no_answer:<reason>``
(``hedged`` when the answer line names both verdicts); a prompt over the context budget
is ``no_answer:over_budget``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from finmath_tasks.scorers.error_classes import (
    ROUNDING,
    ROUNDING_REL_TOL,
    SCALE,
    SIGN,
    relative_error,
)
from finmath_tasks.scorers.extraction import ParsedNumber

WRONG_LABEL = "wrong_label"
WITHIN_MARGIN = "within_margin"
OVER_MARGIN = "over_margin"
CLASSES = (WRONG_LABEL, WITHIN_MARGIN, OVER_MARGIN)
MAX_SCALE_EXP = 12


def tax_class(
    pred: ParsedNumber,
    gold: float,
    accepts: Callable[[float], bool],
    within_margin: bool,
    exact_key: bool,
) -> str:
    """The class of a tax amount a key does not accept (``accepts``: the key's check of
    an amount; ``within_margin``: the paper's delta is below 1)."""
    value = pred.value

    def accepted(amount: float) -> bool:
        try:
            return math.isfinite(amount) and accepts(amount)
        except (ArithmeticError, ValueError):
            return False

    if value != 0:
        for k in range(1, MAX_SCALE_EXP + 1):
            if accepted(value * 10**k) or accepted(value / 10**k):
                return SCALE
        if accepted(-value):
            return SIGN
    if exact_key and relative_error(value, gold) <= ROUNDING_REL_TOL:
        return ROUNDING
    if exact_key and within_margin:
        return WITHIN_MARGIN
    return OVER_MARGIN
