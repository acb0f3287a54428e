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

from finmath_tasks.scorers.comparisons import GOLD_WRITTEN_KEY, rounding, tolerant
from finmath_tasks.solvers.agents.scoring import (
    AGENT_ANSWERS_KEY,
    agent_answer,
    change_kind,
    gold_kind,
    normalise_steps,
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
        ("293.57", "293.5714", {"rounding": 0.0, "tolerant": 1.0}),  # coarser than the gold
        ("293.5714286", "293.5714", {"rounding": 1.0, "tolerant": 1.0}),
        ("24.4%", "24.41", {"rounding": 0.0, "tolerant": 1.0}),
        ("24.41%", "24.41", {"rounding": 1.0, "tolerant": 1.0}),
        ("0.2441", "24.41", {"rounding": 0.0, "tolerant": 0.0}),  # no percentage in play
        ("1.2 million", "1.2", {"rounding": 0.0, "tolerant": 1.0}),
        ("29", "29.4", {"rounding": 0.0, "tolerant": 0.0}),  # the gold is never rounded
        ("29.43", "29.4", {"rounding": 1.0, "tolerant": 1.0}),  # the estimate is
        ("29.45", "29.4", {"rounding": 0.0, "tolerant": 1.0}),  # half-up: 29.5
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


def test_numeric_check_reads_the_gold_as_written() -> None:
    # FinQA: target "114" for an exe_ans written 114.0 (one decimal place)
    written = state("114")
    written.metadata[GOLD_WRITTEN_KEY] = "114.0"
    assert CHECK("114.04", written).values["rounding"] == 1.0
    assert CHECK("114.4", written).values["rounding"] == 0.0
    assert CHECK("114.4", state("114")).values["rounding"] == 1.0  # "114": units
    stale = state("2.5")
    stale.metadata[GOLD_WRITTEN_KEY] = "7"  # not the target's number: ignored
    assert CHECK("2.54", stale).values["rounding"] == 1.0


def stage(answer: Any, steps: Any = "steps", name: str = "cot") -> dict[str, Any]:
    return {"stage": name, "answer": answer, "steps": steps}


@pytest.mark.parametrize(
    ("flip", "before", "after", "kind"),
    [
        ("correct_to_wrong", stage("2", "a + b"), stage("3", "a+b"), "minor"),
        ("wrong_to_correct", stage("2", "a + b"), stage("3", "a - b"), "major"),
        ("correct_to_wrong", stage("2", None), stage("3", "a"), "unknown"),
        ("correct_to_wrong", stage("2", "a"), stage("3", None), "unknown"),
        ("correct_to_correct", stage("2", "a"), stage("3", "b"), "none"),
        ("wrong_to_wrong", stage("2", "a"), stage("3", "b"), "none"),
        ("wrong_to_wrong", stage("2", "a"), stage("2", "a"), "none"),
    ],
)
def test_change_kind(flip: str, before: Any, after: Any, kind: str) -> None:
    assert change_kind(flip, before, after) == kind


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Revenue  2019 -\n revenue 2018", "revenue 2019 - Revenue 2018"),  # space, case
        ("44.1-56.7", "44.1 - 56.7"),  # spacing around operators
        ("1,496.50 - 1,202.90", "1496.5 - 1202.9"),  # thousands separators, trailing zeros
        ("12.0 / 4", "12 / 4"),
        ("Subtract 2018 from 2019.", "subtract 2018 from 2019"),  # sentence punctuation
        (["step one", "step two"], "step one\nstep two"),  # a list is its items in order
        ({"1": "step one", "2": "step two"}, ["step one", "step two"]),
        ("44.1 \u2212 56.7", "44.1 - 56.7"),  # unicode minus
        ("3 \u00d7 4", "3 * 4"),
    ],
)
def test_normalise_steps_same(a: Any, b: Any) -> None:
    assert normalise_steps(a) == normalise_steps(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("44.1 - 56.7", "44.1 - 56.8"),  # other data
        ("44.1 - 56.7", "56.7 - 44.1"),  # other order
        ("(a - b) / b", "(a - b) / a"),  # another calculation
        ("1,234", "1.234"),
        ("12.5", "125"),
        ("a * b", "a + b"),
        (["step one", "step two"], ["step two", "step one"]),
    ],
)
def test_normalise_steps_different(a: Any, b: Any) -> None:
    assert normalise_steps(a) != normalise_steps(b)


def test_normalise_steps_masks_the_stated_answer_only_as_a_result() -> None:
    # the same calculation, only its result (the answer) differs: the same steps
    first = normalise_steps("(44.1 - 56.7) / 56.7 * 100 = -22.22", "-22.22")
    again = normalise_steps("(44.1 - 56.7) / 56.7 * 100 = -22.2", "-22.2")
    assert first == again == "( 44.1 - 56.7 ) / 56.7 * 100 = #"
    # the result to more digits than the answer is still the answer
    assert normalise_steps("change is -22.2222%", "-22.22") == "change is # %"
    # a datum equal to the answer, not after a result marker, is a step: kept
    assert normalise_steps("take 44.1", "44.1") == "take 44.1"
    # another number after "=" is not the answer: kept
    assert normalise_steps("x = 56.7", "44.1") == "x = 56.7"
    # without an answer nothing is masked
    assert normalise_steps("x = 56.7") == "x = 56.7"


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.floats(), st.text(max_size=30)),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=6,
    ),
    st.one_of(st.none(), st.text(max_size=10), st.floats().map(repr)),
)
def test_normalise_steps_never_raises(steps: Any, answer: Any) -> None:
    assert isinstance(normalise_steps(steps, answer), str)


def test_gold_kind() -> None:
    assert gold_kind("2") == "integer"
    assert gold_kind("2.0") == "integer"
    assert gold_kind("-0.25") == "float"
    assert gold_kind("yes") == "text"
    assert gold_kind("nan") == "text"


def score(target: str, stages: list[dict[str, Any]] | None) -> Any:
    return asyncio.run(agent_answer(CHECK)(state(target, stages), Target(target)))


def test_scorer_flip_and_change() -> None:
    # right (293.57), wrong (300, other data), wrong (293.6: coarser than the gold): a
    # correct -> wrong flip from the first to the final answer with the same steps
    # (only the result differs): minor; the first transition changed its steps: major
    result = score(
        "293.57",
        [
            stage("293.57", "a - b = 293.57"),
            stage("300", "a - c = 300", "critic"),
            stage("293.6", "a - b = 293.6", "calculator"),
        ],
    )
    assert result.value == {
        "rounding": 0.0,
        "tolerant": 1.0,
        "first_answer": 1.0,
        "correct_to_wrong": 1.0,
        "wrong_to_correct": 0.0,
        "minor_change": 1.0,
        "major_change": 0.0,
    }
    assert [(t["flip"], t["change"]) for t in result.metadata["transitions"]] == [
        ("correct_to_wrong", "major"),
        ("wrong_to_wrong", "none"),
    ]
    assert result.metadata["gold_kind"] == "float"
    assert (result.metadata["flip"], result.metadata["change"]) == ("correct_to_wrong", "minor")


def test_scorer_without_a_flip_classifies_no_change() -> None:
    result = score("293.57", [stage("300", "a"), stage("250", "b", "critic")])
    assert result.value["minor_change"] == result.value["major_change"] == 0.0
    assert result.metadata["change"] == "none"


def test_scorer_without_gold_is_unscored() -> None:
    result = score("", [{"stage": "cot", "answer": "2"}])
    assert math.isnan(result.value) and result.reason == "no_gold_answer"


def test_an_exception_of_ours_propagates_to_inspect() -> None:
    """A bug in the check is not turned into a score: it reaches Inspect, which records it
    as the sample's error (tests/scorers/test_keyed.py runs that in a real eval)."""

    def broken(answer: Any, state: TaskState) -> Any:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(
            agent_answer(broken)(state("2", [{"stage": "cot", "answer": "2"}]), Target("2"))
        )


ANSWERS = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.lists(st.text(max_size=10), max_size=3),
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {"stage": st.text(max_size=5), "answer": ANSWERS, "steps": st.none() | st.text()}
        ),
        max_size=4,
    ),
    st.one_of(st.text(max_size=20), st.floats().map(repr)),
)
def test_scorer_never_raises(stages: list[dict[str, Any]], target: str) -> None:
    result = score(target, stages)
    if not (isinstance(result.value, float) and math.isnan(result.value)):
        assert set(result.value) >= {"rounding", "tolerant", "first_answer"}
        assert all(v in (0.0, 1.0) for v in result.value.values())
    assert result.explanation


@pytest.mark.parametrize("answer", ["The answer is -12.6 or -11.6.", "-12.6 or -11.6"])
def test_an_answer_offering_two_numbers_is_hedged(answer: str) -> None:
    check = CHECK(answer, state("-12.6"))
    assert check.values == {"rounding": 0.0, "tolerant": 0.0}
    assert check.metadata["error_class"] == dict.fromkeys(
        ["rounding", "tolerant"], "no_answer:hedged"
    )


def test_a_fraction_for_a_percent_only_where_a_percentage_is_in_play() -> None:
    asked = state("24.41")
    asked.metadata["question"] = "What is the percentage change in revenue?"
    assert CHECK("0.2441", asked).values == {"rounding": 0.0, "tolerant": 1.0}
    amount = state("3680")
    amount.metadata["question"] = "What was the average free cash flow?"
    check = CHECK("36.8", amount)
    assert check.values == {"rounding": 0.0, "tolerant": 0.0}
    assert check.metadata["error_class"] == {"rounding": "scale", "tolerant": "scale"}
