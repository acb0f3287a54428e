"""``finmath export``, run as a user runs it (the console script's module, in a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import EvalLog

from finmath_tasks.cli.main import main


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["rows", "submission"])
def test_finmath_export_in_a_subprocess_matches_the_call(
    scripted_logs: tuple[Path, list[EvalLog]], tmp_path: Path, fmt: str
) -> None:
    _, logs = scripted_logs
    log = logs[0].location  # knowledgefmath, demo split, scripted CoT
    called, typed = tmp_path / "called.json", tmp_path / "typed.json"
    assert main(["export", log, "-o", str(called), "--format", fmt]) == 0
    command = ["export", log, "-o", str(typed), "--format", fmt]
    subprocess.run(
        [sys.executable, "-m", "finmath_tasks.cli", *command],
        check=True,
        capture_output=True,
    )
    rows = json.loads(called.read_text())
    assert rows == json.loads(typed.read_text())
    assert len(rows) == 15
    if fmt == "submission":
        assert rows[0]["question_id"] == "demo-0"


def test_worker_needs_a_plan_and_a_valid_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JOB_COMPLETION_INDEX", raising=False)
    assert main(["grid", "--worker", "0", "--of", "2"]) == 2
    assert "--worker needs --plan FILE" in capsys.readouterr().err
    assert main(["grid", "--of", "2", "--plan", "p.json"]) == 2
    assert "--of needs --worker I or $JOB_COMPLETION_INDEX" in capsys.readouterr().err
    missing = tmp_path / "missing.json"
    assert main(["grid", "--plan", str(missing), "--worker", "0", "--of", "2"]) == 2
    assert f"cannot read the plan {missing}" in capsys.readouterr().err
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"finmath_plan": 1, "options": {"benchmark": "sara"}}))
    assert main(["grid", "--plan", str(plan), "--worker", "0", "--of", "2"]) == 2
    assert "an incomplete finmath grid plan" in capsys.readouterr().err
    options = {"benchmark": "sara", "models": ["mockllm/model"], "log_dir": str(tmp_path)}
    plan.write_text(json.dumps({"finmath_plan": 1, "options": options, "manifest": {"tasks": []}}))
    assert main(["grid", "--plan", str(plan), "--worker", "2", "--of", "2"]) == 2
    assert "worker index 2 is not in 0..1" in capsys.readouterr().err
    options = {**options, "benchmark": "mathhay", "grid": "deep"}
    plan.write_text(json.dumps({"finmath_plan": 1, "options": options, "manifest": {"tasks": []}}))
    assert main(["grid", "--plan", str(plan), "--worker", "0", "--of", "2"]) == 2
    assert "names grid 'deep', which mathhay lacks" in capsys.readouterr().err
