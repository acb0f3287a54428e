"""Property-based tests: extraction and comparisons never raise, and extraction is linear."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from finmath_tasks.scorers.comparisons import COMPARISONS, Match, number_from_float
from finmath_tasks.scorers.comparisons import compare as compare_with
from finmath_tasks.scorers.extraction import (
    ParsedNumber,
    extract_answer,
    parse_number,
    parse_numbers,
    parse_reply_number,
)
from finmath_tasks.tasks.knowledgefmath.scoring import financemath

PROFILES = {**COMPARISONS, "financemath": financemath}


def compare(name: str, pred: ParsedNumber, gold: float) -> Match:
    return compare_with(PROFILES[name], pred, gold)


# Pieces of text that stress the extractor's patterns: markers, braces, number
# syntax, whitespace runs.
TOKENS = [
    "\\boxed{",
    "{",
    "}",
    "the answer is ",
    "Final answer: ",
    "\nAnswer: ",
    '"answer": ',
    '"',
    "1",
    "0",
    ",",
    ",000",
    ".",
    "e",
    "e5",
    " ",
    "\n",
    "> ",
    "-",
    "+",
    "(",
    ")",
    "$",
    "US$",
    "%",
    "x",
    "=",
    " or ",
    " million",
    "\u2212",
    "\u00a0",
    "\\right)",
]
adversarial = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=60).map("".join)
any_text = st.one_of(st.text(), adversarial)

SPECIAL_FLOATS = [1e308, -1e308, 5e-324, -5e-324, 0.0, -0.0, float("nan"), float("inf"), -1e12]
floats = st.one_of(st.floats(), st.sampled_from(SPECIAL_FLOATS))
NUMBER_TEXTS = [
    "1" + "0" * 400,  # 10**400
    "123456789012345678901234567890",  # 30 significant digits
    "0.123456789012345678901234567890",
    "1e308",
    "5e-324",
    "-0",
    "1e400 trillion",
    "(1,234) million",
]
number_texts = st.one_of(
    st.sampled_from(NUMBER_TEXTS), floats.map(repr), st.integers().map(str), any_text
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(text=any_text, truncated=st.booleans())
def test_extraction_never_raises(text: str, truncated: bool) -> None:
    result = extract_answer(text, truncated=truncated)
    assert (result.number is None) == (result.method in {"hedged", "none", "empty", "truncated"})
    parse_numbers(text)
    parse_number(text)
    parse_reply_number(text)


@settings(max_examples=300)
@given(pred=floats, gold=floats)
def test_every_profile_never_raises_on_program_results(pred: float, gold: float) -> None:
    number = number_from_float(pred)
    for profile in PROFILES:
        match = compare(profile, number, gold)
        assert isinstance(match, Match)
        if match.correct:
            assert pred == pred and gold == gold  # never a match with NaN


@settings(max_examples=300)
@given(text=number_texts, gold=floats)
def test_every_profile_never_raises_on_extracted_numbers(text: str, gold: float) -> None:
    for number in (extract_answer(text).number, parse_number(text), parse_reply_number(text)):
        if number is not None:
            for profile in PROFILES:
                assert isinstance(compare(profile, number, gold), Match)


@given(
    prefix=any_text,
    value=st.floats(allow_nan=False, allow_infinity=False),
    truncated=st.booleans(),
)
def test_a_final_answer_sentence_wins_over_any_text_before_it(
    prefix: str, value: float, truncated: bool
) -> None:
    result = extract_answer(f"{prefix}\nThe final answer is {value!r}.", truncated=truncated)
    assert result.method == "marker"
    assert result.number is not None and result.number.value == value


@given(value=st.floats(allow_nan=False, allow_infinity=False), junk=st.text("abcdfhijoqsuvwz_#@"))
def test_strict_reply_is_the_number_or_nothing(value: float, junk: str) -> None:
    parsed = parse_reply_number(f" {value!r}.\n")
    assert parsed is not None and parsed.value == value
    if junk:
        assert parse_reply_number(f"{value!r}{junk}") is None


def _best_time(text: str) -> float:
    # CPU time of this thread: waiting for a core on a loaded machine does not count
    best = float("inf")
    for _ in range(5):
        start = time.thread_time()
        extract_answer(text)
        best = min(best, time.thread_time() - start)
    return best


def _assert_linear(unit: str) -> None:
    # 4x longer text (both under MAX_SCAN_CHARS): linear work takes ~4x as long,
    # quadratic ~16x. Measured side by side; a 2 ms floor absorbs timer noise.
    short = (unit * (12_500 // len(unit) + 1))[:12_500]
    long = (unit * (50_000 // len(unit) + 1))[:50_000]
    t_short, t_long = _best_time(short), _best_time(long)
    assert t_long <= 8 * max(t_short, 0.002), (unit[:40], t_short, t_long)


@pytest.mark.parametrize(
    "unit",
    [
        "\\boxed{",
        "\\boxed{x1 ",
        "{{{{}",
        "the answer is x1\n",
        '"answer": "a1',
        "1,000,00",
        "(" + " " * 999,
        "$ ",
        "> " + "\n" * 98,
        "5 or 6 ",
    ],
)
def test_extraction_time_is_linear_on_known_adversarial_text(unit: str) -> None:
    _assert_linear(unit)


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(unit=adversarial)
def test_extraction_time_is_linear_on_any_repeated_pattern(unit: str) -> None:
    _assert_linear(unit)
