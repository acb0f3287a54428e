"""``finmath grid --limit N``: which N samples a run evaluates.

Inspect's ``--limit N`` takes the dataset's first N samples, which for a pilot run can
be one statute section or one task type. A benchmark that declares ``STRATA`` gets a
stratified choice instead (:func:`stratified`, described in
:class:`finmath_tasks.cli.declare.Strata`): the run's dataset is narrowed to those
samples before the eval, so Inspect runs them all (no ``limit`` in the log; the log's
``sample_ids`` name them and the task metadata ``sample_selection`` says how they were
chosen). ``--selection first`` or ``--sample-shuffle`` keep Inspect's own limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args

from inspect_ai import Task
from inspect_ai.dataset import Sample

from finmath_tasks.cli.declare import Strata

Selection = Literal["stratified", "first"]
SELECTIONS: tuple[str, ...] = get_args(Selection)
SELECTION_KEY = "sample_selection"
"""Task metadata key recording a stratified choice."""


def stratified(samples: Sequence[Sample], strata: Strata, limit: int) -> list[Sample]:
    """``limit`` samples spread over the strata, in dataset order (see :class:`Strata`)."""
    found: dict[str, list[Sample]] = {}
    for sample in samples:
        found.setdefault(strata.stratum(sample.metadata), []).append(sample)
    first = [name for name in strata.order if name in found]
    groups = [found[name] for name in [*first, *(n for n in found if n not in first)]]
    chosen: set[int] = set()
    depth = 0
    while len(chosen) < min(limit, len(samples)):
        for group in groups:
            if depth < len(group) and len(chosen) < limit:
                chosen.add(id(group[depth]))
        depth += 1
    return [s for s in samples if id(s) in chosen]


def strata_counts(samples: Sequence[Sample], strata: Strata) -> dict[str, int]:
    """Stratum -> number of samples, strata in the order of their first sample."""
    counts: dict[str, int] = {}
    for sample in samples:
        key = strata.stratum(sample.metadata)
        counts[key] = counts.get(key, 0) + 1
    return counts


def narrow(task: Task, strata: Strata, limit: int) -> dict[str, Any]:
    """Narrow ``task``'s dataset to the stratified choice of ``limit`` samples; returns
    what the task's metadata records of it."""
    samples = list(task.dataset)
    chosen = stratified(samples, strata, limit)
    keep = {id(s) for s in chosen}  # the dataset yields its own Sample objects
    task.dataset = task.dataset.filter(lambda s: id(s) in keep)
    counts = strata_counts(chosen, strata)
    record = {
        "strategy": "stratified",
        "limit": limit,
        "of": len(samples),
        "stratum": strata.key,
        "strata": counts,
        "strata_in_dataset": len(strata_counts(samples, strata)),
    }
    task.metadata = {**(task.metadata or {}), SELECTION_KEY: record}
    return record
