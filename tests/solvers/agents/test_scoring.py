"""Checks, change kinds and the agent scorer on hand-made states."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inspect_ai.model import ModelName
from inspect_ai.scorer import Target
from inspect_ai.solver import TaskState

from finmath_tasks.scorers.comparisons import rounding, tolerant
from finmath_tasks.solvers.agents.scoring import (
    AGENT_ANSWERS_KEY,
    agent_answer,
    change_kind,
    gold_kind,
    numeric_check,
)

CHECK = numeric_check({"rounding": rounding, "tolerant": tolerant})


def state(target: str, stages: list[dict[str, Any]] | None = None) -> TaskState:
    s = TaskState(
        model=ModelName("mockllm/model"),
        sample_id="s",
        epoch=1,
        input="q",
        messages=[],
        target=Target(target),
    )
    if stages is not None:
        s.store.set(AGENT_ANSWERS_KEY, stages)
    return s


@pytest.mark.parametrize(
    ("answer", "gold", "values"),
    [
        ("293.6", "293.6", {"rounding": 1.0, "tolerant": 1.0}),
        ("293.57", "293.5714", {"rounding": 1.0, "tolerant": 1.0}),
        ("24.4%", "24.41", {"rounding": 1.0, "tolerant": 1.0}),
        ("0.2441", "24.41", {"rounding": 0.0, "tolerant": 1.0}),  # fraction vs percent
        ("1.2 million", "1.2", {"rounding": 0.0, "tolerant": 1.0}),
        ("29", "29.4", {"rounding": 1.0, "tolerant": 0.0}),  # the paper's rounding accepts
        ("yes", "yes", {"rounding": 1.0, "tolerant": 1.0}),
        ("No.", "no", {"rounding": 1.0, "tolerant": 1.0}),
        ("no", "yes", {"rounding": 0.0, "tolerant": 0.0}),
        (None, "2", {"rounding": 0.0, "tolerant": 0.0}),
        ("about 3 or 4", "3", {"rounding": 0.0, "tolerant": 0.0}),
    ],
)
def test_numeric_check(answer: str | None, gold: str, values: dict[str, float]) -> None:
    check = CHECK(answer, state(gold))
    assert check.values == values
    assert check.correct == bool(values["rounding"])


@pytest.mark.parametrize(
    ("before", "after", "kind"),
    [
        ("293.6", "293.6", "none"),
        ("293.6", "293.60", "none"),
        ("Fixed Price", "fixed price", "none"),
        ("293.6", "293.7", "minor"),
        ("0.2441", "24.41", "minor"),
        ("24.41%", "24.41", "none"),
        ("3", "2", "major"),
        (None, "2", "major"),
        ("2", None, "major"),
        (None, None, "none"),
        ("a", "b", "major"),
        (["a", "b"], ["a", "b"], "none"),
    ],
)
def test_change_kind(before: Any, after: Any, kind: str) -> None:
    assert change_kind(before, after) == kind


def test_gold_kind() -> None:
    assert gold_kind("2") == "integer"
    assert gold_kind("2.0") == "integer"
    assert gold_kind("-0.25") == "float"
    assert gold_kind("yes") == "text"
    assert gold_kind("nan") == "text"


def score(target: str, stages: list[dict[str, Any]] | None) -> Any:
    return asyncio.run(agent_answer(CHECK)(state(target, stages), Target(target)))


def test_scorer_flip_and_change() -> None:
    result = score(
        "293.57",
        [
            {"stage": "cot", "answer": "293.57"},
            {"stage": "critic", "answer": "300"},
            {"stage": "calculator", "answer": "293.6"},
        ],
    )
    assert result.value == {
        "rounding": 1.0,
        "tolerant": 1.0,
        "first_answer": 1.0,
        "correct_to_wrong": 0.0,
        "wrong_to_correct": 0.0,
        "minor_change": 1.0,
        "major_change": 0.0,
    }
    assert [t["flip"] for t in result.metadata["transitions"]] == [
        "correct_to_wrong",
        "wrong_to_correct",
    ]
    assert result.metadata["gold_kind"] == "float"


def test_scorer_without_gold_is_unscored() -> None:
    result = score("", [{"stage": "cot", "answer": "2"}])
    assert math.isnan(result.value) and result.reason == "no_gold_answer"


def test_scorer_exception_is_unscored_with_reason() -> None:
    def broken(answer: Any, state: TaskState) -> Any:
        raise RuntimeError("boom")

    result = asyncio.run(
        agent_answer(broken)(state("2", [{"stage": "cot", "answer": "2"}]), Target("2"))
    )
    assert math.isnan(result.value) and "RuntimeError: boom" in result.explanation


ANSWERS = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.lists(st.text(max_size=10), max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.fixed_dictionaries({"stage": st.text(max_size=5), "answer": ANSWERS}), max_size=4),
    st.one_of(st.text(max_size=20), st.floats().map(repr)),
)
def test_scorer_never_raises(stages: list[dict[str, Any]], target: str) -> None:
    result = score(target, stages)
    if not (isinstance(result.value, float) and math.isnan(result.value)):
        assert set(result.value) >= {"rounding", "tolerant", "first_answer"}
        assert all(v in (0.0, 1.0) for v in result.value.values())
    assert result.reason != "scorer_error", result.explanation
