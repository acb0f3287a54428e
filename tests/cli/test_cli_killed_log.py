"""A log whose ``inspect eval`` process was killed (SIGTERM or SIGKILL) mid-run: the report
and ``finmath export --partial`` read the same samples from it and both say it is unfinished.

The eval is Inspect's own command line (``inspect eval``) in a real process, with a model
that answers after a delay so the process can be killed while samples are on disk.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log_sample_summaries

from cli import calls_model
from finmath_tasks.cli.main import main as finmath

SCRIPT = Path(calls_model.__file__)
PLANNED = 200
HELD = 4
"""Samples on disk before the process is killed (at least)."""


def killed_log(folder: Path, sig: signal.Signals) -> str:
    """Start ``inspect eval`` on 200 questions, kill it with ``sig`` once the log holds
    some samples; the log's location."""
    proc = subprocess.Popen(
        [
            sys.executable,
            str(SCRIPT),
            "inspect",
            "eval",
            "finmath_tasks/knowledgefmath",
            "--model",
            "finmath_calls/a",
            "-T",
            "solver=cot",
            "--limit",
            str(PLANNED),
            "--max-connections",
            "1",
            "--log-dir",
            str(folder),
            "--display",
            "none",
        ],
        env={**os.environ, "FINMATH_CALLS_DELAY": "0.2"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        logs = list(list_eval_logs(str(folder)))
        if logs:
            try:
                held = len(read_eval_log_sample_summaries(logs[0]))
            except Exception:
                held = 0
            if held >= HELD:
                proc.send_signal(sig)
                proc.communicate(timeout=60)
                return logs[0].name
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("no sample reached the log in 180 s")


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_report_and_export_read_the_same_samples_of_a_killed_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sig: signal.Signals
) -> None:
    if not (Path(os.environ.get("FINMATH_DATA_DIR", "")) / "financemath").is_dir():
        pytest.skip("needs the benchmark data ($FINMATH_DATA_DIR) for 200 questions")
    folder = tmp_path / "logs"
    location = killed_log(folder, sig)

    out = tmp_path / "predictions.json"
    assert finmath(["export", location, "-o", str(out)]) == 2
    refused = capsys.readouterr().err
    assert "the run did not finish (status" in refused
    held = int(re.search(r"the log holds (\d+) of 200 samples", refused).group(1))  # type: ignore[union-attr]
    assert held >= HELD
    assert finmath(["export", location, "-o", str(out), "--partial"]) == 0
    written = capsys.readouterr().out
    assert f"PARTIAL: wrote {held} of {PLANNED} samples" in written
    [partial] = tmp_path.glob(f"predictions.partial-{held}-of-{PLANNED}.json")
    assert len(json.loads(partial.read_text())) == held

    report = tmp_path / "report"
    assert finmath(["report", str(folder), "--out", str(report), "--no-plots"]) == 0
    capsys.readouterr()
    text = (report / "report.md").read_text()
    # every sample on disk was scored by the scripted model's answer: scored = held
    assert f"| {held}/{PLANNED} | UNFINISHED (" in text
    assert not re.search(rf"\b0/{PLANNED}\b", text)
    assert f"{held}/{PLANNED} samples: shown marked unfinished" in text
