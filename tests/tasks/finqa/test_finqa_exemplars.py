"""The 12 few-shot exemplars: our explanations, gold programs that execute to exe_ans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finmath_tasks.tasks.finqa.dsl import execute, same_value
from finmath_tasks.tasks.finqa.prompts import exemplar_messages, load_exemplars


def test_twelve_distinct_exemplars() -> None:
    exemplars = load_exemplars()
    assert len(exemplars) == 12
    assert len({e.id for e in exemplars}) == 12
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


@pytest.mark.parametrize("exemplar", load_exemplars(), ids=lambda e: e.id)
def test_exemplar_program_executes_to_its_answer(exemplar) -> None:  # type: ignore[no-untyped-def]
    # the stored facts suffice: table programs run on the exemplar's own rows
    result = execute(exemplar.program, exemplar.table)
    assert result.ok, result.error
    assert same_value(result.value, exemplar.exe_ans)
    answer = exemplar.assistant()
    lines = answer.splitlines()
    assert lines[-2] == f"Program: {exemplar.program}"
    assert lines[-1].startswith("Final answer: ")
    assert exemplar.user().startswith("Facts from the report:\n")
    assert exemplar.user().endswith(f"Question: {exemplar.question}")


def test_exemplar_messages_alternate() -> None:
    messages = exemplar_messages()
    assert [m.role for m in messages] == ["user", "assistant"] * 12


@pytest.mark.realdata
def test_exemplars_are_real_train_records(data_dir: Path) -> None:
    records = {
        r["id"]: r
        for r in json.loads((data_dir / "finqa" / "train.json").read_text(encoding="utf-8"))
    }
    for exemplar in load_exemplars():
        record = records[exemplar.id]
        qa = record["qa"]
        assert exemplar.question == qa["question"]
        assert exemplar.program == qa["program"]
        assert exemplar.exe_ans == qa["exe_ans"]
        result = execute(exemplar.program, record["table"])
        assert result.ok and same_value(result.value, qa["exe_ans"])
        sentences = record["pre_text"] + record["post_text"]
        for key in qa["gold_inds"]:
            kind, _, n = key.partition("_")
            if kind == "text":
                assert sentences[int(n)] in exemplar.text
            else:
                assert record["table"][int(n)] in exemplar.table
