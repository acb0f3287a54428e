"""Retrieval recall reported next to accuracy.

:func:`insert_passages` records, for samples whose needed passages are
annotated, ``recall`` (the share of them that were retrieved) in the sample's
metadata. :func:`with_recall` wraps a scorer whose value is a dict (one value
per comparison) and adds that recall under ``key``, so a task's metrics can
average it beside the accuracies; a sample without an annotation gets NaN for
that key only (unscored for recall, scored as usual otherwise).
"""

from __future__ import annotations

import math

from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer
from inspect_ai.solver import TaskState

RECALL_KEY = "retrieval_recall"


def recorded_recall(state: TaskState, metadata_key: str) -> float:
    """The recall recorded under ``metadata_key``; NaN when there is none."""
    record = (state.metadata or {}).get(metadata_key) or {}
    recall = record.get("recall")
    if isinstance(recall, int | float) and not isinstance(recall, bool):
        return float(recall)
    return math.nan


@scorer(metrics=[accuracy()])
def with_recall(inner: Scorer, metadata_key: str = "retrieval", key: str = RECALL_KEY) -> Scorer:
    """``inner``'s score with the sample's retrieval recall added to its value dict."""

    async def score(state: TaskState, target: Target) -> Score | None:
        result = await inner(state, target)
        if result is None or not isinstance(result.value, dict):
            return result  # unscored (NaN) stays unscored
        recall = recorded_recall(state, metadata_key)
        result.value = {**result.value, key: recall}
        result.metadata = {**(result.metadata or {}), key: recall}
        return result

    return score
