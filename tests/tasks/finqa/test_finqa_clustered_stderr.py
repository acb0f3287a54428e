"""FinQA's stderr is clustered by annual report (the company/year of the id): a scripted
eval on two reports of three questions each, with the default and an agent solver."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from finqa_fixtures import RECORDS, gold_output, write_task_data
from inspect_ai import eval

from clustered_stderr import RIGHT, assert_clustered
from eval_helpers import scripted
from finmath_tasks.tasks.finqa import finqa

REPORTS = ["ACM/2019"] * 3 + ["WDG/2020"] * 3  # the log lists the samples by id


def records() -> list[dict]:
    out = []
    for n, report in enumerate(REPORTS):
        record = copy.deepcopy(RECORDS[0])  # gold 0.25
        record["id"] = f"{report}/page_{n}.pdf-1"
        record["filename"] = f"{report}/page_{n}.pdf"
        record["qa"]["question"] += f" ({n})"
        out.append(record)
    return out


@pytest.mark.parametrize(
    ("args", "key", "wrong"),
    [
        ({"top_k": 1}, "execution_accuracy", "Program: divide(1, 2)\nFinal answer: 0.5"),
        ({"solver": "cot"}, "rounding", '{"steps": "s", "answer": 0.5}'),
    ],
)
def test_stderr_is_clustered_by_report(tmp_path: Path, args: dict, key: str, wrong: str) -> None:
    data = records()
    write_task_data(tmp_path, data)
    right = (
        gold_output(data[0]) if key == "execution_accuracy" else '{"steps": "s", "answer": 0.25}'
    )
    [log] = eval(
        finqa(data_dir=str(tmp_path), **args),
        model=scripted([right if ok else wrong for ok in RIGHT]),
        max_samples=1,  # the scripted outputs are consumed in sample order
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert_clustered(log, key, REPORTS)
