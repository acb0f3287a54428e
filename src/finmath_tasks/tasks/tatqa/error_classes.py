"""TAT-QA's additions to the shared error classes (:mod:`finmath_tasks.scorers.error_classes`),
for the official EM/F1 (``subset=all``; the arithmetic subset takes the shared classes).

``scale_label``
    The right number with the wrong scale: read with the question's own scale
    (thousand, million, billion, percent) the answer is an exact match. The paper singles
    these out (the right number in the wrong unit).
``partial_span``
    A span or multi-span answer with a partial F1 (above 0, below 1): some of the gold's
    words, not all.

Otherwise a numeric answer (both sides read by the official parser, the gold with its
scale applied) is ``scale`` (times a power of ten it matches to the official 4 decimals and
lies within 1% of the gold), ``sign`` (likewise), ``within_1pct`` or ``within_10pct`` (the
shared distances) or ``wrong``; an
empty answer is ``no_answer:<reason>`` (decided by the agents' scoring, which knows the
stage that gave it).
"""

from __future__ import annotations

import math
from typing import Any

from finmath_tasks.scorers.error_classes import (
    ROUNDING_REL_TOL,
    SCALE,
    SIGN,
    WRONG,
    closeness_class,
    relative_error,
)

SCALE_LABEL = "scale_label"
PARTIAL_SPAN = "partial_span"
CLASSES = (SCALE_LABEL, PARTIAL_SPAN)
MAX_SCALE_EXP = 12


def _same(a: float, b: float) -> bool:
    """Equal as the official comparison writes numbers (4 decimals)."""
    try:
        return f"{a:.4f}" == f"{b:.4f}"
    except (OverflowError, ValueError):
        return False


def official_classes(
    answer: Any,
    *,
    em: float,
    f1: float,
    relabelled_em: float,
    answer_type: str,
    predicted: float | None,
    gold: float | None,
) -> dict[str, str]:
    """The class of a wrong answer under ``em`` and ``f1`` (keys whose value is below 1).

    ``relabelled_em``: the EM of the answer read with the question's own scale;
    ``predicted``/``gold``: both sides' values as the official parser reads them (None:
    not a number)."""
    if em >= 1 and f1 >= 1:
        return {}
    if relabelled_em >= 1:
        cls = SCALE_LABEL
    elif answer_type in ("span", "multi-span") and 0 < f1 < 1:
        cls = PARTIAL_SPAN
    elif predicted is None or gold is None or not math.isfinite(predicted):
        cls = WRONG
    else:
        cls = numeric_class(predicted, gold)
    out = {"em": cls} if em < 1 else {}
    if f1 < 1:
        out["f1"] = cls
    return out


def _matches(value: float, gold: float) -> bool:
    """Equal at the official 4 decimals AND close by relative error (within 1%): 4 decimals
    alone would take any tiny number for a tiny gold."""
    return _same(value, gold) and relative_error(value, gold) <= ROUNDING_REL_TOL


def numeric_class(predicted: float, gold: float) -> str:
    if predicted != 0:
        for k in range(1, MAX_SCALE_EXP + 1):
            if _matches(predicted * 10**k, gold) or _matches(predicted / 10**k, gold):
                return SCALE
    if predicted != 0 and _matches(-predicted, gold):
        return SIGN
    return closeness_class(predicted, gold)
