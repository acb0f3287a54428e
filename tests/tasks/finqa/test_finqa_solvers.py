"""The task's own prompt solver, on its own: ``finqa_prompt`` replaces the conversation
with the exemplar turns and the case's user turn, keeping system messages."""

from __future__ import annotations

from finqa_fixtures import RECORDS
from inspect_ai.model import ChatMessageSystem

from eval_helpers import solve, state_of
from finmath_tasks.tasks.finqa.dataset import record_to_sample
from finmath_tasks.tasks.finqa.prompts import Exemplar, finqa_prompt

EXEMPLAR = Exemplar(
    id="ours-train-1",
    question="what was the change in costs?",
    text=["costs were $ 5 million in 2020 and $ 3 million in 2019 ."],
    table=[["", "2020", "2019"], ["costs", "5", "3"]],
    explanation="Costs went from 3 to 5.",
    program="subtract(5, 3)",
    exe_ans=2.0,
)


def started() -> object:
    state = state_of(record_to_sample(RECORDS[0]))
    state.messages.insert(0, ChatMessageSystem(content="system rules"))
    return state


def test_question_only_with_exemplars() -> None:
    state = solve(finqa_prompt(False, [EXEMPLAR, EXEMPLAR]), started())  # type: ignore[arg-type]
    roles = [m.role for m in state.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert state.messages[0].text == "system rules"
    assert state.messages[1].text == EXEMPLAR.user()
    assert state.messages[2].text == EXEMPLAR.assistant()
    assert "Program: subtract(5, 3)" in state.messages[2].text
    last = state.messages[-1].text
    assert RECORDS[0]["qa"]["question"] in last
    assert "widgetco" not in last  # no document: a retrieval step adds the facts
    # fresh message ids per sample: the two exemplar copies are distinct messages
    assert state.messages[1].id != state.messages[3].id


def test_whole_document_without_exemplars() -> None:
    state = solve(finqa_prompt(True), started())  # type: ignore[arg-type]
    assert [m.role for m in state.messages] == ["system", "user"]
    last = state.messages[-1].text
    assert RECORDS[0]["qa"]["question"] in last
    assert "widgetco sells widgets" in last and "1,250" in last  # text and table
