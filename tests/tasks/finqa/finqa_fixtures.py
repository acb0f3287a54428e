"""FinQA-shaped records written by us (invented report excerpts), in the original schema."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

TABLE = [
    ["", "2020", "2019", "2018"],
    ["revenue", "$ 1,250", "$ 1000", "$ 900"],
    ["net income", "$ 300 ( 1 )", "250", "200"],
    ["headcount", "4%", "n/a", "3%"],
]
PRE_TEXT = [
    "widgetco sells widgets in three regions .",
    "the table below shows revenue and net income ( in millions ) .",
]
POST_TEXT = [
    "operating costs were $ 120 million in 2020 and $ 100 million in 2019 .",
    "( 1 ) net income in 2020 includes a one-time gain .",
]


def _record(
    n: int, question: str, program: str, exe_ans: Any, gold: dict[str, str]
) -> dict[str, Any]:
    return {
        "id": f"WDG/2020/page_{n}.pdf-1",
        "filename": f"WDG/2020/page_{n}.pdf",
        "pre_text": list(PRE_TEXT),
        "post_text": list(POST_TEXT),
        "table": copy.deepcopy(TABLE),
        "qa": {
            "question": question,
            "program": program,
            "exe_ans": exe_ans,
            "answer": str(exe_ans),
            "gold_inds": gold,
        },
    }


RECORDS = [
    _record(
        1,
        "what was the percentage change in revenue from 2019 to 2020?",
        "subtract(1250, 1000), divide(#0, 1000)",
        0.25,
        {"table_1": "the revenue of 2020 is $ 1,250 ; the revenue of 2019 is $ 1000 ;"},
    ),
    _record(
        2,
        "what was the average net income from 2018 to 2020?",
        "table_average(net income, none)",
        250.0,
        {"table_2": "the net income of 2020 is $ 300 ( 1 ) ;"},
    ),
    _record(
        3,
        "were operating costs greater in 2020 than in 2019?",
        "greater(120, 100)",
        "yes",
        {"text_2": POST_TEXT[0]},
    ),
    _record(
        4,
        "what portion of 2020 revenue was net income?",
        "divide(300, 1250)",
        0.24,
        {"table_1": "revenue", "table_2": "net income"},
    ),
]


def qa_record(name: str, question: str, program: str, exe_ans: Any) -> dict[str, Any]:
    """The first record with another id, question, gold program and answer."""
    out = copy.deepcopy(RECORDS[0])
    out["id"] = name
    out["qa"] = {**out["qa"], "question": question, "program": program, "exe_ans": exe_ans}
    return out


def write_split(
    directory: Path, split: str = "test", records: list[dict[str, Any]] | None = None
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{split}.json"
    path.write_text(json.dumps(RECORDS if records is None else records), encoding="utf-8")
    return path


def gold_output(record: dict[str, Any]) -> str:
    """A scripted model answer: the gold program and exe_ans in the CoT answer format."""
    return (
        f"Reasoning.\nProgram: {record['qa']['program']}\nFinal answer: {record['qa']['exe_ans']}"
    )


def exemplar_train_records() -> list[dict[str, Any]]:
    """A train split of invented records under the exemplar ids (no FinQA text).

    Record n (1-based, in the exemplar list's order) has the question
    ``fixture question n?``, the program ``add(n, 1)`` (exe_ans n + 1) and sentences
    and rows numbered so that every fact the exemplar shows exists.
    """
    from finmath_tasks.tasks.finqa.prompts import exemplar_specs

    records = []
    for n, spec in enumerate(exemplar_specs(), start=1):
        texts = [int(k[5:]) for k in spec.facts if k.startswith("text_")]
        rows = [int(k[6:]) for k in spec.facts if k.startswith("table_")]
        sentences = [
            f"fixture sentence {i} of record {n} ." for i in range(max(texts, default=0) + 1)
        ]
        table = [["", "fixture year"]] + [
            [f"fixture row {j}", f"{10 * j}"] for j in range(1, max(rows, default=0) + 1)
        ]
        gold = {k: f"fixture fact {k}" for k in spec.facts}
        records.append(
            {
                "id": spec.id,
                "pre_text": sentences[:1],
                "post_text": sentences[1:],
                "table": table,
                "qa": {
                    "question": f"fixture question {n}?",
                    "program": f"add({n}, 1)",
                    "exe_ans": float(n + 1),
                    "gold_inds": gold,
                },
            }
        )
    return records


def write_task_data(directory: Path, records: list[dict[str, Any]] | None = None) -> Path:
    """The test and dev splits (``records``, default RECORDS: dev is the agent solvers'
    default split) and the exemplars' train split; returns the test file."""
    write_split(directory, "train", exemplar_train_records())
    write_split(directory, "dev", records)
    return write_split(directory, "test", records)
