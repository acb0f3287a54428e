"""Outputs that are pipes or devices: ``finmath export -o`` and ``finmath grid --plan`` write
them as streams (``-``, ``/dev/stdout``, a named pipe, ``/dev/null``), never read them to judge
whether they are logs (which blocked on a pipe and read ``/dev/full`` without end), and refuse
a socket in one line; a reader that goes away ends the command quietly. Through the real
``finmath`` command, each with a time limit (a hang fails the test instead of the suite)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval

from finmath_tasks.cli.main import CLOSED_PIPE

pytestmark = pytest.mark.slow
FINMATH = [sys.executable, "-m", "finmath_tasks.cli"]
PLAN = ["grid", "knowledgefmath", "--model", "mockllm/model", "-T", "split=demo",
        "--only", "solver=cot", "--only", "knowledge=none,oracle"]  # fmt: skip
LIMIT = 60.0


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from finmath_tasks.tasks.knowledgefmath import knowledgefmath

    folder = tmp_path_factory.mktemp("stream-logs")
    [done] = inspect_eval(
        knowledgefmath(split="demo", solver="oracle"),
        model="mockllm/model",
        display="none",
        log_dir=str(folder),
    )
    assert done.status == "success"
    return Path(done.location)


@pytest.fixture(scope="module")
def exported(log: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The export as ``-o FILE`` writes it (the streams must carry the same text)."""
    out = tmp_path_factory.mktemp("file") / "rows.json"
    done = finmath("export", str(log), "-o", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert len(json.loads(text)) == 15
    return text


def finmath(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FINMATH, *args], capture_output=True, text=True, timeout=LIMIT, **kwargs
    )  # type: ignore[call-overload, no-any-return]


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """``finmath`` writing into a pipe whose reader is gone before the first byte."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [*FINMATH, *args], stdout=write, stderr=subprocess.PIPE, text=True, timeout=LIMIT
        )
    finally:
        os.close(write)


def through_fifo(path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """``finmath`` writing into the named pipe ``path`` while a reader drains it."""
    os.mkfifo(path)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(path.read_text(encoding="utf-8")))
    reader.start()
    try:
        done = finmath(*args)
    finally:
        if reader.is_alive():  # finmath never opened it: release the reader
            with open(path, "w"):
                pass
        reader.join(timeout=LIMIT)
    return done, got[0] if got else ""


def test_export_to_the_standard_output(log: Path, exported: str) -> None:
    for target in ("-", "/dev/stdout"):
        done = finmath("export", str(log), "-o", target)
        assert done.returncode == 0, done.stderr
        assert done.stdout == exported + "\n"  # the rows alone: the summary is on stderr
        assert one_line(done.stderr) == f"wrote 15 predictions to {target}"


def test_export_to_the_standard_output_redirected_to_a_file(
    log: Path, exported: str, tmp_path: Path
) -> None:
    """``-o /dev/stdout > FILE``: the shell opened (and emptied) the file; written as the
    standard output, not refused as an existing file that is no earlier export."""
    out = tmp_path / "redirected.json"
    out.write_text("the shell empties this before finmath starts")
    with out.open("w") as stdout:
        done = subprocess.run(
            [*FINMATH, "export", str(log), "-o", "/dev/stdout"],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=LIMIT,
        )
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == exported + "\n"


def test_export_into_a_closed_pipe_ends_quietly(log: Path) -> None:
    for target in ("-", "/dev/stdout"):
        done = closed_pipe("export", str(log), "-o", target)
        assert (done.returncode, done.stderr) == (CLOSED_PIPE, "")


def test_export_piped_into_head_ends(log: Path, exported: str) -> None:
    command = " ".join([*FINMATH, "export", str(log), "-o", "/dev/stdout"])
    done = subprocess.run(
        ["bash", "-c", f'{command} | head -c 100; echo "status ${{PIPESTATUS[0]}}" >&2'],
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )
    assert done.stdout == exported[:100]
    assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] in ("status 0", f"status {CLOSED_PIPE}")


def test_export_into_a_named_pipe(log: Path, exported: str, tmp_path: Path) -> None:
    fifo = tmp_path / "rows.fifo"
    done, got = through_fifo(fifo, "export", str(log), "-o", str(fifo))
    assert done.returncode == 0, done.stderr
    assert got == exported + "\n"
    assert one_line(done.stderr) == f"wrote 15 predictions to {fifo}"


def test_export_into_devices(log: Path) -> None:
    done = finmath("export", str(log), "-o", "/dev/null")
    assert done.returncode == 0, done.stderr
    full = finmath("export", str(log), "-o", "/dev/full")
    assert full.returncode == 2
    assert one_line(full.stderr) == (
        "finmath: -o /dev/full: cannot write (No space left on device)"
    )


def test_export_refuses_a_socket_and_a_log_that_is_a_pipe(log: Path, tmp_path: Path) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = tmp_path / "out.sock"
    server.bind(str(path))
    try:
        done = finmath("export", str(log), "-o", str(path))
    finally:
        server.close()
    assert done.returncode == 2
    assert one_line(done.stderr) == (
        f"finmath: -o {path}: is a socket; give a file name, or - for the standard output"
    )
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    done = finmath("export", str(fifo), "-o", str(tmp_path / "rows.json"))
    assert done.returncode == 2
    assert one_line(done.stderr) == (
        f"finmath: {fifo}: is a pipe or a device, not an Inspect log file"
    )


def test_a_plan_on_the_standard_output_and_into_a_named_pipe(tmp_path: Path) -> None:
    logs = ["--log-dir", str(tmp_path / "logs")]
    done = finmath(*PLAN, *logs, "--plan", "-")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert "finmath_plan" in plan and len(plan["manifest"]["tasks"]) == 2
    assert "wrote the plan of 2 tasks to -" in done.stderr
    assert closed_pipe(*PLAN, *logs, "--plan", "/dev/stdout").returncode == CLOSED_PIPE
    fifo = tmp_path / "plan.fifo"
    done, got = through_fifo(fifo, *PLAN, *logs, "--plan", str(fifo))
    assert done.returncode == 0, done.stderr
    assert json.loads(got)["manifest"]["tasks"] == plan["manifest"]["tasks"]
    full = finmath(*PLAN, *logs, "--plan", "/dev/full")
    assert full.returncode == 2
    assert one_line(full.stderr) == (
        "finmath: --plan /dev/full: cannot write (No space left on device)"
    )
