"""The report's one Wilson interval and McNemar's exact test, against hand computations."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest
from hypothesis import given
from hypothesis import strategies as st
from inspect_ai.scorer import SampleScore, Score, ci_wilson

from finmath_tasks.cli.stats import mcnemar_exact, wilson


def textbook_wilson(p: float, n: int, level: float) -> tuple[float, float]:
    z = NormalDist().inv_cdf(0.5 + level / 2)
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@given(st.integers(1, 400), st.data(), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_wilson_is_inspects_ci_wilson_and_the_textbook_formula(
    n: int, data: st.DataObject, level: float
) -> None:
    k = data.draw(st.integers(0, n))
    low, high = wilson(k / n, n, level) or (math.nan, math.nan)
    scores = [SampleScore(score=Score(value=1.0 if i < k else 0.0), sample_id=i) for i in range(n)]
    inspect = ci_wilson(level)(scores)  # type: ignore[arg-type]
    assert isinstance(inspect, dict)
    assert low == pytest.approx(inspect["lower"], abs=1e-12)
    assert high == pytest.approx(inspect["upper"], abs=1e-12)
    assert (low, high) == pytest.approx(textbook_wilson(k / n, n, level), abs=1e-12)
    assert low <= k / n <= high and high > low


def test_wilson_of_a_fractional_proportion_and_of_nothing() -> None:
    # every question right in half its epochs: the interval of the mean 0.5 over 7
    assert wilson(0.5, 7, 0.95) == pytest.approx(textbook_wilson(0.5, 7, 0.95), abs=1e-12)
    assert wilson(0.5, 0, 0.95) is None
    assert wilson(1.5, 10, 0.95) is None


@pytest.mark.parametrize(
    ("only_a", "only_b", "p"),
    [
        (0, 0, 1.0),
        (8, 5, 2 * 2380 / 8192),  # C(13, 0..5) sum to 2,380 of 2^13
        (5, 8, 2 * 2380 / 8192),
        (10, 0, 2 / 1024),
        (3, 3, 1.0),
    ],
)
def test_mcnemar_exact_by_hand(only_a: int, only_b: int, p: float) -> None:
    assert mcnemar_exact(only_a, only_b) == pytest.approx(p, rel=1e-12)
