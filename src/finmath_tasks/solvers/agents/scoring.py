"""Scoring of the agents: every recorded answer checked, flips between them, int vs float.

The agent solvers record each intermediate answer (first answer, after the critic,
after the calculator) in the sample store (:data:`AGENT_ANSWERS_KEY`). The
:func:`agent_answer` scorer checks each one with an :data:`AnswerCheck` (the task's:
:func:`numeric_check` with the paper's ``rounding`` and our ``tolerant`` comparisons,
or a benchmark's official check), and reports:

- the final answer's values under each key of the check (e.g. ``rounding``, ``tolerant``);
- ``first_answer``: whether the first answer was already right (primary key);
- ``correct_to_wrong`` / ``wrong_to_correct``: the first answer right and the final one
  wrong, or the reverse (primary key);
- ``minor_change`` / ``major_change``: whether the final answer differs from the first,
  and how much (:func:`change_kind`);
- per sample, in the score's metadata: each stage's answer and verdict, each transition
  between consecutive stages, and ``gold_kind`` (integer, float or text), which
  :func:`accuracy_by_gold_kind` splits accuracy by.

Change kinds (our definition; the paper's wording could not be checked): two answers
are *unchanged* when their texts are equal after normalisation or they state the same
number; a *minor* change keeps the number within :data:`MINOR_CHANGE_REL_TOL` relative,
or restates it as a percent/fraction (x100 or /100); anything else (another number,
another text, an answer appearing or disappearing) is a *major* change.

A sample without a gold answer is unscored; an exception while scoring one sample
makes that sample unscored with the reason: it never ends the evaluation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    Value,
    accuracy,
    mean,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from finmath_tasks.scorers.comparisons import Comparison, Match, compare
from finmath_tasks.scorers.extraction import ParsedNumber, extract_answer, parse_number
from finmath_tasks.solvers.agents.answers import Answer

AGENT_ANSWERS_KEY = "finmath_agent_answers"
"""Store key: the list of recorded answers, ``{"stage", "answer", "method", "detail"}``."""
AGENT_TRACE_KEY = "finmath_agent_trace"
"""Store key: what each agent step did (critic decisions, calculator checks, oracle gate)."""

FLIP_KEYS = ("correct_to_wrong", "wrong_to_correct", "minor_change", "major_change")
MINOR_CHANGE_REL_TOL = 0.01
GoldKind = Literal["integer", "float", "text"]
ChangeKind = Literal["none", "minor", "major"]


@dataclass(frozen=True)
class Check:
    """The verdict on one answer: correct under the primary key, and every key's value."""

    correct: bool
    values: dict[str, float]
    explanation: str
    metadata: dict[str, Any] = field(default_factory=dict)


AnswerCheck = Callable[[Answer, TaskState], Check]
"""``(answer, state) -> Check``; the gold is ``state.target`` (and the sample's metadata)."""


def as_text(answer: Answer) -> str:
    if answer is None:
        return ""
    return ", ".join(answer) if isinstance(answer, list) else answer


def gold_kind(target: str) -> GoldKind:
    """integer / float / text: how the gold answer is written (the paper's int vs float split)."""
    try:
        value = float(target.strip())
    except ValueError:
        return "text"
    if not math.isfinite(value):
        return "text"
    return "integer" if value == int(value) else "float"


def _norm_text(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s.%-]", " ", text.lower()).split()).strip(" .")


def read_number(answer: Answer) -> ParsedNumber | None:
    """The number an answer states: the whole text as one number, else the answer rules."""
    text = as_text(answer)
    if not text.strip():
        return None
    return parse_number(text) or extract_answer(text).number


def numeric_check(comparisons: Mapping[str, Comparison]) -> AnswerCheck:
    """Check answers against a numeric target under each comparison (first one primary).

    A non-numeric target (e.g. "yes"/"no") is matched as normalised text under every key.
    """
    if not comparisons:
        raise ValueError("numeric_check needs at least one comparison")
    names = list(comparisons)

    def check(answer: Answer, state: TaskState) -> Check:
        gold_text = state.target.text.strip()
        text = as_text(answer)
        if gold_kind(gold_text) == "text":
            ok = bool(text) and _norm_text(text) == _norm_text(gold_text)
            values = {name: float(ok) for name in names}
            return Check(ok, values, f"text {'equal' if ok else 'differs'} ({text[:80]!r})")
        gold = float(gold_text)
        number = read_number(answer)
        matches: dict[str, Match] = {}
        for name, comparison in comparisons.items():
            matches[name] = (
                compare(comparison, number, gold)
                if number is not None
                else Match(False, "no_answer")
            )
        values = {name: 1.0 if m.correct else 0.0 for name, m in matches.items()}
        shown = number.text if number is not None else f"no number in {text[:80]!r}"
        explanation = f"{shown}: " + "; ".join(
            f"{name} {'correct' if m.correct else 'incorrect'} ({m.rule})"
            for name, m in matches.items()
        )
        return Check(
            matches[names[0]].correct,
            values,
            explanation,
            {"rules": {n: m.rule for n, m in matches.items()}},
        )

    return check


def change_kind(before: Answer, after: Answer) -> ChangeKind:
    """none / minor / major (see the module docstring); never raises."""
    try:
        a, b = as_text(before).strip(), as_text(after).strip()
        if not a and not b:
            return "none"
        if not a or not b:
            return "major"
        if _norm_text(a) == _norm_text(b):
            return "none"
        x, y = read_number(before), read_number(after)
        if x is None or y is None:
            return "major"
        u, v = x.value, y.value
        if not (math.isfinite(u) and math.isfinite(v)):
            return "major"
        if u == v:
            return "none"
        for scaled in (v, v * 100, v / 100):
            if math.isclose(u, scaled, rel_tol=MINOR_CHANGE_REL_TOL):
                return "minor"
        return "major"
    except Exception:
        return "major"


def _flip(before: bool, after: bool) -> str:
    if before and not after:
        return "correct_to_wrong"
    if after and not before:
        return "wrong_to_correct"
    return "correct_to_correct" if after else "wrong_to_wrong"


def recorded_answers(state: TaskState) -> list[dict[str, Any]]:
    stages = state.store.get(AGENT_ANSWERS_KEY) or []
    return [s for s in stages if isinstance(s, dict)]


@scorer(metrics={"*": [accuracy(), stderr()]})
def agent_answer(check: AnswerCheck) -> Scorer:
    """Score the last recorded answer with ``check``; flips between the recorded answers."""

    async def score(state: TaskState, target: Target) -> Score:
        try:
            return _score(state, target)
        except Exception as exc:  # one sample's problem never ends the evaluation
            return Score.unscored(
                reason="scorer_error",
                explanation=f"the scorer failed on this sample: {type(exc).__name__}: {exc}"[:2000],
                metadata={"error": f"{type(exc).__name__}: {exc}"[:2000]},
            )

    def _score(state: TaskState, target: Target) -> Score:
        stages = recorded_answers(state)
        if not stages:
            from finmath_tasks.solvers.agents.answers import parse_reply

            reply = parse_reply(state.output.completion if state.output else "")
            stages = [{"stage": "output", **reply.to_dict()}]
        if not target.text.strip():
            return Score.unscored(
                reason="no_gold_answer",
                answer=as_text(stages[-1].get("answer"))[:200] or None,
                explanation="No gold answer for this sample (answers withheld).",
                metadata={"stages": stages},
            )
        checks = [check(s.get("answer"), state) for s in stages]
        first, final = checks[0], checks[-1]
        first_answer, final_answer = stages[0].get("answer"), stages[-1].get("answer")
        change = change_kind(first_answer, final_answer)
        flip = _flip(first.correct, final.correct)
        values: dict[str, float] = dict(final.values)
        values["first_answer"] = float(first.correct)
        values["correct_to_wrong"] = float(flip == "correct_to_wrong")
        values["wrong_to_correct"] = float(flip == "wrong_to_correct")
        values["minor_change"] = float(change == "minor")
        values["major_change"] = float(change == "major")
        transitions = [
            {
                "from": stages[i].get("stage"),
                "to": stages[i + 1].get("stage"),
                "flip": _flip(checks[i].correct, checks[i + 1].correct),
                "change": change_kind(stages[i].get("answer"), stages[i + 1].get("answer")),
            }
            for i in range(len(stages) - 1)
        ]
        stage_report = [
            {**s, "correct": c.correct, "values": c.values, "explanation": c.explanation}
            for s, c in zip(stages, checks, strict=True)
        ]
        path = " -> ".join(
            f"{s.get('stage')}: {as_text(s.get('answer'))[:60] or 'none'} "
            f"({'right' if c.correct else 'wrong'})"
            for s, c in zip(stages, checks, strict=True)
        )
        return Score(
            value=values,
            answer=as_text(final_answer)[:200] or None,
            explanation=f"{path}; final: {final.explanation}; gold {target.text!r}",
            metadata={
                "gold_kind": gold_kind(target.text),
                "stages": stage_report,
                "transitions": transitions,
                "flip": flip,
                "change": change,
                "trace": state.store.get(AGENT_TRACE_KEY) or {},
                **final.metadata,
            },
        )

    return score


# --- metrics ---------------------------------------------------------------------------


def _finite(scores: list[SampleScore]) -> list[tuple[SampleScore, float]]:
    out = []
    for s in scores:
        value = s.score.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if math.isfinite(float(value)):
            out.append((s, float(value)))
    return out


@metric
def total() -> Metric:
    """The sum of a key's values: a count for 0/1 keys (e.g. how many answers flipped)."""

    def compute(scores: list[SampleScore]) -> Value:
        return float(sum(v for _, v in _finite(scores)))

    return compute


@metric
def accuracy_by_gold_kind() -> Metric:
    """Accuracy per gold kind (integer, float, text) read from each score's metadata."""

    def compute(scores: list[SampleScore]) -> Value:
        groups: dict[str, list[float]] = {}
        for s, v in _finite(scores):
            kind = str((s.score.metadata or {}).get("gold_kind", "unknown"))
            groups.setdefault(kind, []).append(v)
        return {kind: sum(vs) / len(vs) for kind, vs in sorted(groups.items())}

    return compute


def agent_metrics(keys: list[str]) -> dict[str, list[Metric]]:
    """Metrics for :func:`agent_answer` with a check whose keys are ``keys``.

    Each key: accuracy, stderr, accuracy by gold kind; ``first_answer``: accuracy (and by
    kind); each flip key: its count (``total``) and rate (``mean``).
    """
    metrics: dict[str, list[Metric]] = {
        key: [accuracy(), stderr(), accuracy_by_gold_kind()] for key in keys
    }
    metrics["first_answer"] = [accuracy(), accuracy_by_gold_kind()]
    for key in FLIP_KEYS:
        metrics[key] = [total(), mean()]
    return metrics
