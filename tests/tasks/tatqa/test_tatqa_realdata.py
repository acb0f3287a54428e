"""The real TAT-QA files (../shared/data/tatqa or $FINMATH_DATA_DIR)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from inspect_ai.model import ModelName
from inspect_ai.scorer import Target
from inspect_ai.solver import TaskState

from finmath_tasks.solvers.agents import gold_kind
from finmath_tasks.tasks.tatqa.dataset import PAPER_DEV_NUMERICAL_QUESTIONS, load_dataset
from finmath_tasks.tasks.tatqa.scoring import official_check
from finmath_tasks.tasks.tatqa.task import oracle_answer

pytestmark = pytest.mark.realdata

# questions per split and subset; the files hold 278 / 277 documents
COUNTS = {
    ("dev", "arithmetic"): 717,  # the agents paper's 717 (718 arithmetic, one duplicate)
    ("dev", "all"): 1668,
    ("test", "arithmetic"): 699,
    ("test", "all"): 1663,
}


@pytest.mark.parametrize(("split", "subset"), list(COUNTS))
def test_question_counts(data_dir: Path, split: str, subset: str) -> None:
    dataset = load_dataset(split, subset, data_dir)
    assert len(dataset) == COUNTS[(split, subset)]
    assert all(s.metadata and s.metadata["context"] and s.metadata["question"] for s in dataset)


def test_answer_types_and_int_float_split(data_dir: Path) -> None:
    dev = load_dataset("dev", "all", data_dir)
    types = Counter(s.metadata["answer_type"] for s in dev)  # type: ignore[index]
    assert types == {"arithmetic": 718, "span": 701, "multi-span": 217, "count": 32}
    arithmetic = load_dataset("dev", "arithmetic", data_dir)
    kinds = Counter(gold_kind(str(s.target)) for s in arithmetic)
    assert kinds == {"float": 402, "integer": 315}
    test_kinds = Counter(
        gold_kind(str(s.target)) for s in load_dataset("test", "arithmetic", data_dir)
    )
    assert test_kinds == {"float": 398, "integer": 301}


@pytest.mark.parametrize("split", ["dev", "test"])
def test_the_gold_written_as_instructed_scores_em_one(data_dir: Path, split: str) -> None:
    # the official EM/F1 implementation accepts every gold answer written the way the
    # models are asked to write it (scale word or % in the text)
    failures = []
    for sample in load_dataset(split, "all", data_dir):
        state = TaskState(
            model=ModelName("mockllm/model"),
            sample_id=sample.id,
            epoch=1,
            input=sample.input,
            messages=[],
            target=Target(sample.target),
            metadata=sample.metadata,
        )
        check = official_check(oracle_answer(state.metadata, "all", state.target.text), state)
        if check.values != {"em": 1.0, "f1": 1.0}:
            failures.append((sample.id, check.explanation))
    assert failures == []


def test_the_numerical_subset_is_the_papers_717(data_dir: Path) -> None:
    # appendix B of the agents paper: 717 numerical dev questions. The file has 718
    # arithmetic questions; one repeats another of the same document word for word with
    # the same answer, and only the first of the two is kept.
    dev = load_dataset("dev", "arithmetic", data_dir)
    assert len(dev) == PAPER_DEV_NUMERICAL_QUESTIONS == 717
    ids = {str(s.id) for s in dev}
    assert "61c7a52b-6849-4e09-84e4-a5020e51c744" in ids
    assert "a6dca142-4691-4a05-9c78-9087cdc491f6" not in ids
    every = load_dataset("dev", "all", data_dir)
    assert {str(s.id) for s in every} >= ids | {"a6dca142-4691-4a05-9c78-9087cdc491f6"}
