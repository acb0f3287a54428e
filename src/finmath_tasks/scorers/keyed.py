"""One scalar scorer per score key, so every metric in the log and the summary has a plain name.

A scorer whose ``Score.value`` is a dict with per-key metrics gets, in Inspect,
metric names ``<metric registry name>_<entry>`` (``finmath_tasks/accuracy_ci_ci90_low``):
the package prefix stays for our own metrics and Inspect's summary cuts them. A
scorer with a scalar value and a list of metrics takes the other path: a metric is
named by its unqualified name and the entries of a dict-valued metric by their own
keys (``accuracy``, ``ci90_low``, ``category=SSSD``).

:func:`keyed_scorers` keeps a task's multi-key scorer as it is and exposes it as one
scalar scorer per key, named by the key, with that key's metrics. Inspect runs a
sample's scorers in order: the first runs the inner scorer once and keeps its dict
score for the sample, the others read it, the last drops it (a scorer run on its
own, e.g. by ``inspect score``, computes it again). The first key's score carries
the inner score's whole metadata; the others carry only the metadata ``shared``
names (what their metrics read), so the log does not hold the same metadata per key.

Errors: a bad model output (empty, enormous, hostile, an odd number, a judge's
nonsense) is the inner scorer's to handle, as a wrong or unscored sample with the
reason. An exception raised by the inner scorer is a bug in our own code: it is not
caught here but reaches Inspect, which records it as that sample's ``error`` (with
the traceback) and counts it against ``fail_on_error``; every task sets
``continue_on_fail=True``, so the other samples still run and are scored, and the
log ends ``error`` unless the user accepts some errors (``--fail-on-error 0.05``,
``--no-fail-on-error``). ``--retry-on-error`` and ``inspect eval-retry`` rerun such
samples as for any Inspect task.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai.scorer import Metric, Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState
from inspect_ai.util import registry_info

from finmath_tasks.scorers.unscored import UnscoredCount


def keyed_scorers(
    inner: Scorer,
    metrics: Mapping[str, Sequence[Metric]],
    shared: Sequence[str] = (),
) -> list[Scorer]:
    """A scalar scorer per key of ``metrics`` (in order: the official key first).

    ``inner`` returns a Score whose value is a dict holding every key (NaN where a key
    does not apply); a scalar NaN (``Score.unscored``) leaves the sample unscored under
    every key, with the reason, and counted by every key's ``unscored`` metric (added
    after the metrics of each key that shows an accuracy). An exception of ``inner``
    propagates: Inspect records it as the sample's error (see the module docstring).
    """
    keys = list(metrics)
    if not keys:
        raise ValueError("keyed_scorers needs at least one key")
    cache: dict[str, Score] = {}
    unscored = UnscoredCount()

    async def inner_score(state: TaskState, target: Target) -> Score:
        cached = cache.get(state.uuid)
        if cached is not None:
            return cached
        result = await inner(state, target)
        if result is None:
            result = Score.unscored(reason="no_score", explanation="the scorer gave no score")
        cache[state.uuid] = result
        unscored.record(state.uuid, result)
        return result

    def make(index: int, key: str) -> Scorer:
        own = list(metrics[key])
        counted = [*own, unscored.metric()] if shows_accuracy(own) else own

        @scorer(metrics=counted, name=key)
        def keyed() -> Scorer:
            async def score(state: TaskState, target: Target) -> Score:
                whole = await inner_score(state, target)
                if index == len(keys) - 1:
                    cache.pop(state.uuid, None)
                return key_score(whole, key, first=index == 0, shared=shared)

            return score

        return keyed()

    return [make(i, key) for i, key in enumerate(keys)]


ACCURACY_METRICS = ("accuracy", "accuracy_ci")
"""Metrics (by unqualified registry name) that show an accuracy over the scored samples."""


def shows_accuracy(metrics: Sequence[Metric]) -> bool:
    """Whether one of ``metrics`` is an accuracy (its key then also counts the unscored)."""
    for m in metrics:
        try:
            name = registry_info(m).name
        except ValueError:
            continue
        if name.rsplit("/", 1)[-1] in ACCURACY_METRICS:
            return True
    return False


def key_score(whole: Score, key: str, first: bool, shared: Sequence[str] = ()) -> Score:
    """The scalar score of ``key`` from a dict-valued score."""
    value = whole.value
    number: Any = value.get(key, math.nan) if isinstance(value, dict) else math.nan
    if isinstance(number, bool):
        number = float(number)
    metadata = dict(whole.metadata or {})
    if not first:
        metadata = {k: metadata[k] for k in shared if k in metadata}
    return Score(
        value=number,
        reason=whole.reason,
        answer=whole.answer,
        explanation=whole.explanation,
        metadata=metadata or None,
    )
