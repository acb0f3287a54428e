"""Why an answer is wrong: one error class per score key of every sample that is not correct.

A task's scorer calls these helpers and records, per score key, the class of a
wrong answer in the score's metadata under :data:`ERROR_CLASS_KEY` (a correct
answer has none). The classes are exclusive and exhaustive: the first that
applies, in this order (docs/error_classes.md describes them once, with each
benchmark's additions):

``no_answer:<reason>``
    No final answer: ``over_budget`` (the prompt did not fit), ``truncated``
    (the model stopped at its length limit: whatever number was read from the cut reply,
    which the score's metadata keeps), ``refused`` (a content filter, or a reply that
    declines and states no number after declining), ``hedged`` (two different answers
    offered), ``no_number`` (anything else: empty, no number, an unreadable reply).
``harness:<reason>``
    The key's own (official) reading found no answer where the model's output holds one
    our reading reads: ``program_cut`` (the reference's cut of the output, or a rule of
    its harness, left no program that runs, while the model's program ran and returned a
    number), ``extractor_missed`` (the reference's extractor read no number where the
    reply states its answer after an answer marker). The harness, not the model.
``program_failed:<reason>``
    A program answer (PoT, the agents' program stage) gave no number: ``timeout``,
    ``exception`` (it raised), ``no_result`` (no program, no entry function, or a
    value that is not a finite number).
``rejected``
    The metric's own rule refuses the answer without comparing it (a quirk of a
    paper's scoring, e.g. a gold type it never credits).
``scale``
    The answer times a power of ten (10^-12 .. 10^12, not 10^0) is accepted by the
    key's own comparison AND lies within the key's relative band of the gold
    (:func:`relative_band`): a percent written as a fraction, thousands as units. A
    rounding or ceiling rule that accepts far numbers (a gold of 3 accepting 2.6) never
    makes a ``scale``.
``sign``
    Minus the answer is accepted by the key's own comparison within its band, or equals
    the gold but for float noise (:data:`FLOAT_NOISE`): a program gold of
    0.14400000000000002 answered -0.144.
``within_1pct``
    A distance, not a cause: within :data:`ROUNDING_REL_TOL` (1%) of the gold
    (relative), yet not accepted.
``within_10pct``
    A distance, not a cause: within :data:`NEAR_REL_TOL` (10%) of the gold. On fresh
    variants the two distances mostly measure how far the new gold moved from the old one.
``wrong``
    Anything else (a gold of 0 with another answer is ``wrong``: no relative error).

Each benchmark adds its own classes in its folder (``tasks/<name>/error_classes.py``);
they all come before the numeric ones above for the answers they describe.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from finmath_tasks.scorers.comparisons import (
    TOLERANT_REL_TOL,
    Comparison,
    compare,
    tolerant,
)
from finmath_tasks.scorers.extraction import ParsedNumber

ERROR_CLASS_KEY = "error_class"
"""Score metadata key: the class of a wrong answer (absent when the answer is correct).

A keyed task's inner scorer records ``{score key: class}`` there (one entry per key whose
answer is wrong); each key's own score in the log (one scorer per key,
:mod:`finmath_tasks.scorers.keyed`) carries only its key's class, a string."""

NO_ANSWER = "no_answer"
HARNESS = "harness"
PROGRAM_FAILED = "program_failed"
REJECTED = "rejected"
SCALE = "scale"
SIGN = "sign"
ROUNDING = "within_1pct"
"""A distance (within 1% of the gold), never a cause."""
NEAR = "within_10pct"
"""A distance (within 10% of the gold), never a cause."""
WRONG = "wrong"

NO_ANSWER_REASONS = ("over_budget", "truncated", "refused", "hedged", "no_number")
"""Why there is no final answer, in the order they are tested."""
HARNESS_REASONS = ("program_cut", "extractor_missed")
"""Which part of the official harness missed the model's answer."""
PROGRAM_FAILURES = ("timeout", "exception", "no_result")

ROUNDING_REL_TOL = 0.01
"""``within_1pct``: within 1% of the gold (relative) but outside the key's tolerance."""
NEAR_REL_TOL = 0.10
"""``within_10pct``: within 10% of the gold (relative)."""
MAX_SCALE_EXP = 12
"""``scale``: rescalings by 10^k for 1 <= |k| <= this (up to trillions)."""
FLOAT_NOISE = 1e-9
"""Relative differences this small are float noise (a program gold's 0.14400000000000002)."""

TRUNCATED_STOPS = frozenset({"max_tokens", "model_length"})
"""Inspect stop reasons that mean the model was cut off at a length limit."""
REFUSED_STOPS = frozenset({"content_filter"})
REFUSAL_RE = re.compile(
    r"\b(?:I\s+(?:can(?:no|')t|am\s+(?:not\s+able|unable)|won't|will\s+not|must\s+decline)"
    r"|I'm\s+(?:not\s+able|unable)|unable\s+to\s+(?:answer|help|assist|provide|determine)"
    r"|cannot\s+(?:answer|help|assist|provide|determine))\b",
    re.IGNORECASE,
)
"""A reply that declines (searched only in replies nothing was read from); it is a refusal
only when no number follows the last declining phrase (a reply that declines, then assumes
and answers, states an answer)."""
_DIGIT_RE = re.compile(r"[0-9]")

SHARED_CLASSES = frozenset(
    [
        *(f"{NO_ANSWER}:{r}" for r in NO_ANSWER_REASONS),
        *(f"{HARNESS}:{r}" for r in HARNESS_REASONS),
        *(f"{PROGRAM_FAILED}:{r}" for r in PROGRAM_FAILURES),
        REJECTED,
        SCALE,
        SIGN,
        ROUNDING,
        NEAR,
        WRONG,
    ]
)
"""Every class of this module (each benchmark's folder lists its additions)."""


def stop_reason_of(output: Any) -> str | None:
    """Why the model stopped (Inspect's ``ModelOutput``); None without a model reply."""
    choices = getattr(output, "choices", None)
    return str(choices[0].stop_reason) if choices else None


def no_answer(reason: str) -> str:
    if reason not in NO_ANSWER_REASONS:
        raise ValueError(f"no_answer reason {reason!r} is not one of {NO_ANSWER_REASONS}")
    return f"{NO_ANSWER}:{reason}"


def harness(reason: str) -> str:
    if reason not in HARNESS_REASONS:
        raise ValueError(f"harness reason {reason!r} is not one of {HARNESS_REASONS}")
    return f"{HARNESS}:{reason}"


def is_truncated(stop_reason: str | None) -> bool:
    """Whether the model was stopped at its length limit."""
    return stop_reason in TRUNCATED_STOPS


def declines(output: str) -> bool:
    """Whether a reply declines and states no number after its last declining phrase."""
    tail = (output or "")[-5000:]
    ends = [m.end() for m in REFUSAL_RE.finditer(tail)]
    return bool(ends) and not _DIGIT_RE.search(tail, ends[-1])


def truncated_first(classes: Mapping[str, str], stop_reason: str | None) -> dict[str, str]:
    """``classes`` with every wrong key ``no_answer:truncated`` where the reply was stopped at
    its length limit (whatever was read from it), a prompt over budget kept."""
    if not is_truncated(stop_reason):
        return dict(classes)
    over = no_answer("over_budget")
    return {key: cls if cls == over else no_answer("truncated") for key, cls in classes.items()}


def program_failed(reason: str) -> str:
    if reason not in PROGRAM_FAILURES:
        raise ValueError(f"program_failed reason {reason!r} is not one of {PROGRAM_FAILURES}")
    return f"{PROGRAM_FAILED}:{reason}"


def no_answer_class(
    output: str = "",
    *,
    stop_reason: str | None = None,
    method: str | None = None,
    over_budget: bool = False,
) -> str:
    """The class of a reply nothing was read from: over budget, truncated (the model
    stopped at its length limit, or the extraction says so), refused (a content filter
    or a declining reply), hedged (the extraction found two answers), else no number."""
    if over_budget:
        return no_answer("over_budget")
    if is_truncated(stop_reason) or method == "truncated":
        return no_answer("truncated")
    if stop_reason in REFUSED_STOPS or declines(output):
        return no_answer("refused")
    if method == "hedged":
        return no_answer("hedged")
    return no_answer("no_number")


def program_failure_class(program: Mapping[str, Any] | None) -> str:
    """The class of a program run that gave no number (a sandbox record,
    ``{"ok", "value", "error", ...}``, or None when no program was run)."""
    if not program:
        return program_failed("no_result")
    error = str(program.get("error") or "")
    if error.lower().startswith("timeout") or "TimeoutError" in error:
        return program_failed("timeout")
    if program.get("ok") or program.get("returned") or not error:
        return program_failed("no_result")
    if error.startswith(("no function named", "no program", "no code")) or "is not a function" in (
        error
    ):
        return program_failed("no_result")
    return program_failed("exception")


def program_error_class(error: str) -> str:
    """:func:`program_failure_class` of a failure known only by its error text."""
    return program_failure_class({"ok": False, "error": error or "no program was run"})


def _shifted(pred: ParsedNumber, exponent: int) -> ParsedNumber:
    return replace(
        pred,
        written=pred.written.scaleb(exponent),
        quantum_exp=pred.quantum_exp + exponent,
        text=f"{pred.text} x 1e{exponent}",
    )


def _negated(pred: ParsedNumber) -> ParsedNumber:
    return replace(pred, written=-pred.written, text=f"-({pred.text})")


Accepts = Callable[[ParsedNumber], bool]
"""Whether the key's own comparison accepts a number as the gold, close by relative error
(a rescaled or negated answer must be both to be ``scale`` or ``sign``)."""

_BANDS: dict[Comparison, float] = {}


def declare_band(comparison: Comparison, rel_tol: float) -> Comparison:
    """Declare ``comparison``'s own relative tolerance band (e.g. ``tolerant``'s 0.2%)."""
    _BANDS[comparison] = rel_tol
    return comparison


declare_band(tolerant, TOLERANT_REL_TOL)


def relative_band(comparison: Comparison) -> float:
    """How close by relative error a rescaled or negated answer must be to the gold to be
    ``scale`` or ``sign``: the comparison's declared band; one that decides by rounding or
    by equality has none, and takes the 1% of ``within_1pct``."""
    return _BANDS.get(comparison, ROUNDING_REL_TOL)


def accepts_under(comparison: Comparison, gold: float) -> Accepts:
    """The key's comparison against ``gold`` as an :data:`Accepts`, within its
    :func:`relative_band` (or equal but for float noise); never raises."""
    band = relative_band(comparison)

    def accepts(pred: ParsedNumber) -> bool:
        try:
            error = relative_error(pred.value, gold)
            if error <= FLOAT_NOISE:
                return True
            return error <= band and compare(comparison, pred, gold).correct
        except (ArithmeticError, ValueError):
            return False

    return accepts


def relative_error(value: float, gold: float) -> float:
    """|value - gold| / |gold|; inf for a gold of 0 (or anything not finite)."""
    if not (math.isfinite(value) and math.isfinite(gold)) or gold == 0:
        return math.inf
    try:
        return abs(value - gold) / abs(gold)
    except OverflowError:
        return math.inf


def closeness_class(value: float, gold: float) -> str:
    """``within_1pct``, ``within_10pct`` or ``wrong`` by the relative error alone."""
    error = relative_error(value, gold)
    if error <= ROUNDING_REL_TOL:
        return ROUNDING
    if error <= NEAR_REL_TOL:
        return NEAR
    return WRONG


def number_class(
    pred: ParsedNumber,
    gold: float,
    accepts: Accepts | None,
    *,
    stop_reason: str | None = None,
) -> str:
    """The class of a number the key does not accept (``scale``, ``sign``, ``within_1pct``,
    ``within_10pct``, ``wrong``); ``accepts``: the key's own comparison (None: none to
    rescale under, e.g. a text metric: only the relative error decides). A reply stopped at
    its length limit (``stop_reason``) is ``no_answer:truncated`` whatever was read from it."""
    if is_truncated(stop_reason):
        return no_answer("truncated")
    try:
        value = pred.value
    except (ArithmeticError, ValueError, OverflowError):
        return WRONG
    if not math.isfinite(value) or not math.isfinite(gold):
        return WRONG
    if accepts is not None and pred.written.is_finite() and value != 0:
        for k in range(1, MAX_SCALE_EXP + 1):
            if accepts(_shifted(pred, k)) or accepts(_shifted(pred, -k)):
                return SCALE
        if accepts(_negated(pred)):
            return SIGN
    return closeness_class(value, gold)


def is_error_class(value: Any, extra: Iterable[str] = ()) -> bool:
    """Whether ``value`` is one class of this module or of ``extra`` (a benchmark's)."""
    return isinstance(value, str) and (value in SHARED_CLASSES or value in set(extra))
