"""The error classes say only what they know: a rescaling or a sign flip only when the
rescaled or negated answer is close to the gold by relative error; a reply cut at its
length limit is truncated whatever was read from it; an answer the official reading missed
while the model's output holds one is the harness's; a refusal states no answer."""

from __future__ import annotations

from typing import Any

import pytest
from tests.scorers.test_error_classes import classes, keyed, scores, state

from finmath_tasks.sandbox.client import PROGRAM_RESULT_KEY
from finmath_tasks.scorers.comparisons import (
    GoldNumber,
    exact,
    number_from_float,
    rounding,
    tolerant,
)
from finmath_tasks.scorers.error_classes import (
    NEAR,
    ROUNDING,
    SCALE,
    SIGN,
    WRONG,
    accepts_under,
    declines,
    no_answer_class,
    number_class,
)
from finmath_tasks.solvers.pot import ALTERNATIVES_KEY
from finmath_tasks.tasks.knowledgefmath.scoring import financemath
from finmath_tasks.tasks.tatqa.error_classes import numeric_class

KEYS = {"financemath": financemath, "tolerant": tolerant, "rounding": rounding, "exact": exact}


def of(answer: float, gold: str, key: str) -> str:
    value = GoldNumber(gold)
    return number_class(number_from_float(answer), value, accepts_under(KEYS[key], value))


@pytest.mark.parametrize("key", list(KEYS))
@pytest.mark.parametrize(
    ("answer", "gold", "expected"),
    [
        # FinanceMath's ceiling to 3 decimals accepts any small number for a tiny gold
        (1.0, "0.0008", WRONG),
        (-3.7, "0.0008", WRONG),
        (123456.0, "0.0008", WRONG),
        # an operator-precedence bug: 6.6% off after the shift is no rescaling
        (0.05844, "0.00548", WRONG),
        # 2.6 rounds to a gold of 3 written without decimals, 13% off
        (26.0, "3", WRONG),
        # float noise in a program gold never turns a sign flip into a rescaling
        (-0.144, "0.14400000000000002", SIGN),
        (54.8, "0.548", SCALE),  # a percent written for a fraction, no percentage in play
        (3680000.0, "3680", SCALE),
    ],
)
def test_scale_and_sign_only_close_by_relative_error(
    answer: float, gold: str, expected: str, key: str
) -> None:
    assert of(answer, gold, key) == expected


def test_tatqa_scale_and_sign_need_closeness_too() -> None:
    assert numeric_class(-0.144, 0.14400000000000002) == SIGN
    assert numeric_class(26.0, 3.0) == WRONG
    assert numeric_class(0.00001, 0.00004) == WRONG  # equal at 4 decimals, not close
    assert numeric_class(36.8, 3680.0) == SCALE


def test_distances_are_named_as_distances() -> None:
    assert ROUNDING == "within_1pct" and NEAR == "within_10pct"
    assert of(3.52, "3.5", "tolerant") == ROUNDING
    assert of(3.7, "3.5", "tolerant") == NEAR


def test_a_reply_cut_at_its_length_limit_is_truncated_whatever_was_read() -> None:
    for stop in ("max_tokens", "model_length"):
        found = scores(
            keyed("knowledgefmath", solver="cot"),
            state("3.5", "The rate is 9.1, so the answer is 9.1 and then", stop=stop),
        )
        got = classes(found)
        assert got["financemath"] == got["tolerant"] == "no_answer:truncated", got
        assert found["financemath"].metadata["extracted_value"] == 9.1  # type: ignore[index]
    # the same reply, not cut: a wrong answer
    found = scores(
        keyed("knowledgefmath", solver="cot"),
        state("3.5", "The rate is 9.1, so the answer is 9.1 and then", stop="stop"),
    )
    assert classes(found)["tolerant"] == WRONG


def test_a_cut_reply_with_the_right_answer_is_still_correct() -> None:
    found = scores(
        keyed("knowledgefmath", solver="cot"),
        state("3.5", "The answer is 3.5", stop="max_tokens"),
    )
    assert found["tolerant"].value == 1.0 and classes(found)["tolerant"] is None


def _pot(value: float, official: dict[str, Any]) -> dict[str, Any]:
    return {
        "ok": True,
        "value": value,
        "error": None,
        "program": "def solution(): ...",
        ALTERNATIVES_KEY: {"financemath": official},
    }


def test_the_reference_cut_that_fails_a_program_that_ran_is_the_harness() -> None:
    cut = {"ok": False, "value": None, "error": "SyntaxError: invalid syntax", "returned": False}
    for value, tolerant_class in ((3.5, None), (9.1, WRONG)):
        found = scores(
            keyed("knowledgefmath", solver="pot"),
            state("3.5", "```python\ndef solution(): ...\n```\nprose", store={
                PROGRAM_RESULT_KEY: _pot(value, cut)
            }),
        )  # fmt: skip
        got = classes(found)
        assert got["financemath"] == "harness:program_cut", got
        assert got["tolerant"] == tolerant_class
    # the model's own program failed: the model's failure
    failed = {"ok": False, "value": None, "error": "NameError: x", "program": "def solution(): x"}
    found = scores(
        keyed("knowledgefmath", solver="pot"),
        state("3.5", "```python\ndef solution(): x\n```", store={PROGRAM_RESULT_KEY: failed}),
    )
    assert classes(found)["financemath"] == "program_failed:exception"


def test_a_refusal_states_no_answer() -> None:
    assert declines("I cannot determine the rate from this table.")
    assert no_answer_class("I cannot determine the rate from this table.") == ("no_answer:refused")
    stated = "I cannot determine the exact rate. Assuming annual payments, it is about 5.2"
    assert not declines(stated)
    assert no_answer_class(stated) == "no_answer:no_number"


def test_an_extractor_that_missed_a_stated_answer_is_the_harness() -> None:
    from finmath_tasks.scorers.numeric import harness_miss

    stated = "Discounting each flow, the answer is 5.2"
    assert harness_miss(stated, None, None, official=True, model_extracted=True) == (
        "harness:extractor_missed"
    )
    # no answer marker: the last number of a reply is no stated answer
    unstated = "The flows are 100 and 200, and I am not sure"
    assert harness_miss(unstated, None, None, official=True, model_extracted=True) is None
    # our own rules read nothing: nothing was missed by another reading
    assert harness_miss(stated, None, None, official=False, model_extracted=False) is None
    # a program: only where our run returned a number
    ran = number_from_float(5.2)
    assert harness_miss("", {"ok": True}, ran, official=True, model_extracted=False) == (
        "harness:program_cut"
    )
    assert harness_miss("", {"ok": False}, None, official=True, model_extracted=False) is None
