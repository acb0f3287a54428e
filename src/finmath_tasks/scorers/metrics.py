"""Metric helpers shared by the tasks."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Value,
    accuracy,
    ci_wilson,
    grouped,
    metric,
    stderr,
)

DOCUMENT_KEY = "document"
"""Sample metadata key: the document a question is asked about (a table, a report, a group
of documents, a case; each benchmark's dataset says which). Questions that share one are not
independent, so a task whose questions share documents reports Inspect's
``stderr(cluster=DOCUMENT_KEY)`` beside each accuracy."""


def document_of(sample_id: str, metadata: Mapping[str, Any]) -> str:
    """The document a question shares with others (:data:`DOCUMENT_KEY` of its sample
    metadata; "" when it has none): the clustering unit a task declares once, in its
    dataset, for its logged metrics and for every interval the report shows."""
    return str(metadata.get(DOCUMENT_KEY) or "")


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


# --- the confidence interval of an accuracy ------------------------------------------


@metric
def wilson_interval(level: float = 0.95, cluster: str | None = None) -> Metric:
    """Inspect's Wilson interval (``ci_wilson``) of the accuracy at ``level``, reported as
    ``ci<level>_lower`` and ``ci<level>_upper`` (``ci90_lower``: the level in the name).

    ``cluster``: the sample metadata key questions that share a document have in common;
    where questions do share one (some document has two or more) and there are two
    documents or more, the interval is Inspect's clustered one (an effective sample size
    and a t critical value with clusters - 1 degrees of freedom), else the plain one:
    the rule ``finmath report`` follows (``cli/stats.py``), so the report shows the
    interval the log holds. Unlike p +/- z x stderr, the interval of 0/n or n/n has a
    non-zero width. No scored sample: NaN bounds.
    """
    tag = f"ci{round(level * 100)}"
    plain = cast(Callable[[list[SampleScore]], Value], ci_wilson(level))
    clustered = (
        cast(Callable[[list[SampleScore]], Value], ci_wilson(level, cluster=cluster))
        if cluster is not None
        else None
    )

    def shares_documents(scores: list[SampleScore], key: str) -> bool:
        named = [(s.sample_metadata or {}).get(key) for s in scores]
        if any(n is None or n == "" for n in named):
            return False
        return 1 < len({str(n) for n in named}) < len(named)

    def compute(scores: list[SampleScore]) -> Value:
        if not scores:
            return {f"{tag}_lower": math.nan, f"{tag}_upper": math.nan}
        chosen = plain
        if clustered is not None and cluster is not None and shares_documents(scores, cluster):
            chosen = clustered
        bounds = chosen(scores)
        assert isinstance(bounds, dict)
        return {f"{tag}_lower": float(bounds["lower"]), f"{tag}_upper": float(bounds["upper"])}

    return compute


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
