"""`finmath variants`: the left-out list and one question side by side (real FinQA data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from finmath_tasks.cli.main import main

pytestmark = pytest.mark.realdata


def test_lists_every_left_out_question_with_its_reason(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["variants", "finqa", "--seed", "1", "--data-dir", str(data_dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = lines[0]
    assert head.startswith("finqa test fresh seed 1: ") and "of 100 instantiated" in head
    left = int(head.split(", ")[1].split()[0])
    assert len(lines) == 1 + left and all(": " in line for line in lines[1:])


def test_shows_a_question_side_by_side(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from finmath_tasks.tasks.finqa.dataset import load_dataset
    from finmath_tasks.tasks.finqa.variants import instantiate

    result = instantiate(list(load_dataset("test", str(data_dir))), 1)
    first = result.samples[0]
    argv = [
        "variants",
        "finqa",
        "--seed",
        "1",
        "--show",
        str(first.id),
        "--data-dir",
        str(data_dir),
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "original" in out and "variant" in out and "replaced: " in out
    assert " * " in out  # a changed line is marked
    assert f"gold {first.metadata['exe_ans']!r}" in out
    assert main(["variants", "sara", "--data-dir", str(data_dir)]) != 0  # no fresh variants
