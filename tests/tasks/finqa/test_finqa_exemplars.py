"""The 12 few-shot exemplars: the package holds ids, facts and our explanations only; the
question, facts, program and exe_ans are read from the train split at task build time."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import datasets
import pytest
from finqa_fixtures import RECORDS, exemplar_train_records, write_split, write_task_data

from finmath_tasks.loading import DatasetError
from finmath_tasks.tasks.finqa import finqa
from finmath_tasks.tasks.finqa.dataset import load_dataset
from finmath_tasks.tasks.finqa.dsl import execute, same_value
from finmath_tasks.tasks.finqa.prompts import (
    exemplar_messages,
    exemplar_specs,
    exemplars_file,
    load_exemplars,
)


def test_the_package_ships_only_ids_facts_and_our_explanations() -> None:
    raw = json.loads(exemplars_file().read_text(encoding="utf-8"))
    assert len(raw) == 12
    for item in raw:
        assert set(item) == {"id", "facts", "explanation"}
        assert item["facts"] and all(k.startswith(("text_", "table_")) for k in item["facts"])
        assert item["explanation"].strip()
    assert len({s.id for s in exemplar_specs()}) == 12


def test_exemplars_are_built_from_the_train_file(tmp_path: Path) -> None:
    write_split(tmp_path, "train", exemplar_train_records())
    exemplars = load_exemplars(str(tmp_path))
    assert [e.id for e in exemplars] == [s.id for s in exemplar_specs()]
    for n, (exemplar, spec) in enumerate(zip(exemplars, exemplar_specs(), strict=True), 1):
        assert exemplar.question == f"fixture question {n}?"
        assert exemplar.program == f"add({n}, 1)" and exemplar.exe_ans == n + 1
        assert exemplar.explanation == spec.explanation
        assert exemplar.user().startswith("Facts from the report:\n")
        assert exemplar.user().endswith(f"Question: fixture question {n}?")
        lines = exemplar.assistant().splitlines()
        assert lines[-2:] == [f"Program: add({n}, 1)", f"Final answer: {n + 1}"]
        shown = [k for k in spec.facts if k.startswith("text_")]
        assert exemplar.text == [f"fixture sentence {k[5:]} of record {n} ." for k in shown]
        rows = [k for k in spec.facts if k.startswith("table_")]
        assert exemplar.table == (
            [["", "fixture year"]] + [[f"fixture row {k[6:]}", f"{10 * int(k[6:])}"] for k in rows]
            if rows
            else []
        )
    messages = exemplar_messages(exemplars)
    assert [m.role for m in messages] == ["user", "assistant"] * 12


def test_a_train_file_without_an_exemplar_id_is_an_error_naming_it(tmp_path: Path) -> None:
    records = exemplar_train_records()
    missing = records.pop(3)["id"]
    write_split(tmp_path, "train", records)
    with pytest.raises(DatasetError) as info:
        load_exemplars(str(tmp_path))
    text = str(info.value)
    assert repr(missing) in text and "train.json" in text and "-T data_dir=" in text
    assert sum(repr(r["id"]) in text for r in records) == 0  # only the missing one
    write_split(tmp_path, "test")
    with pytest.raises(DatasetError, match="no record with id"):
        finqa(data_dir=str(tmp_path))


def test_a_fact_outside_the_record_is_an_error(tmp_path: Path) -> None:
    records = exemplar_train_records()
    records[0]["pre_text"], records[0]["post_text"] = ["one sentence ."], []
    records[0]["qa"]["gold_inds"] = {}
    write_split(tmp_path, "train", records)
    spec = exemplar_specs()[0]
    with pytest.raises(DatasetError) as info:
        load_exemplars(str(tmp_path))
    assert repr(spec.id) in str(info.value) and repr(spec.facts[0]) in str(info.value)


def test_without_a_train_file_rag_cot_says_what_to_supply(
    tmp_path: Path, no_data_env: None
) -> None:
    write_split(tmp_path, "test")
    for solver in ("rag_cot", "oracle"):
        with pytest.raises(DatasetError) as info:
            finqa(data_dir=str(tmp_path), solver=solver)
        text = str(info.value)
        assert "solver=rag_cot needs FinQA's train split" in text
        assert "-T data_dir=<directory holding train.json" in text
        assert str(tmp_path / "train.json") in text
    # the agent solvers show no exemplars: the split's file alone suffices
    assert len(finqa(data_dir=str(tmp_path), solver="cot", split="test").dataset) == len(RECORDS)


def test_exemplars_through_the_hub_code_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_data_env: None
) -> None:
    """No data_dir: the train split comes from the Hub copy (datasets' json builder here)."""
    train = write_split(tmp_path / "hub", "train", exemplar_train_records())
    real_load = datasets.load_dataset
    calls: list[dict[str, Any]] = []

    def hub(path: str, **kwargs: Any) -> Any:
        calls.append({"path": path, **kwargs})
        split = kwargs["split"]
        return real_load("json", data_files={split: str(train)}, split=split)

    monkeypatch.setattr(datasets, "load_dataset", hub)
    exemplars = load_exemplars(None, "abc123")
    assert [c["data_files"] for c in calls] == [{"train": "train.json"}]
    assert calls[0]["path"] == "mihirinamdar/finqa" and calls[0]["revision"] == "abc123"
    local = load_exemplars(str(tmp_path / "hub"))
    assert [(e.user(), e.assistant()) for e in exemplars] == [
        (e.user(), e.assistant()) for e in local
    ]


def test_unreachable_hub_for_the_train_split_is_actionable(
    monkeypatch: pytest.MonkeyPatch, no_data_env: None
) -> None:
    def offline(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("Couldn't reach the Hub")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DatasetError) as info:
        load_exemplars(revision="main")
    assert "needs FinQA's train split" in str(info.value)
    assert "Couldn't reach the Hub" in str(info.value)
    # the default, the authors' files (the suite's mirror does not answer)
    with pytest.raises(DatasetError) as info:
        load_exemplars()
    assert "needs FinQA's train split" in str(info.value)
    assert "cannot download dataset/train.json from http://127.0.0.1:9/" in str(info.value)


def test_on_the_train_split_the_task_reads_the_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_task_data(tmp_path)
    records = exemplar_train_records() + copy.deepcopy(RECORDS)
    write_split(tmp_path, "train", records)
    import finmath_tasks.tasks.finqa.dataset as dataset_module

    reads: list[str] = []
    real_read = dataset_module.json_file_dataset

    def counting(path: Path, *args: Any, **kwargs: Any) -> Any:
        reads.append(path.name)
        return real_read(path, *args, **kwargs)

    monkeypatch.setattr(dataset_module, "json_file_dataset", counting)
    task = finqa(data_dir=str(tmp_path), split="train")
    assert reads == ["train.json"]
    assert len(task.dataset) == 16
    task = finqa(data_dir=str(tmp_path), split="test")
    assert reads == ["train.json", "test.json", "train.json"]
    task = finqa(data_dir=str(tmp_path), split="test", solver="cot")
    assert reads[3:] == ["test.json"]


@pytest.mark.realdata
def test_real_exemplars_cover_the_dsl(data_dir: Path) -> None:
    exemplars = load_exemplars(str(data_dir))
    assert len(exemplars) == 12
    ops = " ".join(e.program for e in exemplars)
    for op in (
        "add",
        "subtract",
        "multiply",
        "divide",
        "greater",
        "table_average",
        "table_max",
        "table_min",
    ):
        assert f"{op}(" in ops
    assert {e.exe_ans for e in exemplars} >= {"yes", "no"}
    assert "#0" in ops and "const_" in ops


@pytest.mark.realdata
@pytest.mark.parametrize("spec", exemplar_specs(), ids=lambda s: s.id)
def test_real_exemplar_program_executes_to_its_exe_ans(spec: Any, data_dir: Path) -> None:
    records = {s.id: s for s in load_dataset("train", str(data_dir))}
    sample = records[spec.id]
    metadata = sample.metadata or {}
    [exemplar] = [e for e in load_exemplars(str(data_dir)) if e.id == spec.id]
    # on the record's whole table, and on the rows the exemplar shows
    for table in (metadata["table"], exemplar.table):
        result = execute(exemplar.program, table)
        assert result.ok, result.error
        assert same_value(result.value, metadata["exe_ans"])
    assert exemplar.program == metadata["program"]
    assert exemplar.question == metadata["question"]
    # the facts shown are the record's gold facts
    assert sorted(spec.facts) == sorted(metadata["gold_inds"])
    lines = exemplar.assistant().splitlines()
    assert lines[-2] == f"Program: {exemplar.program}"
    assert lines[-1].startswith("Final answer: ")
    assert exemplar.user().endswith(f"Question: {exemplar.question}")
