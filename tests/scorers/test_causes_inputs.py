"""The inputs a reply or a program computes with: which are inputs (operands no earlier step
produced, a line's first side only), which are accounted for (the document in its forms,
usual constants, earlier and stated results, compound factors, the gold's values), and a
program traced against the gold in the sandbox (the first step where they part)."""

from __future__ import annotations

import asyncio
import math

import pytest

from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.scorers.causes_arithmetic import check_arithmetic
from finmath_tasks.scorers.causes_gold import written_forms
from finmath_tasks.scorers.causes_inputs import (
    Known,
    compare_trace,
    labelled,
    run_trace,
    stated_before,
)
from finmath_tasks.variants import find_numbers

DOCUMENT = "An investor deposits $15,000 at 4.8% per year compounded monthly for 6 years."
KNOWN = Known.of(written_forms(find_numbers(DOCUMENT)))


def inputs(reply: str) -> list[str]:
    return [op.text for op in check_arithmetic(reply).inputs]


def test_the_inputs_are_operands_no_earlier_step_produced() -> None:
    reply = (
        "Monthly rate = 4.8% / 12 = 0.4%\n"
        "Value = 15000 × (1 + 0.4%)^72 = 19994.87\n"
        "Value = 19994.87 + 3.5 = 19998.37"
    )
    # 0.4% and 19994.87 are results of earlier steps: not inputs
    assert inputs(reply) == ["4.8%", "12", "15000", "1", "72", "3.5"]


def test_a_side_that_rewrites_the_one_before_gives_no_inputs() -> None:
    # 2.625 and 0.07 are the left side's values, written out
    assert inputs("P = (2.5 × (1 + 0.05)) / (0.12 - 0.05) = 2.625 / 0.07 = 37.5") == [
        "2.5",
        "1",
        "0.05",
        "0.12",
        "0.05",
    ]
    # a side after one the check cannot read ([...]) rewrites it too
    assert inputs("PV = 100 × [(1 - 0.1358) / 0.055] = 100 × 15.71 = 1571") == []


def test_the_document_in_its_forms_and_usual_constants_account_for_an_input() -> None:
    for value, text in [(0.048, "4.8%"), (4.8, "4.8"), (15000.0, "15,000"), (0.004, "0.004")]:
        assert KNOWN.accounts(value, text), text  # 0.004: 4.8% / 12
    assert KNOWN.accounts(1.004**72, "1.33269")  # a compound factor, at its shown digits
    assert KNOWN.accounts(365.0, "365") and KNOWN.accounts(1.96, "1.96")
    # a rate the question does not give, and a figure from nowhere
    assert not KNOWN.accounts(0.05, "0.05")  # short: exact, not 4.8% rounded
    assert not KNOWN.accounts(3.5, "3.5")
    # a power of a number the reply stated, worked out in the head with a slip, is no
    # invention within 1%; the document's own factors count only at the shown digits
    assert not KNOWN.accounts(1.3300, "1.3300", near=0.01)
    assert KNOWN.accounts(1.3300, "1.3300", earlier=[1.004**72], near=0.01)
    # annuity factors of a tiny daily rate are close to every count: never loosely matched
    assert not KNOWN.accounts(250.0, "250", near=0.01)


def test_an_earlier_result_and_a_result_stated_in_words_account_for_an_input() -> None:
    assert KNOWN.accounts(155.5, "155.50", earlier=[155.5])
    stated = stated_before(
        [
            "15 units @ $5.20/unit + 20 units @ $5.50/unit = $155.50",
            "YTM = 0.071 or 7.1%",
            "the taxes are 25% of £650,000, which equals £162,500.",
            "Assume the growth rate is 3%",
        ]
    )
    assert {155.5, 0.071, 7.1, 162500.0} <= set(stated)
    assert 3.0 not in stated and 0.03 not in stated  # a number written as given is none


def test_the_gold_values_account_for_an_input() -> None:
    known = Known.of(written_forms(find_numbers(DOCUMENT)), [0.048], [0.7513148])
    assert known.accounts(0.7513, "0.7513")  # the gold computes it: a derived value


def test_labelled_programs_name_each_operation() -> None:
    source, labels = labelled("def solution():\n    x = 2 * 3\n    return round(x / 7, 2)\n")
    assert labels == ["2 * 3", "x / 7", "round(x / 7, 2)"]  # in the order computed
    assert "_fm_t(" in source


GOLD = (
    "def solution():\n"
    "    face = 1000\n"
    "    coupon = 0.06 * face\n"
    "    y = 0.072\n"
    "    years = 5\n"
    "    price = sum(coupon / (1 + y) ** t for t in range(1, years + 1))\n"
    "    price += face / (1 + y) ** years\n"
    "    return price\n"
)


@pytest.mark.skipif(not bwrap_available()[0], reason="needs bubblewrap")
def test_a_program_with_the_gold_inputs_parts_at_its_first_own_step() -> None:
    program = (
        "def solution():\n"
        "    face = 1000\n"
        "    coupon = face * 0.06\n"
        "    y = 0.072\n"
        "    n = 5\n"
        "    pv = sum(coupon / (1 + y) ** t for t in range(1, n + 1))\n"
        "    return pv + face / (1 + y) ** (n - 1)\n"
    )
    trace = asyncio.run(run_trace(GOLD, program, "solution"))
    assert trace.gold_value == pytest.approx(951.06, abs=0.01)
    coupons = sum(60 / 1.072**t for t in range(1, 6))
    assert trace.model_value == pytest.approx(coupons + 1000 / 1.072**4)
    found = compare_trace(GOLD, program, trace)
    assert found["inputs_match"] is True and found["missing_inputs"] == []
    # every coupon's discounting is the gold's (1.072 ** 4 too, the fourth coupon's): the
    # face discounted 4 years, not 5, is the first value the gold never computes
    assert found["expression"] == "face / (1 + y) ** (n - 1)"
    assert found["value"] == pytest.approx(1000 / 1.072**4)
    assert found["steps_shared"] > 5


@pytest.mark.skipif(not bwrap_available()[0], reason="needs bubblewrap")
def test_a_program_with_other_inputs_says_which() -> None:
    program = "def solution():\n    return 1000 / 1.08 ** 5\n"
    found = compare_trace(GOLD, program, asyncio.run(run_trace(GOLD, program, "solution")))
    assert found["inputs_match"] is False
    assert found["extra_inputs"] == ["1.08"]
    assert set(found["missing_inputs"]) == {"0.06", "0.072"}
    assert found["expression"] == "1.08 ** 5"


def test_compound_factors_of_a_rate_near_minus_100_percent_stop_before_zero() -> None:
    # (1 - 0.984)^n underflows to 0 within 360 periods; 1 / 0 used to end the whole check
    from finmath_tasks.scorers.causes_inputs import Known, compound_factors

    factors = compound_factors([-0.984])
    assert factors and all(math.isfinite(f) for f in factors)
    assert Known.of([(-98.4, "-98.4%")]).accounts(0.016, "0.016")  # 1 - 98.4%
