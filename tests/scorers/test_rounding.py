"""The financial-agents paper's ``rounding``: equal, or the ESTIMATE rounds to the gold.

Cases from the paper's words ("Evaluation Metric": the estimate counts when it equals
the true answer or can be rounded to obtain it; its PoT answers are full-precision
floats; its critic is told not to round) and from the cases measured
when the rule was turned the right way round.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finmath_tasks.scorers.comparisons import (
    GoldNumber,
    Match,
    compare,
    gold_written,
    number_from_float,
    rounding,
)
from finmath_tasks.scorers.extraction import ParsedNumber, parse_number


def n(text: str) -> ParsedNumber:
    parsed = parse_number(text)
    assert parsed is not None, text
    return parsed


def verdict(pred: str | float, gold: str) -> Match:
    number = number_from_float(pred) if isinstance(pred, float) else n(pred)
    return compare(rounding, number, GoldNumber(gold))


@pytest.mark.parametrize(
    ("pred", "gold", "correct", "rule"),
    [
        # the paper's example: the true answer itself and a finer estimate that rounds to it
        ("-12.6", "-12.6", True, "equal"),
        ("-12.63141", "-12.6", True, "estimate_rounded_to_1_decimals"),
        # a PoT program's float at full precision (TAT-QA dev, gold -22.22)
        (-22.222222222222225, "-22.22", True, "estimate_rounded_to_2_decimals"),
        # an estimate coarser than the gold is never rounded up to it
        ("-22.2", "-22.22", False, "no_match"),
        ("-22", "-22.22", False, "no_match"),
        ("-22.23", "-22.22", False, "no_match"),
        # negatives round by magnitude, half away from zero; the sign is never dropped
        ("-12.65", "-12.7", True, "estimate_rounded_to_1_decimals"),
        ("-12.649", "-12.6", True, "estimate_rounded_to_1_decimals"),
        ("-12.65", "-12.6", False, "no_match"),
        ("12.6", "-12.6", False, "no_match"),
        # half-up, not banker's: 2.665 -> 2.67, 2.675 -> 2.68 (decimal digits, not binary)
        ("2.665", "2.67", True, "estimate_rounded_to_2_decimals"),
        ("2.665", "2.66", False, "no_match"),
        (2.675, "2.68", True, "estimate_rounded_to_2_decimals"),
        # percentages: "%" dropped against a gold written in percent; never x100
        ("-22.22%", "-22.22", True, "equal"),
        ("-22.2222%", "-22.22", True, "estimate_rounded_to_2_decimals"),
        ("-0.2222", "-22.22", False, "no_match"),
        ("6.666666666666667", "6.67", True, "estimate_rounded_to_2_decimals"),
        # integers: units; the estimate's tenths decide
        ("-94.3", "-94", True, "estimate_rounded_to_0_decimals"),
        ("94.5", "94", False, "no_match"),
        ("94.49", "94", True, "estimate_rounded_to_0_decimals"),
        # a gold written "114.0" (FinQA's exe_ans) keeps its decimal place
        ("114", "114.0", True, "equal"),
        ("114.04", "114.0", True, "estimate_rounded_to_1_decimals"),
        ("114.4", "114.0", False, "no_match"),
        # scale words are applied, never removed
        ("-12.6 million", "-12.6", False, "no_match"),
        ("1.5 million", "1500000", True, "equal"),
        # thousands separators are formatting
        ("1,496.54", "1496.5", True, "estimate_rounded_to_1_decimals"),
    ],
)
def test_rounding_cases(pred: str | float, gold: str, correct: bool, rule: str) -> None:
    assert verdict(pred, gold) == Match(correct, rule)


def test_old_reversed_rule_is_gone() -> None:
    # the earlier, reversed rule rounded the GOLD: 0.58 and 1 were right for 0.5782
    assert not verdict("0.58", "0.5782").correct
    assert not verdict("1", "0.5782").correct
    assert verdict("0.57824", "0.5782").correct


def test_gold_digits_come_from_its_text_not_its_float() -> None:
    assert gold_written(GoldNumber("2.10")) == Decimal("2.10")
    assert gold_written(2.10) == Decimal("2.1")  # a bare float: its shortest repr
    assert verdict("2.104", "2.10").correct
    assert not verdict("2.14", "2.10").correct  # to hundredths: 2.14 is not 2.10
    assert compare(rounding, n("2.14"), 2.1).correct  # a float gold 2.1: tenths
    assert float(GoldNumber("-22.22")) == -22.22
    with pytest.raises(ValueError, match="not a number"):
        GoldNumber("twelve")


def test_huge_estimates_against_fine_golds_do_not_raise() -> None:
    assert not compare(rounding, number_from_float(1e308), GoldNumber("0.00001")).correct
    assert not compare(rounding, n("1e300 trillion"), GoldNumber("5")).correct


_places = st.integers(min_value=0, max_value=6)
_digits = st.integers(min_value=-(10**9), max_value=10**9)


@settings(max_examples=400, deadline=None)
@given(_digits, _places, st.fractions(min_value=0, max_value=1))
def test_within_half_a_unit_is_accepted_beyond_is_not(digits: int, places: int, frac) -> None:  # type: ignore[no-untyped-def]
    """An estimate strictly within half a unit of the gold's last place is accepted; one
    strictly beyond half a unit is not (a tie goes away from zero)."""
    gold = Decimal(digits).scaleb(-places)
    unit = Decimal(1).scaleb(-places)
    offset = Decimal(frac.numerator) / Decimal(frac.denominator) * unit / 2  # [0, unit/2]
    offset = offset.quantize(Decimal(1).scaleb(-places - 8))
    gold_text = str(gold)
    for sign in (1, -1):
        estimate = gold + sign * offset
        if abs(offset) < unit / 2:
            assert verdict(str(estimate), gold_text).correct, (estimate, gold_text)
        beyond = gold + sign * (unit / 2 + offset + unit / 10**8)
        assert not verdict(str(beyond), gold_text).correct, (beyond, gold_text)
