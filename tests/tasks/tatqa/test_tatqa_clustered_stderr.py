"""TAT-QA's stderr is clustered by table: a scripted eval on two tables of three questions."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from inspect_ai import eval
from tatqa_fixtures import DOCUMENT, write_split

from clustered_stderr import RIGHT, assert_clustered
from eval_helpers import scripted
from finmath_tasks.tasks.tatqa import tatqa


def test_stderr_is_clustered_by_table(tmp_path: Path) -> None:
    question = next(q for q in DOCUMENT["questions"] if q["uid"] == "q-arith")  # gold 250
    text = question["question"]
    docs = []
    for table in ("t-1", "t-2"):
        doc = copy.deepcopy(DOCUMENT)
        doc["table"]["uid"] = table
        doc["questions"] = [  # the same question in other words (a repeat is dropped)
            {**question, "uid": f"{table}-q{i}", "order": i, "question": f"{text} ({i})"}
            for i in (1, 2, 3)
        ]
        docs.append(doc)
    write_split(tmp_path / "data", docs)
    outputs = [json.dumps({"steps": "s", "answer": 250 if ok else 7}) for ok in RIGHT]
    [log] = eval(
        tatqa(data_dir=str(tmp_path / "data")),
        model=scripted(outputs),
        max_samples=1,  # the scripted outputs are consumed in sample order
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert_clustered(log, "rounding", ["t-1"] * 3 + ["t-2"] * 3)
