from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from inspect_ai.log import resolve_sample_attachments

from eval_helpers import metric, scripted, whole_score
from finmath_tasks.loading import DatasetError, load_hub_records, records_to_dataset
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.knowledgefmath.dataset import (
    COT_SYSTEM_PROMPT,
    load_dataset,
    record_to_sample,
    render_prompt,
)
from finmath_tasks.tasks.knowledgefmath.scoring import EXTRACTION_INSTRUCTION

# A record in the upstream schema (our own wording, not a benchmark item).
RECORD: dict[str, Any] = {
    "question_id": "validation-999",
    "question": "What is the current ratio?",
    "tables": [
        "| Item | Amount |\n|---|---|\n| Current assets | 500 |\n| Current liabilities | 250 |"
    ],
    "python_solution": "def solution():\n    return 500 / 250",
    "ground_truth": 2.0,
    "topic": "Accounting",
}


def test_record_to_sample_keeps_raw_fields_and_the_reference_prompt() -> None:
    sample = record_to_sample(RECORD)
    assert sample.id == "validation-999"
    assert sample.target == "2.0"
    assert sample.input == "What is the current ratio?"
    assert render_prompt(RECORD["question"], RECORD["tables"], "cot") == (
        "Table:\n"
        "| Item | Amount |\n|---|---|\n| Current assets | 500 |\n| Current liabilities | 250 |\n"
        "\nQuestion: What is the current ratio?\n"
        "\nWork through the question one step at a time.\n"
    )
    assert sample.metadata == {
        "question_id": "validation-999",
        "question": "What is the current ratio?",
        "tables": RECORD["tables"],
        "topic": "Accounting",
        "gold_program": RECORD["python_solution"],
        "ground_truth": 2.0,
    }


def test_record_without_tables_or_answer() -> None:
    sample = record_to_sample({**RECORD, "tables": [], "ground_truth": None, "python_solution": ""})
    assert render_prompt(RECORD["question"], [], "cot") == (
        "Question: What is the current ratio?\n\nWork through the question one step at a time.\n"
    )
    assert sample.target == ""


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ground_truth": "2.0"}, "ground_truth must be a finite number"),
        ({"ground_truth": math.nan}, "ground_truth must be a finite number"),
        ({"tables": "| a |"}, "tables must be a list"),
        ({"question": ""}, "question must be a non-empty string"),
        ({"topic": None}, "topic must be a non-empty string"),
    ],
)
def test_malformed_record_error_names_file_and_record(change: dict[str, Any], message: str) -> None:
    records = [RECORD, {**RECORD, "question_id": "validation-1000", **change}]
    with pytest.raises(DatasetError) as info:
        records_to_dataset(
            records, record_to_sample, source="x.json", name="t", id_field="question_id"
        )
    text = str(info.value)
    assert "x.json: record #1 (question_id='validation-1000')" in text
    assert message in text


def test_missing_field_and_duplicate_ids() -> None:
    broken = {k: v for k, v in RECORD.items() if k != "question"}
    with pytest.raises(DatasetError, match=r"record #0 .*missing field 'question'"):
        records_to_dataset([broken], record_to_sample, source="f", name="t", id_field="question_id")
    with pytest.raises(DatasetError, match="repeats sample id 'validation-999' of record #0"):
        records_to_dataset([RECORD, RECORD], record_to_sample, source="f", name="t")


def test_local_dir_loading_and_errors(tmp_path: Path, no_data_env: None) -> None:
    (tmp_path / "financemath").mkdir()
    (tmp_path / "financemath" / "validation.json").write_text(json.dumps([RECORD]))
    dataset = load_dataset("validation", data_dir=str(tmp_path))
    assert [s.id for s in dataset] == ["validation-999"]
    with pytest.raises(DatasetError, match=r"Data file not found: looked for .*test.json"):
        load_dataset("test", data_dir=str(tmp_path))
    (tmp_path / "test.json").write_text('[{"question_id": "t-1",')
    with pytest.raises(DatasetError, match=r"test.json: malformed JSON at line 1"):
        load_dataset("test", data_dir=str(tmp_path))
    with pytest.raises(DatasetError, match="no such directory"):
        load_dataset("validation", data_dir=str(tmp_path / "nope"))


def test_data_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "validation.json").write_text(json.dumps([RECORD]))
    monkeypatch.setenv("FINMATH_DATA_DIR", str(tmp_path))
    assert len(load_dataset("validation")) == 1


def test_hub_code_path_with_json_builder(tmp_path: Path) -> None:
    # The Hub path goes through datasets.load_dataset; the json builder exercises it offline.
    path = tmp_path / "validation.jsonl"
    path.write_text("\n".join(json.dumps({**RECORD, "question_id": f"v-{i}"}) for i in range(3)))
    records = load_hub_records("json", split="train", data_files=str(path))
    dataset = records_to_dataset(records, record_to_sample, source="hub", name="t")
    assert [s.target for s in dataset] == ["2.0"] * 3


def test_gated_hub_dataset_error_is_actionable(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    def gated(*args: Any, **kwargs: Any) -> None:
        raise datasets.exceptions.DatasetNotFoundError(
            "Dataset 'yale-nlp/FinanceMath' is a gated dataset on the Hub. You must be authenticated to access it."
        )

    monkeypatch.setattr(datasets, "load_dataset", gated)
    with pytest.raises(DatasetError, match=r"is gated: accept its terms.*HF_TOKEN.*data_dir"):
        load_hub_records("yale-nlp/FinanceMath", split="validation")


def test_unreachable_hub_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    def offline(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError(
            "Couldn't reach 'yale-nlp/FinanceMath' on the Hub (LocalEntryNotFoundError)"
        )

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DatasetError, match=r"Cannot reach the Hugging Face Hub.*FINMATH_DATA_DIR"):
        load_hub_records("yale-nlp/FinanceMath", split="validation")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"split": "train"}, "-T split='train' is not one of validation, test, demo"),
        ({"solver": "tot"}, "-T solver='tot' is not one of"),
        ({"profile": "loose"}, "-T profile='loose' is not one of tolerant, rounding, exact"),
        ({"extractor": "regex"}, "-T extractor='regex' is not one of rules, model"),
        ({"split": "test", "solver": "oracle", "data_dir": "."}, "oracle needs gold answers"),
        ({"program_repair": "yes"}, "-T program_repair='yes' must be true or false"),
        ({"data_dir": 2024}, "knowledgefmath: -T data_dir=2024 must be a string, not int"),
        ({"revision": 5}, "knowledgefmath: -T revision=5 must be a string"),
    ],
)
def test_unknown_task_parameters_are_clear_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        knowledgefmath(**kwargs)


def test_demo_split_loads_offline(monkeypatch: pytest.MonkeyPatch, no_data_env: None) -> None:
    import datasets

    def no_hub(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the demo split must not touch the Hub")

    monkeypatch.setattr(datasets, "load_dataset", no_hub)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    dataset = load_dataset("demo")
    assert 10 <= len(dataset) <= 20
    assert len({s.metadata["topic"] for s in dataset if s.metadata}) >= 5
    assert sum(1 for s in dataset if s.metadata and s.metadata["tables"]) >= 5
    assert all(s.target and s.metadata and s.metadata["gold_program"] for s in dataset)
    # (the gold programs are run against the answer key in test_knowledgefmath_pot.py)


def test_oracle_on_demo_scores_one(tmp_path: Path) -> None:
    [log] = eval(
        knowledgefmath(split="demo", solver="oracle"),
        model="mockllm/model",
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success"
    assert metric(log, "financemath") == 1.0
    assert metric(log, "tolerant") == 1.0
    assert log.results is not None and log.results.total_samples == 15


def test_cot_end_to_end_with_scripted_outputs(tmp_path: Path) -> None:
    dataset = list(load_dataset("demo"))[:6]
    golds = [float(s.target) for s in dataset]  # type: ignore[arg-type]
    outputs = [
        f"Step by step... Therefore, the answer is {golds[0]}.",  # correct everywhere
        f"Therefore, the answer is {-golds[1]}.",  # sign flip: official yes, tolerant no
        f"Therefore, the answer is {golds[2] * 10}.",  # x10: official yes, tolerant no
        f"Therefore, the answer is {golds[3]} or {golds[3] + 1}.",  # hedged: wrong everywhere
        "",  # empty output: wrong everywhere
        f"Therefore, the answer is {golds[5] * 1.01:.6f}.",  # 1% off: wrong everywhere
    ]
    task = knowledgefmath(split="demo", solver="cot")
    task.dataset = task.dataset[:6]
    [log] = eval(task, model=scripted(outputs), log_dir=str(tmp_path), display="none")
    assert log.status == "success"
    assert metric(log, "financemath") == pytest.approx(3 / 6)
    assert metric(log, "tolerant") == pytest.approx(1 / 6)
    # 2023: correct, sign flip (within 4%), 1% off (within 4%); never x10
    assert metric(log, "knowledgefmath2023") == pytest.approx(3 / 6)
    assert log.samples is not None
    first = log.samples[0]
    assert first.messages[0].role == "system" and first.messages[0].text == COT_SYSTEM_PROMPT
    assert first.messages[1].text == render_prompt(
        dataset[0].metadata["question"],  # type: ignore[index]
        dataset[0].metadata["tables"],  # type: ignore[index]
        "cot",
    )
    hedged = whole_score(log.samples[3])  # type: ignore[index]
    assert hedged.metadata is not None and hedged.metadata["method"] == "hedged"
    assert "hedged between" in (hedged.explanation or "")
    flipped = whole_score(log.samples[1])  # type: ignore[index]
    assert flipped.metadata is not None
    assert flipped.metadata["rules"] == {
        "financemath": "equal_absolute_value",
        "knowledgefmath2023": "sign ignored, within 4%",
        "tolerant": "no_match",
    }
    tenfold, one_percent = (whole_score(log.samples[i]) for i in (2, 5))
    assert tenfold.metadata is not None and one_percent.metadata is not None
    assert tenfold.metadata["rules"]["knowledgefmath2023"] == "no_match"
    assert tenfold.metadata["rules"]["financemath"] == "power_of_ten_or_sign"
    assert one_percent.metadata["rules"]["knowledgefmath2023"] == "relative_tolerance_4%"
    assert one_percent.metadata["rules"]["financemath"] == "no_match"


def test_generation_defaults_follow_paper_and_are_overridable(tmp_path: Path) -> None:
    task = knowledgefmath(split="demo", solver="oracle")
    assert (task.config.temperature, task.config.top_p, task.config.max_tokens) == (1.0, 1.0, 512)
    task.dataset = task.dataset[:1]
    [log] = eval(
        task, model="mockllm/model", log_dir=str(tmp_path), display="none", temperature=0.0
    )
    assert log.plan.config.temperature == 0.0


def test_model_extractor_uses_grader_role_and_never_guesses(tmp_path: Path) -> None:
    task = knowledgefmath(split="demo", solver="cot", extractor="model")
    task.dataset = task.dataset[:3]
    gold = [float(s.target) for s in task.dataset]  # type: ignore[arg-type]
    solver_model = scripted(["blah 1", "blah 2", "blah 3"])
    # "None" is asked again once for financemath, twice more for the 2023 reading
    grader = scripted([repr(gold[0]), "None", "none.", "None", "NONE", "I think it is about right"])
    [log] = eval(
        task,
        model=solver_model,
        model_roles={"grader": grader},
        log_dir=str(tmp_path),
        display="none",
        max_samples=1,
    )
    assert log.status == "success"
    assert log.samples is not None
    by_id = {s.id: whole_score(s) for s in log.samples}  # type: ignore[index]
    first, second, third = (by_id[s.id] for s in task.dataset)
    # execution_rate: the leaderboard's CoT rate, an extractor reply without "none"
    assert first.value == {
        "financemath": 1.0,
        "knowledgefmath2023": 1.0,
        "tolerant": 1.0,
        "execution_rate": 1.0,
    }
    # "None" on every ask: no answer, not executed
    assert second.value == {
        "financemath": 0.0,
        "knowledgefmath2023": 0.0,
        "tolerant": 0.0,
        "execution_rate": 0.0,
    }
    assert second.metadata is not None
    assert second.metadata["extractor_replies"] == ["None", "none.", "None", "NONE"]
    assert (
        second.metadata["extractor_reply"] == "none."
        and second.metadata["extractor_reply_index"] == 1
    )
    assert second.metadata["readings"]["financemath"]["reply_index"] == 1
    assert second.metadata["readings"]["knowledgefmath2023"]["reply_index"] == 3
    # unreadable by either reading: incorrect, in the denominator, flagged; but executed
    # (the leaderboard counts any reply without "none")
    assert third.value == {
        "financemath": 0.0,
        "knowledgefmath2023": 0.0,
        "tolerant": 0.0,
        "execution_rate": 1.0,
    }
    assert third.metadata is not None and third.metadata["unreadable"] is True
    assert third.metadata["not_a_float"] is True
    assert log.results is not None and log.results.scores[0].unscored_samples == 0
    assert metric(log, "tolerant") == pytest.approx(1 / 3)
    assert metric(log, "execution_rate") == pytest.approx(2 / 3)
    assert metric(log, "financemath", "unreadable") == 1
    assert metric(log, "knowledgefmath2023", "not_a_float") == 1
    # the call as the reference makes it: the instruction as a user message, the question
    # and solution as an assistant message; temperature 1.0; 16 tokens, then 8 on a re-ask
    asks = [
        e
        for sample in log.samples
        for e in resolve_sample_attachments(sample).events
        if e.event == "model" and e.role == "grader"
    ]
    assert len(asks) == 6
    for ask in asks:
        assert [m.role for m in ask.input] == ["user", "assistant"]
        assert ask.input[0].text == EXTRACTION_INSTRUCTION.strip()
        assert ask.input[1].text.startswith("Question: ")
        assert "\nSolution:\n" in ask.input[1].text
        assert (ask.config.temperature, ask.config.top_p) == (1.0, 1.0)
    assert sorted(a.config.max_tokens for a in asks) == [8, 8, 8, 16, 16, 16]


@pytest.mark.slow
@pytest.mark.realdata
def test_oracle_scores_one_on_real_validation_under_every_profile(
    data_dir: Path, tmp_path: Path
) -> None:
    for profile in ("tolerant", "rounding", "exact"):
        [log] = eval(
            knowledgefmath(
                split="validation", solver="oracle", profile=profile, data_dir=str(data_dir)
            ),
            model="mockllm/model",
            log_dir=str(tmp_path),
            display="none",
        )
        assert log.status == "success"
        assert log.results is not None and log.results.total_samples == 200
        assert metric(log, "financemath") == 1.0
        assert metric(log, profile) == 1.0


@pytest.mark.realdata
def test_test_split_is_generated_but_unscored(data_dir: Path, tmp_path: Path) -> None:
    [log] = eval(
        knowledgefmath(split="test", solver="cot", data_dir=str(data_dir)),
        model=scripted(["Therefore, the answer is 6.5."] * 5),
        log_dir=str(tmp_path),
        display="none",
        limit=5,
    )
    assert log.status == "success"
    assert log.results is not None
    assert log.results.scores[0].unscored_samples == 5
    assert log.samples is not None
    score = whole_score(log.samples[0])  # type: ignore[index]
    assert score.answer == "6.5" and score.reason == "no_gold_answer"
