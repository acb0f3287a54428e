"""toyfin: a template benchmark of our own (its data is package data only).

``tests/test_new_benchmark.py`` copies this folder into a copy of the package as
``tasks/toyfin/`` and shows that the shared checks cover it with no list edited. It is
also the smallest example of what a benchmark folder holds: the ``@task`` (this file),
``dataset.py``, ``eval.yaml`` and ``README.md``.

    inspect eval finmath_tasks/toyfin --model mockllm/model
"""

# ruff: noqa: I001 (outside the package ruff sorts finmath_tasks.tasks.toyfin as another party)

from __future__ import annotations

from typing import Literal

from inspect_ai import Task, task

from finmath_tasks import params
from finmath_tasks.loading import PROVENANCE_KEY, dataset_provenance
from finmath_tasks.scorers.comparisons import COMPARISONS
from finmath_tasks.scorers.keyed import Scoring, keyed_scorers, scoring
from finmath_tasks.scorers.metrics import accuracy_metrics
from finmath_tasks.scorers.numeric import numeric_answer
from finmath_tasks.solvers.cot import cot
from finmath_tasks.tasks.toyfin.dataset import SYSTEM_PROMPT, Split, load_dataset

NAME = "toyfin"
TASK_VERSION = "1.0.0"
Profile = Literal["tolerant", "rounding", "exact"]
APPLIES: dict[str, params.Applies] = {}
"""Every setting is read whatever the others: nothing to refuse."""


@scoring(NAME, tuple(COMPARISONS))
def toyfin_scoring(profile: str = "tolerant") -> Scoring:
    """The final number of the reply under ``profile``, with accuracy and stderr."""
    comparison = {profile: COMPARISONS[profile]}
    return Scoring(numeric_answer(comparisons=comparison), accuracy_metrics([profile]))


@task
def toyfin(split: Split = "demo", profile: Profile = "tolerant") -> Task:
    """Chain of thought on toyfin's questions, scored by ``profile``."""
    params.choice(NAME, "split", split, Split)
    params.choice(NAME, "profile", profile, Profile)
    dataset = load_dataset(split)
    return Task(
        dataset=dataset,
        solver=cot(SYSTEM_PROMPT),
        scorer=keyed_scorers(NAME, count_unscored=False, profile=profile),
        version=TASK_VERSION,
        continue_on_fail=True,
        metadata={"benchmark": NAME, "split": split, PROVENANCE_KEY: dataset_provenance(dataset)},
    )
