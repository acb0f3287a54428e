"""The numeric answer scorer shared by every benchmark whose answer is a number.

One score per sample, with one value per named comparison (for example
``{"official": 1, "tolerant": 0}``), so the official metric of a paper and
our stricter one come out of the same run side by side.

Parameters choose, per benchmark:
- ``comparisons``: name -> comparison function (``scorers.comparisons`` or the
  benchmark's official one); each name becomes a key of the score value.
- ``answer``: ``"text"`` reads the model's output, by rules
  (:mod:`finmath_tasks.scorers.extraction`) or, with ``extractor="model"``, by
  the ``grader`` model role (:mod:`finmath_tasks.scorers.model_extraction`);
  ``"program"`` takes the value of the program a solver ran in the sandbox
  (``solvers.pot``), and adds ``execution_rate`` to the score.
- ``gold``: ``"target"`` (the sample's target) or ``"program"`` (the value of
  the re-executed gold program the solver recorded beside the answer, falling
  back to the target).

A sample whose target is empty (answers withheld) is generated and logged but
unscored. Whatever goes wrong while scoring one sample (an odd number, an
exception in our code) becomes that sample's unscored result with the reason
in its explanation; it never ends the evaluation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState

from finmath_tasks.scorers.comparisons import (
    Comparison,
    GoldNumber,
    Match,
    compare,
    number_from_float,
)
from finmath_tasks.scorers.extraction import Extraction, ParsedNumber, extract_answer
from finmath_tasks.scorers.model_extraction import ModelExtraction, extract_with_model
from finmath_tasks.solvers.pot import PROGRAM_RESULT_KEY

Extractor = Literal["rules", "model"]
AnswerSource = Literal["text", "program"]
GoldSource = Literal["target", "program"]

STDERR_TAIL_CHARS = 800
"""How much of a failed program's stderr the score explanation shows."""
MAX_SHOWN_CHARS = 200
"""An extracted number's text is cut to this length where a score shows it."""
SHORT_REASON_CHARS = 80
"""How much of the reason there is no answer the samples list shows."""


def _gold(target: Target) -> float | None:
    """The target as a number that keeps its written digits (for ``rounding``)."""
    text = target.text.strip()
    if not text:
        return None
    try:
        gold = float(text)
    except ValueError as e:
        raise ValueError(f"target {text!r} is not a number") from e
    if not math.isfinite(gold):
        raise ValueError(f"target {text!r} is not a finite number")
    try:
        return GoldNumber(text)
    except ValueError:  # float() reads forms Decimal does not ("1_000"): digits of the float
        return gold


def _program_extraction(program: Mapping[str, Any]) -> Extraction:
    value = program.get("value")
    number: ParsedNumber | None = None
    if (
        program.get("ok")
        and isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
    ):
        number = number_from_float(float(value))
    detail = program.get("error") or "value returned by the program"
    stderr_tail = (program.get("stderr") or "").strip()[-STDERR_TAIL_CHARS:]
    if number is None and stderr_tail:
        detail += f"\nstderr (tail):\n{stderr_tail}"
    return Extraction(number, "program", detail)


def _short_reason(extraction: Extraction) -> str:
    """What the samples list shows instead of an answer, e.g. ``no answer: IndentationError``."""
    first = (extraction.detail or extraction.method).strip().splitlines()
    reason = first[0] if first else extraction.method
    return f"no answer: {reason[:SHORT_REASON_CHARS]}"


@scorer(metrics={"*": [accuracy(), stderr()]})
def numeric_answer(
    comparisons: Mapping[str, Comparison],
    answer: AnswerSource = "text",
    gold: GoldSource = "target",
    extractor: Extractor = "rules",
    model_extraction: ModelExtraction | None = None,
) -> Scorer:
    """Score a numeric final answer under each of ``comparisons``.

    Args:
      comparisons: score key -> comparison; e.g. the paper's official one and ours.
      answer: "text" (the model's output) or "program" (the sandboxed program's value).
      gold: "target", or "program" (the re-executed gold program's value).
      extractor: for text answers, "rules" (default) or "model" (the ``grader`` role).
      model_extraction: the grader prompt and retries (``extractor="model"``).
    """
    if not comparisons:
        raise ValueError("numeric_answer needs at least one comparison")
    names = list(comparisons)
    spec = model_extraction or ModelExtraction()

    async def score(state: TaskState, target: Target) -> Score:
        try:
            return await _score(state, target)
        except Exception as exc:  # one sample's problem never ends the evaluation
            return Score.unscored(
                reason="scorer_error",
                explanation=f"the scorer failed on this sample: {type(exc).__name__}: {exc}"[:2000],
                metadata={"error": f"{type(exc).__name__}: {exc}"[:2000]},
            )

    async def _score(state: TaskState, target: Target) -> Score:
        output = state.output.completion if state.output else ""
        metadata: dict[str, Any] = {"comparisons": names, "answer_source": answer}
        gold_value = _gold(target)
        program: dict[str, Any] | None = None

        if answer == "program":
            program = state.store.get(PROGRAM_RESULT_KEY)
            if program is None:
                program = {"ok": False, "value": None, "error": "no program was run"}
            extraction = _program_extraction(program)
            metadata["program"] = program
            if gold == "program" and program.get("gold_value") is not None:
                gold_value = float(program["gold_value"])
        elif extractor == "model":
            result = await extract_with_model(state.input_text, output, spec)
            extraction = result.extraction
            metadata["extractor"] = "model"
            metadata["extractor_reply"] = result.reply
            metadata["grader_model"] = result.grader_model
        else:
            # an output cut off by max_tokens without an explicit marker has no final answer
            stop_reason = state.output.stop_reason if state.output else None
            extraction = extract_answer(output, truncated=stop_reason == "max_tokens")
            metadata["extractor"] = "rules"
        number = extraction.number

        metadata.update(
            method=extraction.method,
            extraction_detail=extraction.detail,
            extracted=number.text[:MAX_SHOWN_CHARS] if number else None,
            extracted_value=number.value if number else None,
            gold=float(gold_value) if gold_value is not None else None,
        )
        shown = number.text[:MAX_SHOWN_CHARS] if number else _short_reason(extraction)

        if gold_value is None:
            return Score.unscored(
                reason="no_gold_answer",
                answer=shown,
                explanation=(
                    "No gold answer for this sample (answers withheld); "
                    f"extracted {number.text[:MAX_SHOWN_CHARS] if number else None!r} "
                    f"({extraction.method})."
                ),
                metadata=metadata,
            )
        if extraction.method == "model_unparseable":
            return Score.unscored(
                reason="extractor_unparseable",
                answer=None,
                explanation=extraction.detail,
                metadata=metadata,
            )

        matches: dict[str, Match] = {}
        for name, comparison in comparisons.items():
            matches[name] = (
                compare(comparison, number, gold_value)
                if number is not None
                else Match(False, f"no_answer ({extraction.method})")
            )
        values: dict[str, float] = {name: 1.0 if m.correct else 0.0 for name, m in matches.items()}
        if program is not None:
            values["execution_rate"] = 1.0 if number is not None else 0.0
        metadata["rules"] = {name: m.rule for name, m in matches.items()}

        verdicts = "; ".join(
            f"{name}: {'correct' if m.correct else 'incorrect'} ({m.rule})"
            for name, m in matches.items()
        )
        found = (
            f"extracted {shown} [{extraction.method}]"
            if number is not None
            else f"no answer [{extraction.method}: {extraction.detail}]"
        )
        return Score(
            value=values,
            answer=shown,
            explanation=f"{found}; gold {float(gold_value)!r}; {verdicts}",
            metadata=metadata,
        )

    return score
