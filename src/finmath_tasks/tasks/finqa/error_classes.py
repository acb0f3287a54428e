"""FinQA's additions to the shared error classes (:mod:`finmath_tasks.scorers.error_classes`).

``yes_no_flipped``
    A yes/no question (``greater``) answered with the opposite word, or a program whose
    value is the opposite word.
``other_program`` (``program_accuracy`` only)
    The predicted program is not equivalent to the gold program, yet it executes to the
    gold's value (another derivation of the right number).

A yes/no question answered with neither word is ``no_answer:<reason>``. Everything else
takes the shared classes: the answer keys (``tolerant``, ``rounding``, ...) compare the
final answer; ``execution_accuracy`` classifies the executed value (a program that does
not parse or run: ``program_failed:exception``; no ``Program:`` line:
``no_answer:<reason>``) under the reference's check (rounded to 5 decimals, equal);
``program_accuracy`` a non-equivalent program by its execution's class.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

from inspect_ai.solver import TaskState

from finmath_tasks.scorers.comparisons import number_from_float
from finmath_tasks.scorers.error_classes import (
    ERROR_CLASS_KEY,
    WRONG,
    no_answer_class,
    number_class,
    program_failed,
)
from finmath_tasks.solvers.agents.answers import Answer
from finmath_tasks.solvers.agents.scoring import AnswerCheck, Check, as_text

YES_NO_FLIPPED = "yes_no_flipped"
OTHER_PROGRAM = "other_program"
CLASSES = (YES_NO_FLIPPED, OTHER_PROGRAM)


def yes_no_class(said: str | None, output: str, stop_reason: str | None) -> str:
    """The class of a wrong yes/no answer: none read, or the opposite word."""
    if said is None:
        return no_answer_class(output, stop_reason=stop_reason)
    return YES_NO_FLIPPED


def execution_class(
    program: str | None,
    run_ok: bool,
    run_value: Any,
    gold: float | str,
    output: str,
    stop_reason: str | None,
) -> str:
    """The class of a program whose execution does not give ``exe_ans``."""
    if program is None:
        return no_answer_class(output, stop_reason=stop_reason)
    if not run_ok or run_value is None:
        return program_failed("exception")
    if isinstance(gold, str) or isinstance(run_value, str):
        return YES_NO_FLIPPED if isinstance(gold, str) and isinstance(run_value, str) else WRONG
    value = float(run_value)
    if not math.isfinite(value):
        return program_failed("no_result")

    def accepts(pred: Any) -> bool:  # the reference's check: equal after rounding to 5
        try:
            return round(pred.value, 5) == float(gold)
        except (ArithmeticError, ValueError):
            return False

    return number_class(number_from_float(value), float(gold), accepts)


def yes_no_check(check: AnswerCheck) -> AnswerCheck:
    """The agents' ``check``, with a yes/no gold answered by the other word classed
    ``yes_no_flipped`` (the shared check calls any other text ``wrong``)."""

    def checked(answer: Answer, state: TaskState) -> Check:
        result = check(answer, state)
        gold = state.target.text.strip().lower()
        said = yes_no(as_text(answer))
        classes = result.metadata.get(ERROR_CLASS_KEY)
        if gold in ("yes", "no") and said is not None and said != gold and classes:
            flipped = dict.fromkeys(classes, YES_NO_FLIPPED)
            return replace(result, metadata={**result.metadata, ERROR_CLASS_KEY: flipped})
        return result

    return checked


def yes_no(text: str) -> str | None:
    """The first yes/no word of ``text`` (lower-cased), if any."""
    m = re.search(r"\b(yes|no)\b", text, re.I)
    return m.group(1).lower() if m else None
