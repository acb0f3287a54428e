"""The numeric answer scorer shared by every benchmark.

One score per sample, with one value per comparison profile (for example
``{"financemath": 1, "tolerant": 0}``), so the official metric of a paper and
our stricter one come out of the same run side by side.

The predicted number comes from, in order:
1. a program result a code-executing solver recorded in the sample store
   under ``PROGRAM_RESULT_KEY`` (program-of-thought); the score then also
   carries ``execution_rate`` (1 if the program ran and returned a number);
2. otherwise the model's text, read by rule-based extraction
   (:mod:`finmath_tasks.scorers.extraction`) or, with ``extractor="model"``,
   by the ``grader`` model role at temperature 0, as the FinanceMath
   reference does. An extractor reply that is not a number or "None" is
   recorded and the sample is left unscored, never guessed.

A sample whose target is empty (a split whose answers are withheld) is
generated and logged but unscored, so it never counts as wrong.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from inspect_ai.model import GenerateConfig, get_model
from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState

from finmath_tasks.scorers.extraction import Extraction, ParsedNumber, extract_answer, parse_number
from finmath_tasks.scorers.profiles import Match, check_profile, compare, number_from_float

PROGRAM_RESULT_KEY = "finmath_program_result"
"""Store key under which code-executing solvers record their program's result:
``{"ok": bool, "value": float | None, "error": str | None, "gold_value": float | None}``."""

Extractor = Literal["rules", "model"]

# FinanceMath's answer-extraction instruction (reference evaluation code).
MODEL_EXTRACTION_INSTRUCTION = """Extract the final answer of the question as a numeric value from the given solution. If you cannot extract an answer, return "None".

You should either return "None" or a numeric value without any additional words."""

MODEL_EXTRACTION_TEMPLATE = """{instruction}

Question: {question}
Solution:
{solution}
"""

STDERR_TAIL_CHARS = 800
"""How much of a failed program's stderr the score explanation shows."""

MODEL_EXTRACTION_CONFIG = GenerateConfig(temperature=0.0, max_tokens=16)
MODEL_EXTRACTION_MAX_SOLUTION_CHARS = 60_000


def check_extractor(name: str) -> Extractor:
    if name not in ("rules", "model"):
        raise ValueError(f"Unknown extractor {name!r}; choose 'rules' or 'model'")
    return name  # type: ignore[return-value]


async def extract_with_model(question: str, solution: str) -> tuple[Extraction, str]:
    """Ask the grader model for the final number; returns the extraction and the raw reply."""
    model = get_model(role="grader")
    prompt = MODEL_EXTRACTION_TEMPLATE.format(
        instruction=MODEL_EXTRACTION_INSTRUCTION,
        question=question,
        solution=solution[-MODEL_EXTRACTION_MAX_SOLUTION_CHARS:],
    )
    reply = ""
    # The reference asks once more when the extractor answers "None".
    for _ in range(2):
        result = await model.generate(prompt, config=MODEL_EXTRACTION_CONFIG)
        reply = result.completion.strip()
        if "none" not in reply.lower():
            break
    if "none" in reply.lower():
        return Extraction(None, "model_none", "the extractor found no answer"), reply
    number = parse_number(reply)
    if number is None:
        return Extraction(
            None, "model_unparseable", f"extractor reply is not a number: {reply[:200]!r}"
        ), reply
    return Extraction(number, "model", "grader model extraction"), reply


def _gold(target: Target) -> float | None:
    text = target.text.strip()
    if not text:
        return None
    try:
        gold = float(text)
    except ValueError as e:
        raise ValueError(f"target {text!r} is not a number") from e
    if not math.isfinite(gold):
        raise ValueError(f"target {text!r} is not a finite number")
    return gold


@scorer(metrics={"*": [accuracy(), stderr()]})
def numeric_answer(
    profiles: Sequence[str] = ("tolerant",),
    extractor: Extractor = "rules",
) -> Scorer:
    """Score a numeric final answer under each of ``profiles``.

    Args:
      profiles: comparison profiles (tolerant, financemath, rounding, exact);
        each becomes one key of the score value.
      extractor: "rules" (default) or "model" (the ``grader`` model role).
    """
    profile_names = [check_profile(p) for p in profiles]
    check_extractor(extractor)

    async def score(state: TaskState, target: Target) -> Score:
        output = state.output.completion if state.output else ""
        program: dict[str, Any] | None = state.store.get(PROGRAM_RESULT_KEY)
        metadata: dict[str, Any] = {"profiles": profile_names, "extractor": extractor}
        number: ParsedNumber | None
        gold = _gold(target)

        if program is not None:
            result = program.get("value")
            number = None
            if program.get("ok") and isinstance(result, int | float) and math.isfinite(result):
                number = number_from_float(result)
            detail = program.get("error") or "value returned by solution()"
            stderr_tail = (program.get("stderr") or "").strip()[-STDERR_TAIL_CHARS:]
            if number is None and stderr_tail:
                detail += f"\nstderr (tail):\n{stderr_tail}"
            extraction = Extraction(number, "program", detail)
            metadata["program"] = program
            if program.get("gold_value") is not None:
                # the reference compares program results with the re-executed gold program
                gold = float(program["gold_value"])
        elif extractor == "model":
            extraction, reply = await extract_with_model(state.input_text, output)
            metadata["extractor_reply"] = reply
            number = extraction.number
        else:
            extraction = extract_answer(output)
            number = extraction.number

        metadata.update(
            method=extraction.method,
            extraction_detail=extraction.detail,
            extracted=number.text if number else None,
            extracted_value=number.value if number else None,
            gold=gold,
        )
        answer = number.text if number else None

        if gold is None:
            return Score.unscored(
                reason="no_gold_answer",
                answer=answer,
                explanation=f"No gold answer for this sample (answers withheld); extracted {answer!r} ({extraction.method}).",
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
        for name in profile_names:
            matches[name] = (
                compare(name, number, gold)
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
            f"extracted {answer} [{extraction.method}]"
            if number is not None
            else f"no answer [{extraction.method}: {extraction.detail}]"
        )
        return Score(
            value=values,
            answer=answer,
            explanation=f"{found}; gold {gold!r}; {verdicts}",
            metadata=metadata,
        )

    return score
