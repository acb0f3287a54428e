"""The calculator agent's evaluator: a real parser with limits, refusing hostile input."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finmath_tasks.solvers.agents import prompts as P
from finmath_tasks.solvers.agents.calculator import (
    MAX_EXPRESSION_CHARS,
    CalculationError,
    check_equations,
    equation_sources,
    evaluate,
    format_value,
    render_checks,
    safe_evaluate,
    source_numbers,
)


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("10 - 4 - 3", 3),  # left associative
        ("100 / 10 / 5", 2),
        ("-3 + 5", 2),
        ("-(2 - 5) * 2", 6),
        ("--4", 4),
        ("+4", 4),
        ("1,496.5 - 1,202.9", 1496.5 - 1202.9),
        ("12.5% * 200", 25),
        (".5 * 4", 2),
        ("(1496.5 - 1202.9) / 1202.9 * 100", (1496.5 - 1202.9) / 1202.9 * 100),
        ("2 \u00d7 3 \u2212 1", 5),  # ×, unicode minus
        ("8 \u00f7 2", 4),
    ],
)
def test_evaluates_arithmetic_with_precedence(expression: str, value: float) -> None:
    assert evaluate(expression) == pytest.approx(value, rel=1e-12)


HOSTILE = [
    ("2 ** 10", "exponentiation (**) is not allowed"),
    ("9 ^ 9 ^ 9", "exponentiation (^) is not allowed"),
    ("__import__('os').system('ls')", "names are not allowed ('__import__')"),
    ("x + 1", "names are not allowed ('x')"),
    ("().__class__", "malformed number"),
    ("a.b", "attribute access is not allowed (a.)"),
    ("1 .real", "malformed number"),
    ("1.real", "attribute access or malformed number"),
    ("abs(-1)", "names are not allowed ('abs')"),
    ("1e308 * 10", "malformed number or name"),
    ("1 / 0", "division by zero"),
    ("1 / (2 - 2)", "division by zero"),
    ("(" * 31 + "1" + ")" * 31, "nesting too deep (limit 30)"),
    ("-" * 31 + "1", "nesting too deep (limit 30)"),
    ("1" * 31, "number with too many digits"),
    ("999999999999999 * 999999999999999 * 999999999999999", "number too large"),
    ("+".join(["1"] * 150), "too many tokens"),
    ("1" + " " * MAX_EXPRESSION_CHARS, "expression too long"),
    ("[1]", "character '[' is not allowed"),
    ("1; 2", "character ';' is not allowed"),
    ("1 % 2", "character '%' is not allowed"),
    ("(1 + 2", "unbalanced parentheses"),
    ("1 + 2)", "unexpected ')' after a complete expression"),
    ("1 +", "expression ends where a number was expected"),
    ("", "empty expression"),
    ("\u0661 + 1", "character"),  # a non-ASCII digit is not a number here
]


@pytest.mark.parametrize(("expression", "reason"), HOSTILE)
def test_refuses_hostile_or_malformed_input_with_a_reason(expression: str, reason: str) -> None:
    with pytest.raises(CalculationError) as info:
        evaluate(expression)
    assert reason in str(info.value)
    value, why = safe_evaluate(expression)
    assert value is None and reason in why


def test_checks_equation_lines() -> None:
    reply = "\n".join(
        [
            "Calculations:",
            "- 1496.5 - 1202.9 = 293.7",
            "2. 293.6 / 1202.9 = 0.2441",
            "293.6 / 1202.9 * 100 = 24.41%",
            "(44.1 + 56.7 + 70.8) / 3 =",
            "x = 5",
            "no equation here",
            "10 / 4 = 2.5 = 2.50",
        ]
    )
    checks = check_equations(reply)
    assert [(c.expression, c.status) for c in checks] == [
        ("1496.5 - 1202.9", "incorrect"),
        ("293.6 / 1202.9", "correct"),  # rounded to the 4 decimals shown
        ("293.6 / 1202.9 * 100", "incorrect"),  # 24.41% is 0.2441, not 24.41
        ("(44.1 + 56.7 + 70.8) / 3", "no_result"),
        ("x", "refused"),
        ("10 / 4", "correct"),
    ]
    assert render_checks(checks).splitlines() == [
        "1496.5 - 1202.9 = 293.6  [corrected: you wrote 293.7, the correct result is 293.6]",
        "293.6 / 1202.9 = 0.2441  [correct]",
        "293.6 / 1202.9 * 100 = 24.407681  [corrected: you wrote 24.41%, the correct result is 24.407681]",
        "(44.1 + 56.7 + 70.8) / 3 = 57.2  [computed]",
        "x = 5  [not checked: names are not allowed ('x')]",
        "10 / 4 = 2.50  [correct]",
    ]


def test_format_value() -> None:
    assert format_value(2.0) == "2"
    assert format_value(-0.0000001) == "0"
    assert format_value(1 / 3) == "0.333333"
    assert format_value(1e20) == "100000000000000000000.000000".rstrip("0").rstrip(".")


ARITH = st.sampled_from([*"0123456789.,+-*/()% ^xe_[]'\"", "**", "__", "1e9", "\u00d7"])


@settings(max_examples=400, deadline=None)
@given(st.lists(ARITH, max_size=120).map("".join))
def test_safe_evaluate_never_raises_on_token_soup(text: str) -> None:
    value, reason = safe_evaluate(text)
    assert (value is None) != (reason == "")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=600))
def test_safe_evaluate_and_check_equations_never_raise_on_any_text(text: str) -> None:
    safe_evaluate(text)
    for check in check_equations(text + "\n" + text.replace("\n", " ") + " = 1"):
        assert check.status in {"correct", "incorrect", "no_result", "refused"}
    render_checks(check_equations(text))


# --- the diagnostic: extracted equations whose operands are not in the analyst's output


def sources(output: str, *equations: str) -> list[tuple[str, ...]]:
    checks = check_equations(json.dumps({"answer": list(equations)}))
    return [s.unsourced for s in equation_sources(checks, output, P.CALCULATOR_EXTRACT)]


def test_numbers_match_however_they_are_written() -> None:
    output = "Profit was $4,454.70 thousand, up 12.5% from 3,960"
    # thousands separators, trailing zeros, a percent's number and its fraction
    assert sources(output, "4454.7-3960=494.7", "3960*0.125=495", "4454.70*12.50") == [(), (), ()]
    # the scale word: 4,454.70 thousand is also 4454700
    assert sources(output, "4454700/1000") == [()]
    # a percent sign in the equation reads as the fraction too
    assert sources(output, "3960*12.5%") == [()]
    assert sources("(134) and -2.5", "-134-(-2.5)") == [()]  # signs are not part of a number


def test_earlier_results_and_constants_are_sourced_new_numbers_are_not() -> None:
    output = "Sales 1,202.9 and 1,496.5; the average of the two is 1349.7"
    assert sources(
        output,
        "1496.5-1202.9=293.6",  # its result 293.6 is not in the output: a result, fine
        "293.6/1202.9*100=24.41",  # 293.6: the earlier equation's result; 100: a constant
        "(1496.5+1202.9)/2=2699.4/2=1349.7",  # "two" is written out
        "2699.4*3",  # 2699.4: a result inside an earlier chain; 3: nowhere
    ) == [(), (), (), ("3",)]
    # an earlier result matches when written to fewer decimals it rounds to
    assert sources("7 and 3", "7/3=2.3333", "2.33*3") == [(), ()]
    assert sources("7 and 3", "7/3", "2.3*3") == [(), ()]  # 2.333.. to one decimal
    assert sources("7 and 3", "7/3", "2.4*3") == [(), ("2.4",)]  # it does not round to 2.4


def test_a_copied_example_is_told_from_an_invented_number() -> None:
    checks = check_equations(json.dumps({"answer": ["4454.7/2=2227.35", "5-9876.5"]}))
    found = equation_sources(checks, "5 and 8", P.CALCULATOR_EXTRACT)
    assert [(s.unsourced, s.in_examples) for s in found] == [
        (("4454.7", "2"), True),  # the second example's last equation
        (("9876.5",), False),  # invented
    ]
    # refused equations are read too; the analyst's years count as its numbers
    assert sources("FY2019 and FY2018", "2019-2018+x") == [()]


def test_source_numbers_reads_lists_and_words() -> None:
    assert source_numbers("2017,2018 and 1,234,567.80; twelve") == {
        Decimal("2017"),
        Decimal("2018"),
        Decimal("1234567.8"),
        Decimal("12"),
    }
