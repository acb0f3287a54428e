"""The ``unscored`` score: how many samples a task's scoring left without a score.

Inspect gives a metric only the samples that have a value (a NaN score, the
``Score.unscored`` sentinel, is taken out first and counted in the log's
``unscored_samples``, which the end-of-run summary does not show). An accuracy
over the scored samples alone reads as if it were over all of them, so every task
attaches, after its keys, a scorer named ``unscored`` whose value is 1 for a sample
the scoring left unscored and 0 otherwise, and whose metric (also ``unscored``,
logged as its entry ``n``) adds them up. It is attached where the data has samples
without a gold answer (:func:`withheld_answers`: the test splits whose answers are
withheld), the samples our scorers leave unscored. The count is computed from the scores the metric receives, like any
Inspect metric: it is right however the scores came together (one run, an
``inspect eval-retry`` that reruns some samples, an eval-set resume, ``inspect
score``), and it equals Inspect's ``unscored_samples`` of each key that applies to
every sample. The reasons stay in each sample's explanation.

A sample counts when its whole score is unscored (no gold answer, nothing to
score); a key that does not apply to a sample by design (NaN for that key only,
e.g. a task whose question kinds have keys of their own) is not counted. A sample
that ended in an error (an exception in our code) has no score at all: it is
Inspect's count (the sample's ``error``, ``fail_on_error``), not this one.
With several epochs the count is of samples after Inspect's epoch reduction (the
mean of a sample's epochs: a sample unscored in one of two epochs counts one half).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from inspect_ai.dataset import Sample
from inspect_ai.scorer import Metric, SampleScore, Score, Target, Value, metric

UNSCORED_KEY = "unscored"
"""The name of the score that counts the unscored samples (and of its metric)."""
COUNT_ENTRY = "n"
"""The metric's entry in the log and the summary: ``unscored`` ``n`` (a short label: the
column sits beside the official score's longest group names in Inspect's summary)."""


def withheld_answers(samples: Iterable[Sample]) -> bool:
    """Whether any of ``samples`` has no gold answer (answers withheld): the samples our
    scorers leave unscored. A task attaches the ``unscored`` score only then, so a run
    whose every sample has an answer keeps Inspect's summary to its keys' columns."""
    return any(not Target(sample.target).text.strip() for sample in samples)


def whole_score_unscored(score: Score | None) -> bool:
    """True for a missing score or one whose value is the NaN sentinel."""
    if score is None:
        return True
    value = score.value
    return isinstance(value, float) and math.isnan(value)


def unscored_value(score: Score | None) -> float:
    """The ``unscored`` score's value for a sample: 1.0 unscored, 0.0 scored."""
    return 1.0 if whole_score_unscored(score) else 0.0


@metric(name=UNSCORED_KEY)
def unscored() -> Metric:
    """The number of samples the scoring left unscored (the sum of the values)."""

    def compute(scores: list[SampleScore]) -> Value:
        # a dict entry is named by its key alone (a scalar metric's name would carry the
        # package prefix into the log and the summary)
        total = 0.0
        for sample_score in scores:
            value = sample_score.score.value
            if isinstance(value, int | float) and not isinstance(value, bool):
                total += float(value)
        return {COUNT_ENTRY: total}

    return compute
