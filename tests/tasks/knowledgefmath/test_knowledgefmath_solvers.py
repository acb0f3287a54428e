"""The task's own solver, on its own: ``financemath_prompt`` renders the reference's
user prompt for each style in place of the sample's input."""

from __future__ import annotations

from typing import Any

import pytest

from eval_helpers import solve, state_of
from finmath_tasks.tasks.knowledgefmath.dataset import (
    COT_INSTRUCTION,
    POT_INSTRUCTION,
    financemath_prompt,
    record_to_sample,
)

RECORD: dict[str, Any] = {
    "question_id": "ours-1",
    "question": "A bond pays 500 on a price of 250. What is the ratio of payment to price?",
    "tables": ["| payment | price |\n|---|---|\n| 500 | 250 |"],
    "ground_truth": 2.0,
    "python_solution": "def solution():\n    return 500 / 250",
    "topic": "Fixed Income",
}


@pytest.mark.parametrize(("style", "instruction", "other"), [
    ("cot", COT_INSTRUCTION, POT_INSTRUCTION),
    ("pot", POT_INSTRUCTION, COT_INSTRUCTION),
])  # fmt: skip
def test_the_user_turn_is_the_references_prompt(style: str, instruction: str, other: str) -> None:
    state = solve(financemath_prompt(style), state_of(record_to_sample(RECORD)))  # type: ignore[arg-type]
    [turn] = state.messages
    text = state.user_prompt.text
    assert turn.role == "user" and turn.text == text
    assert instruction.strip() in text and other.strip() not in text
    # the table comes before the question, both whole
    assert RECORD["tables"][0] in text and RECORD["question"] in text
    assert text.index("| 500 | 250 |") < text.index(RECORD["question"])


def test_a_problem_without_tables_has_no_table_header() -> None:
    sample = record_to_sample({**RECORD, "tables": []})
    text = solve(financemath_prompt("cot"), state_of(sample)).user_prompt.text
    assert text.startswith("Question: " + RECORD["question"])


def test_an_unknown_style_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown prompt style"):
        solve(financemath_prompt("plain"), state_of(record_to_sample(RECORD)))  # type: ignore[arg-type]
