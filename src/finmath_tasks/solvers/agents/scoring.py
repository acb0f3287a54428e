"""Scoring of the agents: every recorded answer checked, flips between them, int vs float.

The agent solvers record each intermediate answer (first answer, after the critic,
after the calculator) in the sample store (:data:`AGENT_ANSWERS_KEY`), with the steps
the model wrote for it. The :func:`agent_answer` scorer checks each answer with an
:data:`AnswerCheck` (the task's: :func:`numeric_check` with the paper's ``rounding``
and our ``tolerant`` comparisons, or a benchmark's official check), and reports:

- the final answer's values under each key of the check (e.g. ``rounding``, ``tolerant``);
- ``first_answer``: whether the first answer was already right (primary key);
- ``correct_to_wrong`` / ``wrong_to_correct``: the first answer right and the final one
  wrong, or the reverse (primary key);
- ``minor_change`` / ``major_change``: for a flipped sample only, whether the steps
  stayed the same (minor) or changed (major), the paper's change analysis
  ("Change analysis in self-criticism", its Table 3); a sample without a flip is 0 in
  both. Their metric ``by_flip`` gives, per flip direction, the share of the flips of
  that direction that were minor (or major): the paper's table (``share_c_to_w``,
  ``share_w_to_c``);
- ``unsourced_equations`` (solvers with a calculator stage): how many of the
  calculator's extracted equations have an operand that occurs nowhere in the analyst's
  output the extraction read (copied from the prompt's examples, or invented; the rule
  is :func:`~finmath_tasks.solvers.agents.calculator.equation_sources`); its metric
  :func:`unsourced` gives the run's ``count``, the ``extracted`` equations and the
  ``samples`` with at least one; the equations and their unsourced operands are in the
  score metadata (``calculator``) and the explanation;
- per sample, in the score's metadata: each stage's answer, steps and verdict, each
  transition between consecutive stages, and ``gold_kind`` (integer, float or text),
  which :func:`accuracy_by_gold_kind` splits accuracy by;
- each wrong key's error class and cause with its evidence (:func:`final_causes`,
  :mod:`finmath_tasks.scorers.causes`): of the final answer, read from the reply that gave
  it (its stated calculations) or the program that gave it (``pot``), with the task's
  ``gold_check`` for the evidence of its gold.

A task registers :func:`agent_scoring` as its scoring and attaches
:func:`finmath_tasks.scorers.keyed.keyed_scorers`: one scalar scorer per key (the
check's keys first), so the metric names are plain (``accuracy``, ``gold=float``,
``count``); the first answer and the flip keys only for a solver that reviews its first
answer (a critic or calculator stage).

Steps (:func:`normalise_steps`): the JSON ``steps`` of the analyst's reply as the model
wrote them (for a program, the program text); a stage that keeps the answer (the
improved critic's "maintain", a calculator without equations, the oracle gate) keeps
the steps too. Two stages have the same steps when their normalised texts are equal.
A flip where either stage has no recorded steps (a reply that was not JSON, no
``steps`` field) is ``unknown``: counted as a flip, in neither minor nor major.

A sample without a gold answer is unscored. An exception in our own code is not
caught: Inspect records it as that sample's error and the other samples finish (see
:mod:`finmath_tasks.scorers.keyed`); only the steps' normalisation, a secondary
reading of the model's text for the flip analysis, falls back to the raw text.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from inspect_ai.scorer import (
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

from finmath_tasks.sandbox.client import PROGRAM_RESULT_KEY
from finmath_tasks.scorers.causes import (
    ERROR_CAUSE_KEY,
    ERROR_EVIDENCE_KEY,
    FORMAT,
    GoldCheck,
    evidence,
    explain,
)
from finmath_tasks.scorers.comparisons import (
    Comparison,
    GoldNumber,
    Match,
    compare,
    gold_number,
    rounding,
)
from finmath_tasks.scorers.error_classes import (
    ERROR_CLASS_KEY,
    NO_ANSWER,
    PROGRAM_FAILED,
    WRONG,
    accepts_under,
    harness,
    no_answer_class,
    number_class,
    program_error_class,
    stop_reason_of,
    truncated_first,
)
from finmath_tasks.scorers.extraction import (
    ParsedNumber,
    extract_answer,
    hedge_of,
    parse_number,
)
from finmath_tasks.scorers.keyed import Scoring
from finmath_tasks.solvers.agents.answers import Answer
from finmath_tasks.solvers.budget import OVER_BUDGET_KEY

AGENT_ANSWERS_KEY = "finmath_agent_answers"
"""Store key: the list of recorded answers, ``{"stage", "answer", "method", "detail"}``."""
AGENT_TRACE_KEY = "finmath_agent_trace"
"""Store key: what each agent step did (critic decisions, calculator checks, oracle gate)."""
AGENT_RESPONSE_KEY = "finmath_agent_response"
"""Store key: the whole reply that gave the current answer (what the next agent reads)."""
UNSOURCED_KEY = "unsourced_equations"
"""Score key (solvers with a calculator): the calculator's extracted equations with an
operand that occurs nowhere in the analyst's output it read (copied or invented)."""
EXTRACTED_KEY = "extracted_equations"
"""Score metadata: how many equations the calculator extracted (the denominator)."""

FLIP_KEYS = ("correct_to_wrong", "wrong_to_correct", "minor_change", "major_change")
FLIPS = ("correct_to_wrong", "wrong_to_correct")
MAX_STEPS_CHARS = 20_000
"""Recorded steps longer than this (as JSON) are cut (and then compared as cut)."""
GoldKind = Literal["integer", "float", "text"]
ChangeKind = Literal["none", "minor", "major", "unknown"]
"""``none``: no flip; ``minor``/``major``: a flip with the same/changed steps;
``unknown``: a flip where a stage has no recorded steps."""


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
    number = parse_number(text)
    if number is not None:
        return number
    if hedge_of(text) is not None:  # two answers offered: none
        return None
    return extract_answer(text).number


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
            # an empty answer: agent_answer names why (it knows the stage that gave it)
            wrong = {} if ok or not text.strip() else dict.fromkeys(names, WRONG)
            return Check(
                ok,
                values,
                f"text {'equal' if ok else 'differs'} ({text[:80]!r})",
                {ERROR_CLASS_KEY: wrong},
            )
        gold = gold_number(gold_text, state.metadata or {})
        number = read_number(answer)
        matches: dict[str, Match] = {}
        for name, comparison in comparisons.items():
            matches[name] = (
                compare(comparison, number, gold)
                if number is not None
                else Match(False, "no_answer")
            )
        values = {name: 1.0 if m.correct else 0.0 for name, m in matches.items()}
        classes = {
            name: number_class(number, gold, accepts_under(comparisons[name], gold))
            if number is not None
            else no_answer_class(
                text, method="hedged" if hedge_of(text) else extract_answer(text).method
            )
            for name, m in matches.items()
            if not m.correct
        }
        shown = number.text if number is not None else f"no number in {text[:80]!r}"
        explanation = f"{shown}: " + "; ".join(
            f"{name} {'correct' if m.correct else 'incorrect'} ({m.rule})"
            for name, m in matches.items()
        )
        return Check(
            matches[names[0]].correct,
            values,
            explanation,
            {"rules": {n: m.rule for n, m in matches.items()}, ERROR_CLASS_KEY: classes},
        )

    return check


# --- steps and the change analysis ------------------------------------------------------


def steps_record(steps: Any) -> Any:
    """Steps as the model wrote them, kept JSON-able (anything long or odd becomes text)."""
    if steps is None:
        return None
    try:
        dumped = json.dumps(steps, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(steps)[:MAX_STEPS_CHARS]
    if len(dumped) > MAX_STEPS_CHARS:
        return steps_text(steps)[:MAX_STEPS_CHARS]
    return steps


def steps_text(steps: Any) -> str:
    """Steps as one text: a list's items in order, one per line; an object's values."""
    if steps is None:
        return ""
    if isinstance(steps, str):
        return steps
    if isinstance(steps, bool):
        return "yes" if steps else "no"
    if isinstance(steps, int | float):
        return repr(steps)
    if isinstance(steps, list | tuple):
        return "\n".join(steps_text(item) for item in steps)
    if isinstance(steps, dict):
        return "\n".join(steps_text(value) for value in steps.values())
    return str(steps)


_TOKEN = re.compile(
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|\d+(?:\.\d+)?|\.\d+)|(?P<word>[^\W\d_]+)|(?P<sym>\S)"
)
DROPPED_SYMBOLS = frozenset(".,;:!?\"'`")
"""Sentence punctuation: not part of a step (a decimal point belongs to its number)."""
RESULT_MARKERS = frozenset({"=", "≈", "is", "are", "was", "equals", "approximately", "about"})
"""Words after which a number is a result: the stage's own answer written there is masked."""
_DASHES = str.maketrans(
    {"\u2212": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u00d7": "*", "\u00f7": "/"}
)


def _number_token(text: str) -> str:
    """12.50 -> 12.5, 1,234.0 -> 1234, .5 -> 0.5 (thousands separators and trailing zeros)."""
    value = Decimal(text.replace(",", ""))
    out = format(value.normalize(), "f")
    return "0" if out in ("-0", "") else out


def normalise_steps(steps: Any, answer: Answer = None) -> str:
    """Steps as compared by the change analysis; never raises.

    Unicode NFKC, dashes as "-", × and ÷ as * and /, case folded; the text is read as
    words, numbers and symbols, so spacing never matters ("44.1-56.7" is
    "44.1 - 56.7"); numbers lose thousands separators and trailing zeros after the
    decimal point (1,234.50 is 1234.5); sentence punctuation (. , ; : ! ? quotes) is
    dropped. The stage's own final answer, where the steps state it as a result (after
    "=", "≈", "is", "equals", ...; to any precision that rounds to it), becomes "#": a
    restated result is the answer, not a step, so "same steps, other answer" is minor.
    """
    try:
        text = unicodedata.normalize("NFKC", steps_text(steps)).translate(_DASHES).casefold()
        final = _final_number(answer)
        tokens: list[str] = []
        for m in _TOKEN.finditer(text):
            if m.group("num"):
                number = _number_token(m.group("num"))
                after = tokens[:-1] if tokens and tokens[-1] == "-" else tokens
                negative = len(after) < len(tokens)
                if final is not None and after and after[-1] in RESULT_MARKERS:
                    signed = ("-" if negative else "") + number
                    if _states(signed, final):
                        del tokens[len(after) :]
                        tokens.append("#")
                        continue
                tokens.append(number)
            elif m.group("word"):
                tokens.append(m.group("word"))
            elif m.group("sym") not in DROPPED_SYMBOLS:
                tokens.append(m.group("sym"))
        return " ".join(tokens)
    except Exception:  # a normaliser bug must not end the evaluation: compare the raw text
        return " ".join(steps_text(steps).split())


def _final_number(answer: Answer) -> GoldNumber | None:
    if not isinstance(answer, str):
        return None
    number = read_number(answer)
    if number is None or number.scale_exp or not number.written.is_finite():
        return None
    try:
        return GoldNumber(str(number.written))
    except ValueError:
        return None


def _states(text: str, final: GoldNumber) -> bool:
    """Whether a number in the steps is the answer ``final`` (equal, or rounds to it)."""
    number = parse_number(text)
    return number is not None and rounding(number, final).correct


def steps_same(before: dict[str, Any], after: dict[str, Any]) -> bool | None:
    """Same steps after :func:`normalise_steps` (None: a stage has no recorded steps)."""
    a, b = before.get("steps"), after.get("steps")
    if a is None or b is None:
        return None
    return normalise_steps(a, before.get("answer")) == normalise_steps(b, after.get("answer"))


def change_kind(flip: str, before: dict[str, Any], after: dict[str, Any]) -> ChangeKind:
    """The paper's change analysis of two recorded stages; never raises.

    Only a flip (``correct_to_wrong`` or ``wrong_to_correct``) is classified: minor when
    the steps are the same (:func:`normalise_steps`), major when they differ, unknown
    when a stage has no recorded steps; anything else is ``none``.
    """
    if flip not in FLIPS:
        return "none"
    try:
        same = steps_same(before, after)
    except Exception:
        return "unknown"
    if same is None:
        return "unknown"
    return "minor" if same else "major"


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
def agent_answer(check: AnswerCheck, gold_check: GoldCheck | None = None) -> Scorer:
    """Score the last recorded answer with ``check``; flips between the recorded answers;
    ``gold_check``: the benchmark's evidence for the causes of a wrong final answer."""

    async def score(state: TaskState, target: Target) -> Score:
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
        final_answer = stages[-1].get("answer")
        flip = _flip(first.correct, final.correct)
        change = change_kind(flip, stages[0], stages[-1])
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
                "change": change_kind(
                    _flip(checks[i].correct, checks[i + 1].correct), stages[i], stages[i + 1]
                ),
                "same_steps": steps_same(stages[i], stages[i + 1]),
            }
            for i in range(len(stages) - 1)
        ]
        trace = state.store.get(AGENT_TRACE_KEY) or {}
        calculator = trace.get("calculator") if isinstance(trace, dict) else None
        diagnostic: dict[str, Any] = {}
        calculator_note = ""
        if isinstance(calculator, dict):
            equations = [e for e in calculator.get("equations") or [] if isinstance(e, dict)]
            missing = [e for e in equations if e.get("unsourced")]
            values[UNSOURCED_KEY] = float(len(missing))
            diagnostic = {
                EXTRACTED_KEY: len(equations),
                "calculator": [
                    {
                        "equation": e.get("text") or e.get("expression"),
                        "unsourced": e.get("unsourced"),
                        "in_examples": e.get("in_examples"),
                    }
                    for e in missing
                ],
            }
            if missing:
                shown = ", ".join(
                    f"{e.get('text') or e.get('expression')} ({', '.join(e['unsourced'])}"
                    + (", all in the prompt's examples)" if e.get("in_examples") else ")")
                    for e in missing[:5]
                )
                calculator_note = (
                    f"; calculator: {len(missing)} of {len(equations)} extracted equations "
                    f"use numbers not in the analyst's output: {shown}"
                )
        stage_report = [
            {**s, "correct": c.correct, "values": c.values, "explanation": c.explanation}
            for s, c in zip(stages, checks, strict=True)
        ]
        path = " -> ".join(
            f"{s.get('stage')}: {as_text(s.get('answer'))[:60] or 'none'} "
            f"({'right' if c.correct else 'wrong'})"
            for s, c in zip(stages, checks, strict=True)
        )
        classes = stage_classes(state, stages[-1], final)
        causes, evidences = await final_causes(state, stages[-1], classes, gold_check)
        return Score(
            value=values,
            answer=as_text(final_answer)[:200] or None,
            explanation=(
                f"{path}; final: {final.explanation}; gold {target.text!r}{calculator_note}"
            ),
            metadata={
                "gold_kind": gold_kind(target.text),
                "stages": stage_report,
                "transitions": transitions,
                "flip": flip,
                "change": change,
                "trace": trace,
                **diagnostic,
                **final.metadata,
                ERROR_CLASS_KEY: classes,
                ERROR_CAUSE_KEY: causes,
                ERROR_EVIDENCE_KEY: evidences,
            },
        )

    return score


def stage_classes(state: TaskState, stage: Mapping[str, Any], check: Check) -> dict[str, str]:
    """The error class of the final answer under each key its check finds wrong: the
    check's own (a number's, a text's), and for a stage without an answer why it has
    none (its program failed, the reply was cut or declined, the prompt was over budget)."""
    wrong = [key for key, value in check.values.items() if value < 1]
    found = check.metadata.get(ERROR_CLASS_KEY)
    classes = dict(found) if isinstance(found, dict) else {}
    if not as_text(stage.get("answer")).strip():
        method = str(stage.get("method") or "")
        if method == "program_failed":
            why = program_error_class(str(stage.get("detail") or ""))
        else:
            why = no_answer_class(
                state.output.completion if state.output else "",
                stop_reason=stop_reason_of(state.output),
                method=method.removeprefix("rules:"),
                over_budget=bool(state.store.get(OVER_BUDGET_KEY)),
            )
        classes = dict.fromkeys(wrong, why)
    return truncated_first(
        {key: cls for key, cls in classes.items() if key in wrong}, stop_reason_of(state.output)
    )


STATED_METHODS = frozenset({"boxed", "json", "marker"})
"""Our rules' readings of an answer the reply states after an answer marker."""


def _gold_float(state: TaskState) -> float:
    try:
        value = float(state.target.text.strip())
    except ValueError:
        return math.nan
    return value if math.isfinite(value) else math.nan


async def final_causes(
    state: TaskState,
    stage: Mapping[str, Any],
    classes: dict[str, str],
    gold_check: GoldCheck | None,
) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """The cause of each wrong key of ``classes`` (the final stage's); never raises.

    The reply read is the one that gave the final answer (the agents' response), the program
    the one that gave it (a ``pot`` stage). Where the stage has no answer but the reply states
    one after an answer marker, the class becomes ``harness:extractor_missed`` (``classes``
    is updated) and the cause ``format``; so is a program that returned its number as text
    (class ``program_failed:no_result``: the program's own value is no number).
    """
    response = str(state.store.get(AGENT_RESPONSE_KEY) or "") or (
        state.output.completion if state.output else ""
    )
    program: dict[str, Any] | None = None
    if stage.get("stage") == "pot":
        found = state.store.get(PROGRAM_RESULT_KEY)
        program = dict(found) if isinstance(found, Mapping) else {"ok": False}
    answer = stage.get("answer")
    text_answer = as_text(answer).strip()
    number = read_number(answer) if text_answer else None
    stated = None
    if not text_answer and program is None:
        stated = extract_answer(response)
        if stated.number is not None and stated.method in STATED_METHODS:
            for key, cls in list(classes.items()):
                if cls.startswith(f"{NO_ANSWER}:") and cls != f"{NO_ANSWER}:truncated":
                    classes[key] = harness("extractor_missed")
    values = {key: number.value if number is not None else None for key in classes}
    causes, evidences = await explain(
        classes,
        values,
        output=response,
        gold=_gold_float(state),
        program=program,
        metadata=state.metadata or {},
        gold_check=gold_check,
    )
    returned_text = (
        str(program.get("float_text") or "")
        if program is not None
        and not program.get("ok")
        and program.get("returned")
        and program.get("value_type") == "str"
        else ""
    )
    if returned_text:
        for key, cls in classes.items():
            if cls.startswith(f"{PROGRAM_FAILED}:"):
                causes[key] = FORMAT
                evidences[key] = evidence(
                    "the program ran and returned its answer as text that reads as a number "
                    f"({returned_text}), which the program reading takes only as a "
                    "number: the harness, not the reasoning",
                    error_class=cls,
                    float_text=returned_text,
                )
    return causes, evidences


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
def count_rate() -> Metric:
    """A 0/1 key's ``count`` (its sum: how many samples) and ``rate`` (its mean)."""

    def compute(scores: list[SampleScore]) -> Value:
        values = [v for _, v in _finite(scores)]
        rate = sum(values) / len(values) if values else math.nan
        return {"count": float(sum(values)), "rate": rate}

    return compute


FLIP_SHARE_LABELS = {"correct_to_wrong": "share_c_to_w", "wrong_to_correct": "share_w_to_c"}
"""How :func:`by_flip` names each flip direction (short enough for Inspect's summary)."""


@metric
def by_flip() -> Metric:
    """Per flip direction, the share of its classified flips where the key is 1.

    On ``minor_change``: ``share_c_to_w`` (the share of the correct-to-wrong flips that
    were minor) and ``share_w_to_c``, over the samples whose score metadata ``flip`` is
    that direction and ``change`` minor or major (the paper's Table 3); a direction
    without such flips is left out.
    """

    def compute(scores: list[SampleScore]) -> Value:
        groups: dict[str, list[float]] = {}
        for s, v in _finite(scores):
            meta = s.score.metadata or {}
            if meta.get("flip") in FLIPS and meta.get("change") in ("minor", "major"):
                groups.setdefault(str(meta["flip"]), []).append(v)
        return {
            FLIP_SHARE_LABELS[flip]: sum(groups[flip]) / len(groups[flip])
            for flip in FLIPS
            if flip in groups
        }

    return compute


@metric
def unsourced() -> Metric:
    """The calculator's diagnostic over a run: ``count``, the extracted equations with an
    operand not in the analyst's output (the sum of the key's values); ``extracted``, all
    equations extracted (score metadata ``extracted_equations``); ``samples``, the samples
    with at least one such equation."""

    def compute(scores: list[SampleScore]) -> Value:
        found = _finite(scores)
        extracted = sum(int((s.score.metadata or {}).get(EXTRACTED_KEY) or 0) for s, _ in found)
        return {
            "count": float(sum(v for _, v in found)),
            "extracted": float(extracted),
            "samples": float(sum(1 for _, v in found if v > 0)),
        }

    return compute


GOLD_PREFIX = "gold="
"""Metric name prefix of the accuracy per gold kind: ``gold=integer``, ``gold=float``."""


@metric
def accuracy_by_gold_kind() -> Metric:
    """Accuracy per gold kind read from each score's metadata: ``gold=integer``,
    ``gold=float``, ``gold=text``."""

    def compute(scores: list[SampleScore]) -> Value:
        groups: dict[str, list[float]] = {}
        for s, v in _finite(scores):
            kind = str((s.score.metadata or {}).get("gold_kind", "unknown"))
            groups.setdefault(kind, []).append(v)
        return {f"{GOLD_PREFIX}{kind}": sum(vs) / len(vs) for kind, vs in sorted(groups.items())}

    return compute


SHARED_METADATA = ("gold_kind", "flip", "change", EXTRACTED_KEY)
"""Score metadata every key's score keeps (what the metrics read); the first key's score
keeps all of it."""


def agent_metrics(
    keys: Sequence[str],
    review: bool = True,
    extra: Mapping[str, Sequence[Metric]] | None = None,
    calculator: bool = False,
    cluster: str | None = None,
) -> dict[str, list[Metric]]:
    """Metrics of the agent scores, per score key in the order reported (official first).

    Each key of the check (``keys``): ``accuracy``, ``stderr``, accuracy by gold kind
    (``gold=integer``, ...) and ``extra[key]``. With ``review`` (a solver with a critic
    or calculator stage after the first answer): ``first_answer`` (``accuracy``, by
    gold kind), each flip key's ``count`` and ``rate``, and for ``minor_change`` and
    ``major_change`` also their share of each flip direction (``share_c_to_w``,
    ``share_w_to_c``). Without ``review`` the first answer is the final one and nothing
    flips: those keys are not reported. With ``calculator`` (a solver with a calculator
    stage): ``unsourced_equations`` (:func:`unsourced`: ``count``, ``extracted``,
    ``samples``). ``cluster``: the sample metadata key each check key's ``stderr`` is
    clustered by (Inspect's ``stderr(cluster=)``; None: unclustered).
    """
    metrics: dict[str, list[Metric]] = {
        key: [
            accuracy(),
            stderr(cluster=cluster),
            accuracy_by_gold_kind(),
            *(extra or {}).get(key, ()),
        ]
        for key in keys
    }
    if review:
        metrics["first_answer"] = [accuracy(), accuracy_by_gold_kind()]
        for key in FLIP_KEYS:
            metrics[key] = [count_rate()]
            if key not in FLIPS:
                metrics[key].append(by_flip())
    if calculator:
        metrics[UNSOURCED_KEY] = [unsourced()]
    return metrics


AGENT_KEYS = ("first_answer", *FLIP_KEYS, UNSOURCED_KEY)
"""Score keys of the agents' scoring besides the check's own keys."""


def agent_scoring(
    check: AnswerCheck,
    keys: Sequence[str],
    review: bool = True,
    extra: Mapping[str, Sequence[Metric]] | None = None,
    calculator: bool = False,
    cluster: str | None = None,
    gold_check: GoldCheck | None = None,
) -> Scoring:
    """:func:`agent_answer` with the metrics of :func:`agent_metrics`, for one scalar
    scorer per key (:func:`finmath_tasks.scorers.keyed.keyed_scorers`): plain metric
    names, the check's first key first; ``calculator``: add the calculator's
    ``unsourced_equations``; ``cluster``: the metadata key the stderr is clustered by;
    ``gold_check``: the benchmark's evidence for the causes of a wrong answer."""
    return Scoring(
        agent_answer(check, gold_check),
        agent_metrics(keys, review, extra, calculator, cluster),
        shared=SHARED_METADATA,
    )
