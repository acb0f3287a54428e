"""A grid holds its log folder: a second ``finmath grid`` on the folder while the first runs
is refused in one line and calls no model, so the work is done once (counted: one model
call per sample of the grid). Workers of one plan share the folder, each holding its index.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli import calls_model
from finmath_tasks.cli.grid_lock import LOCK_FILE, LogDirBusy, hold_log_dir, remote_note

SCRIPT = Path(calls_model.__file__)
LIMIT = 4
GRID = [
    "knowledgefmath", "--model", "finmath_calls/a", "--model", "finmath_calls/b",
    "-T", "split=demo", "--only", "solver=cot", "--only", "knowledge=none,oracle",
    "--limit", str(LIMIT), "--max-samples", "1", "--display", "none",
]  # fmt: skip
CALLS = 2 * 2 * LIMIT
"""Two models x two runs x LIMIT samples, one generation each (zero-shot CoT)."""


def finmath(*args: str, calls: Path, home: Path, gate: Path | None = None) -> subprocess.Popen[str]:
    """``finmath`` in its own process, counting its model calls into ``calls`` (its model
    waits at each call while the file ``gate`` exists)."""
    home.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), *args],
        env={
            **os.environ,
            "FINMATH_CALLS_FILE": str(calls),
            "FINMATH_CALLS_GATE": str(gate or ""),
            "XDG_DATA_HOME": str(home),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def count(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.slow
def test_a_second_grid_on_the_folder_is_refused_and_the_work_is_done_once(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    first_calls, second_calls = tmp_path / "first.calls", tmp_path / "second.calls"
    command = ["grid", *GRID, "--log-dir", str(logs)]
    gate = tmp_path / "gate"
    gate.touch()  # the first grid's model waits at its first call until the second has ended
    first = finmath(*command, calls=first_calls, home=tmp_path / "one", gate=gate)
    deadline = time.monotonic() + 240
    while count(first_calls) < 1:  # the first grid is running: it has called the model
        assert first.poll() is None, first.communicate()
        assert time.monotonic() < deadline, "the first grid made no model call in 240 s"
        time.sleep(0.1)
    second = finmath(*command, calls=second_calls, home=tmp_path / "two")
    try:
        out, err = second.communicate(timeout=300)
    finally:
        gate.unlink()
    assert second.returncode == 2, (out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"finmath: --log-dir {logs}: another finmath grid is running")
    assert f"(finmath grid, pid {first.pid} on " in lines[0]
    assert count(second_calls) == 0
    assert first.poll() is None, "the first grid had ended: the test proves nothing"

    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, (out, err)
    assert "4 of 4 tasks succeeded" in out
    assert count(first_calls) == CALLS
    assert len(list(logs.glob("*.eval"))) == 4

    # once the first has ended, the same command resumes: nothing left to do, no call
    again = finmath(*command, calls=second_calls, home=tmp_path / "two")
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, (out, err)
    assert "4 of 4 tasks succeeded" in out
    assert count(second_calls) == 0
    assert len(list(logs.glob("*.eval"))) == 4


def test_the_lock_is_shared_by_workers_and_held_alone_by_a_grid(tmp_path: Path) -> None:
    folder = str(tmp_path / "logs")
    with hold_log_dir(folder) as note:
        assert note == ""
        assert (tmp_path / "logs" / LOCK_FILE).is_file()
        with (
            pytest.raises(LogDirBusy, match="another finmath grid is running on it"),
            hold_log_dir(folder),
        ):
            pass
        with (
            pytest.raises(LogDirBusy, match="another finmath grid is running on it"),
            hold_log_dir(folder, (0, 2)),
        ):
            pass
    with hold_log_dir(folder, (0, 2)), hold_log_dir(folder, (1, 2)):
        with (
            pytest.raises(LogDirBusy, match="worker 0 of 2 is already running on it"),
            hold_log_dir(folder, (0, 2)),
        ):
            pass
        with (
            pytest.raises(LogDirBusy, match="workers of a grid plan are running on it"),
            hold_log_dir(folder),
        ):
            pass
    with hold_log_dir(folder):  # released when the holders end
        pass


def test_a_remote_folder_says_it_is_not_locked() -> None:
    with hold_log_dir("s3://bucket/run") as note:
        assert note == remote_note("s3://bucket/run")
    assert "has no locks" in note and "repeating this one's work" in note


def test_a_lock_held_by_a_killed_process_is_released(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    code = (
        "import sys, time\n"
        "from finmath_tasks.cli.grid_lock import hold_log_dir\n"
        f"with hold_log_dir({str(folder)!r}):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(600)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(LogDirBusy, match=f"pid {holder.pid} on "), hold_log_dir(str(folder)):
            pass
    finally:
        holder.kill()
        holder.wait(timeout=60)
    with hold_log_dir(str(folder)):  # a SIGKILL leaves no stale lock
        pass
