"""FinanceMath's error causes through a real eval: crafted CoT replies for each cause the gold
solution() decides (re-run in the bwrap sandbox) get that cause and its evidence, a correct
reply none; `inspect score` recomputes them; a gold that uses a number written nowhere is
suspect."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai import eval
from inspect_ai.log import read_eval_log

from eval_helpers import scripted
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.scorers.causes import ERROR_CAUSE_KEY, ERROR_EVIDENCE_KEY, CauseInput
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.knowledgefmath.causes import knowledgefmath_causes

pytestmark = pytest.mark.skipif(not bwrap_available()[0], reason="needs bubblewrap")

REPLIES = [
    # demo-0: the weighted-average unit cost, an intermediate of the gold
    "Total cost = 400 × 12 + 600 × 13.5 + 500 × 14.25 = 20025\n"
    "Average = 20025 / 1500 = 13.35\nTherefore, the answer is 13.35.",
    # demo-1: the 4% spread entered as 4
    "Gross = 84 / (1 - 4) = -28\nShares = -28 / 25 = -1.12\nTherefore, the answer is -1.12.",
    # demo-2: simple instead of compound interest, every input the question's
    "Value = 15000 × (1 + 0.048 × 6) = 19320\nTherefore, the answer is 19320.",
    # demo-3: the coupon rate read as the yield
    "Since the yield equals the 6% coupon, the bond trades at par.\nTherefore, the answer is 1000.",
    # demo-4: a slip in the stated sum
    "Return = 0.55 × 9.0 + 0.35 × 4.2 + 0.10 × 1.5 = 6.75\nTherefore, the answer is 6.75.",
    # demo-5: correct
    "VaR = 2,500,000 × 0.013 × 2.326 = 75595\nTherefore, the answer is 75606.306.",
]


def causes(path: str) -> list[tuple[str | None, dict[str, object] | None]]:
    log = read_eval_log(path)
    assert log.status == "success" and log.samples
    out = []
    for sample in sorted(log.samples, key=lambda s: str(s.id)):
        meta = (sample.scores or {})["tolerant"].metadata or {}
        out.append((meta.get(ERROR_CAUSE_KEY), meta.get(ERROR_EVIDENCE_KEY)))
    return out


def test_each_cause_through_a_real_eval_and_inspect_score(tmp_path: Path) -> None:
    task = knowledgefmath(split="demo", solver="cot")
    task.dataset = task.dataset[:6]
    [log] = eval(
        task, model=scripted(REPLIES), log_dir=str(tmp_path), display="none", max_samples=1
    )
    assert log.status == "success"
    found = causes(log.location)
    assert [c for c, _ in found] == [
        "partial",
        "unit",
        "method",
        "misread",
        "arithmetic",
        None,
    ]
    partial, unit, method, misread, arithmetic, _ = (e or {} for _, e in found)
    assert partial["intermediate"] == pytest.approx(13.35)
    assert unit["input"] == "0.04" and unit["exponent"] == 2
    assert method["steps_checked"] == 1
    assert {misread["input"], misread["written"]} <= {"0.06", "0.072", "6%", "7.2%"}
    assert arithmetic["step"] == "0.55 * 9.0 + 0.35 * 4.2 + 0.10 * 1.5 = 6.75"
    # inspect score rebuilds the scorers and recomputes the causes
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "inspect_ai",
            "score",
            log.location,
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
    assert [c for c, _ in causes(log.location)] == [c for c, _ in found]


def test_a_gold_with_an_unwritten_number_is_suspect() -> None:
    metadata = {
        "question": "A fund holds 55% equities returning 8% and the rest in bonds returning 3%."
        " What is its expected return (in percent)?",
        "tables": [],
        "gold_program": "def solution():\n    return 0.56 * 8 + 0.44 * 3",
    }
    findings = asyncio.run(
        knowledgefmath_causes(CauseInput(output="", gold=5.8, answers=(6.0,), metadata=metadata))
    )
    [suspect] = [f for f in findings if f.cause == "gold_suspect"]
    assert suspect.evidence["unwritten"] == ["0.56", "0.44"]


DATA = Path(os.environ.get("FINMATH_DATA_DIR", "/nonexistent")) / "financemath"


@pytest.mark.skipif(not (DATA / "validation.json").is_file(), reason="needs FINMATH_DATA_DIR")
def test_the_misread_input_and_number_on_a_recorded_reply() -> None:
    # GPT-3.5-turbo-0125 on validation-14 takes the present value of the cash flows
    # (450,000) for the value in use (440,000): the gold re-run with that reading gives its
    # 50,000. Reading the fair value as 500,000 gives 50,000 too; the reply writes 450,000.
    from finmath_tasks.tasks.knowledgefmath.dataset import load_dataset

    [sample] = [
        s for s in load_dataset("validation", data_dir=str(DATA)) if s.id == "validation-14"
    ]
    records = json.loads(
        (DATA / "reference_outputs/validation/cot/gpt-3_5-turbo-0125.json").read_text()
    )
    [reply] = [r["output"][0] for r in records if r["question_id"] == "validation-14"]
    data = CauseInput(
        output=reply, gold=60000.0, answers=(50000.0,), metadata=sample.metadata or {}
    )
    findings = asyncio.run(knowledgefmath_causes(data))
    misread = next(f for f in findings if f.cause == "misread")
    assert misread.evidence["input"] == "440000" and misread.evidence["written"] == "450,000"
    assert misread.evidence["stated_in_reply"] is True
    assert misread.evidence["replaced_in_reply"] is False  # the reply never writes 440,000
    assert misread.evidence["chance_hits"] <= 0.1  # a re-run to the unit: no crowd around it
    assert "480000 as 500,000" in misread.evidence["readings"]


def _gold_cause(program: str, document: str, answer: float, gold: float) -> tuple[str, dict]:
    from finmath_tasks.scorers.causes import explain

    found, evidences = asyncio.run(
        explain(
            {"tolerant": "wrong"},
            {"tolerant": answer},
            output="",
            gold=gold,
            metadata={"question": document, "tables": [], "gold_program": program},
            gold_check=knowledgefmath_causes,
        )
    )
    return found["tolerant"], evidences["tolerant"]


def test_a_rerun_among_a_crowd_of_reruns_is_only_a_candidate() -> None:
    # 10.37 read as 13.01 gives 33.12. With 13.01 the only other number, that is a misread;
    # with forty numbers 13.01 .. 13.40 beside it, forty re-runs fall within 50 windows of
    # the answer (0.005 each), and one landing on it is chance: unexplained, the candidate
    # listed
    program = "def solution():\n    return 10.37 + 20.11"
    sparse = "Costs are 10.37 and 20.11; a third item, 13.01, is excluded."
    cause, evidence = _gold_cause(program, sparse, 33.12, 30.48)
    assert cause == "misread" and evidence["written"] == "13.01", evidence
    assert evidence["chance_hits"] == 0.0
    crowd = sparse + " Other items: " + ", ".join(f"{13.01 + k / 100:.2f}" for k in range(1, 40))
    cause, evidence = _gold_cause(program, crowd, 33.12, 30.48)
    assert cause == "unexplained" and evidence["chance_candidates"], evidence
    assert evidence["chance_candidates"][0]["chance_hits"] > 0.1


def test_a_usual_constant_is_never_the_misread_number_and_zero_agrees_only_with_zero() -> None:
    # 12 is written ("12 months"), but reading 0.048 as 12 would mimic a rescaling or a
    # step: no misread; an answer of 0 is not "within half a unit" of every small re-run
    program = "def solution():\n    return 15000 * 0.048"
    question = "A deposit of 15000 earns 4.8% a year over 12 months; the interest is?"
    cause, _ = _gold_cause(program, question, 15000 * 12, 720.0)
    assert cause == "unexplained"
    cause, evidence = _gold_cause(program, question, 0.0, 720.0)
    assert cause == "unexplained" and "candidates" not in evidence, evidence
    # 15000 read as 4.8 gives 0.2304 (a re-run to 4 decimals): the answer 0.2304 is a misread
    cause, evidence = _gold_cause(program, question, 0.2304, 720.0)
    assert cause == "misread" and evidence["input"] == "15000", evidence
