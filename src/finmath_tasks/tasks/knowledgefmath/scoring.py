"""FinanceMath's official scoring: its number comparison and its answer-extraction prompt.

``financemath`` (the official comparison, quirks included)
    The number as written (scale words and "%" stripped, as the reference
    normalisation does) matches when, on absolute values: the ratio is an
    exact power of ten (so 10x, 1000x and sign flips pass); the smaller
    times 100, 1000 or 100000 is within 0.15% of the larger (each only when
    the values are that far apart); both round UP to the same value at 3
    decimals; or the signed prediction is within 0.15% of the gold.

The extraction call (``-T extractor=model``, on the ``grader`` role) is made as
the reference makes it: the instruction (``prompts/answer_extraction.txt``, in
our words) as a user message, then "Question: ... Solution: ..." as an
assistant message; temperature 1.0 and top_p 1.0 (the values its client
wrapper passes), at most 16 tokens; asked once more, at most 8 tokens, while
the reply mentions "none" (the camera-ready release asked gpt-4o-mini). The
first release (``knowledgefmath2023``) asked up to 3 more times: those further
asks are made only while the reply still says "none", and only that reading
reads them (``scoring2023.py``).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Literal

from finmath_tasks.scorers.comparisons import Match
from finmath_tasks.scorers.error_classes import declare_band
from finmath_tasks.scorers.extraction import ParsedNumber
from finmath_tasks.scorers.model_extraction import ModelExtraction

FINANCEMATH_EPS = 0.0015
OFFICIAL = "financemath"
"""Score key of the official comparison."""

EXTRACTION_INSTRUCTION = (Path(__file__).parent / "prompts" / "answer_extraction.txt").read_text(
    "utf-8"
)
EXTRACTION_TEMPLATE = "Question: {question}\nSolution:\n{solution}\n"
ExtractorMessages = Literal["reference", "user"]
"""``reference``: the instruction as a user message, the question and solution as an
assistant message after it; ``user``: both in one user message (for servers that
continue a final assistant message instead of answering it, e.g. llama.cpp's)."""

ANSWER_EXTRACTION = ModelExtraction(
    template=EXTRACTION_TEMPLATE,
    instruction=EXTRACTION_INSTRUCTION.strip(),
    retries_on_none=1,
    further_retries_on_none=2,  # the first release's reading asks up to 3 times more
    max_tokens=16,
    retry_max_tokens=8,
    temperature=1.0,
    top_p=1.0,
    paper_grader="gpt-3.5-turbo-1106 (the leaderboard's: gpt-4o-mini)",
)


def answer_extraction(messages: ExtractorMessages = "reference") -> ModelExtraction:
    """The extraction call, with the reference's message roles or one user message."""
    if messages == "reference":
        return ANSWER_EXTRACTION
    return replace(
        ANSWER_EXTRACTION,
        template=f"{EXTRACTION_INSTRUCTION.strip()}\n\n{EXTRACTION_TEMPLATE}",
        instruction=None,
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


# a rescaled answer is a scale error under this key only within its own 0.15% band
declare_band(financemath, FINANCEMATH_EPS)
