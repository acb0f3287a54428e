"""FinQA records to samples: metadata contract, targets, local and Hub loading, errors."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from finqa_fixtures import RECORDS, write_split

from finmath_tasks.loading import DatasetError
from finmath_tasks.params import TaskParameterError
from finmath_tasks.scorers.comparisons import GOLD_WRITTEN_KEY
from finmath_tasks.tasks.finqa import finqa
from finmath_tasks.tasks.finqa.dataset import (
    DATASET_ID,
    DATASET_REVISION,
    answer_text,
    gold_as_written,
    gold_value,
    hub_records,
    load_dataset,
    record_to_sample,
    table_markdown,
)


def test_record_to_sample_keeps_raw_fields_question_and_context() -> None:
    sample = record_to_sample(copy.deepcopy(RECORDS[0]))
    assert sample.id == "WDG/2020/page_1.pdf-1"
    assert sample.input == RECORDS[0]["qa"]["question"]
    assert sample.target == "0.25"
    metadata = sample.metadata or {}
    # the agent solvers rely on exactly these two keys
    assert metadata["question"] == RECORDS[0]["qa"]["question"]
    context = metadata["context"]
    assert context.startswith("widgetco sells widgets in three regions .")
    assert (
        "|  | 2020 | 2019 | 2018 |\n|---|---|---|---|\n| revenue | $ 1,250 | $ 1000 | $ 900 |"
        in context
    )
    assert context.endswith("( 1 ) net income in 2020 includes a one-time gain .")
    assert context.index("widgetco") < context.index("| revenue") < context.index("operating costs")
    assert metadata["program"] == "subtract(1250, 1000), divide(#0, 1000)"
    assert metadata["exe_ans"] == 0.25
    assert metadata["gold_inds"] == RECORDS[0]["qa"]["gold_inds"]
    assert metadata["table"] == RECORDS[0]["table"]
    assert metadata["answer_type"] == "number"
    assert metadata["document"] == "WDG/2020"  # the stderr's cluster: the annual report


def test_yes_no_target() -> None:
    sample = record_to_sample(copy.deepcopy(RECORDS[2]))
    assert sample.target == "yes"
    assert (sample.metadata or {})["exe_ans"] == "yes"
    assert (sample.metadata or {})["answer_type"] == "yes_no"


@pytest.mark.parametrize(
    ("exe_ans", "text"),
    [
        (0.34719, "0.34719"),
        (407.0, "407"),
        (-2.4, "-2.4"),
        (1e-05, "0.00001"),
        (36003776400000.0, "36003776400000"),
        (122604300.0, "122604300"),
        (0.5619700000000001, "0.56197"),  # Arrow's JSON reader's last-bit error
        ("0.25", "0.25"),
        ("Yes", "yes"),
        ("no", "no"),
        (0, "0"),
    ],
)
def test_answer_text(exe_ans: Any, text: str) -> None:
    assert answer_text(exe_ans) == text


@pytest.mark.parametrize("bad", ["maybe", None, True, float("nan"), [1]])
def test_bad_exe_ans(bad: Any) -> None:
    with pytest.raises(ValueError, match="exe_ans"):
        gold_value(bad)


def test_markdown_table_escapes_pipes_and_pads_rows() -> None:
    assert table_markdown([["a", "b|c"], ["x"]]) == "| a | b\\|c |\n|---|---|\n| x |  |"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r["qa"].pop("program"), "missing field 'program'"),
        (lambda r: r["qa"].update(exe_ans="maybe"), "exe_ans"),
        (lambda r: r["qa"].update(gold_inds={"text_99": "x"}), "out of range"),
        (lambda r: r["qa"].update(gold_inds={"para_1": "x"}), "not text_<i> or table_<j>"),
        (lambda r: r.update(table="revenue 1250"), "table must be"),
        (lambda r: r.update(pre_text=[1, 2]), "pre_text must be"),
        (lambda r: r["qa"].update(question=" "), "question"),
    ],
)
def test_malformed_record_error_names_file_and_record(
    tmp_path: Path, change: Any, message: str
) -> None:
    records = copy.deepcopy(RECORDS)
    change(records[1])
    write_split(tmp_path, "dev", records)
    with pytest.raises(DatasetError) as info:
        load_dataset("dev", str(tmp_path))
    text = str(info.value)
    assert "dev.json" in text and "record #1" in text and "WDG/2020/page_2.pdf-1" in text
    assert message in text


def test_local_dir_directly_or_in_finqa_subfolder(tmp_path: Path, no_data_env: None) -> None:
    write_split(tmp_path / "direct", "test")
    write_split(tmp_path / "nested" / "finqa", "train")
    assert len(load_dataset("test", str(tmp_path / "direct"))) == 4
    assert len(load_dataset("train", str(tmp_path / "nested"))) == 4
    with pytest.raises(DatasetError, match=r"dev\.json"):
        load_dataset("dev", str(tmp_path / "direct"))


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    write_split(tmp_path, "test", [RECORDS[0], RECORDS[0]])
    with pytest.raises(DatasetError, match="repeats sample id"):
        load_dataset("test", str(tmp_path))


def test_hub_code_path_with_json_builder(tmp_path: Path) -> None:
    """The Hub path (datasets' json builder, through Arrow) gives the local path's samples."""
    path = write_split(tmp_path, "test")
    hub = [record_to_sample(r) for r in hub_records("test", None, "json", str(path))]
    local = list(load_dataset("test", str(tmp_path)))
    assert [(s.id, s.target, s.metadata) for s in hub] == [
        (s.id, s.target, s.metadata) for s in local
    ]


def test_hub_id_and_revision_are_pinned_side_by_side() -> None:
    assert DATASET_ID == "mihirinamdar/finqa"
    assert DATASET_REVISION is not None and len(DATASET_REVISION) == 40


def test_unreachable_hub_error_is_actionable(
    monkeypatch: pytest.MonkeyPatch, no_data_env: None
) -> None:
    import datasets

    def offline(*args: Any, **kwargs: Any) -> None:
        assert kwargs["revision"] == DATASET_REVISION
        assert kwargs["data_files"] == {"test": "test.json"}
        raise ConnectionError("Couldn't reach the Hub")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DatasetError, match="data_dir"):
        load_dataset("test", revision=DATASET_REVISION)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"split": "validation"}, "-T split='validation' is not one of train, dev, test"),
        ({"solver": "magic"}, "-T solver='magic' is not one of"),
        ({"retrieval": "dense"}, "-T retrieval='dense' is not one of bm25, gold, none"),
        ({"top_k": 0}, "-T top_k=0 must be an integer from 1 to 50"),
        ({"profile": "financemath"}, "-T profile='financemath'"),
        ({"data_dir": 2024}, "-T data_dir=2024 must be a string"),
    ],
)
def test_task_parameter_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(TaskParameterError) as info:
        finqa(**kwargs)
    assert message in str(info.value)


@pytest.mark.realdata
@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_real_files_load_identically_locally_and_through_the_hub_path(
    data_dir: Path, split: str
) -> None:
    local = list(load_dataset(split, str(data_dir)))
    path = data_dir / "finqa" / f"{split}.json"
    hub = [record_to_sample(r) for r in hub_records(split, None, "json", str(path))]
    assert len(local) == len(hub) == {"train": 100, "dev": 200, "test": 100}[split]
    assert [(s.id, s.target, s.metadata) for s in hub] == [
        (s.id, s.target, s.metadata) for s in local
    ]
    yes_no = sum(1 for s in local if s.target in ("yes", "no"))
    assert yes_no == {"train": 4, "dev": 10, "test": 2}[split]
    assert all(json.dumps(s.metadata) for s in local)


@pytest.mark.realdata
@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_gold_as_written_is_the_exe_ans_literal(data_dir: Path, split: str) -> None:
    """``rounding`` reads exe_ans's decimal places from its text in the file ("114.0")."""
    raw = json.loads((data_dir / "finqa" / f"{split}.json").read_text(), parse_float=str)
    literal = {r["id"]: r["qa"]["exe_ans"] for r in raw}
    for sample in load_dataset(split, str(data_dir)):
        assert sample.metadata is not None
        written = sample.metadata[GOLD_WRITTEN_KEY]
        if sample.target in ("yes", "no"):
            assert written is None
        else:
            assert written == literal[sample.id], sample.id


def test_gold_as_written_of_a_whole_number_keeps_its_decimal_place() -> None:
    assert gold_as_written(114.0) == "114.0"
    assert gold_as_written(0.5619700000000001) == "0.56197"  # Arrow's last bit undone
    assert gold_as_written("yes") is None


def test_a_ratio_program_or_a_percent_question_puts_a_percentage_in_play() -> None:
    from finmath_tasks.tasks.finqa.dataset import percent_in_play_of

    amount = "what is the net change in revenue?"
    assert percent_in_play_of("subtract(5829, 5735), divide(#0, 5735)", amount)  # a ratio
    assert percent_in_play_of("divide(5, 10), multiply(#0, const_100)", amount)  # a percent
    # an average over two years divides by a constant: an amount
    assert not percent_in_play_of("add(5829, 5735), divide(#0, const_2)", amount)
    assert not percent_in_play_of("subtract(5829, 5735)", amount)
    assert percent_in_play_of("subtract(5829, 5735)", "what is the growth rate of revenue?")
