"""The real TAT-QA files (../shared/data/tatqa or $FINMATH_DATA_DIR)."""

from __future__ import annotations

import json
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


@pytest.mark.slow
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


LEAKED_DOCUMENT = "3ffd9053-a45d-491c-957a-1b2fa0af0570"
LEAKED_FIGURES = ["44.1", "56.7", "70.8", "1,496.5", "1496.5", "1,202.9", "1202.9", "1,452.4"]
"""No evaluation record in a prompt: the calculator's examples and the answer-format
instruction used to carry
the figures of this dev document ("Other" and "Total sales")."""


def test_calculator_on_the_questions_whose_figures_leaked(data_dir: Path, tmp_path: Path) -> None:
    # a scripted run of the calculator with the new prompt on the two questions of the
    # document the old examples came from: the calculator corrects the first answer's
    # arithmetic, and no fixed text of ours carries that document's figures
    from inspect_ai import eval as inspect_eval

    from agent_calls import call_prompts
    from eval_helpers import metric, scripted
    from finmath_tasks.solvers.agents import prompts as P
    from finmath_tasks.tasks.tatqa import tatqa
    from finmath_tasks.tasks.tatqa.task import ARITHMETIC_INSTRUCTION

    change, percent = "eb787966-fa02-401f-bfaf-ccabf3828b23", "05b670d3-5b19-438c-873f-9bf6de29c69e"
    steps_1 = ["Other was 44.1 in 2019 and 56.7 in 2018", "44.1 - 56.7 = -12.4"]
    steps_2 = ["(44.1 - 56.7) / 56.7 * 100 = -22.22"]
    outputs = [
        json.dumps({"steps": steps_1, "answer": "-12.4"}),
        json.dumps({"answer": ["44.1-56.7=-12.4"]}),
        json.dumps({"steps": ["44.1 - 56.7 = -12.6"], "answer": "-12.6"}),
        json.dumps({"steps": steps_2, "answer": "-22.22"}),
        json.dumps({"answer": ["(44.1-56.7)/56.7*100=-22.22"]}),
        json.dumps({"steps": steps_2, "answer": "-22.22"}),
    ]
    task = tatqa(split="dev", solver="calculator", data_dir=str(data_dir))
    [log] = inspect_eval(
        task,
        model=scripted(outputs),
        sample_id=[change, percent],
        display="none",
        max_samples=1,
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    assert log.samples is not None and sorted(str(s.id) for s in log.samples) == [percent, change]
    assert metric(log, "rounding") == 1.0
    assert metric(log, "first_answer") == 0.5
    assert metric(log, "wrong_to_correct", "count") == 1
    first_replies = {change: outputs[0], percent: outputs[3]}
    for sample in log.samples:
        users = call_prompts(sample)  # each call one prompt of its own
        # the extraction reads the analyst's whole output, then our template's text only
        assert users[1] == P.extraction_prompt(first_replies[str(sample.id)])
        context = str((sample.metadata or {})["context"])
        fixed = [users[0].replace(context, ""), P.extraction_prompt(""), ARITHMETIC_INSTRUCTION]
        for text in fixed:
            for figure in LEAKED_FIGURES:
                assert figure not in text, figure
        assert (sample.metadata or {})["table_uid"] == LEAKED_DOCUMENT
