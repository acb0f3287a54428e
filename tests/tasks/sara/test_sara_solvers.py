"""The task's own solver, scorer and metric on their own: ``sara_prompt`` puts the
exemplar turns before the case's turn, ``sara_scorer`` reads a verdict or a dollar
amount per case kind, and ``flag_counts_scored`` counts flags through the epoch reducer."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from inspect_ai.model import (
    ChatMessageSystem,
    ModelOutput,
)
from inspect_ai.scorer import Score
from inspect_ai.solver import TaskState
from sara_fixtures import CASES, write_release

from eval_helpers import score_state, solve, state_of, through_epochs
from finmath_tasks.tasks.sara.dataset import load_data, load_dataset
from finmath_tasks.tasks.sara.prompts import case_turn, sara_prompt
from finmath_tasks.tasks.sara.scoring import FLAGS, flag_counts_scored, sara_scorer


@pytest.fixture
def states(tmp_path: Path) -> dict[str, TaskState]:
    write_release(tmp_path)
    data = load_data(str(tmp_path))
    return {str(s.id): state_of(s) for s in load_dataset(data, "test", "all")}


def answered(state: TaskState, reply: str) -> TaskState:
    state.output = ModelOutput.from_content("mockllm/model", reply)
    return state


def test_exemplars_go_before_the_case_turn(states: dict[str, TaskState]) -> None:
    state = states["s10_a_1_pos"]
    state.messages.insert(0, ChatMessageSystem(content="rules"))
    shots = [{"role": "user", "content": "case A"}, {"role": "assistant", "content": "True"}]
    prompt = sara_prompt(shots, "few_shot")
    state = solve(prompt, state)
    assert [m.role for m in state.messages] == ["system", "user", "assistant", "user"]
    assert [m.text for m in state.messages[1:3]] == ["case A", "True"]
    other = next(s for k, s in states.items() if k != "s10_a_1_pos")
    again = solve(prompt, other)
    assert [m.text for m in again.messages[-3:-1]] == ["case A", "True"]
    assert again.messages[-3].id != state.messages[1].id  # fresh messages for each sample
    text, question = state.metadata["text"], state.metadata["question"]
    assert state.messages[-1].text == case_turn("entailment", text, question, "few_shot")
    assert CASES["s10_a_1_pos"][0] in state.messages[-1].text


def test_a_tax_case_turn_asks_for_the_amount(states: dict[str, TaskState]) -> None:
    state = solve(sara_prompt([], "cot"), states["tax_case_1"])
    [turn] = state.messages
    text, question = state.metadata["text"], state.metadata["question"]
    assert turn.text == case_turn("tax", text, question, "cot")
    assert CASES["tax_case_1"][0] in turn.text


def test_the_scorer_reads_a_verdict_or_an_amount(states: dict[str, TaskState]) -> None:
    entailment = sara_scorer("all")
    right = score_state(entailment, answered(states["s10_a_1_pos"], "Answer: Entailment"))
    assert right.value["entailment"] == 1.0 and right.answer == "Entailment"
    assert math.isnan(right.value["exact_dollar"])  # the tax keys do not apply
    wrong = score_state(entailment, answered(states["s11_neg"], "Answer: True"))
    assert wrong.value["entailment"] == 0.0
    unreadable = score_state(entailment, answered(states["s10_b_pos"], "I cannot tell."))
    assert unreadable.value["entailment"] == 0.0 and unreadable.metadata["unreadable"]
    # tax: $12000 is the gold amount; 12,500 is within SARA's tolerance, not exact
    close = score_state(sara_scorer("tax"), answered(states["tax_case_1"], "Tax: $12,500"))
    assert close.value == {"exact_dollar": 0.0, "sara_tolerance": 1.0}
    exact = score_state(sara_scorer("tax"), answered(states["tax_case_1"], "It is $12,000."))
    assert exact.value == {"exact_dollar": 1.0, "sara_tolerance": 1.0}


def flagged(value: float, **flags: bool) -> Score:
    return Score(value=value, metadata=dict(flags))


def test_flag_counts_through_the_epoch_reducer() -> None:
    metric = [flag_counts_scored(list(FLAGS))]
    rows = [
        [flagged(0.0, unreadable=True)],
        [flagged(1.0)],
        [flagged(float("nan"), unreadable=True)],  # the key does not apply: not counted
        # NaN for every key: Inspect leaves it out of the metrics (an unscored sample)
        [flagged(float("nan"), scoring_error=True)],
        [flagged(0.0, over_budget=True)],
    ]
    once = through_epochs(metric, rows)
    assert once == {"unreadable": 1, "over_budget": 1, "scoring_error": 0}
    # epochs that agree change nothing
    assert through_epochs(metric, [row * 3 for row in rows]) == once
    # epochs that disagree: the reduced score keeps the first epoch's metadata
    assert through_epochs(metric, [[flagged(0.0, unreadable=True), flagged(1.0)]]) == {
        "unreadable": 1, "over_budget": 0, "scoring_error": 0,
    }  # fmt: skip
    assert through_epochs(metric, [[flagged(1.0), flagged(0.0, unreadable=True)]]) == {
        "unreadable": 0, "over_budget": 0, "scoring_error": 0,
    }  # fmt: skip
