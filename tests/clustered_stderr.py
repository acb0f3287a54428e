"""A cluster-robust standard error computed by hand, for the tasks' clustered-stderr tests.

Each task whose questions share documents (TAT-QA: the table; FinQA: the annual report;
MathHay: the document group of a subtopic) is run on crafted samples, two documents
holding three questions each, with the verdicts :data:`RIGHT`: the first document all
right, the second one right of three. Its ``stderr`` must equal :func:`clustered_by_hand`
over those verdicts and documents, and differ from :func:`plain_by_hand`.
"""

from __future__ import annotations

import math

import pytest
from inspect_ai.log import EvalLog

from eval_helpers import metric

RIGHT = [True, True, True, True, False, False]
"""The verdicts in sample order: the first document's three questions, then the second's."""


def clustered_by_hand(verdicts: list[bool], docs: list[str]) -> float:
    """sqrt(C/(C-1) * sum over the C clusters of the squared sum of the cluster's
    deviations from the overall mean) / n."""
    values = [1.0 if v else 0.0 for v in verdicts]
    n = len(values)
    mean = sum(values) / n
    sums: dict[str, float] = {}
    for value, doc in zip(values, docs, strict=True):
        sums[doc] = sums.get(doc, 0.0) + (value - mean)
    c = len(sums)
    return math.sqrt(c / (c - 1) * sum(s * s for s in sums.values())) / n


def plain_by_hand(verdicts: list[bool]) -> float:
    """The standard error of the mean of independent samples: sd (n-1) / sqrt(n)."""
    values = [1.0 if v else 0.0 for v in verdicts]
    n = len(values)
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)


def assert_clustered(log: EvalLog, key: str, docs: list[str]) -> None:
    """The samples of ``log`` have the documents ``docs`` (in order) and the ``stderr`` of
    score ``key`` is the clustered one over :data:`RIGHT`, not the plain one."""
    assert log.status == "success", log.error
    have = [(s.metadata or {}).get("document") for s in log.samples or []]
    assert have == docs, f"documents {have}, expected {docs}"
    assert len(set(docs)) == 2
    verdicts = [(s.scores or {})[key].value for s in log.samples or []]
    assert verdicts == [float(ok) for ok in RIGHT], f"verdicts {verdicts}"
    assert metric(log, key) == pytest.approx(sum(RIGHT) / len(RIGHT))
    expected = clustered_by_hand(RIGHT, docs)
    # 4 of 6 right; the two documents deviate from the mean by +1 and -1: sqrt(2*2)/6
    assert expected == pytest.approx(1 / 3)
    assert metric(log, key, "stderr") == pytest.approx(expected)
    assert abs(metric(log, key, "stderr") - plain_by_hand(RIGHT)) > 0.1
