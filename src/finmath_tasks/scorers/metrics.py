"""Metric helpers shared by the tasks."""

from __future__ import annotations

import math
from collections.abc import Iterable

from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Value,
    accuracy,
    grouped,
    metric,
    stderr,
)

DOCUMENT_KEY = "document"
"""Sample metadata key: the document a question is asked about (a table, a report, a group
of documents, a case; each benchmark's dataset says which). Questions that share one are not
independent, so a task whose questions share documents reports Inspect's
``stderr(cluster=DOCUMENT_KEY)`` beside each accuracy."""


def accuracy_metrics(
    keys: Iterable[str],
    group_by: str | None = None,
    grouped_keys: Iterable[str] | None = None,
    cluster: str | None = None,
) -> dict[str, list[Metric]]:
    """Accuracy and stderr for each score key (Inspect's ``stderr(cluster=cluster)``:
    clustered by that sample metadata key when given); also accuracy per ``group_by``
    metadata value (Inspect's ``grouped_<value>``) for the keys in ``grouped_keys``
    (default: every key; fewer keeps long group names within Inspect's summary)."""
    keys = list(keys)
    with_groups = set(keys if grouped_keys is None else grouped_keys)
    metrics: dict[str, list[Metric]] = {}
    for key in keys:
        metrics[key] = [accuracy(), stderr(cluster=cluster)]
        if group_by and key in with_groups:
            metrics[key].append(grouped(accuracy(), group_by, all=False))
    return metrics


# --- accuracy over the samples a key applies to, with a confidence interval -------------
#
# A score value may carry a key that does not apply to every sample (NaN for
# the others: a task mixing question kinds scores each kind under its own
# keys; Inspect turns None into 0 before a metric sees it, so NaN marks it).
# These metrics count only samples whose value for the key is a finite number.

Z_SCORES = {0.8: 1.2815515655446004, 0.9: 1.6448536269514722, 0.95: 1.959963984540054}
"""Two-sided normal quantiles for the confidence levels offered."""


def _scored(scores: list[SampleScore]) -> list[float]:
    values: list[float] = []
    for sample_score in scores:
        value = sample_score.score.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        number = float(value)
        if math.isfinite(number):
            values.append(number)
    return values


def accuracy_interval(values: list[float], level: float = 0.9) -> tuple[float, float, float]:
    """Mean of 0/1 ``values`` and its normal-approximation (Wald) interval at ``level``.

    The interval is p ± z·sqrt(p(1-p)/n), clipped to [0, 1]; NaNs when there are no values.
    """
    if level not in Z_SCORES:
        raise ValueError(f"confidence level {level} is not one of {sorted(Z_SCORES)}")
    if not values:
        return math.nan, math.nan, math.nan
    n = len(values)
    p = sum(values) / n
    half = Z_SCORES[level] * math.sqrt(p * (1 - p) / n)
    return p, max(0.0, p - half), min(1.0, p + half)


@metric
def accuracy_ci(level: float = 0.9) -> Metric:
    """Accuracy over the samples with a number for this key, its CI bounds and the count.

    Reported as ``accuracy``, ``ci<level>_low``, ``ci<level>_high`` and ``scored``.
    """
    tag = f"ci{round(level * 100)}"

    def compute(scores: list[SampleScore]) -> Value:
        values = _scored(scores)
        p, low, high = accuracy_interval(values, level)
        return {"accuracy": p, f"{tag}_low": low, f"{tag}_high": high, "scored": len(values)}

    return compute


@metric
def accuracy_by(group_key: str, prefix: str = "") -> Metric:
    """Accuracy per value of the sample metadata ``group_key``, over scored samples only.

    Reported as ``<prefix><value>`` (e.g. ``section=`` gives ``section=63``). Groups
    where no sample has a number for this key are left out.
    """

    def compute(scores: list[SampleScore]) -> Value:
        groups: dict[str, list[SampleScore]] = {}
        for sample_score in scores:
            metadata = sample_score.sample_metadata or {}
            groups.setdefault(str(metadata.get(group_key)), []).append(sample_score)
        out: dict[str, float] = {}
        for name, members in sorted(groups.items()):
            values = _scored(members)
            if values:
                out[f"{prefix}{name}"] = sum(values) / len(values)
        # no sample scored (e.g. answers withheld): one NaN under the grouping's own name
        # (an empty result would be shown under the metric's prefixed registry name)
        return out or {group_key: math.nan}

    return compute


@metric
def accuracy_by_groups(group_keys: list[str]) -> Metric:
    """Accuracy per value of each sample metadata key, reported as ``<key>=<value>``.

    One metric for several groupings (e.g. task type, length, placement), so
    groups of different keys with the same value ("1" steps, "1" document)
    never collide. Scored samples only, as :func:`accuracy_by`.
    """

    def compute(scores: list[SampleScore]) -> Value:
        out: dict[str, float] = {}
        for key in group_keys:
            groups: dict[str, list[SampleScore]] = {}
            for sample_score in scores:
                metadata = sample_score.sample_metadata or {}
                if key in metadata:
                    groups.setdefault(str(metadata[key]), []).append(sample_score)
            for name, members in sorted(groups.items()):
                values = _scored(members)
                if values:
                    out[f"{key}={name}"] = sum(values) / len(values)
        return out or dict.fromkeys(group_keys, math.nan)  # as accuracy_by: none scored

    return compute


@metric
def flag_counts(flags: list[str]) -> Metric:
    """How many samples' score metadata set each of ``flags`` to a true value."""

    def compute(scores: list[SampleScore]) -> Value:
        out: dict[str, int] = dict.fromkeys(flags, 0)
        for sample_score in scores:
            metadata = sample_score.score.metadata or {}
            for flag in flags:
                if metadata.get(flag):
                    out[flag] += 1
        return out

    return compute
