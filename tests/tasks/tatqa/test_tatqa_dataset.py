from __future__ import annotations

import json
from pathlib import Path

import pytest
from tatqa_fixtures import DOCUMENT, document, write_split

from finmath_tasks.loading import DatasetError
from finmath_tasks.params import TaskParameterError
from finmath_tasks.tasks.tatqa import tatqa
from finmath_tasks.tasks.tatqa.dataset import (
    hub_records,
    load_dataset,
    records_to_samples,
    render_context,
    table_markdown,
)

CONTEXT = (
    "Widget Co. sells widgets and gadgets.\n\n"
    "Amounts are in millions.\n\n"
    "Table:\n"
    "|  | 2021 | 2020 |\n"
    "|---|---|---|\n"
    "| Revenue | $ 1,250.0 | $ 1,000.0 |\n"
    "| Costs \\| other | (300.5) | 250.0 |\n"
    "| Units |  |  |"
)


def test_context_is_paragraphs_in_order_then_the_table() -> None:
    assert render_context(DOCUMENT) == CONTEXT
    assert table_markdown([]) == ""
    assert render_context(document(table={"uid": "x", "table": []})) == (
        "Widget Co. sells widgets and gadgets.\n\nAmounts are in millions."
    )


def test_arithmetic_subset_and_samples() -> None:
    dataset = records_to_samples([DOCUMENT], "arithmetic", "f.json")
    assert [s.id for s in dataset] == ["q-arith", "q-pct"]
    first = dataset[0]
    assert first.input == "What is the change in revenue?"
    assert first.target == "250"
    assert dataset[1].target == "25"
    assert first.metadata == {
        "question": "What is the change in revenue?",
        "context": CONTEXT,
        "answer": 250.0,
        "answer_type": "arithmetic",
        "answer_from": "table",
        "scale": "million",
        "derivation": "1,250.0 - 1,000.0",
        "table_uid": "t-1",
        "document": "t-1",  # the stderr's cluster: the questions on one table
        "gold_as_written": "250",
        # a money scale says the gold is an amount: tolerant never reads it as a percent
        "percent_in_play": False,
        # the document's parts in the context's order (what a fresh variant rewrites)
        "paragraphs": ["Widget Co. sells widgets and gadgets.", "Amounts are in millions."],
        "table": DOCUMENT["table"]["table"],
    }


def test_all_questions() -> None:
    dataset = records_to_samples([DOCUMENT], "all", "f.json")
    assert [s.id for s in dataset] == ["q-arith", "q-pct", "q-span", "q-count"]
    assert dataset[2].target == ["widgets", "gadgets"]
    assert dataset[3].target == "2"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"answer_type": "table"}, "answer_type 'table' is not one of"),
        ({"scale": "lakh"}, "scale 'lakh' is not one of"),
        ({"question": ""}, "question must be a non-empty string"),
        ({"answer": "twelve", "answer_type": "count"}, "must be a number"),
        ({"answer": "x", "answer_type": "span"}, "must be a list of strings"),
    ],
)
def test_malformed_question_names_file_and_question(
    change: dict[str, object], message: str
) -> None:
    doc = document()
    doc["questions"][3].update(change)
    with pytest.raises(DatasetError) as info:
        records_to_samples([doc], "all", "f.json")
    assert "f.json: record #3 (uid='q-count')" in str(info.value)
    assert message in str(info.value)


def test_malformed_document() -> None:
    with pytest.raises(DatasetError, match=r"f.json: document #0 .*missing field 'questions'"):
        records_to_samples([{"table": {"uid": "t"}}], "all", "f.json")
    with pytest.raises(DatasetError, match=r"table\.table must be a list of rows"):
        records_to_samples([document(table={"uid": "t", "table": "x"})], "all", "f.json")


def test_local_directory_and_subfolder(tmp_path: Path, no_data_env: None) -> None:
    write_split(tmp_path / "tatqa", [DOCUMENT])
    assert len(load_dataset("dev", "arithmetic", tmp_path)) == 2
    write_split(tmp_path / "flat", [DOCUMENT], "tatqa_dataset_test_gold.json")
    assert len(load_dataset("test", "all", tmp_path / "flat")) == 4
    with pytest.raises(DatasetError, match=r"looked for .*tatqa_dataset_test_gold.json"):
        load_dataset("test", "all", tmp_path)
    with pytest.raises(DatasetError, match="-T split='train' is not one of dev, test"):
        load_dataset("train", "all", tmp_path)


def test_hub_code_path_gives_the_same_samples(tmp_path: Path) -> None:
    # the Hub path reads the upstream JSON file with datasets; the json builder runs it offline
    second = document(table={"uid": "t-2", "table": [["a"]]})
    for question in second["questions"]:
        question["uid"] += "-2"
    path = write_split(tmp_path, [DOCUMENT, second])
    records = hub_records("dev", None, hub_id="json", data_file=str(path))
    via_hub = records_to_samples(records, "all", "hub")
    local = records_to_samples(json.loads(path.read_text()), "all", "local")
    assert [(s.id, s.target, s.metadata) for s in via_hub] == [
        (s.id, s.target, s.metadata) for s in local
    ]
    assert len(via_hub) == 8


def test_task_parameters_are_checked(tmp_path: Path) -> None:
    write_split(tmp_path, [DOCUMENT])
    with pytest.raises(
        TaskParameterError, match="-T subset='numeric' is not one of arithmetic, all"
    ):
        tatqa(subset="numeric", data_dir=str(tmp_path))  # type: ignore[arg-type]
    with pytest.raises(TaskParameterError, match="-T solver='debate' is not one of"):
        tatqa(solver="debate", data_dir=str(tmp_path))  # type: ignore[arg-type]
    task = tatqa(data_dir=str(tmp_path), solver="critic_oracle")
    assert task.metadata is not None and task.metadata["uses_gold_labels"] is True
    assert tatqa(data_dir=str(tmp_path)).metadata["uses_gold_labels"] is False  # type: ignore[index]


def test_the_scale_says_whether_a_percentage_is_in_play() -> None:
    from finmath_tasks.tasks.tatqa.dataset import _percent_in_play

    assert _percent_in_play("percent") == {"percent_in_play": True}
    assert _percent_in_play("million") == {"percent_in_play": False}
    assert _percent_in_play("") == {}  # the question's words decide
