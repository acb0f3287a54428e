"""MathHay scoring: exact match OR an LLM judge (the paper's verdict), and ``tolerant`` beside it.

Score values (one score per sample):

``mathhay``
    The paper's verdict: ``exact_match`` or the judge's "Yes" that the model's
    solution and the gold solution are equivalent. The judge is asked only
    when the answer is not an exact match (the verdict cannot change
    otherwise). Its reply is read as the reference reads it: a JSON object
    whose ``output`` (and ``reasoning``) are strings, "Yes" when ``output``
    contains "yes" in any case. A reply that cannot be read and a failed
    judge call are "not Yes": the sample is incorrect and stays in the
    denominator, as in the reference, with the reason in the explanation and
    counted as ``judge_unparseable`` / ``judge_error``. The judge is the
    ``grader`` model role, else the evaluated model judging its own answers
    (warned about once per run; :mod:`finmath_tasks.scorers.grader`): each
    judged score names it (``grader_model``, ``grader_source``). Only
    ``-T judge=false`` makes ``mathhay`` the exact match alone. (The counts
    are metrics of ``exact_match``, with ``over_length``,
    ``answer_unparseable`` and ``haystack_too_short``.)
``exact_match``
    ``math.isclose(gold, answer, rel_tol=1e-9)``. Unlike the reference code,
    a missing answer is NOT a match (the reference accepts ``None``).
``tolerant``
    Our tolerant numeric profile (:mod:`finmath_tasks.scorers.comparisons`)
    on the JSON answer read as text ("1.2 million", "5%").

The model's answer is the ``answer`` field of the JSON object in its reply
(fenced or bare). A reply without one is incorrect under every key, with the
reason (the reference scores its -inf placeholder, which is never correct). An
``answer`` that is not a number (nor a numeric string) is, as in the
reference's float field, a parse failure for ``mathhay`` and ``exact_match``
(not judged); ``tolerant`` still reads it as text ("$1.2 million").
A prompt over the context budget is incorrect under every key and counted as
``over_length``. An exception in our own code is not caught: Inspect records
it as that sample's error and the other samples finish (see
:mod:`finmath_tasks.scorers.keyed`).
"""

from __future__ import annotations

import math
from importlib import resources
from typing import Any

from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState

from finmath_tasks.scorers.causes import (
    ERROR_CAUSE_KEY,
    ERROR_EVIDENCE_KEY,
    UNEXPLAINED,
    evidence,
    explain,
)
from finmath_tasks.scorers.comparisons import (
    asks_for_percent,
    compare,
    gold_from_float,
    number_from_float,
    tolerant,
)
from finmath_tasks.scorers.error_classes import (
    ERROR_CLASS_KEY,
    accepts_under,
    no_answer_class,
    number_class,
    stop_reason_of,
    truncated_first,
)
from finmath_tasks.scorers.extraction import ParsedNumber, parse_number
from finmath_tasks.scorers.grader import GraderRole
from finmath_tasks.scorers.json_answer import extract_json_object
from finmath_tasks.scorers.judge import json_verdict_reader, judge_equivalence
from finmath_tasks.scorers.keyed import Scoring, keyed_scorers, scoring
from finmath_tasks.scorers.metrics import (
    DOCUMENT_KEY,
    accuracy_by_groups,
    flag_counts,
    wilson_interval,
)
from finmath_tasks.solvers.budget import OVER_BUDGET_KEY
from finmath_tasks.tasks.mathhay.causes import (
    HAYSTACK_STORE_KEY,
    PROMPT_KEY,
    mathhay_causes,
    reply_text,
)
from finmath_tasks.tasks.mathhay.error_classes import JUDGE_ACCEPTED, JUDGE_FAILED

OFFICIAL = "mathhay"
EXACT = "exact_match"
TOLERANT = "tolerant"
KEYS = (OFFICIAL, EXACT, TOLERANT)
REL_TOL = 1e-9
GROUPS = [
    "category", "source", "task_type", "documents", "steps", "length", "placement", "cell",
    "type_length",
]  # fmt: skip
"""Sample metadata keys the accuracy can be broken down by: category = the paper's SSSD/
MSSD/SSMD/MSMD (Table 3's column groups), source = the subset file (verified/unverified),
cell = length/placement (the depth heatmap), type_length = task type/length. Only
:data:`SUMMARY_GROUPS` are metrics (in the summary and the log's results); the others are
in each sample's metadata, and ``finmath report`` computes them from the samples."""
SUMMARY_GROUPS = ["category"]
"""The breakdown reported as metrics of ``mathhay``: the paper's Table 3 columns."""
FLAGS = [
    "judge_unparseable", "judge_error", "answer_unparseable", "over_length", "haystack_too_short",
]  # fmt: skip
PAPER_JUDGE = "gpt-4o"
"""The paper's judge model (its section 4.1: GPT-4o judges every model's answers)."""

JUDGE_READER = json_verdict_reader("output", accept="yes", required=("reasoning",))
"""The reference's reading: its judge reply schema has string fields reasoning and output;
the verdict is Yes when output contains "yes" (case-insensitive)."""
HAYSTACK_KEY = "mathhay_haystack"
"""Store key: the facts of the sample's haystack (tokens, positions, missing pool entries)."""
MAX_SHOWN = 200

JUDGE_TEMPLATE = (
    resources.files("finmath_tasks.tasks.mathhay") / "prompts" / "judge.txt"
).read_text(encoding="utf-8")


def mathhay_metrics() -> dict[str, list[Any]]:
    """Per score key (the official first), its metrics: ``accuracy``, its Wilson
    interval ``ci95_lower``, ``ci95_upper`` and Inspect's ``stderr``, both clustered by
    document group (:data:`DOCUMENT_KEY`); ``category=<SSSD...>`` for the official key; the flag counts
    under ``exact_match``, the key every sample that reached scoring has a number for
    (Inspect leaves a sample whose value is NaN out of that key's metrics)."""
    metrics: dict[str, list[Any]] = {
        key: [
            accuracy(),
            wilson_interval(0.95, cluster=DOCUMENT_KEY),
            stderr(cluster=DOCUMENT_KEY),
        ]
        for key in KEYS
    }
    metrics[OFFICIAL].append(accuracy_by_groups(SUMMARY_GROUPS))
    metrics[EXACT].append(flag_counts(FLAGS))
    return metrics


def mathhay_scorers(judge: bool = True, count_unscored: bool = False) -> list[Scorer]:
    """``mathhay`` (the paper's verdict), ``exact_match`` and ``tolerant``: one scalar
    scorer each (:func:`finmath_tasks.scorers.keyed.keyed_scorers`)."""
    return keyed_scorers("mathhay", count_unscored=count_unscored, judge=judge)


@scoring("mathhay", KEYS)
def mathhay_scoring(judge: bool = True) -> Scoring:
    """The task's scoring (``inspect score`` rebuilds it from ``judge``)."""
    return Scoring(mathhay_scorer(judge), mathhay_metrics(), shared=[*FLAGS, "reason"])


OTHER_DIGITS = (
    " (written with digits other than 0-9, which the reference's float field refuses, though "
    "Python's float() reads them)"
)


def answer_number(value: Any) -> float | None:
    """The JSON answer as a number the reference's float field would accept, else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an integer beyond the float range: the field rejects it
            return None
    elif isinstance(value, str):
        if other_digits(value):  # float() would read them; the reference's field does not
            return None
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def other_digits(value: Any) -> bool:
    """Whether the answer is a string with digits other than ASCII 0-9 (Arabic-Indic
    "١٣٥٩٤", fullwidth "１３５９４"): Python's ``float()`` reads any Unicode digit, but the
    reference reads the answer into a pydantic float field, which refuses them, so such an
    answer is no number (``no_answer:no_number``), never an exact match."""
    return isinstance(value, str) and any(c.isdigit() and not c.isascii() for c in value)


def exact_match(gold: float, answer: Any) -> bool:
    """``math.isclose(gold, answer, rel_tol=1e-9)``; a missing or non-numeric answer is False."""
    number = answer_number(answer)
    return number is not None and math.isclose(float(gold), number, rel_tol=REL_TOL)


def tolerant_match(gold: float, answer: Any) -> tuple[bool, str]:
    if answer is None or isinstance(answer, bool | dict | list):
        return False, "no_answer"
    parsed = parse_number(str(answer))
    if parsed is None:
        return False, "no_number_in_answer"
    match = compare(tolerant, parsed, gold)
    return match.correct, match.rule


def judge_prompt(gold_solution: str, gold: Any, reasoning: str, answer: Any) -> str:
    """Solution 1 is the gold (its Python solution and ``Answer1: <gold>``), solution 2 the
    model's (its reasoning and ``Answer2: <answer as a float>``), as in the reference."""
    return JUDGE_TEMPLATE.format(
        solution1=f"{gold_solution}\nAnswer1: {gold}",
        solution2=f"{reasoning}\nAnswer2: {answer}",
    )


def _values(official: float, exact: float, tol: float) -> dict[str, float]:
    return {OFFICIAL: official, EXACT: exact, TOLERANT: tol}


@scorer(metrics=[])
def mathhay_scorer(judge: bool = True) -> Scorer:
    """Exact match or judge (``mathhay``), ``exact_match`` and ``tolerant``."""
    grader = GraderRole(PAPER_JUDGE)

    async def score(state: TaskState, target: Target) -> Score:
        haystack = state.store.get(HAYSTACK_KEY)
        metadata: dict[str, Any] = {"haystack": haystack}
        if isinstance(haystack, dict) and haystack.get("too_short"):
            metadata["haystack_too_short"] = True
        over = state.store.get(OVER_BUDGET_KEY)
        if over:
            await _causes(
                metadata, dict.fromkeys(KEYS, no_answer_class(over_budget=True)), {}, state, target
            )
            return Score(
                value=_values(0.0, 0.0, 0.0),
                explanation=f"incorrect: {over}",
                metadata={
                    **metadata,
                    "reason": "over_length",
                    "over_length": True,
                    ERROR_CLASS_KEY: dict.fromkeys(KEYS, no_answer_class(over_budget=True)),
                },
            )
        # a percentage is in play only where the question asks for one (``tolerant``)
        gold = gold_from_float(float(target.text), asks_for_percent(state.input_text))
        output = state.output.completion if state.output else ""
        stop = stop_reason_of(state.output)
        found, how = extract_json_object(output, "answer")
        if found is None:
            unread = no_answer_class(output, stop_reason=stop)
            await _causes(metadata, dict.fromkeys(KEYS, unread), {}, state, target)
            return Score(
                value=_values(0.0, 0.0, 0.0),
                answer=None,
                explanation=f"incorrect: {how}",
                metadata={
                    **metadata,
                    "reason": how,
                    "answer_unparseable": True,
                    ERROR_CLASS_KEY: dict.fromkeys(KEYS, unread),
                },
            )
        answer = found.get("answer")
        reasoning = found.get("reasoning")
        reasoning_text = reasoning if isinstance(reasoning, str) else str(reasoning or "")
        exact = exact_match(gold, answer)
        tol, rule = tolerant_match(gold, answer)
        metadata.update(answer=answer, json=how, tolerant_rule=rule)
        shown = str(answer)[:MAX_SHOWN]
        if answer_number(answer) is None:
            # the reference's float field rejects it: a parse failure, never judged
            metadata.update(answer_unparseable=True, judge="not asked (answer not a number)")
            unread = no_answer_class(str(answer), stop_reason=stop)
            metadata[ERROR_CLASS_KEY] = truncated_first(
                {
                    OFFICIAL: unread,
                    EXACT: unread,
                    **({} if tol else {TOLERANT: _tolerant_class(gold, answer, unread)}),
                },
                stop,
            )
            await _causes(
                metadata,
                metadata[ERROR_CLASS_KEY],
                {TOLERANT: _text_number(answer)},
                state,
                target,
                reasoning,
            )
            return Score(
                value=_values(0.0, 0.0, 1.0 if tol else 0.0),
                answer=shown,
                explanation=(
                    f"{OFFICIAL}/{EXACT} incorrect: the answer field {shown!r} is not a number"
                    f"{OTHER_DIGITS if other_digits(answer) else ''}; "
                    f"tolerant: {'correct' if tol else 'incorrect'} ({rule})"
                ),
                metadata=metadata,
            )
        if exact:
            metadata["judge"] = "not asked (exact match)"
            official = 1.0
            verdict_text = "exact match"
        elif not judge:
            metadata["judge"] = "disabled (-T judge=false)"
            official = 0.0
            verdict_text = "no exact match; judge disabled"
        else:
            meta = state.metadata or {}
            judge_model = grader.resolve()
            result = await judge_equivalence(
                judge_prompt(str(meta.get("solution", "")), meta.get("answer", gold),
                             reasoning_text, answer_number(answer)),
                judge_model,
                reader=JUDGE_READER,
            )  # fmt: skip
            metadata.update(judge=result.status, judge_reply=result.reply)
            metadata.update(judge_model.metadata())
            if result.verdict is None:
                # the reference: an unreadable reply or a failed call is not "Yes"
                flag = "judge_error" if result.status == "error" else "judge_unparseable"
                metadata[flag] = True
                official = 0.0
                why = "call failed" if result.status == "error" else "reply unreadable"
                verdict_text = (
                    f"no exact match; judge {why}, counted as not equivalent (as the "
                    f"reference does): {result.detail}"
                )
            else:
                official = 1.0 if result.verdict else 0.0
                verdict_text = f"no exact match; judge says {result.status}"
        metadata[ERROR_CLASS_KEY] = truncated_first(
            _classes(
                gold, answer, official=official, exact=exact, tol=tol, judge=metadata.get("judge")
            ),
            stop,
        )
        number = answer_number(answer)
        await _causes(
            metadata,
            metadata[ERROR_CLASS_KEY],
            {OFFICIAL: number, EXACT: number, TOLERANT: _text_number(answer)},
            state,
            target,
            reasoning,
        )
        return Score(
            value=_values(official, 1.0 if exact else 0.0, 1.0 if tol else 0.0),
            answer=shown,
            explanation=(
                f"answer {shown!r}, gold {target.text}: {verdict_text}; "
                f"tolerant: {'correct' if tol else 'incorrect'} ({rule})"
            ),
            metadata=metadata,
        )

    return score


async def _causes(
    metadata: dict[str, Any],
    classes: dict[str, str],
    values: dict[str, float | None],
    state: TaskState,
    target: Target,
    reasoning: Any = None,
) -> None:
    """Each wrong key's cause and its evidence into ``metadata``
    (:mod:`finmath_tasks.tasks.mathhay.causes`). A key whose judge gave no verdict is
    ``unexplained``: the paper's verdict was not reached, so nothing says why it is wrong."""
    user = state.user_prompt.text if state.messages else ""
    causes, evidences = await explain(
        classes,
        {key: values.get(key) for key in classes},
        output=reply_text(state.output.completion if state.output else "", reasoning),
        gold=float(target.text),
        metadata={
            **(state.metadata or {}),
            "question": state.input_text,
            PROMPT_KEY: user,
            HAYSTACK_STORE_KEY: state.store.get(HAYSTACK_KEY),
        },
        gold_check=mathhay_causes,
    )
    for key, cls in classes.items():
        if cls == JUDGE_FAILED:
            causes[key] = UNEXPLAINED
            evidences[key] = evidence(
                "the judge gave no verdict (its reply unreadable or its call failed): "
                "whether the answer is wrong was not decided",
                error_class=cls,
                judge=metadata.get("judge"),
            )
    metadata[ERROR_CAUSE_KEY] = causes
    metadata[ERROR_EVIDENCE_KEY] = evidences


def _text_number(answer: Any) -> float | None:
    """The number ``tolerant`` reads in the answer (as text), if any."""
    if answer is None or isinstance(answer, bool | dict | list):
        return None
    parsed = parse_number(str(answer))
    return parsed.value if parsed is not None and math.isfinite(parsed.value) else None


def _tolerant_class(gold: float, answer: Any, unread: str) -> str:
    parsed = parse_number(str(answer)) if not isinstance(answer, bool | dict | list) else None
    if parsed is None or answer is None:
        return unread
    return number_class(parsed, gold, accepts_under(tolerant, gold))


def _classes(
    gold: float, answer: Any, *, official: float, exact: bool, tol: bool, judge: Any
) -> dict[str, str]:
    """Each key's class of an answer that is a number (see ``error_classes``)."""
    number = answer_number(answer)
    assert number is not None
    parsed = number_from_float(number)

    def isclose(pred: ParsedNumber) -> bool:
        return math.isclose(float(gold), pred.value, rel_tol=REL_TOL)

    numeric = number_class(parsed, gold, isclose)
    classes: dict[str, str] = {}
    if not exact:
        classes[EXACT] = JUDGE_ACCEPTED if official >= 1 else numeric
    if official < 1:
        failed = judge in ("error", "unparseable")
        classes[OFFICIAL] = JUDGE_FAILED if failed else numeric
    if not tol:
        classes[TOLERANT] = _tolerant_class(gold, answer, numeric)
    return classes
