"""MathHay's evidence for the causes of a wrong answer: its gold ``solve()`` and the haystack.

The gold is the question's Python ``solve()``, whose literals are quantities of the
relevant documents. :func:`mathhay_causes` re-runs it in the sandbox
(:func:`finmath_tasks.scorers.causes_gold.gold_findings`) twice at most:

1. against the question and the relevant documents, as the prompt holds them (their
   places in the prompt are recorded at solve time, ``relevant_spans`` in the haystack's
   store record): one input replaced by another of their numbers (``misread``), rescaled
   (``unit``), an intermediate value (``partial``), rounded intermediates (``precision``),
   a literal written nowhere in them (``gold_suspect``), the reply's arithmetic holding on
   numbers they write as such, usual constants and earlier results (``method``; not on a
   sum or ratio of two of their numbers, which the shared check also takes: long
   documents write hundreds of numbers, and two of them make almost any number);
2. where no reading of step 1 gives an answer, against the numbers of the rest of the
   haystack (the irrelevant documents) that the reply itself writes: one input replaced by
   such a number is a ``misread`` of another document. Only numbers the reply writes are
   tried: a haystack of 128K tokens writes thousands of numbers, and one of them giving the
   answer by chance is no evidence; a number the model wrote and computed with is.

Every misread names the input (its text and line in ``solve()``), the number, where it is
written (``relevant`` or ``haystack``) and the text around it in the prompt.

What it cannot decide: a sample whose log predates the recorded places of the relevant
documents (no check runs: ``unexplained``), a reply whose answer no re-run gives and whose
stated calculations do not all hold on written numbers (``unexplained``), a misread of a
number the reply does not write in another document (not claimed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from finmath_tasks.scorers.causes import (
    METHOD,
    MISREAD,
    CauseInput,
    Finding,
    by_chance,
    evidence,
)
from finmath_tasks.scorers.causes_arithmetic import check_arithmetic
from finmath_tasks.scorers.causes_gold import gold_findings, is_written, written_forms

ENTRY_POINT = "solve"
PROMPT_KEY = "prompt"
""":class:`CauseInput` metadata key the scorer fills: the prompt the model saw."""
HAYSTACK_STORE_KEY = "haystack"
""":class:`CauseInput` metadata key the scorer fills: the haystack's store record."""
SPANS_KEY = "relevant_spans"
"""Haystack store record key: ``[start, end]`` of each relevant document in the prompt."""
CONTEXT_CHARS = 80
SCALE_WORDS = {1e3: " thousand", 1e6: " million", 1e9: " billion", 1e12: " trillion"}


_STEP_BREAK = re.compile(r"(?<=[;.])\s+")


def reply_text(output: str, reasoning: Any) -> str:
    """The reply as the cause checks read it: the JSON's ``reasoning`` string decoded, one
    step a line (broken at "; " and at a sentence's end, so that each stated calculation
    is on a line of its own), then the rest of the output without that string."""
    if not isinstance(reasoning, str) or not reasoning.strip():
        return output
    encoded = json.dumps(reasoning)[1:-1]
    rest = output.replace(encoded, " ") if encoded else output
    return "\n".join(_STEP_BREAK.split(reasoning)) + "\n" + rest


def relevant_spans(prompt: str, documents: Sequence[str]) -> list[list[int]]:
    """Where each of ``documents`` stands in ``prompt`` (those found), in prompt order."""
    spans = []
    for doc in documents:
        at = prompt.find(doc) if doc else -1
        if at >= 0:
            spans.append([at, at + len(doc)])
    return sorted(spans)


def _spans(record: Any, prompt: str) -> list[tuple[int, int]] | None:
    raw = record.get(SPANS_KEY) if isinstance(record, Mapping) else None
    if not isinstance(raw, list):
        return None
    spans = []
    for span in raw:
        if (
            isinstance(span, list | tuple)
            and len(span) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in span)
            and 0 <= span[0] <= span[1] <= len(prompt)
        ):
            spans.append((span[0], span[1]))
    return sorted(spans)


def _context(prompt: str, at: int, end: int) -> str:
    start = max(0, at - CONTEXT_CHARS)
    return " ".join(prompt[start : end + CONTEXT_CHARS].split())


def _where(prompt: str, spans: Sequence[tuple[int, int]], written: str) -> tuple[str, str]:
    """(``relevant``/``question``, the text around the first place ``written`` stands)."""
    text = written.split(" (x")[0].rstrip("%")
    number = re.compile(rf"(?<![\w.]){re.escape(text)}(?![\d])")
    for start, end in spans:
        found = number.search(prompt, start, end)
        if found:
            return "relevant", _context(prompt, found.start(), found.end())
    return "question", ""


def _haystack_document(
    prompt: str, spans: Sequence[tuple[int, int]], reply: str
) -> tuple[str, dict[float, str]]:
    """The numbers of the prompt outside the relevant documents that the reply writes (as
    a short text that writes each as the prompt does), and the text around each."""
    from finmath_tasks.variants import find_numbers

    said = set()
    for w in find_numbers(reply):
        said.update({round(w.value, 9), round(w.value * w.scale, 9)})
    pieces: dict[str, str] = {}
    around: dict[float, str] = {}
    cursor = 0
    for start, end in [*spans, (len(prompt), len(prompt))]:
        rest = prompt[cursor:start]
        for w in find_numbers(rest):
            values = {round(w.value, 9), round(w.value * w.scale, 9)}
            if w.percent:
                values.add(round(w.value / 100, 9))
            if not values & said:
                continue
            text = w.text + ("%" if w.percent else "") + SCALE_WORDS.get(w.scale, "")
            if text not in pieces:
                pieces[text] = _context(prompt, cursor + w.start, cursor + w.end)
                for v in values:
                    around.setdefault(v, pieces[text])
        cursor = end
    return " ; ".join(pieces), around


def _placed(finding: Finding, where: str, context: str) -> Finding:
    details = dict(finding.evidence)
    details.update(document=where, context=context)
    if where == "haystack":
        details["why"] = f"{details.get('why', '')}, a number of another document of the haystack"
    return Finding(finding.cause, evidence(**details), finding.value)


def _inputs_written(data: CauseInput, relevant: str) -> bool:
    """Whether every number the reply's stated calculations use is one the question or the
    relevant documents write (as written, a percent's fraction, with its scale word), a
    usual constant or an earlier result. Stricter than the shared check, which also takes
    a sum, difference, product or ratio of two written numbers: the relevant documents of
    a MathHay question write hundreds of numbers, and two of them make almost any number."""
    from finmath_tasks.variants import find_numbers

    check = data.arithmetic or check_arithmetic(data.output)
    forms = written_forms(find_numbers(relevant))
    for value in check.operands:
        if any(value == r or abs(value - r) <= 1e-9 * abs(r) for r in check.results):
            continue
        if not any(is_written(value, [form]) for form in forms):
            return False
    return True


async def mathhay_causes(data: CauseInput) -> Sequence[Finding]:
    """The gold ``solve()``'s findings for a wrong answer of one MathHay sample."""
    metadata = data.metadata
    prompt = str(metadata.get(PROMPT_KEY) or "")
    spans = _spans(metadata.get(HAYSTACK_STORE_KEY), prompt)
    solution = str(metadata.get("solution") or "")
    if spans is None or not prompt or not solution.strip():
        return []
    question = str(metadata.get("question") or "")
    relevant = "\n\n".join([question, *(prompt[a:b] for a, b in spans)])
    findings = []
    for found in await gold_findings(data, solution, relevant, entry=ENTRY_POINT):
        if found.cause == MISREAD:
            found = _placed(found, *_where(prompt, spans, str(found.evidence.get("written"))))
        if found.cause == METHOD and not _inputs_written(data, relevant):
            continue
        findings.append(found)
    # a re-run likely by chance explains nothing: the haystack may still hold the reading
    explained = {f.value for f in findings if f.value is not None and not by_chance(f)}
    open_answers = tuple(a for a in data.answers if a not in explained)
    if not open_answers:
        return findings
    document, around = _haystack_document(prompt, spans, data.output)
    if not document:
        return findings
    rest = CauseInput(
        output=data.output,
        gold=data.gold,
        answers=open_answers,
        metadata=data.metadata,
        arithmetic=data.arithmetic,
    )
    for found in await gold_findings(rest, solution, document, entry=ENTRY_POINT):
        if found.cause == MISREAD:
            number = found.evidence.get("number")
            key = round(float(number), 9) if isinstance(number, int | float) else None
            findings.append(_placed(found, "haystack", around.get(key, "") if key else ""))
    return findings


PAPER_CATEGORIES: dict[str, str] = {}
"""MathHay's paper reports accuracies, not an error analysis by cause: no categories."""
