"""A grid holds its log folder: a second ``finmath grid`` on the folder while the first runs
is refused in one line and calls no model, so the work is done once (counted: one model
call per sample of the grid). Workers of one plan share the folder, each holding its index. The lock is on the folder itself:
a lock file deleted, replaced or made a link while a grid runs lets no second grid in, and
nothing is written through a link the grid did not make.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli import calls_model
from finmath_tasks.cli.grid_lock import (
    LOCK_FILE,
    LogDirBusy,
    hold_log_dir,
    remote_note,
    worker_lock_file,
)

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
    with hold_log_dir(folder) as hold:
        assert hold.note == "" and hold.problem() == ""
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
    with hold_log_dir("s3://bucket/run") as hold:
        assert hold.note == remote_note("s3://bucket/run")
    assert "has no locks" in hold.note and "repeating this one's work" in hold.note


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


# --------------------------------------------------------------------------- #
# a disturbed lock: links, pipes, deleted or replaced lock files, a moved folder
# --------------------------------------------------------------------------- #


def started_running(process: subprocess.Popen[str], calls: Path) -> None:
    """Wait until ``process`` (a grid held at its first model call) has called the model."""
    deadline = time.monotonic() + 240
    while count(calls) < 1:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the grid made no model call in 240 s"
        time.sleep(0.1)


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.slow
def test_a_lock_file_that_is_a_link_is_refused_and_nothing_is_written_through_it(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    victim = tmp_path / "precious.txt"
    victim.write_text("the user's own file\n")
    (logs / LOCK_FILE).symlink_to(victim)
    calls = tmp_path / "calls"
    grid = finmath("grid", *GRID, "--log-dir", str(logs), calls=calls, home=tmp_path / "h")
    out, err = grid.communicate(timeout=300)
    assert grid.returncode == 2, (out, err)
    assert one_line(err) == (
        f"finmath: --log-dir {logs}: {LOCK_FILE} there is a symbolic link, not a lock file a "
        "grid made; nothing was written through it: remove it, then rerun"
    )
    assert victim.read_text() == "the user's own file\n"
    assert (logs / LOCK_FILE).is_symlink()
    assert count(calls) == 0 and list(logs.glob("*.eval")) == []


@pytest.mark.slow
def test_a_lock_deleted_or_replaced_while_a_grid_runs_lets_no_second_grid_in(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    first_calls, second_calls = tmp_path / "first.calls", tmp_path / "second.calls"
    command = ["grid", *GRID, "--log-dir", str(logs)]
    gate = tmp_path / "gate"
    gate.touch()
    first = finmath(*command, calls=first_calls, home=tmp_path / "one", gate=gate)
    try:
        started_running(first, first_calls)
        (logs / LOCK_FILE).unlink()  # careless hands: the hidden file looked stale
        second = finmath(*command, calls=second_calls, home=tmp_path / "two")
        out, err = second.communicate(timeout=300)
        assert second.returncode == 2, (out, err)
        assert one_line(err).startswith(
            f"finmath: --log-dir {logs}: another finmath grid is running on it"
        )
        (logs / LOCK_FILE).write_text("someone else's file\n")  # and a file put in its place
        third = finmath(*command, calls=second_calls, home=tmp_path / "two")
        out, err = third.communicate(timeout=300)
        assert third.returncode == 2, (out, err)
        assert "another finmath grid is running on it (someone else's file)" in one_line(err)
        assert count(second_calls) == 0
        assert first.poll() is None, "the first grid had ended: the test proves nothing"
    finally:
        gate.unlink()
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, (out, err)
    assert "4 of 4 tasks succeeded" in out
    assert count(first_calls) == CALLS  # the work was done once


@pytest.mark.slow
def test_a_worker_whose_lock_files_are_deleted_keeps_its_index(tmp_path: Path) -> None:
    logs, plan = tmp_path / "logs", tmp_path / "plan.json"
    calls, other_calls = tmp_path / "w.calls", tmp_path / "other.calls"
    wrote = finmath(
        "grid", *GRID, "--log-dir", str(logs), "--plan", str(plan), calls=calls,
        home=tmp_path / "p",
    )  # fmt: skip
    out, err = wrote.communicate(timeout=300)
    assert wrote.returncode == 0, (out, err)
    worker = ["grid", "--plan", str(plan), "--worker", "0", "--of", "2", "--display", "none"]
    gate = tmp_path / "gate"
    gate.touch()
    first = finmath(*worker, calls=calls, home=tmp_path / "one", gate=gate)
    try:
        started_running(first, calls)
        for lock in logs.glob(".finmath-grid*"):
            lock.unlink()
        second = finmath(*worker, calls=other_calls, home=tmp_path / "two")
        out, err = second.communicate(timeout=300)
        assert second.returncode == 2, (out, err)
        assert one_line(err).startswith(
            f"finmath: --log-dir {logs}: worker 0 of 2 is already running on it"
        )
        whole = finmath(
            "grid", *GRID, "--log-dir", str(logs), calls=other_calls, home=tmp_path / "t"
        )
        out, err = whole.communicate(timeout=300)
        assert whole.returncode == 2, (out, err)
        assert "workers of a grid plan are running on it" in one_line(err)
        assert count(other_calls) == 0
        assert first.poll() is None, "the worker had ended: the test proves nothing"
    finally:
        gate.unlink()
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, (out, err)
    assert count(calls) == CALLS // 2  # its shard: two of the four tasks


def test_a_link_pipe_or_folder_at_the_lock_is_refused_without_touching_it(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep")
    lock = folder / LOCK_FILE
    kinds = {
        "a symbolic link": lambda: lock.symlink_to(victim),
        "a pipe": lambda: os.mkfifo(lock),  # opening it to read would hang
        "a folder": lambda: lock.mkdir(),
    }
    for kind, make in kinds.items():
        make()
        refused = pytest.raises(LogDirBusy, match=f"{LOCK_FILE} there is {kind}, not a lock file")
        with refused, hold_log_dir(str(folder)):
            pass
        lock.rmdir() if kind == "a folder" else lock.unlink()
    worker_lock = folder / worker_lock_file(1, 3)
    worker_lock.symlink_to(victim)
    with pytest.raises(LogDirBusy, match="is a symbolic link"), hold_log_dir(str(folder), (1, 3)):
        pass
    assert victim.read_text() == "keep"
    with hold_log_dir(str(folder), (0, 3)), hold_log_dir(str(folder), (2, 3)):  # other indexes
        pass


def test_deleting_or_replacing_the_lock_files_lets_no_second_holder_in(tmp_path: Path) -> None:
    folder = str(tmp_path / "logs")
    with hold_log_dir(folder) as hold:
        (tmp_path / "logs" / LOCK_FILE).unlink()
        with pytest.raises(LogDirBusy, match="another finmath grid"), hold_log_dir(folder):
            pass
        (tmp_path / "logs" / LOCK_FILE).write_text("planted\n")
        with pytest.raises(LogDirBusy, match="another finmath grid"), hold_log_dir(folder, (0, 1)):
            pass
        assert hold.problem() == ""  # the folder itself was held throughout
    with hold_log_dir(folder, (0, 2)) as hold:
        (tmp_path / "logs" / worker_lock_file(0, 2)).unlink()
        refused = pytest.raises(LogDirBusy, match="worker 0 of 2 is already running")
        with refused, hold_log_dir(folder, (0, 2)):
            pass
        assert hold.problem() == ""


def test_a_folder_moved_away_while_held_is_said_at_the_end(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    with hold_log_dir(str(folder)) as hold:
        folder.rename(tmp_path / "moved")
        folder.mkdir()
        problem = hold.problem()
    assert problem == (
        f"--log-dir {folder}: the folder was moved or removed while this grid ran, so a "
        "second grid could have started on the new one; check both folders' logs"
    )
