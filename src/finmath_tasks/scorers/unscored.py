"""The ``unscored`` metric: how many samples a scorer left without a score.

Inspect gives a metric only the samples that have a value (a NaN score, the
``Score.unscored`` sentinel, is taken out first and counted in the log's
``unscored_samples``, which the end-of-run summary does not show). An accuracy
over the scored samples alone reads as if it were over all of them, so the
scorers record, per sample, whether they left it unscored, and the metric beside
each accuracy reports that count from the record (the reasons stay in each
sample's explanation).

A sample counts when its whole score is unscored (no gold answer, nothing to
score); a key that does not apply to a sample by design (NaN for that key only,
e.g. a task whose question kinds have keys of their own) is not counted. A sample
that ended in an error (an exception in our code) has no score at all: it is
Inspect's count (the sample's ``error``, ``fail_on_error``), not this one.
With several epochs every sample's epoch counts on its own.
"""

from __future__ import annotations

import math

from inspect_ai.scorer import Metric, SampleScore, Score, Value, metric

UNSCORED_METRIC = "unscored"


def whole_score_unscored(score: Score | None) -> bool:
    """True for a missing score or one whose value is the NaN sentinel."""
    if score is None:
        return True
    value = score.value
    return isinstance(value, float) and math.isnan(value)


class UnscoredCount:
    """Which of a task's samples its scorer left unscored, by sample (and epoch) uuid."""

    def __init__(self) -> None:
        self._unscored: dict[str, bool] = {}

    def record(self, sample_uuid: str, score: Score | None) -> None:
        self._unscored[sample_uuid] = whole_score_unscored(score)

    @property
    def count(self) -> int:
        return sum(self._unscored.values())

    def metric(self) -> Metric:
        """A metric named ``unscored`` reporting this count (it reads the record, not the
        scores it is given: those are the scored samples only)."""

        @metric(name=UNSCORED_METRIC)
        def unscored() -> Metric:
            def compute(scores: list[SampleScore]) -> Value:
                # a dict entry is named by its key alone (a scalar metric's name would
                # carry the package prefix into the log and the summary)
                return {UNSCORED_METRIC: self.count}

            return compute

        return unscored()
