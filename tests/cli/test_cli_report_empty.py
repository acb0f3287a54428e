"""``finmath report`` on a folder without logs: one line, a non-zero exit, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from finmath_tasks.cli.main import main


def test_no_logs_exits_non_zero_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / "notes.txt").write_text("not a log", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["report", str(empty), "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert f"{empty}: no Inspect logs (*.eval, *.json) found; nothing written" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_missing_folder_exits_non_zero_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["report", str(tmp_path / "absent"), "--out", str(out)]) != 0
    assert not out.exists()


@pytest.mark.slow
def test_the_command_exits_non_zero(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "finmath_tasks.cli", "report", "empty", "--out", "out"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode != 0, proc.stderr
    assert "no Inspect logs" in proc.stderr
    assert not (tmp_path / "out").exists()
