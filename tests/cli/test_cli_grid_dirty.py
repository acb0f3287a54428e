"""`finmath grid` into a log directory that holds logs of other tasks: Inspect refuses
and names `--log-dir-allow-dirty`, which `finmath grid` accepts and passes on."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.scorer import match

from eval_helpers import scripted
from finmath_tasks.cli.main import main


def test_a_dirty_log_dir_is_refused_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = tmp_path / "logs"
    other = Task(dataset=[Sample(input="q", target="1")], scorer=match(), name="other_task")
    [log] = eval(other, model=scripted(["1"]), log_dir=str(log_dir), display="none")
    assert log.status == "success"
    argv = [
        "grid", "knowledgefmath", "--model", "mockllm/model", "--only", "solver=cot",
        "--only", "knowledge=none", "-T", "split=demo", "-T", "solver=oracle",
        "--limit", "1", "--log-dir", str(log_dir), "--display", "none",
    ]  # fmt: skip
    assert main(argv) != 0
    said = capsys.readouterr()
    assert "--log-dir-allow-dirty" in said.out + said.err
    assert main([*argv, "--log-dir-allow-dirty"]) == 0
    logs = [read_eval_log(i, header_only=True) for i in list_eval_logs(str(log_dir))]
    assert {log.eval.task for log in logs} >= {"other_task"}
    assert any(log.eval.task.endswith("knowledgefmath") and log.status == "success" for log in logs)
