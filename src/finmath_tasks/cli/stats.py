"""How sure a report's numbers are: per-sample scores read from a run's log, an accuracy's
n and Wilson interval (clustered where questions share a document), and the paired
comparison of two runs of the same task on the same samples.

Intervals and standard errors are Inspect's own metrics (``ci_wilson``, ``stderr``, both
with ``cluster=``) applied to the scores the log holds; McNemar's exact test is the
two-sided binomial test on the discordant pairs.

The per-sample values are read with the log API (``read_eval_log_samples``), not
``inspect_ai.analysis.samples_df``: the frame needs pandas and pyarrow (not
dependencies of the report's tables), and the values needed here (one per sample and
epoch, a multi-score value of an older log, the sample's document for clustering) are
a loop over the samples either way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist, mean, pstdev
from typing import Any

from inspect_ai.log import read_eval_log_samples
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    NOANSWER,
    PARTIAL,
    SampleScore,
    Score,
    ci_wilson,
    stderr,
)

from finmath_tasks.cli.runs import Run

ClusterOf = Callable[[str, Mapping[str, Any]], str]
"""(sample id, sample metadata) -> the id of the document the question shares."""
CLUSTER = "cluster"


@dataclass(frozen=True)
class PerSample:
    """A run's values of one score: sample id -> one value per epoch, and each sample's
    cluster ("" when the task does not cluster)."""

    values: dict[str, list[float]]
    clusters: dict[str, str]

    def means(self) -> dict[str, float]:
        return {sid: mean(v) for sid, v in self.values.items() if v}


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(float(value)):
        return float(value)
    if isinstance(value, str) and value in _LETTERS:
        return _LETTERS[value]
    return None


_LETTERS = {CORRECT: 1.0, INCORRECT: 0.0, PARTIAL: 0.5, NOANSWER: 0.0}
"""Inspect's letter verdicts as ``value_to_float`` reads them."""


def per_sample(run: Run, score: str, cluster_of: ClusterOf | None = None) -> PerSample:
    """The finite values of ``score`` per sample (epochs kept apart), from the log."""
    cached = run.per_sample.get(score)
    if isinstance(cached, PerSample):
        return cached
    values: dict[str, list[float]] = {}
    clusters: dict[str, str] = {}
    for sample in read_eval_log_samples(run.path, all_samples_required=False):
        sid = str(sample.id)
        found = (sample.scores or {}).get(score)
        if found is None:
            # a scorer of several scores names them in its value (older logs)
            for other in (sample.scores or {}).values():
                if isinstance(other.value, dict) and score in other.value:
                    found = Score(value=other.value[score])
                    break
        value = _number(found.value) if found is not None else None
        if value is None:
            continue
        values.setdefault(sid, []).append(value)
        clusters[sid] = cluster_of(sid, sample.metadata or {}) if cluster_of else ""
    result = PerSample(values, clusters)
    run.per_sample[score] = result
    return result


def _sample_scores(means: Mapping[str, float], clusters: Mapping[str, str]) -> list[SampleScore]:
    return [
        SampleScore(
            score=Score(value=value),
            sample_id=sid,
            sample_metadata={CLUSTER: clusters.get(sid, "") or sid},
        )
        for sid, value in means.items()
    ]


def _clustered(clusters: Mapping[str, str], ids: Sequence[str]) -> bool:
    """Cluster only when questions share a document and there are two documents or more."""
    named = [clusters.get(i, "") for i in ids]
    return all(named) and 1 < len(set(named)) < len(named)


@dataclass(frozen=True)
class Accuracy:
    value: float
    n: int
    low: float
    high: float
    clusters: int = 0
    """Documents the interval clusters by (0: not clustered)."""


def accuracy(data: PerSample, level: float = 0.95) -> Accuracy | None:
    """The mean over samples (each sample's mean over epochs), n, and Inspect's Wilson
    interval (clustered by document where the task clusters); None without samples or
    for values outside [0, 1]."""
    means = data.means()
    if not means:
        return None
    ids = list(means)
    clustered = _clustered(data.clusters, ids)
    scores = _sample_scores(means, data.clusters)
    try:
        bounds = ci_wilson(level, cluster=CLUSTER if clustered else None)(scores)  # type: ignore[arg-type]
    except ValueError:
        return None
    assert isinstance(bounds, dict)
    return Accuracy(
        mean(means.values()),
        len(ids),
        float(bounds["lower"]),
        float(bounds["upper"]),
        len({data.clusters[i] for i in ids}) if clustered else 0,
    )


def epoch_spread(data: PerSample) -> float | None:
    """With several epochs, the standard deviation of the per-epoch accuracies (over the
    samples every epoch scored), else None."""
    counts = {len(v) for v in data.values.values()}
    if not data.values or max(counts) < 2:
        return None
    epochs = min(counts)
    per_epoch = [mean(v[e] for v in data.values.values()) for e in range(epochs)]
    return pstdev(per_epoch)


@dataclass(frozen=True)
class Paired:
    n: int
    a: float
    b: float
    difference: float
    stderr: float
    low: float
    high: float
    p_mcnemar: float | None
    """McNemar's exact p when every per-sample value is 0 or 1, else None."""
    clusters: int = 0


def paired(a: PerSample, b: PerSample, level: float = 0.95) -> Paired | None:
    """``a`` minus ``b`` over the samples both scored (each sample's mean over epochs):
    the difference, its standard error (Inspect's ``stderr``, clustered where the task
    clusters), a normal interval, and McNemar's exact test for 0/1 values."""
    ma, mb = a.means(), b.means()
    ids = [i for i in ma if i in mb]
    if len(ids) < 2:
        return None
    clusters = {i: a.clusters.get(i) or b.clusters.get(i, "") for i in ids}
    clustered = _clustered(clusters, ids)
    diffs = {i: ma[i] - mb[i] for i in ids}
    scores = _sample_scores(diffs, clusters)
    se = float(stderr(cluster=CLUSTER if clustered else None)(scores))  # type: ignore[arg-type]
    difference = mean(diffs.values())
    z = NormalDist().inv_cdf(0.5 + level / 2)
    binary = all(ma[i] in (0.0, 1.0) and mb[i] in (0.0, 1.0) for i in ids)
    p = None
    if binary:
        only_a = sum(1 for i in ids if ma[i] == 1.0 and mb[i] == 0.0)
        only_b = sum(1 for i in ids if ma[i] == 0.0 and mb[i] == 1.0)
        p = mcnemar_exact(only_a, only_b)
    return Paired(
        n=len(ids),
        a=mean(ma[i] for i in ids),
        b=mean(mb[i] for i in ids),
        difference=difference,
        stderr=se,
        # a difference of two values in [0, 1] lies in [-1, 1]
        low=max(-1.0, difference - z * se),
        high=min(1.0, difference + z * se),
        p_mcnemar=p,
        clusters=len(set(clusters.values())) if clustered else 0,
    )


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p: the binomial test of ``only_a`` among the discordant
    pairs at one half (1.0 without discordant pairs)."""
    m = only_a + only_b
    if m == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(m, i) for i in range(k + 1)) / 2**m
    return min(1.0, 2 * tail)
