"""SARA scoring: entailment verdicts and tax amounts.

Entailment: the verdict is read from the output. The label words are
"Entailment"/"entailed"/"True" and "Contradiction"/"contradicted"/"False", case
insensitive, as whole words; "not"/"n't" right before one ("not entailed",
"isn't true", "not a contradiction") turns it into the opposite verdict. If the output has an answer marker ("Answer:",
"the answer is", "verdict:"), the first label word within the marker's line
after the LAST marker decides; a line offering both verdicts is a hedge and
unparseable. Without a marker, an output whose text names only one verdict
gives that verdict; otherwise the last label word of the last line that has
one decides, unless that line names both. An unparseable answer is incorrect,
with the reason in the explanation.

Tax: the dollar amount is extracted by the shared rules
(:func:`finmath_tasks.scorers.extraction.extract_answer`). Two values are
reported: ``exact_dollar`` (the amount rounded to the nearest dollar equals
the gold) and ``sara_tolerance``, the SARA paper's numeric metric: with
delta = |y_hat - y| / max(0.1·y, 5000), a prediction counts as correct when
delta < 1 (within 10% of y or within $5,000, whichever is larger).

A reply that cannot be read (no verdict, a hedge naming both, no dollar
amount) is incorrect and stays in the denominator, and so is a prompt too long
to send. The paper does not say how it read its models' answers, but its 90%
intervals imply the same n (228 cases) for every model and prompting mode,
so no case was dropped from its accuracy; SARA's own numeric metric scores
every tax case too. Each such sample sets a flag in the score's metadata
(``unreadable``, ``over_budget``), counted beside the accuracy by
:func:`flag_counts_scored` (``unreadable``, ``over_budget`` in the log).

Each score carries one value per key; keys of the other kind of case are NaN
(a task with ``kind=all`` mixes both), which the metrics skip. A sample of an
unknown case kind is unscored (NaN for every key, flagged ``scoring_error``). An
exception in our own code is not caught: Inspect records it as that sample's
error and the other samples finish (see :mod:`finmath_tasks.scorers.keyed`).
"""

from __future__ import annotations

import math
import re
from typing import Any

from inspect_ai.model import ChatMessageUser
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    Value,
    accuracy,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from finmath_tasks.scorers.causes import ERROR_CAUSE_KEY, ERROR_EVIDENCE_KEY, explain
from finmath_tasks.scorers.error_classes import (
    ERROR_CLASS_KEY,
    no_answer_class,
    truncated_first,
)
from finmath_tasks.scorers.extraction import ParsedNumber, extract_answer
from finmath_tasks.scorers.keyed import Scoring, keyed_scorers, scoring
from finmath_tasks.scorers.metrics import DOCUMENT_KEY, accuracy_by, wilson_interval
from finmath_tasks.solvers.budget import OVER_BUDGET_KEY
from finmath_tasks.tasks.sara.causes import (
    PROMPT_KEY,
    RETRIEVAL_KEY,
    RETRIEVAL_RECORD,
    sara_causes,
)
from finmath_tasks.tasks.sara.error_classes import WRONG_LABEL, tax_class

ENTAILMENT_KEY = "entailment"
EXACT_KEY = "exact_dollar"
TOLERANCE_KEY = "sara_tolerance"
CI_LEVEL = 0.9
"""The paper's intervals are 90% (Tables 1-4), by the normal approximation
p ± 1.645·sqrt(p(1-p)/n); ours are Wilson intervals at the same level (clustered by
case where questions share one), which never have zero width at 0/n or n/n."""
FLAGS = ("unreadable", "over_budget", "scoring_error")
"""Score metadata flags counted beside each key's accuracy (:func:`flag_counts_scored`)."""

_POSITIVE = {"entailment", "true", "entailed"}
_NEGATIVE = {"contradiction", "false", "contradicted"}
_LABEL_RE = re.compile(
    r"(?P<neg>(?:\bnot|n't)\s+(?:an?\s+)?)?"
    r"\b(?P<word>entailment|contradiction|entailed|contradicted|true|false)\b",
    re.I,
)
_MARKER_RE = re.compile(r"(?:\banswer\b|\bverdict\b)[*_\s]*(?:is|would be|:|=|-)", re.I)


def _verdict(match: re.Match[str]) -> str:
    positive = match.group("word").lower() in _POSITIVE
    if match.group("neg"):  # "not entailed", "isn't true"
        positive = not positive
    return "Entailment" if positive else "Contradiction"


def _only_verdict(text: str) -> str | None:
    verdicts = {_verdict(m) for m in _LABEL_RE.finditer(text)}
    return verdicts.pop() if len(verdicts) == 1 else None


def parse_entailment(output: str) -> tuple[str | None, str]:
    """(verdict or None, how it was read / why not) from a model output."""
    if not output or not output.strip():
        return None, "the output is empty"
    markers = list(_MARKER_RE.finditer(output))
    if markers:
        after = output[markers[-1].end() :].split("\n", 1)[0]
        if not _LABEL_RE.search(after):
            after = output[markers[-1].end() :].lstrip().split("\n", 1)[0]
        if _LABEL_RE.search(after):
            verdict = _only_verdict(after)
            if verdict is None:
                return None, f"the answer line names both verdicts: {after.strip()[:120]!r}"
            return verdict, f"marker {markers[-1].group(0).strip()!r}"
    only = _only_verdict(output)
    if only is not None:
        return only, "the only verdict named"
    for line in reversed(output.strip().splitlines()):
        if _LABEL_RE.search(line):
            verdict = _only_verdict(line)
            if verdict is None:
                return None, f"the last line naming a verdict names both: {line.strip()[:120]!r}"
            return verdict, "last line naming a verdict"
    return None, "no verdict (Entailment/Contradiction or True/False) in the output"


def sara_tolerance(prediction: float, gold: float) -> tuple[bool, float]:
    """The SARA numeric metric: (correct, delta) with delta = |p-y| / max(0.1·y, 5000)."""
    delta = abs(prediction - gold) / max(0.1 * gold, 5000.0)
    return delta < 1.0, delta


def exact_dollar(prediction: float, gold: float) -> bool:
    """The prediction rounded to the nearest dollar (half up) equals the gold."""
    return math.floor(prediction + 0.5) == gold


NOT_APPLICABLE = math.nan
"""The value of a key that does not apply to the sample's kind of case (the metrics skip it;
Inspect turns None into 0 before metrics see it, so NaN marks it)."""


def _empty(keys: tuple[str, ...]) -> dict[str, float]:
    return {key: NOT_APPLICABLE for key in keys}


def score_keys(kind: str) -> tuple[str, ...]:
    if kind == "entailment":
        return (ENTAILMENT_KEY,)
    if kind == "tax":
        return (EXACT_KEY, TOLERANCE_KEY)
    return (ENTAILMENT_KEY, EXACT_KEY, TOLERANCE_KEY)


@metric
def flag_counts_scored(flags: list[str]) -> Metric:
    """How many samples this key applies to set each of ``flags`` in their score metadata.

    Unlike the shared ``flag_counts``, a sample whose value for the key is NaN (a
    key of the other kind of case) is not counted, so with ``kind=all`` an
    unreadable tax reply is not counted under ``entailment``. Inspect leaves NaN
    samples out of every metric (it counts them as the key's unscored samples), so a
    ``scoring_error`` sample, NaN for every key, reaches this count only through an
    Inspect that passes NaN samples on; its count is in the log's unscored samples.
    """

    def compute(scores: list[SampleScore]) -> Value:
        out: dict[str, int] = dict.fromkeys(flags, 0)
        for sample_score in scores:
            metadata = sample_score.score.metadata or {}
            value = sample_score.score.value
            applies = isinstance(value, int | float) and math.isfinite(float(value))
            if not applies and not metadata.get("scoring_error"):
                continue
            for flag in flags:
                if metadata.get(flag):
                    out[flag] += 1
        return out

    return compute


def sara_metrics(kind: str) -> dict[str, list[Any]]:
    """Per score key: ``accuracy``, its Wilson interval ``ci90_lower``, ``ci90_upper``
    and Inspect's ``stderr`` (both clustered by case, see :data:`DOCUMENT_KEY`), the flag
    counts (``unreadable``, ``over_budget``, ``scoring_error``) and, for entailment, the
    accuracy per statute section (``section=<group>``)."""
    metrics: dict[str, list[Any]] = {}
    for key in score_keys(kind):
        metrics[key] = [
            accuracy(),
            wilson_interval(CI_LEVEL, cluster=DOCUMENT_KEY),
            stderr(cluster=DOCUMENT_KEY),
            flag_counts_scored(list(FLAGS)),
        ]
        if key == ENTAILMENT_KEY:
            metrics[key].append(accuracy_by("section", prefix="section="))
    return metrics


@scoring("sara", (ENTAILMENT_KEY, EXACT_KEY, TOLERANCE_KEY))
def sara_scoring(kind: str = "entailment") -> Scoring:
    """The task's scoring for ``kind`` (``inspect score`` rebuilds it from ``kind``)."""
    return Scoring(sara_scorer(kind), sara_metrics(kind), shared=FLAGS)


def sara_scorers(kind: str = "entailment", count_unscored: bool = False) -> list[Scorer]:
    """One scalar scorer per score key of ``kind`` (``entailment``; ``exact_dollar`` and
    ``sara_tolerance``), see :func:`finmath_tasks.scorers.keyed.keyed_scorers`."""
    return keyed_scorers("sara", count_unscored=count_unscored, kind=kind)


@scorer(metrics=[])
def sara_scorer(kind: str = "entailment") -> Scorer:
    """Entailment accuracy, or exact-dollar and SARA-tolerance accuracy, per case kind."""
    keys = score_keys(kind)

    async def score(state: TaskState, target: Target) -> Score:
        case_kind = (state.metadata or {}).get("kind")
        value = _empty(keys)
        over = state.store.get(OVER_BUDGET_KEY)
        if over:
            for key in _kind_keys(case_kind, keys):
                value[key] = 0.0
            return await with_causes(
                state,
                Score(
                    value=value,
                    answer=None,
                    explanation=f"incorrect: {over}",
                    metadata={
                        "reason": "prompt_over_budget",
                        "over_budget": True,
                        ERROR_CLASS_KEY: dict.fromkeys(
                            _kind_keys(case_kind, keys), no_answer_class(over_budget=True)
                        ),
                    },
                ),
            )
        output = state.output.completion if state.output else ""
        stop = state.output.stop_reason if state.output else None
        if case_kind == "entailment":
            return await with_causes(state, _score_entailment(output, target.text, value, stop))
        if case_kind == "tax":
            return await with_causes(state, _score_tax(output, target.text, value, stop))
        return Score(
            value=value,
            explanation=f"unscored: unknown case kind {case_kind!r}",
            metadata={"scoring_error": True},
        )

    return score


def _as_number(kind: Any, answer: Any) -> float | None:
    """The number a key compared: a tax amount, or a verdict as 1 (Entailment) / 0."""
    if answer is None:
        return None
    if kind == "entailment":
        return 1.0 if answer == "Entailment" else 0.0
    try:
        number = float(answer)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _case_turn(state: TaskState) -> str:
    """The text of the case's own turn (the last user message: the exemplars' turns come
    before it)."""
    for message in reversed(state.messages):
        if isinstance(message, ChatMessageUser):
            return message.text
    return ""


async def with_causes(state: TaskState, score: Score) -> Score:
    """``score`` with each wrong key's cause and its evidence in its metadata
    (:mod:`finmath_tasks.tasks.sara.causes`; a correct score has none)."""
    metadata = dict(score.metadata or {})
    classes = metadata.get(ERROR_CLASS_KEY)
    if not isinstance(classes, dict):
        return score
    meta = state.metadata or {}
    kind = meta.get("kind")
    number = _as_number(kind, score.answer)
    gold = _as_number(kind, meta.get("label") if kind == "entailment" else meta.get("amount"))
    causes, evidences = await explain(
        classes,
        dict.fromkeys(classes, number),
        output=state.output.completion if state.output else "",
        gold=gold if gold is not None else math.nan,
        metadata={
            **meta,
            PROMPT_KEY: _case_turn(state),
            RETRIEVAL_RECORD: state.store.get(RETRIEVAL_KEY),
        },
        gold_check=sara_causes,
    )
    metadata[ERROR_CAUSE_KEY] = causes
    metadata[ERROR_EVIDENCE_KEY] = evidences
    return score.model_copy(update={"metadata": metadata})


def _kind_keys(case_kind: Any, keys: tuple[str, ...]) -> list[str]:
    wanted = (ENTAILMENT_KEY,) if case_kind == "entailment" else (EXACT_KEY, TOLERANCE_KEY)
    return [k for k in keys if k in wanted]


def _stop_note(stop: str | None) -> str:
    return " (the model stopped at its length limit)" if stop == "model_length" else ""


def _score_entailment(output: str, gold: str, value: dict[str, float], stop: str | None) -> Score:
    verdict, how = parse_entailment(output)
    if verdict is None:
        value[ENTAILMENT_KEY] = 0.0
        return Score(
            value=value,
            answer=None,
            explanation=f"incorrect: unparseable answer: {how}{_stop_note(stop)}",
            metadata={
                "reason": "unparseable",
                "unreadable": True,
                "stop_reason": stop,
                ERROR_CLASS_KEY: {
                    ENTAILMENT_KEY: no_answer_class(
                        output, stop_reason=stop, method="hedged" if "both" in how else None
                    )
                },
            },
        )
    correct = verdict == gold
    value[ENTAILMENT_KEY] = 1.0 if correct else 0.0
    return Score(
        value=value,
        answer=verdict,
        explanation=f"{CORRECT if correct else INCORRECT}: read {verdict} ({how}); gold {gold}",
        metadata={
            "method": how,
            ERROR_CLASS_KEY: {}
            if correct
            else truncated_first({ENTAILMENT_KEY: WRONG_LABEL}, stop),
        },
    )


def _score_tax(output: str, gold_text: str, value: dict[str, float], stop: str | None) -> Score:
    gold = float(gold_text)
    extraction = extract_answer(output)
    number = extraction.number
    if number is None or number.percent or not math.isfinite(number.value):
        value[EXACT_KEY] = value[TOLERANCE_KEY] = 0.0
        reason = (
            extraction.detail
            if number is None
            else "the answer is a percentage"
            if number.percent
            else "the answer is not a finite number"
        )
        return Score(
            value=value,
            answer=None,
            explanation=f"incorrect: no dollar amount: {reason}{_stop_note(stop)}",
            metadata={
                "reason": "unparseable",
                "unreadable": True,
                "method": extraction.method,
                "stop_reason": stop,
                ERROR_CLASS_KEY: dict.fromkeys(
                    (EXACT_KEY, TOLERANCE_KEY),
                    no_answer_class(output, stop_reason=stop, method=extraction.method),
                ),
            },
        )
    prediction = number.value
    exact = exact_dollar(prediction, gold)
    tolerant, delta = sara_tolerance(prediction, gold)
    value[EXACT_KEY] = 1.0 if exact else 0.0
    value[TOLERANCE_KEY] = 1.0 if tolerant else 0.0
    return Score(
        value=value,
        answer=f"{prediction:.2f}",
        explanation=(
            f"read ${prediction:,.2f} ({extraction.method}); gold ${gold:,.0f}; "
            f"exact dollar: {exact}; delta {delta:.3f} -> tolerance {'pass' if tolerant else 'fail'}"
        ),
        metadata={
            "method": extraction.method,
            "delta": delta,
            ERROR_CLASS_KEY: truncated_first(_tax_classes(number, gold, exact, tolerant), stop),
        },
    )


def _tax_classes(number: ParsedNumber, gold: float, exact: bool, tolerant: bool) -> dict[str, str]:
    classes: dict[str, str] = {}
    if not exact:
        classes[EXACT_KEY] = tax_class(
            number, gold, lambda v: exact_dollar(v, gold), tolerant, exact_key=True
        )
    if not tolerant:
        classes[TOLERANCE_KEY] = tax_class(
            number, gold, lambda v: sara_tolerance(v, gold)[0], False, exact_key=False
        )
    return classes
