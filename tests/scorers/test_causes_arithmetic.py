"""The arithmetic check: every step written at its shown precision is accepted, the first
wrong step of a chain is named, on crafted chains and on recorded FinanceMath replies."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from finmath_tasks.scorers.causes_arithmetic import check_arithmetic


@pytest.mark.parametrize(
    "text",
    [
        "Interest rate differential = 3.2875% - 1.6025% = 1.6850%",
        "Book value = $57,000 - $15,000 = $42,000",
        "Year 2 = $42,000 - ($42,000 * 20%) = $33,600",
        "Loss = $26,880 - $27,000 = -$120",
        "PV = 100 / 1.05^2 ≈ 90.70",
        "ratio = 0.125 × 100 = 12.5%",  # a percent read both ways
        "\\[ PV = \\frac{1000}{(1.05)^{2}} = 907.03 \\]",
        "FV = 1000 × (1 + 0.05)^10 = 1628.89",
        "1.05^10 = 1.62889\nFV = 1000 × 1.6289 = 1628.9",  # a chained, rounded result
        "σ = 0.0004 × sqrt(250) = 0.00632",
        "Ratio = 1 / 14.5 = 6.89%",  # cut after its last digit
        "Net = 44,300 - 320 = 44,000",  # shown to the thousand
        "Total = 1,200 × 3 = 3,600\n= 3.6 thousand",
        "Over 2012-2015 = 100,000 + 200,000",  # a range of years, not a subtraction
        "Year 1 = 100",  # no operator: nothing to check
        "Value = 2 × 0.30 × 0.70 = 2 ×",  # the expression goes on past the line
    ],
)
def test_steps_at_their_shown_precision_are_accepted(text: str) -> None:
    assert check_arithmetic(text).wrong is None


@pytest.mark.parametrize(
    ("text", "step"),
    [
        ("Daily = 1.6850% / 360 = 0.0047361% per day", "1.6850% / 360 = 0.0047361%"),
        ("PV = 100 / 1.05^2 ≈ 90.80", "100 / 1.05^2 = 90.80"),
        ("Loss = $26,880 - $27,000 = -$121", "26,880 - 27,000 = -121"),
        (
            "a = 2 * 3 * 4 = 24\nb = 24 / 5 = 4.8\nc = 4.8 × 1.5 = 7.3\nd = 7.3 + 1 = 8.3",
            "4.8 * 1.5 = 7.3",
        ),
        (
            "x = 100,000 / (1.0004808)^52 = 100,000 / 1.0259",
            "100,000 / (1.0004808)^52 = 100,000 / 1.0259",
        ),
        ("g = 35% + 25% + 20% + 10% + 10% = 90%", "35% + 25% + 20% + 10% + 10% = 90%"),
        # a thousands figure is rounded, never cut: 7,500 is not "7,000"
        ("Tax = 50000 * 0.15 = 7000", "50000 * 0.15 = 7000"),
        ("Net = 44,600 - 100 = 44,000", "44,600 - 100 = 44,000"),
    ],
)
def test_the_first_wrong_step_is_named(text: str, step: str) -> None:
    wrong = check_arithmetic(text).wrong
    assert wrong is not None and wrong.text == step


def test_the_evidence_holds_the_computed_and_stated_values() -> None:
    check = check_arithmetic(
        "Step 1: 3.2875% - 1.6025% = 1.6850%\nStep 2: 1.6850% / 360 = 0.0047361%"
    )
    assert check.checked == 2 and check.wrong is not None and check.wrong.line == 2
    assert math.isclose(check.wrong.computed, 0.01685 / 360)
    assert math.isclose(check.wrong.stated, 0.000047361)


def test_document_numbers_are_exact_operands() -> None:
    # 1.6289 is rounded unless the document writes it: then 1000 x 1.6289 is 1628.9 exactly
    assert check_arithmetic("1000 × 1.6289 = 1628.85").wrong is None
    assert check_arithmetic("1000 × 1.6289 = 1628.85", exact=[1.6289]).wrong is not None


OUTPUTS = Path(os.environ.get("FINMATH_DATA_DIR", "/nonexistent")) / (
    "financemath/reference_outputs/validation/cot"
)


def _reply(model: str, question: str) -> str:
    records = json.loads((OUTPUTS / f"{model}.json").read_text("utf-8"))
    return next(r["output"][0] for r in records if r["question_id"] == question)


@pytest.mark.skipif(not OUTPUTS.is_dir(), reason="needs FINMATH_DATA_DIR's recorded outputs")
def test_recorded_replies() -> None:
    # GPT-3.5-turbo-0125 on validation-1: the daily rate differential is 1.6850% / 360
    wrong = check_arithmetic(_reply("gpt-3_5-turbo-0125", "validation-1")).wrong
    assert wrong is not None and wrong.text == "1.6850% / 360 = 0.0047361%"
    # validation-0: every stated step of the declining balance holds
    check = check_arithmetic(_reply("gpt-3_5-turbo-0125", "validation-0"))
    assert check.checked == 4 and check.wrong is None
