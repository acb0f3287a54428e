"""Scripted-model runs of every agent solver on a generic task (question + context).

Each test asserts the prompts the model saw, call by call (each call one user prompt
of its own), the recorded answers, the flip counts and the final metrics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.model import ChatMessageSystem, ModelOutput, get_model

from agent_calls import call_prompts
from eval_helpers import assert_readable_summary, metric, metrics, scripted
from finmath_tasks.scorers.comparisons import rounding, tolerant
from finmath_tasks.scorers.keyed import Scoring, keyed_scorers, scoring
from finmath_tasks.solvers.agents import (
    AGENT_ANSWERS_KEY,
    AGENT_KEYS,
    AGENT_TRACE_KEY,
    CALCULATOR_AGENTS,
    REVIEW_AGENTS,
    UNSOURCED_KEY,
    agent_scoring,
    agent_solver,
    numeric_check,
)
from finmath_tasks.solvers.agents import prompts as P

KEYS = ["rounding", "tolerant"]
TOTAL = "count"
BY_KIND = "gold="
CHECK = numeric_check({"rounding": rounding, "tolerant": tolerant})
CONTEXT = "Sales were 1,202.9 in 2018 and 1,496.5 in 2019.\n\n| Year | Sales |\n|---|---|\n| 2019 | 1,496.5 |"

# two questions: a float gold and an integer gold
SAMPLES = [
    Sample(
        id="q1",
        input="What was the change in sales?",
        target="293.6",
        metadata={"question": "What was the change in sales?", "context": CONTEXT},
    ),
    Sample(
        id="q2",
        input="How many years are shown?",
        target="2",
        metadata={"question": "How many years are shown?", "context": CONTEXT},
    ),
]


@scoring("agents_test", (*KEYS, *AGENT_KEYS))
def agents_test_scoring(solver: str) -> Scoring:
    """The agents' scoring of these tests (registered at import: Inspect can rebuild it)."""
    return agent_scoring(
        CHECK, KEYS, review=solver in REVIEW_AGENTS, calculator=solver in CALCULATOR_AGENTS
    )


def agent_scorers(solver: str) -> Any:
    return keyed_scorers("agents_test", count_unscored=False, solver=solver)


def reply(answer: Any, steps: str = "steps") -> str:
    return json.dumps({"steps": steps, "answer": answer})


def run(name: str, outputs: list[str], log_dir: Path, **kwargs: Any) -> EvalLog:
    task = Task(
        dataset=MemoryDataset(list(SAMPLES)),
        solver=agent_solver(name, oracle_check=CHECK, **kwargs),  # type: ignore[arg-type]
        scorer=agent_scorers(name),
    )
    [log] = eval(task, model=scripted(outputs), display="none", max_samples=1, log_dir=str(log_dir))
    assert log.status == "success", log.error
    return log


def sample(log: EvalLog, sample_id: str) -> EvalSample:
    assert log.samples is not None
    [s] = [s for s in log.samples if s.id == sample_id]
    return s


def user_turns(s: EvalSample) -> list[str]:
    """Each model call's prompt (each call is one user message)."""
    return call_prompts(s)


def answers(s: EvalSample) -> list[tuple[str, Any]]:
    return [(a["stage"], a["answer"]) for a in s.store[AGENT_ANSWERS_KEY]]


def first_prompt(question: str) -> str:
    return P.fill(
        P.ANALYST_COT,
        context=CONTEXT,
        question=question,
        answer_instruction=P.DEFAULT_ANSWER_INSTRUCTION,
    )


INSTRUCTION = P.DEFAULT_ANSWER_INSTRUCTION


def critic(question: str, response: str) -> str:
    return P.critic_prompt(CONTEXT, question, response)


def revision(question: str, response: str, critique: str) -> str:
    return P.revision_prompt(CONTEXT, question, response, critique, INSTRUCTION)


def test_cot(tmp_path: Path) -> None:
    log = run("cot", [reply(293.6), reply("3")], tmp_path)
    s1, s2 = sample(log, "q1"), sample(log, "q2")
    assert not any(isinstance(m, ChatMessageSystem) for m in s1.messages)  # as appendix D
    assert user_turns(s1) == [first_prompt("What was the change in sales?")]
    assert answers(s1) == [("cot", "293.6")]
    assert answers(s2) == [("cot", "3")]
    assert metric(log, "rounding") == 0.5
    assert metric(log, "tolerant") == 0.5
    # no critic or calculator stage: no first answer and no flips reported
    assert [s.name for s in log.results.scores] == KEYS  # type: ignore[union-attr]
    [score] = [s for s in log.results.scores if s.name == "rounding"]  # type: ignore[union-attr]
    assert score.metrics[BY_KIND + "float"].value == 1.0
    assert score.metrics[BY_KIND + "integer"].value == 0.0


def test_critic_flips_both_ways(tmp_path: Path) -> None:
    # q1: right first (293.6), the critic talks it into 293.7 with the same steps (minor)
    # q2: wrong first (3), right after the critic (2) with other steps (major)
    outputs = [
        reply(293.6, "1496.5 - 1202.9 = 293.6"),
        "The subtraction looks off.",
        reply(293.7, "1,496.50 - 1,202.90 = 293.7"),
        reply(3, "2017, 2018 and 2019"),
        "Only two years are shown.",
        reply(2, "2018 and 2019"),
    ]
    log = run("critic", outputs, tmp_path)
    s1, s2 = sample(log, "q1"), sample(log, "q2")
    q1 = "What was the change in sales?"
    assert user_turns(s1) == [
        first_prompt(q1),
        critic(q1, outputs[0]),
        revision(q1, outputs[0], "The subtraction looks off."),
    ]
    # the critic reads the response given to it, not "the response above"
    assert outputs[0] in user_turns(s1)[1] and q1 in user_turns(s1)[1]
    assert answers(s1) == [("cot", "293.6"), ("critic", "293.7")]
    assert answers(s2) == [("cot", "3"), ("critic", "2")]
    assert s1.store[AGENT_TRACE_KEY]["critic"]["critique"] == "The subtraction looks off."
    assert metric(log, "rounding") == 0.5
    assert metric(log, "first_answer") == 0.5
    assert metric(log, "correct_to_wrong", TOTAL) == 1
    assert metric(log, "wrong_to_correct", TOTAL) == 1
    assert metric(log, "minor_change", TOTAL) == 1  # same steps, 293.6 -> 293.7
    assert metric(log, "major_change", TOTAL) == 1  # other years counted
    assert metric(log, "minor_change", "share_c_to_w") == 1.0
    assert metric(log, "major_change", "share_w_to_c") == 1.0
    # with every metric present (the flip shares too), nothing is cut at 100 columns
    assert_readable_summary(log)
    assert s1.scores is not None
    assert s1.scores["rounding"].metadata["transitions"] == [  # type: ignore[index]
        {
            "from": "cot",
            "to": "critic",
            "flip": "correct_to_wrong",
            "change": "minor",
            "same_steps": True,
        }
    ]
    assert [a["steps"] for a in s1.store[AGENT_ANSWERS_KEY]] == [
        "1496.5 - 1202.9 = 293.6",
        "1,496.50 - 1,202.90 = 293.7",
    ]


def test_improved_critic_maintain_and_update(tmp_path: Path) -> None:
    outputs = [
        reply(293.6),
        json.dumps({"critique": "none", "decision": "maintain", "answer": None}),
        reply(3),
        json.dumps({"critique": "two years", "decision": "update", "answer": 2}),
        reply(2, "the critic is right"),
    ]
    log = run("icritic", outputs, tmp_path)
    s1, s2 = sample(log, "q1"), sample(log, "q2")
    q1, q2 = "What was the change in sales?", "How many years are shown?"
    assert user_turns(s1) == [
        first_prompt(q1),
        P.improved_critic_prompt(CONTEXT, q1, outputs[0], INSTRUCTION),
    ]
    assert user_turns(s2) == [
        first_prompt(q2),
        P.improved_critic_prompt(CONTEXT, q2, outputs[2], INSTRUCTION),
        # both whole replies, under the question
        P.compare_prompt(q2, outputs[2], outputs[3], INSTRUCTION),
    ]
    assert answers(s1) == [("cot", "293.6"), ("icritic", "293.6")]
    assert answers(s2) == [("cot", "3"), ("icritic", "2")]
    assert s1.store[AGENT_TRACE_KEY]["icritic"]["decision"] == "maintain"
    assert s2.store[AGENT_TRACE_KEY]["icritic"]["decision"] == "update"
    assert metric(log, "rounding") == 1.0
    assert metric(log, "first_answer") == 0.5
    assert metric(log, "wrong_to_correct", TOTAL) == 1
    assert metric(log, "correct_to_wrong", TOTAL) == 0
    assert metric(log, "major_change", TOTAL) == 1


def test_improved_critic_without_a_decision_keeps_the_answer(tmp_path: Path) -> None:
    update_without_answer = json.dumps(
        {"critique": "the 2019 figure", "decision": "update", "answer": None}
    )
    log = run(
        "icritic", [reply(293.6), "I am not sure.", reply(2), update_without_answer], tmp_path
    )
    assert answers(sample(log, "q1")) == [("cot", "293.6"), ("icritic", "293.6")]
    trace = sample(log, "q1").store[AGENT_TRACE_KEY]["icritic"]
    assert trace["decision"] is None and "no decision" in trace["reason"]
    assert answers(sample(log, "q2")) == [("cot", "2"), ("icritic", "2")]
    trace = sample(log, "q2").store[AGENT_TRACE_KEY]["icritic"]
    assert trace["decision"] == "update" and "without an answer" in trace["reason"]
    assert metric(log, "rounding") == 1.0


def test_calculator_corrects_an_arithmetic_slip(tmp_path: Path) -> None:
    outputs = [
        reply(293.7, "1496.5 - 1202.9 = 293.7"),
        "1496.5 - 1202.9 = 293.7",
        reply(293.6, "1496.5 - 1202.9 = 293.6"),
        reply(2, "2019 and 2018"),
        "no calculations",
    ]
    log = run("calculator", outputs, tmp_path)
    s1, s2 = sample(log, "q1"), sample(log, "q2")
    assert user_turns(s1) == [
        first_prompt("What was the change in sales?"),
        P.extraction_prompt(outputs[0]),  # the analyst's whole output as the steps
        P.final_prompt(
            outputs[0],
            "1496.5 - 1202.9 = 293.6  [corrected: you wrote 293.7, the correct result is 293.6]",
            INSTRUCTION,
        ),
    ]
    assert answers(s1) == [("cot", "293.7"), ("calculator", "293.6")]
    trace = s1.store[AGENT_TRACE_KEY]["calculator"]
    assert trace["corrected"] == 1 and trace["equations"][0]["status"] == "incorrect"
    # no equations: the answer stands and no third call is made
    assert user_turns(s2) == [
        first_prompt("How many years are shown?"),
        P.extraction_prompt(outputs[3]),
    ]
    assert answers(s2) == [("cot", "2"), ("calculator", "2")]
    assert metric(log, "rounding") == 1.0
    assert metric(log, "first_answer") == 0.5
    assert metric(log, "wrong_to_correct", TOTAL) == 1
    assert metric(log, "minor_change", TOTAL) == 1  # the same subtraction, its result fixed
    # the calculator kept q2's answer and its steps
    assert [a["steps"] for a in s2.store[AGENT_ANSWERS_KEY]] == ["2019 and 2018"] * 2
    # the one extracted equation's numbers are the analyst's
    assert metrics(log, UNSOURCED_KEY) == {"count": 0.0, "extracted": 1.0, "samples": 0.0}


def test_calculator_diagnostic_counts_equations_not_in_the_analysts_output(
    tmp_path: Path,
) -> None:
    """The failure of the earlier one-conversation layout: the extraction copies the
    prompt's example instead of the analyst's equations; the diagnostic counts it, per
    sample and per run."""
    outputs = [
        reply(293.6, "Sales rose from 1,202.9 to 1,496.5: 1496.5 - 1202.9 = 293.6"),
        json.dumps({"answer": ["1496.5-1202.9=293.6", "4454.7/2=2227.35"]}),
        reply(293.6),
        reply(2, "two years: 2019 and 2018"),
        json.dumps({"answer": ["2019-2018+1=2", "2*7=14"]}),
        reply(2),
    ]
    log = run("calculator", outputs, tmp_path)
    assert metrics(log, UNSOURCED_KEY) == {"count": 2.0, "extracted": 4.0, "samples": 2.0}
    s1, s2 = sample(log, "q1"), sample(log, "q2")
    assert s1.scores is not None and s2.scores is not None
    assert s1.scores[UNSOURCED_KEY].value == 1.0
    assert s2.scores[UNSOURCED_KEY].value == 1.0  # 7 is nowhere in the output ("two" is 2)
    meta = s1.scores["rounding"].metadata
    assert meta is not None
    assert meta["calculator"] == [
        {"equation": "4454.7/2=2227.35", "unsourced": ["4454.7", "2"], "in_examples": True}
    ]
    assert "1 of 2 extracted equations use numbers not in the analyst's output" in str(
        s1.scores["rounding"].explanation
    )
    assert meta["extracted_equations"] == 2


def test_calculator_refuses_hostile_equations_and_the_eval_goes_on(tmp_path: Path) -> None:
    outputs = [
        reply(293.6),
        "__import__('os').system('x') = 1\n9**9**9 = 1\n1496.5 - 1202.9 = 293.6",
        reply(293.6),
        reply(2),
        "(" * 40 + "1" + ")" * 40 + " = 1",
        reply(2),
    ]
    log = run("calculator", outputs, tmp_path)
    eqs = sample(log, "q1").store[AGENT_TRACE_KEY]["calculator"]["equations"]
    assert [e["status"] for e in eqs] == ["refused", "refused", "correct"]
    assert "names are not allowed" in eqs[0]["reason"]
    assert "exponentiation" in eqs[1]["reason"]
    deep = sample(log, "q2").store[AGENT_TRACE_KEY]["calculator"]["equations"]
    assert deep[0]["status"] == "refused" and "too deep" in deep[0]["reason"]
    assert metric(log, "rounding") == 1.0


def test_critic_calculator_chain(tmp_path: Path) -> None:
    outputs = [
        reply(290, "1496.5 - 1206.5 = 290"),
        "wrong numbers",
        reply(293.7, "1496.5 - 1202.9 = 293.7"),
        "1496.5 - 1202.9 = 293.7",
        reply(293.6, "1496.5 - 1202.9 = 293.6"),
        reply(2),
        "fine",
        reply(2),
        "2019 - 2018 + 1 = 2",
        reply(2),
    ]
    log = run("critic_calculator", outputs, tmp_path)
    s1 = sample(log, "q1")
    q1 = "What was the change in sales?"
    assert user_turns(s1)[1:3] == [
        critic(q1, outputs[0]),
        revision(q1, outputs[0], "wrong numbers"),
    ]
    # the calculator reads the revised answer (D.6)
    assert user_turns(s1)[3] == P.extraction_prompt(outputs[2])
    assert user_turns(s1)[4] == P.final_prompt(
        outputs[2],
        "1496.5 - 1202.9 = 293.6  [corrected: you wrote 293.7, the correct result is 293.6]",
        INSTRUCTION,
    )
    assert answers(s1) == [("cot", "290"), ("critic", "293.7"), ("calculator", "293.6")]
    assert answers(sample(log, "q2")) == [("cot", "2"), ("critic", "2"), ("calculator", "2")]
    assert metric(log, "rounding") == 1.0
    assert metric(log, "first_answer") == 0.5
    assert metric(log, "wrong_to_correct", TOTAL) == 1
    assert metric(log, "major_change", TOTAL) == 1  # 1206.5 -> 1202.9: other data pulled


def test_icritic_calculator_chain(tmp_path: Path) -> None:
    outputs = [
        reply(293.6, "1496.5 - 1202.9 = 293.6"),
        json.dumps({"critique": "", "decision": "maintain", "answer": None}),
        "1496.5 - 1202.9 = 293.6",
        reply(293.6),
        reply(2),
        json.dumps({"critique": "", "decision": "update", "answer": "3"}),
        reply(3),
        "1 + 1 = 3",
        reply(2),
    ]
    log = run("icritic_calculator", outputs, tmp_path)
    assert answers(sample(log, "q1")) == [
        ("cot", "293.6"),
        ("icritic", "293.6"),
        ("calculator", "293.6"),
    ]
    s1, s2 = sample(log, "q1"), sample(log, "q2")
    # maintained: the calculator reads the first reply; updated: the comparison's (D.7)
    assert user_turns(s1)[2] == P.extraction_prompt(outputs[0])
    assert user_turns(s2)[3] == P.extraction_prompt(outputs[6])
    assert user_turns(s2)[4] == P.final_prompt(
        outputs[6], "1 + 1 = 2  [corrected: you wrote 3, the correct result is 2]", INSTRUCTION
    )
    assert answers(s2) == [("cot", "2"), ("icritic", "3"), ("calculator", "2")]
    assert s2.scores is not None
    assert [t["flip"] for t in s2.scores["rounding"].metadata["transitions"]] == [  # type: ignore[index]
        "correct_to_wrong",
        "wrong_to_correct",
    ]
    assert metric(log, "rounding") == 1.0
    assert metric(log, "correct_to_wrong", TOTAL) == 0  # first -> final
    assert metric(log, "major_change", TOTAL) == 0


def test_critic_oracle_only_criticises_wrong_answers(tmp_path: Path) -> None:
    # q1 right: no critic turn; q2 wrong: critic and revision
    outputs = [reply(293.6), reply(3), "two years only", reply(2)]
    log = run("critic_oracle", outputs, tmp_path)
    s1, s2 = sample(log, "q1"), sample(log, "q2")
    assert user_turns(s1) == [first_prompt("What was the change in sales?")]
    q2 = "How many years are shown?"
    assert user_turns(s2) == [
        first_prompt(q2),
        critic(q2, outputs[1]),
        revision(q2, outputs[1], "two years only"),
    ]
    assert answers(s1) == [("cot", "293.6"), ("critic", "293.6")]
    assert s1.store[AGENT_TRACE_KEY]["oracle"]["uses_gold_labels"] is True
    assert s2.store[AGENT_TRACE_KEY]["oracle"]["first_correct"] is False
    assert metric(log, "rounding") == 1.0
    assert metric(log, "correct_to_wrong", TOTAL) == 0
    assert metric(log, "wrong_to_correct", TOTAL) == 1


def test_unparseable_replies_are_wrong_answers_not_errors(tmp_path: Path) -> None:
    log = run("critic", ["I cannot answer.", "", "{{{", "", "", ""], tmp_path)
    assert answers(sample(log, "q1"))[0] == ("cot", None)
    assert metric(log, "rounding") == 0.0
    assert metric(log, "major_change", TOTAL) == 0  # no answer before or after


def test_a_reply_cut_at_max_tokens_is_no_answer(tmp_path: Path) -> None:
    cut = ModelOutput.from_content(
        "mockllm/model", '{"steps": "1496.5 - 1202.9 = 293.6', stop_reason="max_tokens"
    )
    model = get_model(
        "mockllm/model", custom_outputs=[cut, ModelOutput.from_content("mockllm/model", reply(2))]
    )
    task = Task(
        dataset=MemoryDataset(list(SAMPLES)),
        solver=agent_solver("cot"),
        scorer=agent_scorers("cot"),
    )
    [log] = eval(task, model=model, display="none", max_samples=1, log_dir=str(tmp_path))
    assert log.status == "success"
    [stage] = sample(log, "q1").store[AGENT_ANSWERS_KEY]
    assert stage["answer"] is None and "truncated" in stage["detail"]
    assert metric(log, "rounding") == 0.5


def test_unknown_agent_and_oracle_without_check() -> None:
    with pytest.raises(ValueError, match="unknown agent"):
        agent_solver("debate")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="oracle_check"):
        agent_solver("critic_oracle")
