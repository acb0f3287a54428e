"""An LLM that reads the final number out of a solution, on the ``grader`` model role.

Papers that score free-text answers often ask a model for the final number
(some with gpt-4o-mini). This module does that with a template chosen by the
benchmark (placeholders ``{question}`` and ``{solution}``) and the call the
benchmark's reference makes (:class:`ModelExtraction`: message roles,
temperature, token limits, asks again after "None"; by default one user
message at temperature 0, where a benchmark states nothing), and reads the
reply strictly: the reply must be "None" or one number, nothing else. Anything
else is a parse failure: no answer (incorrect, in the denominator, flagged
``unreadable``) with the reply in the explanation, never a guessed number. A benchmark whose reference normalises the reply
before reading it passes its own reader to the scorer (``numeric_answer(readers=)``).

Which model answers: the rule of :mod:`finmath_tasks.scorers.grader`, Inspect's
``grader`` role (``--model-role grader=openai/gpt-4o-mini``), else the evaluated
model itself, warned about once per run; the score's metadata names it
(``grader_model``, ``grader_source``), so a log never hides that a model graded
its own answers.
"""

from __future__ import annotations

from dataclasses import dataclass

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageUser,
    GenerateConfig,
)

from finmath_tasks.scorers.extraction import Extraction, parse_reply_number
from finmath_tasks.scorers.grader import Grader

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
    instruction: str | None = None
    """When given, it is sent first as a user message and the filled ``template`` after
    it as an *assistant* message (some references do so); otherwise the filled template
    is one user message. (Providers that read a final assistant message as the start of
    their own reply, e.g. Anthropic's, continue it.)"""
    retries_on_none: int = 0
    """Ask again this many times while the reply mentions "none" (some papers ask once more);
    the reply after them is the one read (``ModelExtractionResult.reply``)."""
    further_retries_on_none: int = 0
    """Further asks, after those, while the reply still mentions "none", for a reading that
    reads on (another version of a paper's scoring): all replies are in ``replies``."""
    max_solution_chars: int = 60_000
    """The solution's tail that is sent (long outputs end with their answer)."""
    max_tokens: int = 16
    retry_max_tokens: int | None = None
    """Token limit of the asks after the first (None: ``max_tokens``)."""
    temperature: float | None = 0.0
    """None: the provider's default."""
    top_p: float | None = None
    """None: the provider's default."""
    paper_grader: str = ""
    """The model the benchmark's reference extracted with (named in the warning of a run
    without a ``grader`` role)."""


@dataclass(frozen=True)
class ModelExtractionResult:
    extraction: Extraction
    reply: str
    """The reply read (after ``retries_on_none``), cut to ``MAX_REPLY_CHARS``."""
    grader: Grader
    replies: tuple[str, ...] = ()
    """Every reply in order (each cut to ``MAX_REPLY_CHARS``)."""
    reply_index: int = 0
    """The position of ``reply`` in ``replies``."""


def extraction_messages(question: str, solution: str, spec: ModelExtraction) -> list[ChatMessage]:
    """The messages of one ask (the same for every ask of a sample)."""
    filled = spec.template.format(question=question, solution=solution[-spec.max_solution_chars :])
    if spec.instruction is None:
        return [ChatMessageUser(content=filled)]
    return [ChatMessageUser(content=spec.instruction), ChatMessageAssistant(content=filled)]


def _is_none_reply(reply: str) -> bool:
    # as the papers' reference code does: any reply mentioning "none" counts as no answer
    return "none" in reply.lower()


async def extract_with_model(
    question: str, solution: str, grader: Grader, spec: ModelExtraction = ModelExtraction()
) -> ModelExtractionResult:
    """Ask ``grader`` for the final number of ``solution``; never raises for a bad reply."""
    model = grader.model
    messages = extraction_messages(question, solution, spec)
    first = GenerateConfig(
        temperature=spec.temperature, top_p=spec.top_p, max_tokens=spec.max_tokens
    )
    retry = first.merge(GenerateConfig(max_tokens=spec.retry_max_tokens or spec.max_tokens))
    retries = max(0, spec.retries_on_none)
    replies: list[str] = []
    for attempt in range(1 + retries + max(0, spec.further_retries_on_none)):
        result = await model.generate(messages, config=retry if attempt else first)
        replies.append(result.completion.strip())
        if not _is_none_reply(replies[-1]):
            break
    index = min(retries, len(replies) - 1)
    reply = replies[index]
    kept = reply[:MAX_REPLY_CHARS]
    shown = tuple(r[:MAX_REPLY_CHARS] for r in replies)

    def done(extraction: Extraction) -> ModelExtractionResult:
        return ModelExtractionResult(extraction, kept, grader, shown, index)

    if _is_none_reply(reply):
        return done(Extraction(None, "model_none", "the extractor found no answer"))
    number = parse_reply_number(reply)
    if number is None:
        return done(
            Extraction(
                None, "model_unparseable", f"extractor reply is not a number: {reply[:200]!r}"
            )
        )
    return done(Extraction(number, "model", "grader model extraction"))
