"""Verdict and amount reading, the SARA tolerance metric, and the CI metric."""

from __future__ import annotations

import pytest

from finmath_tasks.tasks.sara.scoring import exact_dollar, parse_entailment, sara_tolerance


@pytest.mark.parametrize(
    ("output", "verdict"),
    [
        ("Entailment", "Entailment"),
        ("contradiction.", "Contradiction"),
        ("True", "Entailment"),
        ("FALSE", "Contradiction"),
        ("The hypothesis looks false at first...\nAnswer: Entailment", "Entailment"),
        ("Reasoning: ... it is true that X.\nThe answer is: Contradiction", "Contradiction"),
        ("Answer:\nContradiction", "Contradiction"),
        ("X is true, but Y is false.\nSo overall: False", "Contradiction"),
        ("Verdict: entailed", "Entailment"),
        ("**Answer**: Contradiction", "Contradiction"),
        ("So the hypothesis is not entailed by the premise.", "Contradiction"),
        ("Answer: it is not a contradiction", "Entailment"),
        ("The statement isn't true.", "Contradiction"),
    ],
)
def test_verdicts(output: str, verdict: str) -> None:
    assert parse_entailment(output)[0] == verdict


@pytest.mark.parametrize(
    "output",
    ["", "I cannot tell.", "Answer: Entailment or Contradiction", "maybe true, maybe false"],
)
def test_unparseable(output: str) -> None:
    verdict, reason = parse_entailment(output)
    assert verdict is None and reason


def test_sara_tolerance_boundaries() -> None:
    # within $5,000 for small amounts
    assert sara_tolerance(14_999, 10_000)[0] and not sara_tolerance(15_000, 10_000)[0]
    assert sara_tolerance(4_999, 0)[0] and not sara_tolerance(5_000, 0)[0]
    # within 10% for large amounts (10% of 200,000 = 20,000 > 5,000)
    assert sara_tolerance(219_999, 200_000)[0] and not sara_tolerance(220_000, 200_000)[0]
    assert sara_tolerance(180_001, 200_000)[1] == pytest.approx(19_999 / 20_000)


def test_exact_dollar() -> None:
    assert exact_dollar(8710.0, 8710) and exact_dollar(8710.49, 8710)
    assert exact_dollar(8709.5, 8710) and not exact_dollar(8710.5, 8710)
    assert not exact_dollar(8711, 8710)
