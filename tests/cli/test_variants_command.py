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


@pytest.mark.slow
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


@pytest.mark.parametrize("content", [None, "", '{"x": ', "[]"])
def test_missing_empty_or_malformed_data_is_one_line_and_a_failure(
    tmp_path: Path, content: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "data"
    if content is not None:
        (folder / "finqa").mkdir(parents=True)
        if content:
            (folder / "finqa" / "test.json").write_text(content)
    assert main(["variants", "finqa", "--seed", "1", "--data-dir", str(folder)]) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    [line] = [x for x in err.splitlines() if x.startswith("finmath:")]
    assert str(folder) in line


@pytest.mark.slow
def test_a_split_with_no_instantiable_question_is_one_line(data_dir: Path, tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    records = json.loads((data_dir / "finqa" / "test.json").read_text())
    record = records[0]
    record["qa"]["program"] = "add(const_2, const_3)"  # reads no number of the report
    record["qa"]["exe_ans"] = 5.0
    (tmp_path / "finqa").mkdir()
    (tmp_path / "finqa" / "test.json").write_text(json.dumps([record]))
    command = [
        sys.executable, "-m", "inspect_ai", "eval", "finmath_tasks/finqa", "--model",
        "mockllm/model", "-T", "variant=fresh", "-T", "variant_seed=1", "-T",
        f"data_dir={tmp_path}", "-T", "solver=oracle", "--log-dir", str(tmp_path / "logs"),
        "--display", "plain",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert "Traceback" not in out and "dataset is empty" not in out, out[-3000:]
    assert "finqa-test fresh seed 1: none of 1 questions could be instantiated" in out
