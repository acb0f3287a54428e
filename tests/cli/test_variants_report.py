"""The memorisation gap against a hand computation."""

from __future__ import annotations

import math

import pytest

from finmath_tasks.cli.stats import PerSample
from finmath_tasks.cli.variants_report import gap_rows, memorisation_gap


def run(values: dict[str, float]) -> PerSample:
    return PerSample({k: [v] for k, v in values.items()}, {k: "" for k in values})


def test_gap_per_seed_and_over_seeds_matches_a_hand_computation() -> None:
    # eight questions; the original run answers six (q1..q6), q8 was left out of the variants
    original = run({f"q{i}": 1.0 if i <= 6 else 0.0 for i in range(1, 9)})
    seed1 = run({"q1": 1, "q2": 1, "q3": 0, "q4": 0, "q5": 0, "q6": 1, "q7": 1})
    seed2 = run({"q1": 1, "q2": 0, "q3": 0, "q4": 0, "q5": 0, "q6": 0, "q7": 0})
    gap = memorisation_gap(original, {2: seed2, 1: seed1})
    assert gap is not None and list(gap.per_seed) == [1, 2]
    one, two = gap.per_seed[1], gap.per_seed[2]
    # seed 1: 7 paired questions; original 6/7, fresh 4/7; differences 0,0,1,1,1,0,-1
    assert one.n == 7 and one.a == pytest.approx(6 / 7) and one.b == pytest.approx(4 / 7)
    assert one.difference == pytest.approx(2 / 7)
    d = [0, 0, 1, 1, 1, 0, -1]
    m = sum(d) / 7
    se = math.sqrt(sum((x - m) ** 2 for x in d) / 6 / 7)
    assert one.stderr == pytest.approx(se)
    assert one.low == pytest.approx(m - 1.959963984540054 * se)
    # McNemar: 3 discordant for the original, 1 for the variant: 2 * (1 + 4) / 16
    assert one.p_mcnemar == pytest.approx(10 / 16)
    # seed 2: original 6/7, fresh 1/7, gap 5/7; discordant 5 and 0: 2 / 32
    assert two.difference == pytest.approx(5 / 7)
    assert two.p_mcnemar == pytest.approx(2 / 32)
    # over the seeds: mean gap and the spread across instantiations (sample stdev)
    assert gap.mean_gap == pytest.approx((2 / 7 + 5 / 7) / 2)
    assert gap.spread_variant == pytest.approx(math.sqrt(2 * (1.5 / 7) ** 2))
    assert gap.spread_gap == pytest.approx(math.sqrt(2 * (1.5 / 7) ** 2))
    rows = gap_rows(gap)
    assert [r["seed"] for r in rows] == [1, 2, "mean"]
    assert rows[0]["gap"] == round(2 / 7, 4) and rows[2]["gap"] == 0.5


def test_no_shared_questions_no_gap() -> None:
    assert memorisation_gap(run({"a": 1.0}), {1: run({"b": 0.0})}) is None


def test_a_gap_with_nothing_paired_is_a_note_not_an_empty_table() -> None:
    from finmath_tasks.cli.variants_report import gap_table

    refused = ["fresh.eval (fresh seed 1) is not set against original.eval: other data"]
    assert gap_table([], 0.95, refused, "finmath_tasks/knowledgefmath") is None


def test_each_seeds_note_names_its_interval_and_unit() -> None:
    from finmath_tasks.cli.stats import paired
    from finmath_tasks.cli.variants_report import interval_note

    original = run({f"q{i}": 1.0 for i in range(6)})
    # every question differs, the same way: the paired stderr is 0, Tango's interval
    same_way = paired(original, run({f"q{i}": 0.0 for i in range(6)}))
    assert same_way is not None and same_way.interval == "tango"
    assert "Tango's score interval" in interval_note(same_way)
    assert "over the 6 questions" in interval_note(same_way)
    mixed = paired(run({f"q{i}": float(i % 2) for i in range(6)}), run({"q0": 1, "q1": 0,
                   "q2": 0, "q3": 1, "q4": 1, "q5": 1}))  # fmt: skip
    assert mixed is not None and mixed.interval == "normal"
    assert interval_note(mixed) == (
        "normal interval, paired stderr over the 6 questions (not clustered)"
    )
    clustered = PerSample(
        {f"q{i}": [float(i % 2)] for i in range(8)}, {f"q{i}": f"d{i // 2}" for i in range(8)}
    )
    other = PerSample(
        {f"q{i}": [float(i < 3)] for i in range(8)}, {f"q{i}": f"d{i // 2}" for i in range(8)}
    )
    found = paired(clustered, other)
    assert found is not None and found.clusters == 4
    assert interval_note(found) == (
        "t interval with 3 degrees of freedom, stderr clustered by 4 documents"
    )
