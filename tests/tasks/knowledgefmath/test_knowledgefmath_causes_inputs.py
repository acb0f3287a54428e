"""FinanceMath's causes from the inputs a wrong answer used, through real evals: a reply or a
program that invents a number is `misread` (the number named), a PoT program is traced
against the gold in the sandbox (where they part), a knowledge setting that retrieved none
of the question's terms is `retrieval`; `inspect score` recomputes them. On real recorded
replies and programs: invented numbers named, derived ones not taken for inventions."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inspect_ai import eval
from inspect_ai.log import read_eval_log

from eval_helpers import scripted
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.scorers.causes import (
    CAUSES,
    ERROR_CAUSE_KEY,
    ERROR_EVIDENCE_KEY,
    CauseInput,
    explain,
)
from finmath_tasks.scorers.causes_arithmetic import check_arithmetic
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.knowledgefmath.causes import knowledgefmath_causes
from finmath_tasks.tasks.knowledgefmath.dataset import load_dataset

pytestmark = pytest.mark.skipif(not bwrap_available()[0], reason="needs bubblewrap")

DEMO = {s.id: s for s in load_dataset("demo")}


def causes(path: str, key: str = "tolerant") -> dict[str, tuple[Any, dict[str, Any]]]:
    log = read_eval_log(path)
    assert log.status == "success" and log.samples
    out = {}
    for sample in log.samples:
        meta = (sample.scores or {})[key].metadata or {}
        out[str(sample.id)] = (meta.get(ERROR_CAUSE_KEY), meta.get(ERROR_EVIDENCE_KEY) or {})
    return out


def rescore(path: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "inspect_ai",
            "score",
            path,
            "--action",
            "overwrite",
            "--overwrite",
            "--display",
            "plain",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def run(tmp_path: Path, ids: list[str], outputs: list[str], **params: Any) -> str:
    task = knowledgefmath(split="demo", **params)
    task.dataset = task.dataset.filter(lambda s: s.id in ids)
    assert [s.id for s in task.dataset] == ids
    sandbox = "finmath_bwrap" if params.get("solver") == "pot" else None
    [log] = eval(
        task,
        model=scripted(outputs),
        log_dir=str(tmp_path),
        display="none",
        max_samples=1,
        sandbox=sandbox,
    )
    assert log.status == "success"
    return log.location


def test_an_invented_number_and_a_wrong_formula_in_cot_replies(tmp_path: Path) -> None:
    replies = [
        # demo-2: a fee the question never states, after two steps whose results it reuses
        "Interest = 15000 × 0.048 × 6 = 4320\nNet = 4320 - 250 = 4070\n"
        "Value = 15000 + 4070 = 19070\nTherefore, the answer is 19070.",
        # demo-3: the coupon as a perpetuity, every number the question's or derived
        "Coupon = 1000 × 6% = 60\nPrice = 60 / 0.072 = 833.33\nTherefore, the answer is 833.33.",
    ]
    path = run(tmp_path, ["demo-2", "demo-3"], replies, solver="cot")
    found = causes(path)
    cause, why = found["demo-2"]
    assert cause == "misread"
    assert why["number"] == "250" and why["step"] == "4320 - 250 = 4070"
    assert why["invented"] == ["250"]  # 4320 and 4070 are the reply's own results
    cause, why = found["demo-3"]
    assert cause == "method" and "invented" not in why
    rescore(path)
    assert causes(path) == found


def test_a_number_the_reply_posits_after_an_equals_sign_is_an_input() -> None:
    # demo-2 (15000 at 4.8% a year, compounded monthly for 6 years): "r = 5%" is posited,
    # not a result the reply worked out; before, every number after "=" counted as one,
    # and the 0.05 of the next step was accounted for by it
    def cause(reply: str) -> tuple[str, dict[str, Any]]:
        found, evidences = asyncio.run(
            explain({"tolerant": "wrong"}, {"tolerant": 20235.27}, output=reply,
                    gold=19994.87, metadata=DEMO["demo-2"].metadata, gold_check=knowledgefmath_causes)
        )  # fmt: skip
        return found["tolerant"], evidences["tolerant"]

    posited = "Assume r = 5% a year.\nValue = 15000 × (1 + 0.05 / 12)^72 = 20235.27\n"
    found, why = cause(posited + "Therefore, the answer is 20235.27.")
    assert found == "misread" and why["invented"] == ["5%"], why  # posited, then used
    assert why["step"] == "Assume r = 5% a year."
    # a posited number the question writes is the question's: 4.8% is no invention
    given = "Let r = 4.8% and n = 72.\nValue = 15000 × (1 + 0.048 / 12)^72 = 19994.9\n"
    found, why = cause(given + "Therefore, the answer is 20235.27.")
    assert "invented" not in why, why


def test_assumed_reads_positing_lines_only() -> None:
    from finmath_tasks.scorers.causes_inputs import assumed, stated_before

    lines = [
        "Assume r = 3%.",
        "Let's compute 1000 × 1.05 = 1050",
        "Suppose the growth rate is 4.5% per year",
        "Assuming a tax rate of 30%, tax = 100 × 0.3 = 30",
        "Total = 155.50",
    ]
    assert assumed(lines) == [(1, 0.03, "3%"), (3, 0.045, "4.5%")]
    assert stated_before(lines) == [1050.0, 100.0, 0.3, 30.0, 155.5]  # not the posited 3%


def test_pot_programs_traced_against_the_gold(tmp_path: Path) -> None:
    face_one_year_early = (
        "```python\ndef solution():\n    face = 1000\n    coupon = face * 0.06\n"
        "    y = 0.072\n    n = 5\n"
        "    pv = sum(coupon / (1 + y) ** t for t in range(1, n + 1))\n"
        "    return pv + face / (1 + y) ** (n - 1)\n```"
    )
    invented_rate = (
        "```python\ndef solution():\n    principal = 15000\n    rate = 0.05\n"
        "    return principal * (1 + rate / 12) ** 72\n```"
    )
    path = run(tmp_path, ["demo-2", "demo-3"], [invented_rate, face_one_year_early], solver="pot")
    found = causes(path)
    cause, why = found["demo-3"]
    assert cause == "method"
    assert why["inputs_match"] is True
    assert why["expression"] == "face / (1 + y) ** (n - 1)"
    assert "it parts from the gold at step" in why["why"]
    cause, why = found["demo-2"]
    assert cause == "misread" and why["number"] == "0.05" and why["step"] == "rate = 0.05"
    assert why["trace"]["extra_inputs"] == ["0.05"]
    rescore(path)
    assert causes(path) == found


def test_retrieval_when_the_knowledge_holds_none_of_the_needed_terms(tmp_path: Path) -> None:
    bank = tmp_path / "bank.json"
    bank.write_text(
        json.dumps(
            [
                {"term": "Alpha", "topic": "x", "definition": "Sharpe ratio explained."},
                {"term": "Beta", "topic": "x", "definition": "Unrelated words."},
            ]
        )
    )
    reply = "I recall the fund's figures. Therefore, the answer is 0.75."
    ours = run(
        tmp_path / "ours",
        ["demo-11"],
        [reply],
        solver="cot",
        knowledge="bm25",
        top_n=1,
        knowledge_bank=str(bank),
    )
    cause, why = causes(ours)["demo-11"]
    assert cause == "retrieval"
    assert why["needed"] == ["Sharpe ratio"] and why["retrieved"] == ["Alpha"]
    rescore(ours)
    assert causes(ours)["demo-11"][0] == "retrieval"
    # the shipped bank retrieves the Sharpe ratio: the same reply is not a retrieval error
    shipped = run(tmp_path / "shipped", ["demo-11"], [reply], solver="cot", knowledge="bm25")
    assert causes(shipped)["demo-11"][0] == "unexplained"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    reply=st.lists(
        st.sampled_from(
            ["15000", "4.8%", "0.05", "250", " = ", " × ", " + ", " - ", "/", "12", "\n", "72"]
        ),
        max_size=30,
    ).map("".join),
    answer=st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    retrieved=st.booleans(),
)
def test_any_reply_gets_one_cause_or_none(reply: str, answer: float, retrieved: bool) -> None:
    metadata = {
        **(DEMO["demo-2"].metadata or {}),
        "knowledge": {
            "terms": ["Alpha"],
            "needed": ["Compound interest"],
            "needed_retrieved": {"Compound interest": retrieved},
        },
    }
    found, evidences = asyncio.run(
        explain(
            {"tolerant": "wrong"},
            {"tolerant": answer},
            output=reply,
            gold=19994.87,
            metadata=metadata,
            gold_check=knowledgefmath_causes,
        )
    )
    assert list(found) == ["tolerant"] and found["tolerant"] in CAUSES
    assert isinstance(evidences["tolerant"]["why"], str)
    if not retrieved and found["tolerant"] in ("method", "unexplained", "gold_suspect"):
        pytest.fail("a prompt without the needed terms is retrieval before method")


DATA = Path(os.environ.get("FINMATH_DATA_DIR", "/nonexistent")) / "financemath"
needs_data = pytest.mark.skipif(
    not (DATA / "validation.json").is_file(), reason="needs FINMATH_DATA_DIR"
)


def recorded(model: str, kind: str, question: str) -> tuple[str, Any, dict[str, Any]]:
    validation = {s.id: s for s in load_dataset("validation", data_dir=str(DATA))}
    records = json.loads((DATA / f"reference_outputs/validation/{kind}/{model}.json").read_text())
    [record] = [r for r in records if r["question_id"] == question]
    return record["output"][0], validation[question], record


def findings_of(model: str, kind: str, question: str, answer: float | None = None) -> list[Any]:
    """The findings for a recorded reply (``answer``: the number read from it) or program
    (its recorded result)."""
    output, sample, record = recorded(model, kind, question)
    program = None
    if answer is None:
        answer = float(record["result"]["prediction_executed_result"])
    if kind == "pot":
        source = re.search(r"```python\n(.*?)```", output, re.S)
        program = {"ok": True, "program": source.group(1) if source else output}
    data = CauseInput(
        output=output,
        gold=float(sample.target),
        answers=(answer,),
        program=program,
        metadata=sample.metadata or {},
        arithmetic=check_arithmetic(output) if program is None else None,
    )
    return list(asyncio.run(knowledgefmath_causes(data)))


@needs_data
def test_invented_numbers_in_recorded_replies_and_programs() -> None:
    # gemma-7b-it, validation-124: an artwork's value added from "artists' fees: $200" and
    # "materials: $400", which the question never gives
    [found] = [
        f
        for f in findings_of("gemma-7b-it", "cot", "validation-124", 300.0)
        if "invented" in f.evidence
    ]
    assert found.cause == "misread" and found.evidence["number"] == "200"
    assert found.evidence["step"] == "200 + 400 = 600"
    # GPT-3.5-turbo-0125's PoT program for validation-143 assumes a 5% discount rate
    [found] = [
        f
        for f in findings_of("gpt-3_5-turbo-0125", "pot", "validation-143")
        if "invented" in f.evidence
    ]
    assert found.evidence["number"] == "0.05"
    assert found.evidence["step"] == "interest_cost = beginning_PBO * 0.05"


@needs_data
@pytest.mark.parametrize(
    ("question", "answer", "derived"),
    [
        ("validation-36", -31.0, "155.50"),  # stated after "=" in a line the check cannot read
        ("validation-95", 47150.0, "3,747,150"),  # "= GBP 3,747,150", a line before
        ("validation-97", 7.5, "162,500"),  # "which equals £162,500"
        ("validation-122", 3327336.31, "15.091545"),  # a rewrite after an unread side
        ("validation-60", 0.0226, "1.0834"),  # 1.0208^4 worked out in the head (1.0858)
    ],
)
def test_derived_numbers_of_recorded_replies_are_not_inventions(
    question: str, answer: float, derived: str
) -> None:
    # GPT-3.5-turbo-0125's CoT replies: each number was produced by the reply itself
    output, _, _ = recorded("gpt-3_5-turbo-0125", "cot", question)
    assert derived in output
    found = findings_of("gpt-3_5-turbo-0125", "cot", question, answer)
    assert not [f for f in found if "invented" in f.evidence]


@needs_data
def test_a_recorded_program_traced_against_the_gold() -> None:
    # GPT-3.5-turbo-0125 on validation-42 prices the stock on this year's dividend: its
    # inputs are the gold's, and it parts at its first step, the dividend not grown
    [method] = [
        f for f in findings_of("gpt-3_5-turbo-0125", "pot", "validation-42") if f.cause == "method"
    ]
    assert method.evidence["inputs_match"] is True
    assert method.evidence["expression"] == (
        "dividend_payment / (required_rate_return - growth_rate)"
    )
