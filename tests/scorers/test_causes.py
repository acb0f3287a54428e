"""Error causes: each wrong score's cause and evidence beside its class, decided in order
from evidence; a correct answer has none; any reply gets exactly one cause or none, and the
cause code never raises (hypothesis)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.scorers.test_error_classes import keyed, scores, state

from finmath_tasks.sandbox.client import PROGRAM_RESULT_KEY
from finmath_tasks.scorers.causes import (
    CAUSES,
    ERROR_CAUSE_KEY,
    ERROR_EVIDENCE_KEY,
    CauseInput,
    Finding,
    evidence,
    explain,
)
from finmath_tasks.scorers.error_classes import ERROR_CLASS_KEY
from finmath_tasks.scorers.keyed import key_score


def causes_of(found: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.metadata or {}).get(ERROR_CAUSE_KEY) for k, v in found.items()}


def run(
    classes: dict[str, str],
    values: dict[str, float | None],
    output: str = "",
    findings: Sequence[Finding] = (),
    program: Mapping[str, Any] | None = None,
) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    async def check(data: CauseInput) -> Sequence[Finding]:
        return findings

    return asyncio.run(
        explain(classes, values, output=output, gold=2.0, program=program, gold_check=check)
    )


@pytest.mark.parametrize(
    ("cls", "cause"),
    [
        ("no_answer:truncated", "truncated"),
        ("no_answer:no_number", "no_answer"),
        ("no_answer:refused", "no_answer"),
        ("no_answer:hedged", "no_answer"),
        ("no_answer:over_budget", "over_budget"),
        ("harness:program_cut", "format"),
        ("harness:extractor_missed", "format"),
        ("program_failed:exception", "program_failed"),
        ("program_failed:timeout", "program_failed"),
    ],
)
def test_the_causes_read_from_the_class(cls: str, cause: str) -> None:
    # even a reply with a wrong stated step: the class decides first
    found, ev = run({"k": cls}, {"k": None}, output="2 + 2 = 5")
    assert found == {"k": cause} and ev["k"]["error_class"] == cls


def test_arithmetic_comes_before_the_gold_findings_and_names_the_step() -> None:
    misread = Finding("misread", evidence("x", input=1, number=5.0))
    found, ev = run(
        {"k": "wrong"},
        {"k": 7.0},
        output="Rate = 1.6850% / 360 = 0.0047361% per day\nSo 100 x 2 = 200",
        findings=[misread],
    )
    assert found == {"k": "arithmetic"}
    assert ev["k"]["step"] == "1.6850% / 360 = 0.0047361%"
    assert math.isclose(ev["k"]["computed"], 0.01685 / 360)


def test_findings_in_order_and_only_for_their_answer() -> None:
    method = Finding("method", evidence("inputs written"))
    partial = Finding("partial", evidence("step 2"), value=7.0)
    misread = Finding("misread", evidence("input 1 read as 5"), value=8.0)
    suspect = Finding("gold_suspect", evidence("0.56 written nowhere"))
    found, _ = run(
        {"a": "wrong", "b": "wrong"},
        {"a": 7.0, "b": 8.0},
        findings=[method, partial, misread, suspect],
    )
    assert found == {"a": "partial", "b": "misread"}
    found, _ = run({"a": "wrong"}, {"a": 9.0}, findings=[method, partial, misread, suspect])
    assert found == {"a": "gold_suspect"}
    found, _ = run({"a": "wrong"}, {"a": 9.0}, findings=[method])
    assert found == {"a": "method"}
    found, ev = run({"a": "wrong"}, {"a": 9.0})
    assert found == {"a": "unexplained"} and "does not decide" in ev["a"]["why"]
    found, _ = run({"a": "scale"}, {"a": 200.0})
    assert found == {"a": "unit"}


def test_a_check_that_raises_is_unexplained_with_the_reason() -> None:
    async def broken(data: CauseInput) -> Sequence[Finding]:
        raise RuntimeError("sandbox gone")

    found, ev = asyncio.run(
        explain({"k": "wrong"}, {"k": 3.0}, output="", gold=2.0, gold_check=broken)
    )
    assert found == {"k": "unexplained"}
    assert "sandbox gone" in ev["k"]["why"] and ev["k"]["error"] == "RuntimeError"
    # and the class-read causes stay decided
    found, _ = asyncio.run(
        explain({"k": "harness:program_cut"}, {"k": None}, output="", gold=2.0, gold_check=broken)
    )
    assert found == {"k": "format"}


def test_evidence_never_holds_a_float_json_lacks() -> None:
    import json

    async def odd(data: CauseInput) -> Sequence[Finding]:
        # a finding whose evidence a benchmark built by hand, with a -inf deep inside
        return [Finding("method", {"why": "w", "steps": [{"value": -math.inf}], "x": math.nan})]

    found, ev = asyncio.run(
        explain({"k": "wrong"}, {"k": 3.0}, output="", gold=2.0, gold_check=odd)
    )
    assert found == {"k": "method"}
    assert ev["k"]["steps"] == [{"value": "-inf"}] and ev["k"]["x"] == "nan"
    json.dumps(ev, allow_nan=False)  # strict JSON, as lm_eval's samples and the log need


def test_a_keyed_task_carries_each_wrong_keys_cause_and_evidence() -> None:
    s = state(
        "5.0", "We have 2 + 3 = 6. The answer is 6.", metadata={"question": "q", "topic": "t"}
    )
    found = scores(keyed("knowledgefmath"), s)
    for key in ("financemath", "tolerant"):
        meta = found[key].metadata or {}
        assert meta[ERROR_CLASS_KEY] == "wrong"
        assert meta[ERROR_CAUSE_KEY] == "arithmetic"
        assert meta[ERROR_EVIDENCE_KEY]["step"] == "2 + 3 = 6"
    right = scores(keyed("knowledgefmath"), state("5.0", "We have 2 + 3 = 5. The answer is 5."))
    assert all(ERROR_CAUSE_KEY not in (v.metadata or {}) for v in right.values())


def test_a_program_answer_has_no_arithmetic_check() -> None:
    record = {
        "ok": True,
        "value": 5.0,
        "error": None,
        "program": "def solution():\n    return 2 + 3 = 5",
    }
    found, _ = run({"k": "wrong"}, {"k": 5.0}, output="2 + 3 = 6", program=record)
    assert found == {"k": "unexplained"}


def test_key_score_keeps_causes_only_on_wrong_keys() -> None:
    from inspect_ai.scorer import Score

    whole = Score(
        value={"a": 1.0, "b": 0.0},
        metadata={
            ERROR_CLASS_KEY: {"b": "wrong"},
            ERROR_CAUSE_KEY: {"b": "method"},
            ERROR_EVIDENCE_KEY: {"b": {"why": "inputs written"}},
        },
    )
    a, b = key_score(whole, "a", first=True), key_score(whole, "b", first=False)
    assert ERROR_CAUSE_KEY not in (a.metadata or {})
    assert (b.metadata or {})[ERROR_CAUSE_KEY] == "method"
    assert (b.metadata or {})[ERROR_EVIDENCE_KEY] == {"why": "inputs written"}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    reply=st.text(max_size=300)
    | st.lists(
        st.sampled_from(
            [
                "1,000",
                "2.5%",
                " = ",
                " × ",
                "/",
                "(",
                ")",
                "0.0047",
                "≈",
                "\n",
                "$",
                "-",
                "^",
                "√",
                "\\frac{1}{2}",
                "x",
            ]
        ),
        max_size=40,
    ).map("".join),
    gold=st.floats(allow_nan=False, allow_infinity=False, min_value=-1e9, max_value=1e9),
    stop=st.sampled_from(["stop", "max_tokens"]),
)
def test_any_reply_gets_exactly_one_cause_or_none(reply: str, gold: float, stop: str) -> None:
    s = state(repr(gold), reply, metadata={"question": "q", "topic": "t"}, stop=stop)
    found = scores(keyed("knowledgefmath"), s)
    for key in ("financemath", "tolerant"):
        meta = found[key].metadata or {}
        value = found[key].value
        assert isinstance(value, int | float)
        if value >= 1:
            assert ERROR_CAUSE_KEY not in meta and ERROR_EVIDENCE_KEY not in meta
        else:
            assert meta[ERROR_CAUSE_KEY] in CAUSES
            assert isinstance(meta[ERROR_EVIDENCE_KEY].get("why"), str)
    _ = PROGRAM_RESULT_KEY


def test_an_answer_that_is_the_gold_at_its_written_precision_is_precision() -> None:
    # 33 for 33.33: the gold itself agrees at the answer's precision; 33.4 is no rounding
    # of 33.33, and 0 is no rounding of 0.004 (a zero has no precision to read)
    for answer, gold, expected in (
        (33.0, 100 / 3, "precision"),
        (33.4, 100 / 3, "unexplained"),
        (0.0, 0.004, "unexplained"),
        (0.25, 0.2504, "precision"),
    ):
        causes, evidences = asyncio.run(
            explain({"k": "wrong"}, {"k": answer}, output="", gold=gold)
        )  # fmt: skip
        assert causes["k"] == expected, (answer, gold, evidences)
    causes, evidences = asyncio.run(explain({"k": "wrong"}, {"k": 33.0}, output="", gold=100 / 3))
    assert "fewer digits" in evidences["k"]["why"] and evidences["k"]["gold_value"] == 100 / 3
