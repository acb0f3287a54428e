"""SARA's error causes: crafted replies for each cause through real evals (retrieved
statutes, the reply's arithmetic, the verdict), a correct reply none; `inspect score`
recomputes them; any reply gets one cause or none, never a raise."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inspect_ai import eval
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from inspect_ai.model import ModelOutput, get_model
from sara_fixtures import write_release

from finmath_tasks.scorers.causes import CAUSES, ERROR_CAUSE_KEY, ERROR_EVIDENCE_KEY, explain
from finmath_tasks.tasks.sara import sara
from finmath_tasks.tasks.sara.causes import PROMPT_KEY, RETRIEVAL_RECORD, sara_causes


@pytest.fixture
def release(tmp_path: Path) -> str:
    write_release(tmp_path)
    return str(tmp_path)


def run(outputs: list[ModelOutput], **task_args: Any) -> EvalLog:
    [log] = eval(
        sara(**task_args),
        model=get_model("mockllm/model", custom_outputs=outputs),
        max_samples=1,  # the scripted outputs are consumed in dataset order
        display="none",
        log_dir=task_args["data_dir"] + "/logs",
    )
    assert log.status == "success", log.error
    return log


def out(text: str, stop: str = "stop") -> ModelOutput:
    output = ModelOutput.from_content("mockllm/model", text)
    output.choices[0].stop_reason = stop  # type: ignore[assignment]
    return output


def causes(log: EvalLog, key: str) -> list[tuple[Any, Any]]:
    found = []
    for sample in log.samples or []:
        meta = (sample.scores or {})[key].metadata or {}
        if (sample.scores or {})[key].value == (sample.scores or {})[key].value:  # not NaN
            found.append((meta.get(ERROR_CAUSE_KEY), meta.get(ERROR_EVIDENCE_KEY)))
    return found


# the test split: s10_a_1_pos (Entailment), s10_b_pos (Entailment), s11_neg
# (Contradiction), tax_case_1 ($12000; Eve sold 20 widgets for $100,000)
CRAFTED = [
    # the cited s10(a)(1) was in the prompt, no calculation fails: a wrong reading of it
    out("Ann sold 12 widgets, but section 10(a)(1) does not reach her. Answer: Contradiction"),
    # a slip in the stated calculation decides first
    out("Cat sold 2 widgets; 10 - 2 = 9 more than the limit. Answer: Contradiction"),
    out("Answer: Contradiction"),  # correct
    # every number the calculation uses is the case's (20) or usual (100): the law misread
    out("The levy is 20 × 100 = 2000 dollars.\nThe answer is $2000."),
]


def test_each_cause_through_a_real_eval_and_inspect_score(release: str) -> None:
    log = run(CRAFTED, data_dir=release, kind="all", retrieval="mentioned_only",
              prompting="zero_shot")  # fmt: skip
    entail = causes(log, "entailment")
    assert [c for c, _ in entail] == ["method", "arithmetic", None]
    method, arithmetic = entail[0][1], entail[1][1]
    assert method["cited"] == ["s10(a)(1)"] and method["steps_checked"] == 0
    assert arithmetic["step"] == "10 - 2 = 9"
    [(tax, tax_evidence)] = causes(log, "sara_tolerance")
    assert tax == "method" and tax_evidence["steps_checked"] == 1
    assert causes(log, "exact_dollar") == [(tax, tax_evidence)]
    # inspect score rebuilds the scorers and recomputes the causes, here of a log without them
    location = str(log.location)
    stripped = read_eval_log(location)
    for sample in stripped.samples or []:
        for score in (sample.scores or {}).values():
            (score.metadata or {}).pop(ERROR_CAUSE_KEY, None)
    write_eval_log(stripped, location)
    assert {c for c, _ in causes(read_eval_log(location), "entailment")} == {None}
    done = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "score", location, "--action", "overwrite",
         "--overwrite", "--display", "plain"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rescored = read_eval_log(location)
    assert [c for c, _ in causes(rescored, "entailment")] == ["method", "arithmetic", None]
    assert [c for c, _ in causes(rescored, "sara_tolerance")] == ["method"]


def test_no_statute_in_the_prompt_is_retrieval(release: str) -> None:
    log = run(
        [out("Answer: Contradiction"), out("Answer: Entailment"), out("Answer: Entailment")],
        data_dir=release, kind="entailment", retrieval="none", prompting="zero_shot",
    )  # fmt: skip
    found = causes(log, "entailment")
    assert [c for c, _ in found] == ["retrieval", None, "retrieval"]
    assert found[0][1]["missing"] == ["s10(a)(1)"] and found[0][1]["statutes_in_prompt"] is False
    assert found[2][1]["missing"] == ["s11"]
    # a tax case without statutes: its tax is computed under them
    [log] = [run([out("The levy is 20 × 100 = 2000.\nThe answer is $2000.")],
                 data_dir=release, kind="tax", retrieval="none", prompting="zero_shot")]  # fmt: skip
    [(cause, evidence)] = causes(log, "sara_tolerance")
    assert cause == "retrieval" and "the tax is computed under the statutes" in evidence["why"]


def test_truncated_no_answer_over_budget_and_a_tax_slip(release: str) -> None:
    log = run(
        [out("Ann sold 12 widgets, so", "max_tokens"), out("I cannot tell."),
         out("Answer: Entailment"), out("The levy is 100,000 × 0.1 = 11,000.\nThe answer is $11000.")],
        data_dir=release, kind="all", retrieval="mentioned_only", prompting="zero_shot",
    )  # fmt: skip
    assert [c for c, _ in causes(log, "entailment")] == ["truncated", "no_answer", "method"]
    # 11000 is inside the paper's margin ($5,000), not the exact dollar: one key wrong
    [(cause, evidence)] = causes(log, "exact_dollar")
    assert cause == "arithmetic" and evidence["step"] == "100,000 * 0.1 = 11,000"
    assert causes(log, "sara_tolerance") == [(None, None)]
    log = run([], data_dir=release, kind="all", retrieval="mentioned_only",
              prompting="zero_shot", max_prompt_tokens=20)  # fmt: skip
    assert {c for c, _ in causes(log, "entailment")} == {"over_budget"}
    assert {c for c, _ in causes(log, "exact_dollar")} == {"over_budget"}


META = {"kind": "tax", "text": "Eve sold 20 widgets for $100,000 in 2019.", "citations": []}


@settings(max_examples=40, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("0123456789 .,=+-×/x%$\nabc"), max_size=80),
    answer=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
    kind=st.sampled_from(["tax", "entailment"]),
    retrieved=st.one_of(st.none(), st.just({"strategy": "mentioned_only", "cited": []})),
    cls=st.sampled_from(["over_margin", "within_margin", "scale", "wrong_label", "no_answer:none"]),
)
def test_any_reply_gets_one_cause_or_none_never_a_raise(
    text: str, answer: float | None, kind: str, retrieved: Any, cls: str
) -> None:
    meta = {
        **META,
        "kind": kind,
        PROMPT_KEY: "§10. Widget levy 12% of 1,000",
        RETRIEVAL_RECORD: retrieved,
    }
    found, evidences = asyncio.run(
        explain({"k": cls}, {"k": answer}, output=text, gold=12000.0, metadata=meta,
                gold_check=sara_causes)
    )  # fmt: skip
    assert set(found) == {"k"} and found["k"] in CAUSES
    assert isinstance(evidences["k"].get("why"), str)
    assert asyncio.run(explain({}, {}, output=text, gold=1.0, metadata=meta)) == ({}, {})


def test_a_tax_reply_with_an_unwritten_input_is_not_method() -> None:
    meta = {**META, PROMPT_KEY: "§10. a levy of 15 dollars", RETRIEVAL_RECORD: {"cited": []}}
    text = "The levy is 20 × 137 = 2740.\nThe answer is $2740."
    found, _ = asyncio.run(
        explain({"k": "over_margin"}, {"k": 2740.0}, output=text, gold=12000.0, metadata=meta,
                gold_check=sara_causes)
    )  # fmt: skip
    assert found == {"k": "unexplained"}  # 137 is written nowhere: no cause is claimed
    text = "The levy is 20 × 15 = 300.\nThe answer is $300."
    found, _ = asyncio.run(
        explain({"k": "over_margin"}, {"k": 300.0}, output=text, gold=12000.0, metadata=meta,
                gold_check=sara_causes)
    )  # fmt: skip
    assert found == {"k": "method"}  # 15 is the statute's


def test_a_tax_amount_a_power_of_ten_off_is_unit() -> None:
    meta = {**META, PROMPT_KEY: "§10. a levy", RETRIEVAL_RECORD: {"cited": []}}
    found, evidence = asyncio.run(
        explain({"k": "scale"}, {"k": 1200.0}, output="The answer is $1200.", gold=12000.0,
                metadata=meta, gold_check=sara_causes)
    )  # fmt: skip
    assert found == {"k": "unit"} and evidence["k"]["error_class"] == "scale"
