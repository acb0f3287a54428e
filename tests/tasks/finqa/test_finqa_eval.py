"""End-to-end FinQA runs with scripted models: prompts, retrieval, the official metrics."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, get_args

import pytest
from finqa_fixtures import RECORDS, gold_output, write_task_data
from inspect_ai import eval

from eval_helpers import assert_readable_summary, metric, scripted
from finmath_tasks.tasks.finqa import finqa
from finmath_tasks.tasks.finqa.dataset import load_dataset
from finmath_tasks.tasks.finqa.prompts import (
    SYSTEM_PROMPT,
    exemplar_messages,
    exemplar_specs,
    load_exemplars,
)
from finmath_tasks.tasks.finqa.task import SOLVERS, SolverName

SCORER = "execution_accuracy"  # the first key: its score carries the whole metadata


def run(task: Any, outputs: list[str] | None, tmp_path: Path) -> Any:
    model = scripted(outputs) if outputs is not None else "mockllm/model"
    [log] = eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none", max_samples=1)
    assert log.status == "success", log.error
    return log


def test_solver_table_covers_the_solver_names() -> None:
    assert set(SOLVERS) == set(get_args(SolverName))


def test_oracle_scores_one(tmp_path: Path) -> None:
    write_task_data(tmp_path)
    log = run(finqa(solver="oracle", data_dir=str(tmp_path)), None, tmp_path)
    for key in ("execution_accuracy", "program_accuracy", "tolerant", "rounding"):
        assert metric(log, key) == 1.0, key
    assert metric(log, "retrieval_recall", "mean") == 1.0
    assert log.eval.metadata is not None and log.eval.metadata["uses_gold_labels"] is True


def test_rag_cot_scripted_scores_and_reasons(tmp_path: Path) -> None:
    write_task_data(tmp_path)
    outputs = [
        # gold 0.25: right program, answer as a percentage (tolerant yes, rounding no)
        "Revenue rose 250 on 1000.\nProgram: subtract(1250, 1000), divide(#0, 1000)\nFinal answer: 25%",
        # gold 250: a nested program (a parse error), the right number
        "Program: divide(subtract(750, 0), 3)\nFinal answer: 250.0",
        # gold yes: the comparison the wrong way round
        "**Program:** greater(100, 120)\n**Final answer:** No",
        # gold 0.24: no Program line and no Final answer line
        "The ratio is 300 / 1250 = 0.24.",
    ]
    log = run(finqa(data_dir=str(tmp_path), top_k=1), outputs, tmp_path)
    assert metric(log, "execution_accuracy") == 0.25
    assert metric(log, "program_accuracy") == 0.25
    assert metric(log, "tolerant") == 0.75
    assert metric(log, "rounding") == 0.5
    # top_k=1 retrieves the gold unit of the yes/no record only (see test_finqa_retrieval)
    assert metric(log, "retrieval_recall", "mean") == 0.25
    samples = log.samples
    nested = samples[1].scores[SCORER]
    assert nested.value == 0 and samples[1].scores["tolerant"].value == 1
    assert "program error" in nested.explanation and "nested call subtract(" in nested.explanation
    flipped = samples[2].scores[SCORER]
    assert flipped.metadata["executed_value"] == "no"
    assert samples[2].scores["tolerant"].value == 0 and flipped.answer == "no"
    bare = samples[3].scores[SCORER]
    assert "no 'Program:' line" in bare.explanation
    assert bare.metadata["answer_method"] == "output:last_number"


def test_rag_cot_prompt_sequence(tmp_path: Path) -> None:
    write_task_data(tmp_path, [RECORDS[0]])
    log = run(finqa(data_dir=str(tmp_path)), [gold_output(RECORDS[0])], tmp_path)
    messages = log.samples[0].messages
    assert [m.role for m in messages] == ["system"] + ["user", "assistant"] * 13
    assert messages[0].text == SYSTEM_PROMPT
    exemplars = load_exemplars(str(tmp_path))
    assert [m.text for m in messages[1:25]] == [m.text for m in exemplar_messages(exemplars)]
    # read from the train file (our fixture records), with our explanations
    first = exemplar_specs()[0]
    assert messages[1].text == (
        "Facts from the report:\n"
        f"Text:\n- fixture sentence {first.facts[0][5:]} of record 1 .\n\n"
        "Question: fixture question 1?"
    )
    assert messages[2].text == f"{first.explanation}\nProgram: add(1, 1)\nFinal answer: 2"
    assert messages[4].text.endswith("Program: add(2, 1)\nFinal answer: 3")
    assert "| fixture row 1 | 10 |" in messages[3].text
    assert messages[25].text == (
        "Facts from the report:\n"
        "Text:\n- the table below shows revenue and net income ( in millions ) .\n\n"
        "Table:\n|  | 2020 | 2019 | 2018 |\n|---|---|---|---|\n"
        "| revenue | $ 1,250 | $ 1000 | $ 900 |\n\n"
        "Question: what was the percentage change in revenue from 2019 to 2020?"
    )
    retrieval = log.samples[0].metadata["retrieval"]
    assert retrieval["retrieved"] == ["text_1", "table_1", "table_0"]
    assert retrieval["gold"] == ["table_1"] and retrieval["recall"] == 1.0
    assert metric(log, "execution_accuracy") == 1.0
    assert log.eval.metadata is not None
    assert log.eval.metadata["uses_gold_labels"] is False
    assert log.eval.sandbox is None


def test_gold_and_no_retrieval_prompts(tmp_path: Path) -> None:
    write_task_data(tmp_path, [RECORDS[2]])
    log = run(finqa(data_dir=str(tmp_path), retrieval="gold"), [gold_output(RECORDS[2])], tmp_path)
    assert log.samples[0].messages[25].text == (
        "Facts from the report:\nText:\n"
        "- operating costs were $ 120 million in 2020 and $ 100 million in 2019 .\n\n"
        "Question: were operating costs greater in 2020 than in 2019?"
    )
    assert metric(log, "tolerant") == 1.0 and metric(log, "execution_accuracy") == 1.0
    log = run(finqa(data_dir=str(tmp_path), retrieval="none"), [gold_output(RECORDS[2])], tmp_path)
    context = load_dataset("test", str(tmp_path))[0].metadata["context"]
    assert log.samples[0].messages[25].text == (
        f"Report:\n{context}\n\nQuestion: were operating costs greater in 2020 than in 2019?"
    )
    assert log.results is not None
    assert "retrieval_recall" not in {s.name for s in log.results.scores}


def test_a_sample_the_scorer_fails_on_is_that_samples_error_not_fatal(tmp_path: Path) -> None:
    records = copy.deepcopy(RECORDS[:2])
    write_task_data(tmp_path, records)
    task = finqa(data_dir=str(tmp_path))
    task.dataset[1].metadata["table"] = None  # breaks execution of this sample only
    [log] = eval(
        task,
        model=scripted([gold_output(records[0]), gold_output(records[1])]),
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_samples=1,
    )
    # a bug of ours (here: a table the executor cannot read) is the sample's error: the
    # run is not whole, and the other sample is scored (the task's continue_on_fail)
    assert log.status == "error"
    broken = log.samples[1]
    assert broken.error is not None and "TypeError" in broken.error.traceback
    assert not broken.scores
    assert metric(log, "execution_accuracy") == 1.0  # over the scored sample
    assert log.results is not None and log.results.completed_samples == 1
    # every record has an answer: no `unscored` score; errored samples are Inspect's count
    assert "unscored" not in [s.name for s in log.results.scores]
    for key in ("execution_accuracy", "program_accuracy", "tolerant"):
        [score] = [s for s in log.results.scores if s.name == key]
        assert score.unscored_samples == 0 and score.scored_samples == 1
    assert_readable_summary(log)


def _acceptance(data_dir: Path, split: str, tmp_path: Path) -> Any:
    samples = list(load_dataset(split, str(data_dir)))
    outputs = [
        f"Program: {s.metadata['program']}\nFinal answer: {s.target}"  # type: ignore[index]
        for s in samples
    ]
    return run(finqa(split=split, data_dir=str(data_dir)), outputs, tmp_path)


# Measured: the gold program as the model's answer scores 1.0 execution accuracy on each file.
@pytest.mark.slow
@pytest.mark.realdata
def test_acceptance_scripted_gold_programs_on_real_test(data_dir: Path, tmp_path: Path) -> None:
    log = _acceptance(data_dir, "test", tmp_path)
    assert metric(log, "execution_accuracy") == 1.0
    assert metric(log, "program_accuracy") == 1.0
    assert metric(log, "tolerant") == 1.0
    assert metric(log, "rounding") == 1.0
    assert metric(log, "retrieval_recall", "mean") == pytest.approx(0.64833, abs=5e-5)


@pytest.mark.realdata
@pytest.mark.slow
@pytest.mark.parametrize("split", ["train", "dev"])
def test_acceptance_scripted_gold_programs_on_real_train_and_dev(
    data_dir: Path, split: str, tmp_path: Path
) -> None:
    log = _acceptance(data_dir, split, tmp_path)
    assert metric(log, "execution_accuracy") == 1.0
    assert metric(log, "program_accuracy") == 1.0
    assert metric(log, "tolerant") == 1.0
    assert metric(log, "rounding") == 1.0
    recall = {"train": 0.54833, "dev": 0.54884}[split]
    assert metric(log, "retrieval_recall", "mean") == pytest.approx(recall, abs=5e-5)
