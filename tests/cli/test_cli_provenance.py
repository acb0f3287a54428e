"""``finmath report`` shows where each run's data came from and warns when runs of one
comparison read different data (real runs of knowledgefmath on crafted files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval

from finmath_tasks.cli.main import main
from finmath_tasks.cli.provenance import mismatches, run_data, source_text
from finmath_tasks.cli.report import read_logs

RECORD: dict[str, Any] = {
    "question_id": "validation-1",
    "question": "What is the current ratio?",
    "tables": [],
    "python_solution": "def solution():\n    return 500 / 250",
    "ground_truth": 2.0,
    "topic": "Accounting",
}


def run(folder: Path, logs: Path, ground_truth: float, model: str) -> None:
    folder.mkdir(parents=True)
    (folder / "validation.json").write_text(json.dumps([{**RECORD, "ground_truth": ground_truth}]))
    [log] = inspect_eval(
        "finmath_tasks/knowledgefmath",
        task_args={"solver": "oracle", "data_dir": str(folder)},
        model=model,
        log_dir=str(logs),
        display="none",
    )
    assert log.status == "success"


@pytest.mark.slow
def test_report_shows_each_runs_data_and_warns_when_a_comparison_read_different_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    run(tmp_path / "a", logs, 2.0, "mockllm/model")
    run(tmp_path / "b", logs, 2.0, "mockllm/other")  # the same bytes elsewhere: agrees
    found = read_logs(str(logs))
    entries = [run_data(r) for r in found.runs]
    assert {e.provenance["source"] for e in entries if e.provenance} == {"local"}
    assert len({e.provenance["fingerprint"] for e in entries if e.provenance}) == 1
    assert mismatches(entries) == []
    run(tmp_path / "c", logs, 3.0, "mockllm/third")  # another answer: other data
    out = tmp_path / "out"
    assert main(["report", str(logs), "--out", str(out), "--no-plots"]) == 0
    err = capsys.readouterr().err
    [warning] = [line for line in err.splitlines() if line.startswith("warning:")]
    assert "knowledgefmath split=validation: runs compared read different data" in warning
    assert str(tmp_path / "c") in warning and str(tmp_path / "a") in warning
    report = (out / "report.md").read_text()
    assert "## Data" in report and warning in report
    for folder in "abc":  # one row per run: its source and fingerprint
        assert f"| local {tmp_path / folder} |" in report


def test_source_text_names_each_kind_of_source() -> None:
    github = {"source": "github", "repository": "o/r", "commit": "abcdef0123", "fingerprint": "f"}
    assert source_text(github) == "github o/r@abcdef0"
    assert source_text({"source": "hub", "hub_id": "o/d", "revision": None}) == "hub o/d@main"
    assert source_text({"source": "local", "location": "/data"}) == "local /data"
    assert source_text(None).startswith("not recorded")
