"""The calculator agent's evaluator: a real parser with limits, refusing hostile input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finmath_tasks.solvers.agents.calculator import (
    MAX_EXPRESSION_CHARS,
    CalculationError,
    check_equations,
    evaluate,
    format_value,
    render_checks,
    safe_evaluate,
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
