"""`finmath variants mathhay` on a small release written by us: the questions left out with
the reason, one question side by side, and a run of the fresh variant through Inspect."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, get_model
from mathhay_fixtures import PAPER_RELEASE, as_v1, record, write_release

from eval_helpers import metric
from finmath_tasks.cli.main import main

pytestmark = [pytest.mark.slow, pytest.mark.bwrap]

MORE = {"2ssd": [0], "3ssd": [0], "2s2d": [0, 2], "3s2d": [0, 2]}
"""The task types the fixture's v1 verified set lacks (a v1 set has all seven), one
question each over Acme's report."""


def release(root: Path) -> Path:
    """The fixture release, its v1 verified set completed to every task type."""
    write_release(root)
    for task_type, documents in MORE.items():
        question = record(task_type, documents, f"Acme's profit ({task_type})?", 40.0, 2)
        path = root / "mathhay" / PAPER_RELEASE / f"verified_haystack_question_{task_type}.json"
        path.write_text(json.dumps(as_v1([question])))
    return root


def test_lists_the_left_out_question_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    release(tmp_path)
    assert main(["variants", "mathhay", "--seed", "1", "--data-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # v1 verified here: two sssd questions, one of each other type; the second sssd
    # question's document (Beta's) writes neither number of its solve(), 120 - 80
    assert lines == [
        "mathhay verified fresh seed 1: 7 of 8 instantiated, 1 left out",
        "  sssd-001: no literal of solve() is written in the relevant documents",
    ]


def test_shows_a_question_s_quantities_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    release(tmp_path)
    argv = ["variants", "mathhay", "--seed", "1", "--show", "sssd-000", "--data-dir", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "What was Acme's profit in 2023 in millions?" in out
    assert "[document 1] Revenue in 2023 was 120 million dollars." in out
    assert "replaced: 120 -> " in out and ", 80 -> " in out
    assert " * " in out  # the changed lines are marked
    assert "gold 40.0" in out


def test_a_fresh_run_answers_the_new_numbers(tmp_path: Path) -> None:
    """The variant's haystacks hold its documents; a model computing 120 - 80 on the
    numbers it reads scores 1, one answering the published 40 scores 0."""
    release(tmp_path)
    args = {
        "data_dir": str(tmp_path), "release": "v1", "subset": "verified", "length": 900,
        "judge": False, "variant": "fresh", "variant_seed": 1,
    }  # fmt: skip

    def reader(messages: list[Any], *_: Any) -> ModelOutput:
        import re

        prompt = messages[-1].text
        revenue = float(re.search(r"Revenue in 2023 was (\d+) million", prompt).group(1))  # type: ignore[union-attr]
        costs = float(re.search(r"Costs were (\d+) million", prompt).group(1))  # type: ignore[union-attr]
        reply = {"relevant_quantity_cells": [], "reasoning": "r", "answer": revenue - costs}
        return ModelOutput.from_content("mockllm/model", json.dumps(reply))

    def reciter(*_: Any) -> ModelOutput:
        reply = {"relevant_quantity_cells": [], "reasoning": "r", "answer": 40.0}
        return ModelOutput.from_content("mockllm/model", json.dumps(reply))

    [read] = inspect_eval(
        "finmath_tasks/mathhay", task_args={**args, "task_type": "sssd"},
        model=get_model("mockllm/model", custom_outputs=reader), display="none",
        log_dir=str(tmp_path / "logs"),
    )  # fmt: skip
    [recited] = inspect_eval(
        "finmath_tasks/mathhay", task_args={**args, "task_type": "sssd"},
        model=get_model("mockllm/model", custom_outputs=reciter), display="none",
        log_dir=str(tmp_path / "logs"),
    )  # fmt: skip
    assert read.status == recited.status == "success"
    assert read.samples is not None and len(read.samples) == 1  # sssd-001 is left out
    assert metric(read, "exact_match") == 1.0 and metric(recited, "exact_match") == 0.0
    prompt = read.samples[0].messages[0].text
    assert "Revenue in 2023 was 120 million" not in prompt
