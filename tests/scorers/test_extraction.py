from __future__ import annotations

import pytest

from finmath_tasks.scorers.extraction import (
    MAX_SCAN_CHARS,
    extract_answer,
    parse_number,
    parse_reply_number,
)


@pytest.mark.parametrize(
    ("text", "value", "method"),
    [
        ("Step 1 ... Therefore, the answer is 42.", 42, "marker"),
        ("so the answer is -8184.0.", -8184.0, "marker"),
        ("Final answer: 1,924,720.298", 1924720.298, "marker"),
        ("The final answer is $1,234.50", 1234.5, "marker"),
        ("ANSWER: 17", 17, "marker"),
        ("**Answer:** 3.5 million shares", 3.5e6, "marker"),
        ('{"reasoning": "...", "answer": 0.578}', 0.578, "json"),
        ('{"answer": "$12.5 million"}', 12.5e6, "json"),
        ("We get \\boxed{0.5782}.", 0.5782, "boxed"),
        ("Therefore, the answer is \\boxed{\\$1{,}200}", 1200, "boxed"),
        ("Revenue grew 3 times; we computed 12 and then 15", 15, "last_number"),
        ("the answer is 2 * 3 = 6", 6, "marker"),
        ("the answer is 1000 x 1.05 ≈ 1050.", 1050, "marker"),
        ("the answer is (1,234)", -1234, "marker"),
        ("the answer is \u22125.5%", -5.5, "marker"),
        ("the answer is 1.2e5", 120000, "marker"),
        ("the answer is 1.2 × 10^5 dollars", 120000, "marker"),
        ("the answer is $2.5 billion", 2.5e9, "marker"),
        ("the answer is 45 thousand", 45000, "marker"),
        ("the answer is US$3.2bn", 3.2e9, "marker"),
        ("the answer is 7.5 years.", 7.5, "marker"),
        ("The answer is 12.5%, i.e. 0.125 of the total", 12.5, "marker"),
        ("The answer is 0.05, or 5%.", 0.05, "marker"),
        ("The answer is 5. Wait, recomputing: the answer is 6.", 6, "marker"),
        ("Final answer:\n\n$ 4,500", 4500, "marker"),
        ("From 2019-2020 the answer is 12.", 12, "marker"),
    ],
)
def test_extracts_final_number(text: str, value: float, method: str) -> None:
    result = extract_answer(text)
    assert result.number is not None, result
    assert result.number.value == pytest.approx(value, rel=1e-12)
    assert result.method == method


def test_answer_text_is_the_number_as_written() -> None:
    assert extract_answer("so the price is (1 + 0.072) ** 5").number.text == "5"  # type: ignore[union-attr]
    assert extract_answer("value: (1 + r)").number.text == "1"  # type: ignore[union-attr]
    assert extract_answer("the answer is (1,234)").number.text == "(1,234)"  # type: ignore[union-attr]


def test_percent_and_scale_are_recorded_not_applied_twice() -> None:
    n = extract_answer("the answer is 12.5%").number
    assert n is not None and n.percent and n.value == 12.5 and n.quantum_exp == -1
    m = extract_answer("the answer is $1.92 million").number
    assert m is not None and m.scale_exp == 6 and m.written_value == 1.92 and m.value == 1.92e6
    assert m.quantum_exp == -2 and m.sig_digits == 3


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 5.2 or 5.3.",
        "Therefore, the answer is between 10 and 12.",
        "the answer is 4/5",
        "Final answer: 100 - 120",
        "the answer is 3.1 to 3.3 million",
    ],
)
def test_hedged_answers_give_no_answer(text: str) -> None:
    result = extract_answer(text)
    assert result.number is None
    assert result.method == "hedged"


@pytest.mark.parametrize(
    ("text", "method"), [("", "empty"), ("   \n", "empty"), ("I cannot determine it.", "none")]
)
def test_no_answer(text: str, method: str) -> None:
    result = extract_answer(text)
    assert result.number is None and result.method == method


def test_enormous_output_is_bounded_and_reads_the_end() -> None:
    # a marker right at the start of the last MAX_SCAN_CHARS characters is read; one
    # character further back it is not: exactly the end is scanned, whatever the length
    marker = "the answer is 5 "
    inside = "1 " * 3_000_000 + marker + "x" * (MAX_SCAN_CHARS - len(marker))
    outside = "1 " * 3_000_000 + marker + "x" * (MAX_SCAN_CHARS - len(marker) + 1)
    read = extract_answer(inside)
    assert read.method == "marker" and read.number is not None and read.number.value == 5
    assert extract_answer(outside).method == "last_number"  # "he answer is 5 xx...": no marker
    assert extract_answer("the answer is 3. " + "x" * MAX_SCAN_CHARS + " 77").method == (
        "last_number"
    )


def test_exponents_beyond_any_answer_are_not_numbers() -> None:
    # int() refuses more than 4300 digits: such an exponent must not raise
    assert extract_answer("the answer is 1e" + "9" * 5000).method == "none"
    assert extract_answer("the answer is 1e400").number is not None
    assert extract_answer("the answer is 1e401").method == "none"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("\\[ x = 100 \\left(1 + r\\right) - 1 \\]", 1),
        ("so f(x) - 2", 2),
        ("then x - 3", 3),
        ("with \\pi - 4", 4),
        ("12% - 5", 5),
        ("the answer is - 6", -6),  # "is" is not an operand: the minus is a sign
        ("value: - 7", -7),
        ("x = -8", -8),
        ("( - 9)", -9),
    ],
)
def test_a_spaced_minus_after_an_operand_is_not_a_sign(text: str, value: float) -> None:
    result = extract_answer(text)
    assert result.number is not None and result.number.value == value


def test_truncated_output_without_marker_has_no_final_answer() -> None:
    text = "We discount each cash flow: \\[ PV = 100 \\left(1 + 0.05\\right) - 1 \\]"
    result = extract_answer(text, truncated=True)
    assert result.number is None and result.method == "truncated"
    assert "no final answer (truncated)" in result.detail
    assert extract_answer(text).method == "last_number"
    marked = extract_answer("The answer is 42. Let me double-check: 40 + 2", truncated=True)
    assert marked.method == "marker" and marked.number is not None and marked.number.value == 42
    hedged = extract_answer("The answer is 5.2 or 5.3, checking: 7", truncated=True)
    assert hedged.method == "hedged"


def test_hostile_output_does_not_crash() -> None:
    for text in ["\x00\x01\ufffd" * 1000, "(" * 10000 + "5", "9" * 5000, "1e99999", "$" * 100000]:
        extract_answer(text)  # must return, never raise


def test_parse_number_short_replies() -> None:
    for text, value in [("0.578", 0.578), ("$1,234", 1234), ("-3.5%", -3.5), ("12 million", 12e6)]:
        n = parse_number(text)
        assert n is not None and n.value == pytest.approx(value)
    assert parse_number("None") is None
    assert parse_number("5 or 6") is None


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", 42),
        ("  42.  ", 42),
        ("$1,234.50", 1234.5),
        ("-3.5%", -3.5),
        ("\u22125", -5),
        ("(1,234)", -1234),
        ("12 million", 12e6),
        ("US$3.2bn", 3.2e9),
        ("1.2e5", 1.2e5),
        ("0.578\n", 0.578),
    ],
)
def test_parse_reply_number_reads_a_reply_that_is_one_number(text: str, value: float) -> None:
    parsed = parse_reply_number(text)
    assert parsed is not None and parsed.value == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize(
    "text",
    ["0x1A", "1_000", "12abc", "5 or 6", "7 years", "5m", "(5", "1,23", "None", "", ".", "=5"],
)
def test_parse_reply_number_refuses_what_is_not_one_number(text: str) -> None:
    assert parse_reply_number(text) is None
