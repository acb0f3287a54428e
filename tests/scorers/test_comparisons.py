from __future__ import annotations

from decimal import Decimal

import pytest

from finmath_tasks.scorers.comparisons import (
    COMPARISONS,
    PERCENT_IN_PLAY_KEY,
    GoldNumber,
    Match,
    asks_for_percent,
    gold_number,
    number_from_float,
)
from finmath_tasks.scorers.comparisons import compare as compare_with
from finmath_tasks.scorers.extraction import ParsedNumber, parse_number
from finmath_tasks.tasks.knowledgefmath.scoring import financemath, financemath_compare

# the generic comparisons and FinanceMath's official one, by the names the tasks use
PROFILES = {**COMPARISONS, "financemath": financemath}


def compare(name: str, pred: ParsedNumber, gold: float) -> Match:
    return compare_with(PROFILES[name], pred, gold)


def n(text: str):
    parsed = parse_number(text)
    assert parsed is not None, text
    return parsed


@pytest.mark.parametrize(
    ("pred", "gold", "rule"),
    [
        ("-8184", -8184.000000000007, "relative_tolerance_0.2%"),
        ("0.578", 0.5782272456870907, "relative_tolerance_0.2%"),
        ("0.00548", 0.005480000000000151, "relative_tolerance_0.2%"),
        ("1924720", 1924720.297861484, "relative_tolerance_0.2%"),
        ("1.92 million", 1924720.297861484, "gold_rounded_to_shown_precision"),
        ("57.8%", 0.5782272456870907, "relative_tolerance_0.2% (percent_as_fraction)"),
        ("12.5", GoldNumber("0.125", percent=True), "equal (percent_as_fraction)"),
        ("12.5%", 0.125, "equal (percent_as_fraction)"),
        ("0.125", GoldNumber("12.5", percent=True), "equal (fraction_as_percent)"),
        ("3.5 million", 3.5, "equal (without_scale_word)"),
        ("0.1001", 0.1, "relative_tolerance_0.2%"),
        ("101", 100.5, "gold_rounded_to_shown_precision"),
        ("0", 0.0, "equal"),
    ],
)
def test_tolerant_accepts(pred: str, gold: float, rule: str) -> None:
    match = compare("tolerant", n(pred), gold)
    assert match.correct and match.rule == rule


@pytest.mark.parametrize(
    ("pred", "gold", "why"),
    [
        ("8184", -8184.0, "sign flip"),
        ("-0.578", 0.578, "sign flip"),
        ("81840", 8184.0, "x10"),
        ("818.4", 8184.0, "x0.1"),
        ("8184000", 8184.0, "x1000"),
        ("0.58", 0.5782272, "2 significant digits"),
        ("0.005", 0.00548, "1 significant digit"),
        ("0.5", 0.578, "rounded too coarsely"),
        ("0.576", 0.578, "0.35% off"),
        ("1", 0.0, "gold zero"),
    ],
)
def test_tolerant_rejects(pred: str, gold: float, why: str) -> None:
    assert not compare("tolerant", n(pred), gold).correct, why


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("36.8", "3680"),  # an average free cash flow of 3,680 (million), read as 36.8
        ("0.24", "24"),  # 24 billion
        ("1.215", "121.5"),  # 121.5 million
        ("368000", "3680"),  # 100 times too large
        ("0.125", "12.5"),
        ("12.5", "0.125"),
    ],
)
def test_tolerant_never_credits_an_amount_rescaled_by_100(pred: str, gold: str) -> None:
    """Where no percentage is in play, a rescaling by 100 is a unit error, not an answer."""
    match = compare("tolerant", n(pred), GoldNumber(gold))
    assert not match.correct, match
    # the same answer to the same number asked as a percentage is the percent/fraction reading
    assert compare("tolerant", n(pred), GoldNumber(gold, percent=True)).correct


@pytest.mark.parametrize(
    ("question", "in_play"),
    [
        ("What is the percentage change in revenue from 2018 to 2019?", True),
        ("What is the growth rate of net income?", True),
        ("What is the ratio of current assets to current liabilities?", True),
        ("What is the expected return of the portfolio?", True),
        ("What proportion of total assets is cash?", True),
        ("What is the company's WACC?", True),
        ("How much did revenue change by 2019, in %?", True),
        ("What was the average free cash flow in 2018 and 2019?", False),
        ("What is the total revenue in 2019?", False),
        ("How much is the bond worth today?", False),
        ("What is the present value of the cash flows?", False),
    ],
)
def test_the_question_s_words_put_a_percentage_in_play(question: str, in_play: bool) -> None:
    assert asks_for_percent(question) is in_play


def test_the_record_s_word_decides_over_the_question_s() -> None:
    asked = "What is the ratio of debt to equity?"
    assert gold_number("0.5", {"question": asked}).percent  # type: ignore[attr-defined]
    # the record says the gold is an amount (e.g. TAT-QA's scale "million"): no percent
    recorded = {"question": asked, PERCENT_IN_PLAY_KEY: False}
    assert not gold_number("0.5", recorded).percent  # type: ignore[attr-defined]
    recorded = {"question": "What is the total?", PERCENT_IN_PLAY_KEY: True}
    assert gold_number("12.5", recorded).percent  # type: ignore[attr-defined]
    assert not gold_number("12.5", {}).percent  # type: ignore[attr-defined]
    assert compare("tolerant", n("0.125"), gold_number("12.5", recorded)).correct
    assert not compare("tolerant", n("0.125"), gold_number("12.5", {})).correct


@pytest.mark.parametrize(
    ("p", "gt", "rule"),
    [
        (8184.0, -8184.0, "equal_absolute_value"),  # the reference ignores the sign
        (81840.0, 8184.0, "power_of_ten_or_sign"),  # any exact power-of-ten rescaling
        (0.5781, 57.8, "x100"),
        (5.78, 5780.2, "x1000"),
        (0.05781, 5780.0, "x100000"),
        (0.5781, 0.5789, "ceil_3_decimals"),
        (100.1, 100.0, "relative_tolerance_0.15%"),
    ],
)
def test_financemath_official_quirks(p: float, gt: float, rule: str) -> None:
    match = financemath_compare(p, gt)
    assert match.correct and match.rule == rule


@pytest.mark.parametrize(("p", "gt"), [(100.2, 100.0), (0.57, 0.578), (2.0, 1.0), (0.0, 3.0)])
def test_financemath_rejects(p: float, gt: float) -> None:
    assert not financemath_compare(p, gt).correct


def test_financemath_profile_reads_number_as_written() -> None:
    # the reference strips "million" and "%" before comparing
    assert compare("financemath", n("3.5 million"), 3.5).correct
    assert compare("financemath", n("12.5%"), 12.5).correct


# the paper's ``rounding``: tests/scorers/test_rounding.py


def test_exact_profile() -> None:
    assert compare("exact", n("-8184.0"), -8184.0).correct
    assert compare("exact", n("$2.5 million"), 2_500_000.0).correct
    assert not compare("exact", n("0.578"), 0.5782).correct
    assert not compare("exact", n("8184"), -8184.0).correct


def test_program_results_keep_full_precision() -> None:
    num = number_from_float(0.5782272456870907)
    assert num.sig_digits == 16
    assert compare("exact", num, 0.5782272456870907).correct
    assert compare("tolerant", num, 0.578).correct  # 0.04% off


def test_non_finite_prediction_never_matches() -> None:
    huge = n("1e300 trillion")
    assert compare("tolerant", huge, 5.0).rule == "prediction_not_finite"
    for value in (float("inf"), float("-inf"), float("nan")):
        for profile in PROFILES:
            match = compare(profile, number_from_float(value), 5.0)
            assert match == Match(False, "prediction_not_finite")


@pytest.mark.parametrize("gold", [float("inf"), float("-inf"), float("nan")])
def test_non_finite_gold_is_a_no_match_with_its_reason(gold: float) -> None:
    for profile in PROFILES:
        assert compare(profile, n("5"), gold) == Match(False, "gold_not_finite")


@pytest.mark.parametrize(
    ("pred", "gold", "profile", "correct"),
    [
        # 17 significant digits against a gold >= 1e12: quantize beyond the context precision
        (number_from_float(1.2345678901234567e-05), 1e12, "tolerant", False),
        (number_from_float(1234567890123.4567), 1234567890123.4567, "tolerant", True),
        (number_from_float(123456789012345.67), 1e14, "rounding", False),
        (number_from_float(1e16), 1e16, "rounding", True),
        (number_from_float(1e308), 1e308, "rounding", True),
        (number_from_float(5e-324), 1e300, "tolerant", False),
    ],
)
def test_huge_ranges_compare_without_raising(
    pred, gold: float, profile: str, correct: bool
) -> None:  # type: ignore[no-untyped-def]
    assert compare(profile, pred, gold).correct is correct


@pytest.mark.parametrize(("p", "gt"), [(1e306, 2e306), (1e308, 5e-324), (5e-324, 1e308)])
def test_financemath_overflowing_operations_do_not_raise(p: float, gt: float) -> None:
    # ceil(x * 1000) and log10(v1 / v2) overflow here; the reference would raise
    assert not financemath_compare(p, gt).correct


@pytest.mark.parametrize("text", ["15.0", "-22.22", "94", "0.0350", "1E+3"])
def test_a_gold_number_prints_as_written(text: str) -> None:
    gold = GoldNumber(text, percent=True)
    assert str(gold) == text and f"{gold}" == text
    assert Decimal(str(gold)) == Decimal(text)
    assert str(Decimal(str(gold))) == text  # its written places survive the round trip
    assert repr(gold) == f"GoldNumber({text!r})"
    assert float(gold) == float(text)
