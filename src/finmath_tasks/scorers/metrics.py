"""Metric helpers shared by the tasks."""

from __future__ import annotations

from collections.abc import Iterable

from inspect_ai.scorer import Metric, accuracy, grouped, stderr


def accuracy_metrics(keys: Iterable[str], group_by: str | None = None) -> dict[str, list[Metric]]:
    """Accuracy and stderr for each score key; also accuracy per ``group_by`` metadata value."""
    metrics: dict[str, list[Metric]] = {}
    for key in keys:
        metrics[key] = [accuracy(), stderr()]
        if group_by:
            metrics[key].append(grouped(accuracy(), group_by, all=False))
    return metrics
