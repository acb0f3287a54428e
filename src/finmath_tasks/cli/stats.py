"""How sure a report's numbers are: per-sample scores read from a run's log, an accuracy's
n and interval (clustered where questions share a document), and the paired comparison
of two runs of the same task on the same samples.

The unit is the question: with epochs, a question's score is its mean over its epochs
and n is the number of questions. Intervals and standard errors are Inspect's own
metrics (``ci_wilson``, ``ci``, ``stderr``, all with ``cluster=``) applied to those
scores: Wilson's interval where every question's score is 0 or 1, else the t interval
over questions (``ci``: n - 1 degrees of freedom, clusters - 1 when clustered). A paired
difference uses the same reference distribution (the normal one where the accuracy's
Wilson interval does, t with clusters - 1 degrees of freedom when clustered); where the
standard error is zero (no question on which the runs differ, or every question that
differs moving the same way), Tango's score interval for paired proportions (never of
zero width). McNemar's exact test is the two-sided binomial test on the discordant
pairs.

The per-sample values are read with the log API (``read_eval_log_samples``, once per
log: ``cli.reading.run_samples``), not ``inspect_ai.analysis.samples_df``: the frame
needs pandas and pyarrow (not dependencies of the report's tables), and the values needed here (one per sample and
epoch, a multi-score value of an older log, the sample's document for clustering) are
a loop over the samples either way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist, mean, pstdev
from typing import Any, Protocol

from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    NOANSWER,
    PARTIAL,
    SampleScore,
    Score,
    ci,
    ci_wilson,
    stderr,
)

from finmath_tasks.cli.samples import run_samples


class Run(Protocol):
    """What the statistics read of a report's run (``cli.runs.Run``, which imports this
    module where it needs it): its log and a cache of what was read from it."""

    path: str
    per_sample: dict[str, Any]


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
    # a reading without clusters is kept apart from one with them
    key = score if cluster_of is None else f"{score}|clustered"
    cached = run.per_sample.get(key)
    if isinstance(cached, PerSample):
        return cached
    values: dict[str, list[float]] = {}
    clusters: dict[str, str] = {}

    for sample in run_samples(run):
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
    run.per_sample[key] = result
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
    binary: bool = True
    """Every question's score is 0 or 1 (Wilson's interval); else the t interval."""


def accuracy(data: PerSample, level: float = 0.95) -> Accuracy | None:
    """The mean over questions (each question's mean over its epochs), n (questions), and
    its interval: Inspect's Wilson interval where every question's score is 0 or 1, else
    Inspect's t interval over questions (``ci``); both clustered by document where the task
    clusters. None without samples or for values outside [0, 1]."""
    means = data.means()
    if not means:
        return None
    ids = list(means)
    if not all(0.0 <= v <= 1.0 for v in means.values()):
        return None
    clustered = _clustered(data.clusters, ids)
    scores = _sample_scores(means, data.clusters)
    cluster = CLUSTER if clustered else None
    binary = all(v in (0.0, 1.0) for v in means.values())
    try:
        method = ci_wilson(level, cluster=cluster) if binary else ci(level, cluster=cluster)
        bounds = method(scores)  # type: ignore[arg-type]
    except ValueError:
        return None
    assert isinstance(bounds, dict)
    value = mean(means.values())
    low, high = max(0.0, float(bounds["lower"])), min(1.0, float(bounds["upper"]))
    if not high > low:
        # fractional scores of no spread (every question right in half its epochs): a t
        # interval of zero width would claim certainty; Wilson's score interval instead
        low, high = wilson(value, len(ids), level) or (low, high)
    return Accuracy(
        value,
        len(ids),
        min(low, value),
        max(high, value),
        len({data.clusters[i] for i in ids}) if clustered else 0,
        binary,
    )


def wilson(p: float, n: int, level: float) -> tuple[float, float] | None:
    """Inspect's Wilson score interval (``ci_wilson``) of a proportion ``p`` over ``n``
    questions: of non-zero width for n >= 1, also at 0 and 1, unlike p ± z x stderr.
    ``p`` may be fractional (a question right in half its epochs): the interval depends
    only on the mean and n, so it is computed over n scores of value ``p``. None for no
    questions or a proportion outside [0, 1]."""
    if n <= 0 or not 0.0 <= p <= 1.0:
        return None
    scores = [SampleScore(score=Score(value=p), sample_id=i) for i in range(n)]
    bounds = ci_wilson(level)(scores)  # type: ignore[arg-type]
    assert isinstance(bounds, dict)
    # rounding may put a bound a hair past the proportion itself (0/n: 3e-17)
    return min(float(bounds["lower"]), p), max(float(bounds["upper"]), p)


def subset(data: PerSample, ids: Iterable[str], clustered: bool = True) -> PerSample:
    """``data`` over the samples ``ids`` (without their clusters unless ``clustered``)."""
    keep = [i for i in ids if i in data.values]
    return PerSample(
        {i: data.values[i] for i in keep},
        {i: data.clusters.get(i, "") for i in keep} if clustered else {},
    )


def sample_groups(run: Run, score: str, key: str) -> dict[str, str]:
    """Sample id -> its group under ``key``: the score's metadata ``key`` where the score
    has one (a kind the scorer decides), else the sample's (a topic)."""
    cache = f"groups:{score}:{key}"
    cached = run.per_sample.get(cache)
    if isinstance(cached, dict):
        return cached
    groups: dict[str, str] = {}

    for sample in run_samples(run):
        found = (sample.scores or {}).get(score)
        if found is None:
            # a scorer of several scores names them in its value (older logs)
            found = next(
                (
                    other
                    for other in (sample.scores or {}).values()
                    if isinstance(other.value, dict) and score in other.value
                ),
                None,
            )
        own = (found.metadata or {}) if found is not None else {}
        groups.setdefault(
            str(sample.id), str(own[key] if key in own else (sample.metadata or {}).get(key))
        )
    run.per_sample[cache] = groups
    return groups


def group_accuracy(
    run: Run, score: str, key: str, group: str, level: float = 0.95
) -> Accuracy | None:
    """The accuracy of one group (a topic) over its questions, as :func:`accuracy` (each
    question's mean over epochs; n questions); not clustered, as a group's questions are
    few."""
    data = per_sample(run, score)
    groups = sample_groups(run, score, key)
    return accuracy(subset(data, (i for i, g in groups.items() if g == group), False), level)


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
    interval: str = "normal"
    """How the interval was made: ``normal`` (difference ± z x stderr), ``t`` (± t with
    clusters - 1 degrees of freedom x the clustered stderr) or ``tango`` (no question on
    which the runs differ: Tango's score interval)."""


def critical(level: float, clusters: int = 0) -> float:
    """The two-sided critical value at ``level``: t with ``clusters - 1`` degrees of
    freedom when clustered (``clusters`` >= 2), else the normal one (as the accuracy's
    Wilson interval uses)."""
    if clusters >= 2:
        from scipy.stats import t

        return float(t.ppf(0.5 + level / 2, clusters - 1))
    return NormalDist().inv_cdf(0.5 + level / 2)


def paired(a: PerSample, b: PerSample, level: float = 0.95) -> Paired | None:
    """``a`` minus ``b`` over the questions both scored (each question's mean over its
    epochs): the difference, its standard error (Inspect's ``stderr``, clustered where the
    task clusters), an interval with the accuracy intervals' reference distribution (see
    :func:`critical`), Tango's score interval when no question differs, and McNemar's exact
    test for 0/1 values."""
    ma, mb = a.means(), b.means()
    ids = [i for i in ma if i in mb]
    if len(ids) < 2:
        return None
    clusters = {i: a.clusters.get(i) or b.clusters.get(i, "") for i in ids}
    clustered = _clustered(clusters, ids)
    count = len(set(clusters.values())) if clustered else 0
    diffs = {i: ma[i] - mb[i] for i in ids}
    scores = _sample_scores(diffs, clusters)
    se = float(stderr(cluster=CLUSTER if clustered else None)(scores))  # type: ignore[arg-type]
    difference = mean(diffs.values())
    crit = critical(level, count)
    binary = all(ma[i] in (0.0, 1.0) and mb[i] in (0.0, 1.0) for i in ids)
    only_a = sum(1 for i in ids if ma[i] > mb[i])
    only_b = sum(1 for i in ids if ma[i] < mb[i])
    p = mcnemar_exact(only_a, only_b) if binary else None
    if only_a + only_b == 0 or not se > 0.0:
        # every question agrees, or every question that differs moves the same way by the
        # same amount: a difference ± crit x 0 would claim certainty. Tango's interval on
        # the discordant counts (for fractional scores, the summed differences each way)
        gained = sum(max(d, 0.0) for d in diffs.values())
        lost = sum(max(-d, 0.0) for d in diffs.values())
        low, high = tango(gained, lost, len(ids), crit)
        how = "tango"
    else:
        low, high = difference - crit * se, difference + crit * se
        how = "t" if count else "normal"
    return Paired(
        n=len(ids),
        a=mean(ma[i] for i in ids),
        b=mean(mb[i] for i in ids),
        difference=difference,
        stderr=se,
        # a difference of two values in [0, 1] lies in [-1, 1]
        low=max(-1.0, low),
        high=min(1.0, high),
        p_mcnemar=p,
        clusters=count,
        interval=how,
    )


def tango(only_a: float, only_b: float, n: int, crit: float) -> tuple[float, float]:
    """Tango's (1998) score interval for the difference of two paired proportions: the
    differences d whose score statistic ``(only_a - only_b - n d) / sqrt(n (2 q + d (1 -
    d)))`` lies within ``crit`` in absolute value, ``q`` being the constrained maximum
    likelihood estimate of the share of questions only ``b`` got right. Of non-zero width
    for n > 0, also with no discordant pair."""
    if n <= 0:
        return -1.0, 1.0

    def statistic(d: float) -> float:
        a_ = 2.0 * n
        b_ = -only_a - only_b + (2.0 * n - only_a + only_b) * d
        c_ = -only_b * d * (1.0 - d)
        q = (math.sqrt(max(b_ * b_ - 4.0 * a_ * c_, 0.0)) - b_) / (2.0 * a_)
        variance = n * (2.0 * q + d * (1.0 - d))
        if variance <= 0.0:
            return math.inf if only_a - only_b - n * d > 0 else -math.inf
        return (only_a - only_b - n * d) / math.sqrt(variance)

    point = (only_a - only_b) / n

    def bound(inside: float, outside: float) -> float:
        # the statistic decreases in d: bisect between a d inside and one outside
        for _ in range(200):
            middle = (inside + outside) / 2
            if abs(statistic(middle)) <= crit:
                inside = middle
            else:
                outside = middle
        return inside

    low = -1.0 if abs(statistic(-1.0)) <= crit else bound(point, -1.0)
    high = 1.0 if abs(statistic(1.0)) <= crit else bound(point, 1.0)
    return low, high


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p: scipy's exact binomial test of ``only_a`` among the
    discordant pairs at one half (1.0 without discordant pairs)."""
    from scipy.stats import binomtest

    m = only_a + only_b
    if m == 0:
        return 1.0
    return min(1.0, float(binomtest(only_a, m, 0.5).pvalue))
