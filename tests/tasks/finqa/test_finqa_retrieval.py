"""FinQA retrieval: units, BM25 over sentences and rows, gold facts, rendering, recall."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from finqa_fixtures import RECORDS

from finmath_tasks.tasks.finqa.dataset import load_dataset, record_to_sample
from finmath_tasks.tasks.finqa.retrieval import (
    bm25_keys,
    facts_for,
    linearise_row,
    recall,
    units,
)


def metadata(n: int) -> dict:
    return record_to_sample(copy.deepcopy(RECORDS[n])).metadata or {}


def test_units_are_finqa_keys() -> None:
    keys = [u.key for u in units(metadata(0))]
    assert keys == [
        "text_0",
        "text_1",
        "text_2",
        "text_3",
        "table_0",
        "table_1",
        "table_2",
        "table_3",
    ]


def test_row_linearised_with_column_headers() -> None:
    assert (
        linearise_row(["", "2020", "2019"], ["revenue", "$ 1,250", "$ 1000"])
        == "revenue: 2020 $ 1,250 ; 2019 $ 1000"
    )


def test_bm25_finds_the_row_and_sentence_the_question_names() -> None:
    # "revenue": the sentence announcing the table, then the revenue row
    assert bm25_keys(metadata(0), 3) == (["text_1", "table_1", "table_0"], [2.3414, 1.6035, 0.8773])
    keys, scores = bm25_keys(metadata(2), 1)
    assert keys == ["text_2"] and scores[0] > 0  # "operating costs"


def test_facts_keep_the_table_tabular_with_its_header() -> None:
    facts = facts_for(metadata(0), ["table_2", "text_2", "table_1"])
    assert facts == [
        "Text:\n- operating costs were $ 120 million in 2020 and $ 100 million in 2019 .",
        "Table:\n|  | 2020 | 2019 | 2018 |\n|---|---|---|---|\n"
        "| revenue | $ 1,250 | $ 1000 | $ 900 |\n| net income | $ 300 ( 1 ) | 250 | 200 |",
    ]
    assert facts_for(metadata(0), ["text_0"]) == [
        "Text:\n- widgetco sells widgets in three regions ."
    ]


def test_recall() -> None:
    assert recall(["table_1", "text_0"], ["table_1", "table_2"]) == 0.5
    assert recall(["text_0"], []) is None


# Measured BM25 recall@k of gold_inds on the real subsets (k = 1, 3, 5, 10).
MEASURED_RECALL = {
    "train": {1: 0.3133, 3: 0.5483, 5: 0.6483, 10: 0.7983},
    "dev": {1: 0.2781, 3: 0.5488, 5: 0.6976, 10: 0.8309},
    "test": {1: 0.4133, 3: 0.6483, 5: 0.7633, 10: 0.8633},
}


@pytest.mark.realdata
@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_bm25_recall_on_real_files(data_dir: Path, split: str) -> None:
    samples = list(load_dataset(split, str(data_dir)))
    for k, expected in MEASURED_RECALL[split].items():
        values = [
            recall(bm25_keys(s.metadata or {}, k)[0], list((s.metadata or {})["gold_inds"]))
            for s in samples
        ]
        assert all(v is not None for v in values)
        assert sum(v for v in values if v is not None) / len(values) == pytest.approx(
            expected, abs=5e-5
        )
