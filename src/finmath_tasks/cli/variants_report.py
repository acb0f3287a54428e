"""The memorisation gap: a model's score on the original questions minus its score on
their fresh variants, paired on the questions both runs scored.

For each variant seed, :func:`memorisation_gap` pairs the original run with that seed's
run (:func:`finmath_tasks.cli.stats.paired`: the paired difference, original minus
variant, its interval, McNemar's exact p for 0/1 scores, clustered where the task
clusters); over several seeds it gives the mean gap and the spread across
instantiations (the sample standard deviation of the per-seed variant accuracies and
of the per-seed gaps), as GSM-Symbolic and VarBench report it. The report calls it with
the runs it matched (same model, task, setting and split; variant and seed the only
difference).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from statistics import mean, stdev

from finmath_tasks.cli.stats import Paired, PerSample, paired


@dataclass(frozen=True)
class Gap:
    """Original minus fresh, per seed and over the seeds."""

    per_seed: dict[int, Paired]
    """Seed -> the paired comparison (``a`` original, ``b`` the variant)."""
    mean_gap: float
    spread_variant: float | None
    """Sample standard deviation of the per-seed variant accuracies (None with one seed)."""
    spread_gap: float | None


def memorisation_gap(
    original: PerSample, variants: Mapping[int, PerSample], level: float = 0.95
) -> Gap | None:
    """The gap for each seed whose run shares at least two scored questions with the
    original run, and over those seeds; None when no seed does."""
    per_seed = {}
    for seed in sorted(variants):
        comparison = paired(original, variants[seed], level)
        if comparison is not None:
            per_seed[seed] = comparison
    if not per_seed:
        return None
    gaps = [p.difference for p in per_seed.values()]
    accuracies = [p.b for p in per_seed.values()]
    several = len(per_seed) > 1
    return Gap(
        per_seed=per_seed,
        mean_gap=mean(gaps),
        spread_variant=stdev(accuracies) if several else None,
        spread_gap=stdev(gaps) if several else None,
    )


def gap_rows(gap: Gap) -> list[dict[str, object]]:
    """One table row per seed, then the mean over seeds (for the report's tables)."""
    rows: list[dict[str, object]] = [
        {
            "seed": seed,
            "n": p.n,
            "original": round(p.a, 4),
            "fresh": round(p.b, 4),
            "gap": round(p.difference, 4),
            "interval": (round(p.low, 4), round(p.high, 4)),
            "p_mcnemar": None if p.p_mcnemar is None else round(p.p_mcnemar, 4),
        }
        for seed, p in gap.per_seed.items()
    ]
    rows.append(
        {
            "seed": "mean",
            "gap": round(gap.mean_gap, 4),
            "spread_fresh": None if gap.spread_variant is None else round(gap.spread_variant, 4),
            "spread_gap": None if gap.spread_gap is None else round(gap.spread_gap, 4),
        }
    )
    return rows
