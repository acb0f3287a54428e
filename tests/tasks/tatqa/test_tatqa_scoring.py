"""TAT-QA's official EM/F1 (with scale) on hand-made cases."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inspect_ai.model import ModelName
from inspect_ai.scorer import Target
from inspect_ai.solver import TaskState

from finmath_tasks.tasks.tatqa.scoring import (
    answer_string,
    em_f1,
    normalize_answer,
    official_check,
    split_scale,
    to_number,
)


def official(
    prediction: Any, answer: Any, answer_type: str, scale: str = "", pred_scale: str = ""
) -> tuple[float, float]:
    return em_f1(
        prediction, answer=answer, answer_type=answer_type, scale=scale, pred_scale=pred_scale
    )


@pytest.mark.parametrize(
    ("prediction", "answer", "answer_type", "scale", "pred_scale", "expected"),
    [
        # spans: case, punctuation and articles do not matter
        ("The widgets.", ["widgets"], "span", "", "", (1.0, 1.0)),
        ("blue widgets", ["widgets"], "span", "", "", (0.0, 0.67)),
        ("gadgets", ["widgets"], "span", "", "", (0.0, 0.0)),
        # a span number with its scale: gold scale applied, the prediction's too
        ("$1,496.5", ["$1,496.5"], "span", "million", "million", (1.0, 1.0)),
        ("$1,496.5", ["$1,496.5"], "span", "million", "", (0.0, 0.0)),
        ("1,496.5 million", ["$1,496.5"], "span", "million", "", (1.0, 1.0)),
        # multi-span: order does not matter when given as a list; one string in another
        # order only gets F1
        (["gadgets", "widgets"], ["widgets", "gadgets"], "multi-span", "", "", (1.0, 1.0)),
        ("gadgets widgets", ["widgets", "gadgets"], "multi-span", "", "", (1.0, 1.0)),
        ("widgets and gadgets", ["widgets", "gadgets"], "multi-span", "", "", (0.0, 0.8)),
        (["widgets"], ["widgets", "gadgets"], "multi-span", "", "", (0.0, 0.67)),
        # counts: F1 is EM
        ("2", 2, "count", "", "", (1.0, 1.0)),
        ("2.0", 2, "count", "", "", (1.0, 1.0)),
        ("3", 2, "count", "", "", (0.0, 0.0)),
        # arithmetic with each scale
        ("250", 250.0, "arithmetic", "", "", (1.0, 1.0)),
        ("250.004", 250.0, "arithmetic", "", "", (1.0, 1.0)),  # rounded to 2 decimals
        ("250.01", 250.0, "arithmetic", "", "", (0.0, 0.0)),
        ("250", 250, "arithmetic", "thousand", "thousand", (1.0, 1.0)),
        ("250 thousand", 250, "arithmetic", "thousand", "", (1.0, 1.0)),
        ("250000", 250, "arithmetic", "thousand", "", (1.0, 1.0)),
        ("250", 250, "arithmetic", "thousand", "", (0.0, 0.0)),
        ("1.5", 1.5, "arithmetic", "million", "million", (1.0, 1.0)),
        ("1.5 million", 1.5, "arithmetic", "million", "", (1.0, 1.0)),
        ("1.5", 1.5, "arithmetic", "million", "thousand", (0.0, 0.0)),
        ("2.1 billion", 2.1, "arithmetic", "billion", "", (1.0, 1.0)),
        ("2.1", 2.1, "arithmetic", "billion", "billion", (1.0, 1.0)),
        ("25%", 25, "arithmetic", "percent", "", (1.0, 1.0)),
        ("0.25", 25, "arithmetic", "percent", "", (1.0, 1.0)),  # the fraction candidate
        ("25", 25, "arithmetic", "percent", "percent", (1.0, 1.0)),
        ("25", 25, "arithmetic", "percent", "", (0.0, 0.0)),
        ("-12.6%", -12.6, "arithmetic", "percent", "", (1.0, 1.0)),
        ("(12.6)", -12.6, "arithmetic", "", "", (1.0, 1.0)),  # accounting negative
        ("12.6", -12.6, "arithmetic", "", "", (0.0, 0.0)),
        # no prediction
        ("", 250, "arithmetic", "", "", (0.0, 0.0)),
        (None, ["widgets"], "span", "", "", (0.0, 0.0)),
    ],
)
def test_official_em_f1(
    prediction: Any,
    answer: Any,
    answer_type: str,
    scale: str,
    pred_scale: str,
    expected: tuple[float, float],
) -> None:
    assert official(prediction, answer, answer_type, scale, pred_scale) == expected


def test_pieces() -> None:
    assert to_number("$(1234.5) million") == -1234.5  # the official quirks: a scale word
    assert to_number("$(1,234.5)") == 1234.5  # after ")" is missed; "(1,234.5)" is not negative
    assert to_number("1.5 million") == 1500000.0
    assert to_number("12.5%") == 0.125
    assert to_number("abc") is None
    assert answer_string(["b", "a"], "million") == "a million b million"
    assert answer_string(["12.5"], "percent") == "0.1250"
    assert normalize_answer("The  Fixed-Price, type") == "fixedprice type"
    assert normalize_answer("1,234") == "1234"


def test_number_reading_quirks() -> None:
    # no digit before the point: no value; the item still "reads as a number"
    assert to_number(".5") is None and to_number("-.5%") is None
    assert normalize_answer("inf") == "None"  # a float without digits: no value
    assert to_number("5 millions") == 5_000_000  # the word only has to contain the scale
    assert to_number("1e5") == 1  # the first literal; "1e" is no scale word
    assert to_number("12 %") == 0.12 and to_number(" %5") == 5
    assert normalize_answer("1.50 1,234") == "1.5 1234"
    # token sets: a repeated token counts once
    assert em_f1("x x y", answer=["x y y"], answer_type="span", scale="") == (0.0, 1.0)


@pytest.mark.parametrize(
    ("answer", "split"),
    [
        ("1,496.5 million", ("1,496.5", "million")),
        ("(134) thousand", ("(134)", "thousand")),
        ("(59.9)%", ("(59.9)", "percent")),
        ("12.5 percent.", ("12.5", "percent")),
        (["1 million", "2 million"], (["1", "2"], "million")),
        (["1 million", "2"], (["1 million", "2"], "")),
        ("widgets", ("widgets", "")),
        (None, (None, "")),
    ],
)
def test_split_scale(answer: Any, split: tuple[Any, str]) -> None:
    assert split_scale(answer) == split


def state(metadata: dict[str, Any]) -> TaskState:
    return TaskState(
        model=ModelName("mockllm/model"),
        sample_id="s",
        epoch=1,
        input="q",
        messages=[],
        target=Target("x"),
        metadata=metadata,
    )


def test_official_check_reads_the_scale_from_the_answer_text() -> None:
    arithmetic = {"answer": -134, "answer_type": "arithmetic", "scale": "thousand"}
    check = official_check("(134) thousand", state(arithmetic))
    assert check.correct and check.values == {"em": 1.0, "f1": 1.0}
    assert check.metadata == {"pred_scale": "thousand"}
    # a gold span that holds its scale word without a scale: scored as written
    span = {"answer": ["$(9.8) million"], "answer_type": "span", "scale": ""}
    assert official_check("$(9.8) million", state(span)).correct
    assert not official_check("9.8", state(span)).correct


ITEMS = st.one_of(
    st.none(),
    st.text(max_size=30),
    st.lists(st.text(max_size=12), max_size=3),
    st.floats(allow_nan=True).map(lambda f: f"{f} million"),
    st.sampled_from(["(1)%", "%", "( )", "1e999", "inf", "-.5%", "$", "nan percent"]),
)
GOLDS = st.one_of(
    st.tuples(
        st.lists(st.text(max_size=12), min_size=1, max_size=3),
        st.sampled_from(["span", "multi-span"]),
    ),
    st.tuples(st.floats(allow_nan=False, allow_infinity=False, width=32), st.just("arithmetic")),
    st.tuples(st.integers(0, 10**6), st.just("count")),
)


@settings(max_examples=400, deadline=None)
@given(ITEMS, GOLDS, st.sampled_from(["", "thousand", "million", "billion", "percent"]))
def test_official_check_never_raises(prediction: Any, gold: tuple[Any, str], scale: str) -> None:
    answer, answer_type = gold
    check = official_check(
        prediction, state({"answer": answer, "answer_type": answer_type, "scale": scale})
    )
    assert set(check.values) == {"em", "f1"}
    assert 0.0 <= check.values["f1"] <= 1.0
