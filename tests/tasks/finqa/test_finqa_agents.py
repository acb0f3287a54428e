"""Scripted-model runs of the agent solvers on the finqa task (fixture records of ours).

Gold answers of the fixture records (finqa_fixtures.RECORDS), in order:
0.25 (a change, as a fraction), 250 (an average), yes (a comparison), 0.24 (a share).
Each test asserts the prompts the model saw, the recorded answers, the flip counts and
the metrics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from finqa_fixtures import RECORDS, write_split
from inspect_ai import eval
from inspect_ai.log import EvalLog, EvalSample

from agent_calls import call_prompts
from eval_helpers import metric, metrics, scripted
from finmath_tasks.loading import DatasetError
from finmath_tasks.params import TaskParameterError
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.solvers.agents import AGENT_ANSWERS_KEY, AGENT_TRACE_KEY
from finmath_tasks.solvers.agents import prompts as P
from finmath_tasks.tasks.finqa import finqa
from finmath_tasks.tasks.finqa.task import AGENT_SPLIT, ANSWER_INSTRUCTION, PAPER_DEV_QUESTIONS

TOTAL = "count"
BY_KIND = "gold="
BWRAP_OK, BWRAP_REASON = bwrap_available()
QUESTIONS = [r["qa"]["question"] for r in RECORDS]


def reply(answer: Any, steps: str = "steps") -> str:
    return json.dumps({"steps": steps, "answer": answer})


def run(
    tmp_path: Path,
    outputs: list[str],
    records: list[dict[str, Any]] | None = None,
    sandbox: str | None = None,
    **task_args: Any,
) -> EvalLog:
    """``sandbox``: Inspect's ``--sandbox`` (None: the task's own)."""
    write_split(tmp_path / "data", "dev", records)  # the agents paper's split
    task = finqa(data_dir=str(tmp_path / "data"), **{"split": AGENT_SPLIT, **task_args})
    [log] = eval(
        task,
        model=scripted(outputs),
        sandbox=sandbox,
        display="none",
        max_samples=1,
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    assert log.samples is not None
    return log


def users(s: EvalSample) -> list[str]:
    """Each model call's prompt (every call is one user prompt of its own)."""
    return call_prompts(s)


def answers(s: EvalSample) -> list[tuple[str, Any]]:
    return [(a["stage"], a["answer"]) for a in s.store[AGENT_ANSWERS_KEY]]


def first_prompt(s: EvalSample, n: int) -> str:
    return P.fill(
        P.ANALYST_COT,
        context=s.metadata["context"],
        question=QUESTIONS[n],
        answer_instruction=ANSWER_INSTRUCTION,
    )


def score_names(log: EvalLog) -> set[str]:
    assert log.results is not None
    return {s.name for s in log.results.scores}


def test_answer_instruction_asks_for_exe_ans_form() -> None:
    # the paper's rounding comparison does not rescale by 100: fractions, as exe_ans
    assert "0.62995 for 62.995%" in ANSWER_INSTRUCTION
    assert "yes or no" in ANSWER_INSTRUCTION


def test_cot(tmp_path: Path) -> None:
    outputs = [
        reply(0.25),  # right
        reply(250),  # right
        reply("no"),  # gold yes: wrong
        reply("24"),  # gold 0.24, as a number of percent: rounding no, tolerant yes
    ]
    log = run(tmp_path, outputs, solver="cot")
    assert log.samples is not None
    s = log.samples
    assert s[0].messages[0].role == "user"  # no system prompt (the paper's appendix D)
    for n in range(4):
        assert users(s[n]) == [first_prompt(s[n], n)]
        assert [m.role for m in s[n].messages] == ["user", "assistant"]
    # the whole document, not retrieved facts
    assert "| revenue | $ 1,250 | $ 1000 | $ 900 |" in users(s[0])[0]
    assert "operating costs were $ 120 million" in users(s[0])[0]
    assert [answers(x) for x in s] == [
        [("cot", "0.25")],
        [("cot", "250")],
        [("cot", "no")],
        [("cot", "24")],
    ]
    assert metric(log, "rounding") == 0.5
    assert metric(log, "tolerant") == 0.75
    # no critic or calculator stage: no first answer, no flips
    assert score_names(log) == {"rounding", "tolerant"}
    assert metric(log, "rounding", BY_KIND + "float") == 0.5
    assert metric(log, "rounding", BY_KIND + "integer") == 1.0
    assert metric(log, "rounding", BY_KIND + "text") == 0.0
    assert metric(log, "tolerant", BY_KIND + "float") == 1.0
    # answer-only scoring: no DSL program, no retrieval
    assert "execution_accuracy" not in score_names(log)
    assert "retrieval_recall" not in score_names(log)
    assert s[2].scores is not None
    assert s[2].scores["rounding"].explanation.startswith("cot: no (wrong)")
    assert log.eval.metadata is not None
    assert log.eval.metadata["uses_gold_labels"] is False
    assert log.eval.metadata["retrieval"] is None
    assert log.eval.sandbox is None
    assert log.eval.metadata["profiles"] == ["rounding", "tolerant"]


def test_icritic_calculator(tmp_path: Path) -> None:
    outputs = [
        # 0.25: right; the critic maintains; the calculator finds both steps correct
        reply(0.25),
        json.dumps({"critique": "none", "decision": "maintain", "answer": None}),
        "1250 - 1000 = 250\n250 / 1000 = 0.25",
        reply(0.25),
        # 250: 240 first (wrong); the critic updates to 250, the analyst takes it;
        # the calculator corrects the average
        reply(240, "(300 + 250 + 170) / 3 = 240"),
        json.dumps({"critique": "wrong sum", "decision": "update", "answer": 250}),
        reply(250, "(300 + 250 + 200) / 3 = 250"),
        "(300 + 250 + 200) / 3 = 240",
        reply(250, "(300 + 250 + 200) / 3 = 250"),
        # yes: right; maintained; no equations, the answer stands
        reply("yes"),
        json.dumps({"critique": "none", "decision": "maintain", "answer": None}),
        "There are no calculations.",
        # 0.24: right; the critic updates to 24 (percent) and the analyst takes it;
        # no equations: 24 stands (rounding: right -> wrong; a minor change)
        reply(0.24),
        json.dumps({"critique": "as a percentage", "decision": "update", "answer": 24}),
        reply(24),
        "No calculations.",
    ]
    log = run(tmp_path, outputs, solver="icritic_calculator")
    assert log.samples is not None
    s = log.samples

    def critic(n: int, response: str) -> str:
        context = str(s[n].metadata["context"])
        return P.improved_critic_prompt(context, QUESTIONS[n], response, ANSWER_INSTRUCTION)

    assert users(s[0]) == [
        first_prompt(s[0], 0),
        critic(0, outputs[0]),
        P.extraction_prompt(outputs[0]),  # maintained: the first reply is the response
        P.final_prompt(
            outputs[0],
            "1250 - 1000 = 250  [correct]\n250 / 1000 = 0.25  [correct]",
            ANSWER_INSTRUCTION,
        ),
    ]
    assert users(s[1]) == [
        first_prompt(s[1], 1),
        critic(1, outputs[4]),
        P.compare_prompt(QUESTIONS[1], outputs[4], outputs[5], ANSWER_INSTRUCTION),
        P.extraction_prompt(outputs[6]),  # updated: the comparison's reply is the response
        P.final_prompt(
            outputs[6],
            "(300 + 250 + 200) / 3 = 250  [corrected: you wrote 240, the correct result is 250]",
            ANSWER_INSTRUCTION,
        ),
    ]
    assert users(s[2]) == [
        first_prompt(s[2], 2),
        critic(2, outputs[9]),
        P.extraction_prompt(outputs[9]),
    ]
    assert [answers(x) for x in s] == [
        [("cot", "0.25"), ("icritic", "0.25"), ("calculator", "0.25")],
        [("cot", "240"), ("icritic", "250"), ("calculator", "250")],
        [("cot", "yes"), ("icritic", "yes"), ("calculator", "yes")],
        [("cot", "0.24"), ("icritic", "24"), ("calculator", "24")],
    ]
    assert s[0].store[AGENT_TRACE_KEY]["icritic"]["decision"] == "maintain"
    assert s[1].store[AGENT_TRACE_KEY]["icritic"]["decision"] == "update"
    assert s[1].store[AGENT_TRACE_KEY]["calculator"]["corrected"] == 1
    assert s[2].store[AGENT_TRACE_KEY]["calculator"]["equations"] == []
    # sample 0's first equation uses 1250, which its reply ("steps") never wrote (1000 is
    # a scale constant; 250 in the second is the first one's result)
    assert metrics(log, "unsourced_equations") == {"count": 1.0, "extracted": 3.0, "samples": 1.0}
    assert metric(log, "rounding") == 0.75
    assert metric(log, "tolerant") == 1.0
    assert metric(log, "first_answer") == 0.75
    assert metric(log, "wrong_to_correct", TOTAL) == 1  # 240 -> 250
    assert metric(log, "correct_to_wrong", TOTAL) == 1  # 0.24 -> 24 (rounding)
    assert metric(log, "minor_change", TOTAL) == 1  # x100, the same steps
    assert metric(log, "major_change", TOTAL) == 1  # 170 -> 200 read from the table
    assert metric(log, "wrong_to_correct", "rate") == 0.25
    assert s[3].scores is not None
    flip = s[3].scores["rounding"]
    assert flip.metadata["flip"] == "correct_to_wrong" and flip.metadata["change"] == "minor"
    assert s[3].scores["tolerant"].value == 1.0 and flip.value == 0.0


def test_critic_oracle_uses_the_gold_answer(tmp_path: Path) -> None:
    outputs = [
        reply(0.25),  # right: the critic is skipped (no further call)
        reply(240, "720 / 3"),  # wrong: critic, then the analyst again
        "The average is over three years: 750 / 3.",
        reply(250, "750 / 3"),
        reply("no"),  # gold yes (compared as text): wrong, critic applied
        "2020 costs are higher.",
        reply("Yes", "2020 costs are higher"),
        reply(24),  # right by tolerant only; the gate uses rounding (primary): critic applied
        "A share stays a fraction.",
        reply(0.24),
    ]
    log = run(tmp_path, outputs, solver="critic_oracle")
    assert log.samples is not None
    s = log.samples
    assert users(s[0]) == [first_prompt(s[0], 0)]
    for n, first in ((1, 1), (2, 4), (3, 7)):
        context = str(s[n].metadata["context"])
        response, critique = outputs[first], outputs[first + 1]
        assert users(s[n]) == [
            first_prompt(s[n], n),
            P.critic_prompt(context, QUESTIONS[n], response),
            P.revision_prompt(context, QUESTIONS[n], response, critique, ANSWER_INSTRUCTION),
        ]
    assert [answers(x) for x in s] == [
        [("cot", "0.25"), ("critic", "0.25")],
        [("cot", "240"), ("critic", "250")],
        [("cot", "no"), ("critic", "Yes")],
        [("cot", "24"), ("critic", "0.24")],
    ]
    assert s[0].store[AGENT_ANSWERS_KEY][1]["method"] == "oracle_skipped"
    gates = [x.store[AGENT_TRACE_KEY]["oracle"] for x in s]
    assert [g["first_correct"] for g in gates] == [True, False, False, False]
    assert all(g["uses_gold_labels"] for g in gates)
    assert metric(log, "rounding") == 1.0
    assert metric(log, "tolerant") == 1.0
    assert metric(log, "first_answer") == 0.25
    assert metric(log, "wrong_to_correct", TOTAL) == 3
    assert metric(log, "correct_to_wrong", TOTAL) == 0
    assert metric(log, "minor_change", TOTAL) == 1  # 24 -> 0.24, the same steps
    assert metric(log, "major_change", TOTAL) == 2  # 720 -> 750, other steps for yes
    assert log.eval.metadata is not None and log.eval.metadata["uses_gold_labels"] is True


def test_profile_rounding_alone_and_no_sandbox_without_pot(tmp_path: Path) -> None:
    outputs = [reply(0.5), "Revenue changed by 250 on 1000.", reply(0.25)]
    log = run(tmp_path, outputs, [RECORDS[0]], solver="critic", profile="rounding")
    assert score_names(log) == {
        "rounding",
        "first_answer",
        "correct_to_wrong",
        "wrong_to_correct",
        "minor_change",
        "major_change",
    }
    assert metric(log, "rounding") == 1.0
    assert metric(log, "first_answer") == 0.0
    assert metric(log, "wrong_to_correct", TOTAL) == 1
    assert log.eval.metadata is not None
    assert log.eval.metadata["profiles"] == ["rounding"]
    assert log.eval.sandbox is None


@pytest.mark.slow
@pytest.mark.bwrap
@pytest.mark.skipif(not BWRAP_OK, reason=f"bubblewrap unavailable: {BWRAP_REASON}")
def test_pot_runs_in_the_sandbox(tmp_path: Path) -> None:
    outputs = [
        "```python\ndef solution():\n    return (1250 - 1000) / 1000\n```",
        "```python\nimport os\ndef solution():\n    return os.listdir('/nonexistent')\n```",
    ]
    log = run(tmp_path, outputs, RECORDS[:2], solver="pot", sandbox="finmath_bwrap")
    assert log.samples is not None
    first = log.samples[0]
    assert first.messages[0].role == "user"
    assert users(first) == [
        P.fill(
            P.ANALYST_POT,
            context=first.metadata["context"],
            question=QUESTIONS[0],
            answer_instruction=ANSWER_INSTRUCTION,
        )
    ]
    assert answers(first) == [("pot", "0.25")]
    failed = log.samples[1].store[AGENT_ANSWERS_KEY][0]
    assert failed["answer"] is None and failed["method"] == "program_failed"
    assert "FileNotFoundError" in failed["detail"]
    assert metric(log, "rounding") == 0.5
    assert metric(log, "tolerant") == 0.5
    assert score_names(log) == {"rounding", "tolerant"}  # a program: no review stage
    assert log.eval.sandbox is not None and log.eval.sandbox.type == "finmath_bwrap"


def test_every_solver_defaults_to_test_and_the_papers_dev_split_is_asked_for(
    tmp_path: Path,
) -> None:
    # one default for every solver: test, FinQA's evaluation split; the agents paper
    # evaluates dev (883 questions, its appendix B), which its runs ask for
    assert AGENT_SPLIT == "dev" and PAPER_DEV_QUESTIONS == 883
    log = run(tmp_path, [reply(0.25)], records=RECORDS[:1], solver="cot", split="dev")
    assert log.eval.metadata is not None and log.eval.metadata["split"] == "dev"
    assert "dev.json" in str(log.eval.dataset.location)
    write_split(tmp_path / "other", "dev")
    for solver in ("icritic", "pot", "cot"):
        with pytest.raises(DatasetError, match=r"test\.json"):
            finqa(data_dir=str(tmp_path / "other"), solver=solver)
    write_split(tmp_path / "other", "test")
    agent = finqa(data_dir=str(tmp_path / "other"), solver="critic")
    assert agent.metadata is not None and agent.metadata["split"] == "test"
    assert "test.json" in str(agent.dataset.location)
    # a retry of an older log, which recorded split=None, is told which split it read
    with pytest.raises(TaskParameterError, match=r"-T split=None: .* pass -T split=dev"):
        finqa(data_dir=str(tmp_path / "other"), solver="critic", split=None)  # type: ignore[arg-type]
