"""Error classes: crafted replies of each class of each task get that class and no other;
a correct answer never has a class; for any reply and gold, each score key has exactly
one class or is correct (hypothesis)."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inspect_ai.model import ChatMessageUser, ModelName, ModelOutput
from inspect_ai.scorer import Score, Target
from inspect_ai.solver import TaskState
from inspect_ai.util import registry_info

from finmath_tasks.sandbox.client import PROGRAM_RESULT_KEY
from finmath_tasks.scorers.comparisons import COMPARISONS
from finmath_tasks.scorers.error_classes import (
    ERROR_CLASS_KEY,
    NEAR,
    ROUNDING,
    SCALE,
    SHARED_CLASSES,
    SIGN,
    WRONG,
    accepts_under,
    no_answer_class,
    number_class,
    program_failure_class,
)
from finmath_tasks.scorers.extraction import extract_answer, parse_number
from finmath_tasks.scorers.keyed import keyed_scorers
from finmath_tasks.tasks.finqa import error_classes as finqa_classes
from finmath_tasks.tasks.mathhay import error_classes as mathhay_classes
from finmath_tasks.tasks.sara import error_classes as sara_classes
from finmath_tasks.tasks.tatqa import error_classes as tatqa_classes

ALL_CLASSES = SHARED_CLASSES | {
    *finqa_classes.CLASSES,
    *mathhay_classes.CLASSES,
    *sara_classes.CLASSES,
    *tatqa_classes.CLASSES,
}


def state(
    target: str,
    output: str,
    metadata: dict[str, Any] | None = None,
    stop: str = "stop",
    store: dict[str, Any] | None = None,
) -> TaskState:
    s = TaskState(
        model=ModelName("mockllm/model"),
        sample_id="s",
        epoch=1,
        input="question",
        target=Target(target),
        messages=[ChatMessageUser(content="question")],
        metadata=dict(metadata or {}),
    )
    s.output = ModelOutput.from_content("mockllm/model", output, stop_reason=stop)  # type: ignore[arg-type]
    for key, value in (store or {}).items():
        s.store.set(key, value)
    return s


def keyed(task: str, **options: Any) -> list[Any]:
    return keyed_scorers(task, count_unscored=False, **options)


def scores(scorers: Sequence[Any], s: TaskState) -> dict[str, Score]:
    async def run() -> dict[str, Score]:
        out: dict[str, Score] = {}
        for scorer in scorers:  # in order, as Inspect runs them
            name = registry_info(scorer).name.split("/")[-1]
            result = await scorer(s, s.target)
            assert result is not None
            out[name] = result
        return out

    return asyncio.run(run())


def classes(found: dict[str, Score]) -> dict[str, str | None]:
    return {k: (v.metadata or {}).get(ERROR_CLASS_KEY) for k, v in found.items()}


def assert_one_class_or_correct(found: dict[str, Score], keys: Sequence[str]) -> None:
    """Each answer key: correct (value 1) with no class, or exactly one known class."""
    for key in keys:
        score = found[key]
        value = score.value
        cls = (score.metadata or {}).get(ERROR_CLASS_KEY)
        assert isinstance(value, int | float)
        if math.isnan(value):
            assert cls is None, (key, cls)
        elif value >= 1:
            assert cls is None, (key, cls, score.explanation)
        else:
            assert isinstance(cls, str) and cls in ALL_CLASSES, (key, cls, score.explanation)


# --- the shared rules ----------------------------------------------------------------------


def test_the_shared_numeric_classes_in_order() -> None:
    tolerant = COMPARISONS["tolerant"]

    def of(text: str, gold: float) -> str:
        number = parse_number(text)
        assert number is not None
        return number_class(number, gold, accepts_under(tolerant, gold))

    assert of("3500", 3.5) == SCALE  # thousands as units
    assert of("0.035", 350.0) == SCALE
    assert of("-3.5", 3.5) == SIGN
    assert of("3.52", 3.5) == ROUNDING  # 0.57%: outside tolerant's 0.2%, within 1%
    assert of("3.7", 3.5) == NEAR  # 5.7%
    assert of("9.1", 3.5) == WRONG
    assert of("0.1", 0.0) == WRONG  # no relative error around 0
    assert of("-35", 3.5) == WRONG  # scale and sign together: neither alone
    # exact: the percent against the fraction is a scale error
    assert (
        number_class(parse_number("5%"), 0.05, accepts_under(COMPARISONS["exact"], 0.05))  # type: ignore[arg-type]
        == SCALE
    )


def test_no_answer_reasons_and_program_failures() -> None:
    assert no_answer_class(over_budget=True) == "no_answer:over_budget"
    assert no_answer_class("Let me think", stop_reason="max_tokens") == "no_answer:truncated"
    assert no_answer_class("", stop_reason="content_filter") == "no_answer:refused"
    assert no_answer_class("I'm sorry, I cannot help with that.") == "no_answer:refused"
    assert no_answer_class("x", method="hedged") == "no_answer:hedged"
    assert no_answer_class("no idea at all") == "no_answer:no_number"
    assert program_failure_class({"ok": False, "error": "timeout after 3.0s"}) == (
        "program_failed:timeout"
    )
    assert program_failure_class({"ok": False, "error": "NameError: x"}) == (
        "program_failed:exception"
    )
    assert (
        program_failure_class({"ok": False, "error": "returned str", "returned": True})
        == "program_failed:no_result"
    )
    assert program_failure_class(None) == "program_failed:no_result"


# --- knowledgefmath (the generic numeric scorer) ------------------------------------------

KFM_COT = [
    # (reply, stop, store, financemath's class, tolerant's class)
    ("The answer is 3.5", "stop", {}, None, None),
    ("The answer is 3500", "stop", {}, None, SCALE),  # the official metric accepts 10^k
    ("The answer is -3.5", "stop", {}, None, SIGN),  # ... and a sign flip
    ("The answer is 3.52", "stop", {}, ROUNDING, ROUNDING),
    ("The answer is 3.7", "stop", {}, NEAR, NEAR),
    ("The answer is 9.1", "stop", {}, WRONG, WRONG),
    ("Let me compute 3 + 4 and", "max_tokens", {}, *["no_answer:truncated"] * 2),
    ("I cannot answer this question.", "stop", {}, *["no_answer:refused"] * 2),
    ("The answer is 3 or 4.", "stop", {}, *["no_answer:hedged"] * 2),
    ("I do not know.", "stop", {}, *["no_answer:no_number"] * 2),
]


@pytest.mark.parametrize(("reply", "stop", "store", "official", "ours"), KFM_COT)
def test_knowledgefmath_cot_classes(
    reply: str, stop: str, store: dict[str, Any], official: str | None, ours: str | None
) -> None:
    found = scores(
        keyed("knowledgefmath", solver="cot"), state("3.5", reply, stop=stop, store=store)
    )
    got = classes(found)
    assert got["financemath"] == official
    assert got["tolerant"] == ours
    assert_one_class_or_correct(found, ["financemath", "knowledgefmath2023", "tolerant"])


def _program(**fields: Any) -> dict[str, Any]:
    return {"ok": False, "value": None, "error": None, "program": "def solution(): ...", **fields}


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (_program(error="timeout after 3.0s"), "program_failed:timeout"),
        (_program(error="ZeroDivisionError: division by zero"), "program_failed:exception"),
        (
            _program(error="the value is a str, not a number", returned=True),
            "program_failed:no_result",
        ),
        (_program(ok=True, value=3500.0, gold_value=3.5), SCALE),
        (_program(ok=True, value=-3.5, gold_value=3.5), SIGN),
        (_program(ok=True, value=3.5, gold_value=3.5), None),
    ],
)
def test_knowledgefmath_pot_classes(record: dict[str, Any], expected: str | None) -> None:
    found = scores(
        keyed("knowledgefmath", solver="pot"),
        state("3.5", "```python\ndef solution(): ...```", store={PROGRAM_RESULT_KEY: record}),
    )
    assert classes(found)["tolerant"] == expected
    if expected and expected.startswith("program_failed"):
        assert classes(found)["financemath"] == expected
    assert_one_class_or_correct(found, ["financemath", "knowledgefmath2023", "tolerant"])


# --- FinQA -----------------------------------------------------------------------------------

FINQA_META = {"exe_ans": 94.0, "program": "subtract(5829, 5735)", "table": []}
FINQA_KEYS = ["execution_accuracy", "program_accuracy", "tolerant", "rounding"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Program: subtract(5829, 5735)\nFinal answer: 94", {}),
        (
            "Program: subtract(5829000, 5735000)\nFinal answer: 94000",
            dict.fromkeys(FINQA_KEYS, SCALE),
        ),
        (
            "Program: subtract(5735, 5829)\nFinal answer: -94",
            dict.fromkeys(FINQA_KEYS, SIGN),
        ),
        (
            "Program: divide(1, 0)\nFinal answer: 94",
            {"execution_accuracy": "program_failed:exception",
             "program_accuracy": "program_failed:exception"},
        ),
        (
            "Final answer: 94",
            {"execution_accuracy": "no_answer:no_number", "program_accuracy": "no_answer:no_number"},
        ),
        ("Program: add(94, 0)\nFinal answer: 94", {"program_accuracy": "other_program"}),
        (
            "Program: subtract(5829, 5735)\nFinal answer: 94.5",
            {"tolerant": ROUNDING, "rounding": ROUNDING},
        ),
        (
            "Program: subtract(5829, 5700)\nFinal answer: 129",
            dict.fromkeys(FINQA_KEYS, WRONG),
        ),
    ],
)  # fmt: skip
def test_finqa_classes(reply: str, expected: dict[str, str]) -> None:
    found = scores(
        keyed("finqa", solver="rag_cot", retrieval="none"), state("94.0", reply, FINQA_META)
    )
    got = {k: v for k, v in classes(found).items() if v is not None}
    assert got == expected
    assert_one_class_or_correct(found, FINQA_KEYS)


def test_finqa_yes_no_questions() -> None:
    meta = {"exe_ans": "yes", "program": "greater(5, 3)", "table": []}
    rag = keyed("finqa", solver="rag_cot", retrieval="none")
    flipped = classes(scores(rag, state("yes", "Program: greater(3, 5)\nFinal answer: no", meta)))
    assert {k: v for k, v in flipped.items() if v} == dict.fromkeys(
        FINQA_KEYS, finqa_classes.YES_NO_FLIPPED
    )
    silent = classes(scores(rag, state("yes", "Program: greater(5, 3)\nFinal answer: maybe", meta)))
    assert silent["tolerant"] == "no_answer:no_number" and silent["execution_accuracy"] is None
    agent = keyed("finqa", solver="cot")
    reply = json.dumps({"steps": [], "answer": "no"})
    got = classes(scores(agent, state("yes", reply, meta)))
    assert got["rounding"] == got["tolerant"] == finqa_classes.YES_NO_FLIPPED


# --- TAT-QA (official EM/F1) -----------------------------------------------------------------


def _tatqa(answer: str, gold: Any, answer_type: str, scale: str) -> dict[str, str | None]:
    meta = {"answer": gold, "answer_type": answer_type, "scale": scale}
    found = scores(
        keyed("tatqa", subset="all", solver="cot"),
        state(str(gold), json.dumps({"steps": [], "answer": answer}), meta),
    )
    assert_one_class_or_correct(found, ["em", "f1"])
    return classes(found)


def test_tatqa_classes() -> None:
    assert _tatqa("1,496.5 million", 1496.5, "arithmetic", "million") == {"em": None, "f1": None}
    label = _tatqa("1,496.5", 1496.5, "arithmetic", "million")
    assert label == {"em": tatqa_classes.SCALE_LABEL, "f1": tatqa_classes.SCALE_LABEL}
    assert _tatqa("12.5", 12.5, "arithmetic", "percent")["em"] == tatqa_classes.SCALE_LABEL
    partial = _tatqa("net sales", ["net sales", "cost of sales"], "multi-span", "")
    assert partial == {"em": tatqa_classes.PARTIAL_SPAN, "f1": tatqa_classes.PARTIAL_SPAN}
    assert _tatqa("-3.5", 3.5, "arithmetic", "")["em"] == SIGN
    assert _tatqa("350", 3.5, "arithmetic", "")["em"] == SCALE
    assert _tatqa("3.52", 3.5, "arithmetic", "")["em"] == ROUNDING
    assert _tatqa("3.8", 3.5, "arithmetic", "")["em"] == NEAR
    assert _tatqa("revenue", ["cost"], "span", "")["em"] == WRONG
    assert _tatqa("", 3.5, "arithmetic", "")["em"] == "no_answer:no_number"


# --- SARA -----------------------------------------------------------------------------------


def _sara(target: str, reply: str, kind: str, **store: Any) -> dict[str, str | None]:
    found = scores(keyed("sara", kind="all"), state(target, reply, {"kind": kind}, store=store))
    keys = ["entailment"] if kind == "entailment" else ["exact_dollar", "sara_tolerance"]
    assert_one_class_or_correct(found, keys)
    return {k: v for k, v in classes(found).items() if k in keys}


def test_sara_classes() -> None:
    assert _sara("Entailment", "Answer: Entailment", "entailment") == {"entailment": None}
    assert _sara("Entailment", "Answer: Contradiction", "entailment") == {
        "entailment": sara_classes.WRONG_LABEL
    }
    assert _sara("Entailment", "Answer: Entailment or Contradiction", "entailment") == {
        "entailment": "no_answer:hedged"
    }
    assert _sara("Entailment", "", "entailment", prompt_over_budget="too long") == {
        "entailment": "no_answer:over_budget"
    }
    gold = "100000"
    assert _sara(gold, "The tax is $100,000.", "tax") == dict.fromkeys(
        ["exact_dollar", "sara_tolerance"]
    )
    assert _sara(gold, "The tax is $100.", "tax") == dict.fromkeys(
        ["exact_dollar", "sara_tolerance"], SCALE
    )
    assert _sara(gold, "The tax is $-100,000.", "tax") == dict.fromkeys(
        ["exact_dollar", "sara_tolerance"], SIGN
    )
    assert _sara(gold, "The tax is $100,500.", "tax") == {
        "exact_dollar": ROUNDING, "sara_tolerance": None
    }  # fmt: skip
    assert _sara(gold, "The tax is $108,000.", "tax") == {
        "exact_dollar": sara_classes.WITHIN_MARGIN, "sara_tolerance": None
    }  # fmt: skip
    assert _sara(gold, "The tax is $250,000.", "tax") == dict.fromkeys(
        ["exact_dollar", "sara_tolerance"], sara_classes.OVER_MARGIN
    )
    assert _sara(gold, "I cannot compute this.", "tax") == dict.fromkeys(
        ["exact_dollar", "sara_tolerance"], "no_answer:refused"
    )


# --- MathHay -----------------------------------------------------------------------------------


def _mathhay(
    reply: Any, monkeypatch: pytest.MonkeyPatch, judge: str | None = None
) -> dict[str, str | None]:
    from finmath_tasks.scorers.judge import JudgeVerdict
    from finmath_tasks.tasks.mathhay import scoring

    async def verdict(*args: Any, **kwargs: Any) -> JudgeVerdict:
        assert judge is not None, "the judge is asked only without an exact match"
        return JudgeVerdict(judge, reply="{}", detail="scripted")  # type: ignore[arg-type]

    monkeypatch.setattr(scoring, "judge_equivalence", verdict)
    monkeypatch.setenv("INSPECT_EVAL_MODEL", "mockllm/model")  # the judge's role falls back to it
    text = reply if isinstance(reply, str) else json.dumps({"reasoning": "r", "answer": reply})
    meta = {"solution": "def solve(): return 12.5", "answer": 12.5}
    found = scores(keyed("mathhay", judge=True), state("12.5", text, meta))
    assert_one_class_or_correct(found, ["mathhay", "exact_match", "tolerant"])
    return classes(found)


def test_mathhay_classes(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _mathhay(12.5, monkeypatch) == dict.fromkeys(["mathhay", "exact_match", "tolerant"])
    accepted = _mathhay(12.6, monkeypatch, judge="yes")
    assert accepted == {
        "mathhay": None, "exact_match": mathhay_classes.JUDGE_ACCEPTED, "tolerant": ROUNDING
    }  # fmt: skip
    failed = _mathhay(12.6, monkeypatch, judge="unparseable")
    assert failed["mathhay"] == mathhay_classes.JUDGE_FAILED and failed["exact_match"] == ROUNDING
    scaled = _mathhay(12500, monkeypatch, judge="no")
    assert scaled == dict.fromkeys(["mathhay", "exact_match", "tolerant"], SCALE)
    assert _mathhay(-12.5, monkeypatch, judge="no")["mathhay"] == SIGN
    assert _mathhay("no JSON here", monkeypatch) == dict.fromkeys(
        ["mathhay", "exact_match", "tolerant"], "no_answer:no_number"
    )


# --- properties ------------------------------------------------------------------------------

NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15),
    st.integers(-(10**6), 10**6).map(float),
    st.sampled_from([0.0, 3.5, -3.5, 0.035, 350.0, 1e-9]),
)
REPLIES = st.one_of(
    st.text(max_size=120),
    st.tuples(st.sampled_from(["The answer is ", "Answer: ", "", "\\boxed{"]), NUMBERS,
              st.sampled_from(["", "%", " million", " or 7", "}", " thousand"]))
    .map(lambda t: f"{t[0]}{t[1]!r}{t[2]}"),
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    reply=REPLIES,
    gold=NUMBERS,
    stop=st.sampled_from(["stop", "max_tokens", "content_filter"]),
)
def test_any_reply_and_gold_have_one_class_or_are_correct(
    reply: str, gold: float, stop: str
) -> None:
    scorers = keyed("knowledgefmath", solver="cot", profile="exact")
    found = scores(scorers, state(repr(gold), reply, stop=stop))
    assert_one_class_or_correct(found, ["financemath", "knowledgefmath2023", "exact"])
    tolerant = keyed("knowledgefmath", solver="cot")
    assert_one_class_or_correct(scores(tolerant, state(repr(gold), reply, stop=stop)), ["tolerant"])


@settings(max_examples=200, deadline=None)
@given(reply=REPLIES, gold=NUMBERS, name=st.sampled_from(sorted(COMPARISONS)))
def test_number_class_is_total(reply: str, gold: float, name: str) -> None:
    number = extract_answer(reply).number
    if number is None:
        return
    cls = number_class(number, gold, accepts_under(COMPARISONS[name], gold))
    assert cls in {SCALE, SIGN, ROUNDING, NEAR, WRONG}


# --- inspect score recomputes them ---------------------------------------------------------


@pytest.mark.slow
def test_inspect_score_recomputes_the_classes(tmp_path: Any) -> None:
    """A log whose scores were removed, re-scored by ``inspect score`` in a fresh process,
    has every sample's class under every key again."""
    import os
    import subprocess
    import sys

    from inspect_ai import eval
    from inspect_ai.log import read_eval_log, write_eval_log

    from eval_helpers import scripted
    from finmath_tasks.tasks.knowledgefmath import knowledgefmath

    replies = ["The answer is 14685000", "The answer is -3.5", "I cannot answer that."]
    [log] = eval(
        knowledgefmath(split="demo", solver="cot"),
        model=scripted(replies),
        limit=3,
        max_samples=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error

    def of(found: Any) -> dict[tuple[str, str], Any]:
        return {
            (str(s.id), name): (score.metadata or {}).get(ERROR_CLASS_KEY)
            for s in found.samples or []
            for name, score in (s.scores or {}).items()
        }

    before = of(log)
    assert before[("demo-0", "tolerant")] == SCALE and before[("demo-0", "financemath")] is None
    assert before[("demo-1", "tolerant")] == SIGN
    assert before[("demo-2", "financemath")] == "no_answer:refused"
    copy = log.model_copy(deep=True)
    for sample in copy.samples or []:
        sample.scores = None
    assert copy.results is not None
    copy.results.scores = []
    stripped = tmp_path / "stripped.eval"
    write_eval_log(copy, str(stripped))
    done = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "score", str(stripped), "--overwrite",
         "--action", "overwrite", "--display", "none"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert of(read_eval_log(str(stripped))) == before
