"""``finmath grid --dry-run`` fails where the real grid fails: a run whose task refuses its
arguments (or data) ends the dry run with a non-zero status and that run's message, also
when the dry run counts the run from its records without the task."""

from __future__ import annotations

from pathlib import Path

import pytest

from finmath_tasks.cli.main import main as finmath

CASES = {
    # counted from the rendered prompts: the task is built anyway
    "finqa-split": ("finqa", "split=nosuch", "finqa: -T split='nosuch' is not one of"),
    # counted from the records: only building the task checks these
    "sara-budget": ("sara", "max_prompt_tokens=-1", "sara: -T max_prompt_tokens=-1 must be"),
    "knowledgefmath-top-n": (
        "knowledgefmath",
        "top_n=99",
        "knowledgefmath: -T top_n=99 must be an integer from 1 to 20",
    ),
}


@pytest.mark.realdata
@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_a_dry_run_with_an_invalid_argument_fails_as_the_grid_does(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: tuple[str, str, str]
) -> None:
    benchmark, argument, says = case
    only = {"knowledgefmath": ["--only", "knowledge=none"], "sara": ["--only", "retrieval=none"]}
    grid = [
        "grid", benchmark, "--model", "mockllm/model", "-T", argument, "--limit", "1",
        "--log-dir", str(tmp_path / "logs"), *only.get(benchmark, []),
    ]  # fmt: skip
    assert finmath([*grid, "--dry-run"]) == 2
    captured = capsys.readouterr()
    assert f"not counted: TaskParameterError: {says}" in captured.out
    [line] = captured.err.strip().splitlines()
    assert line.startswith("finmath: run 1: TaskParameterError: " + says), line
    assert line.endswith("a real grid would stop here")
    # the real grid stops on the same run, before any model call
    assert finmath(grid) == 2
    assert says in capsys.readouterr().err
    assert not list((tmp_path / "logs").glob("*.eval"))


@pytest.mark.realdata
def test_a_valid_dry_run_still_succeeds(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = ["grid", "sara", "--model", "mockllm/model", "--limit", "1", "--dry-run"]
    assert finmath([*grid, "--only", "retrieval=none"]) == 0
    assert "not counted" not in capsys.readouterr().out
