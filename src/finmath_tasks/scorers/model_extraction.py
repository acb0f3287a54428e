"""An LLM that reads the final number out of a solution, on the ``grader`` model role.

Papers that score free-text answers often ask a model for the final number
(some with gpt-4o-mini). This module does that with a template
chosen by the benchmark (placeholders ``{question}`` and ``{solution}``), at
temperature 0, and reads the reply strictly: the reply must be "None" or one
number, nothing else. Anything else is a parse failure: no answer (incorrect,
in the denominator, flagged ``unreadable``) with the reply in the explanation,
never a guessed number. A benchmark whose reference normalises the reply
before reading it passes its own reader to the scorer (``numeric_answer(readers=)``).

Which model answers: Inspect's ``grader`` role (``--model-role
grader=openai/gpt-4o-mini``). Without that role Inspect falls back to the
evaluated model itself; the score's metadata then says
``grader_model: <model> (evaluated model: no grader role given)`` and a warning
is logged, so a log never hides that a model graded its own answers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from inspect_ai.model import GenerateConfig, get_model

from finmath_tasks.scorers.extraction import Extraction, parse_reply_number

logger = logging.getLogger(__name__)

GRADER_ROLE = "grader"
MAX_REPLY_CHARS = 2000
"""How much of the grader's reply a score keeps (a reply can be enormous)."""

DEFAULT_TEMPLATE = """Read the solution below and reply with its final answer as a single number, \
without units or words. If the solution gives no final numeric answer, reply "None".

Question: {question}
Solution:
{solution}
"""


@dataclass(frozen=True)
class ModelExtraction:
    """How to ask the grader for the final number."""

    template: str = DEFAULT_TEMPLATE
    retries_on_none: int = 0
    """Ask again this many times when the grader answers "None" (some papers ask once more)."""
    max_solution_chars: int = 60_000
    """The solution's tail that is sent (long outputs end with their answer)."""
    max_tokens: int = 16


@dataclass(frozen=True)
class ModelExtractionResult:
    extraction: Extraction
    reply: str
    grader_model: str


def _is_none_reply(reply: str) -> bool:
    # as the papers' reference code does: any reply mentioning "none" counts as no answer
    return "none" in reply.lower()


def _role_bound() -> bool:
    from inspect_ai.model import model_roles

    return GRADER_ROLE in model_roles()


async def extract_with_model(
    question: str, solution: str, spec: ModelExtraction = ModelExtraction()
) -> ModelExtractionResult:
    """Ask the grader for the final number of ``solution``; never raises for a bad reply."""
    model = get_model(role=GRADER_ROLE)
    grader = str(model)
    if not _role_bound():
        logger.warning(
            "no %r model role given: the evaluated model %s extracts its own answers "
            "(pass --model-role grader=<model>)",
            GRADER_ROLE,
            grader,
        )
        grader += " (evaluated model: no grader role given)"
    prompt = spec.template.format(question=question, solution=solution[-spec.max_solution_chars :])
    config = GenerateConfig(temperature=0.0, max_tokens=spec.max_tokens)
    reply = ""
    for _ in range(1 + max(0, spec.retries_on_none)):
        result = await model.generate(prompt, config=config)
        reply = result.completion.strip()
        if not _is_none_reply(reply):
            break
    kept = reply[:MAX_REPLY_CHARS]
    if _is_none_reply(reply):
        return ModelExtractionResult(
            Extraction(None, "model_none", "the extractor found no answer"), kept, grader
        )
    number = parse_reply_number(reply)
    if number is None:
        return ModelExtractionResult(
            Extraction(
                None, "model_unparseable", f"extractor reply is not a number: {reply[:200]!r}"
            ),
            kept,
            grader,
        )
    return ModelExtractionResult(
        Extraction(number, "model", "grader model extraction"), kept, grader
    )
