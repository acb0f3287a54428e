"""A reader that goes away (``finmath list | head -1``) ends ``finmath`` quietly: nothing on
stderr (no BrokenPipeError traceback, not even the interpreter's "Exception ignored"), the
exit status a shell gives a command ended by SIGPIPE."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from finmath_tasks.cli.main import CLOSED_PIPE

COMMANDS = {
    "list": ["list"],
    "published": ["published"],
    "variants": ["variants", "knowledgefmath"],
    "grid --dry-run": ["grid", "sara", "--model", "mockllm/model", "--dry-run"],
}


CASES = [
    pytest.param(name, marks=pytest.mark.slow) if name in ("variants", "grid --dry-run") else name
    for name in COMMANDS
]
"""The commands that build tasks take tens of seconds here: marked slow."""


def needs_data(name: str) -> None:
    if name in ("variants", "grid --dry-run") and not os.environ.get("FINMATH_DATA_DIR"):
        pytest.skip("builds the benchmark's tasks: needs $FINMATH_DATA_DIR")


@pytest.mark.slow
@pytest.mark.parametrize("name", CASES)
def test_a_closed_pipe_ends_quietly(name: str) -> None:
    needs_data(name)
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte: every write fails
    try:
        done = subprocess.run(
            [sys.executable, "-m", "finmath_tasks.cli", *COMMANDS[name]],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write)
    assert done.stderr == ""
    assert done.returncode == CLOSED_PIPE


@pytest.mark.slow
@pytest.mark.parametrize("name", CASES)
def test_head_reads_the_first_line(name: str) -> None:
    needs_data(name)
    command = " ".join([sys.executable, "-m", "finmath_tasks.cli", *COMMANDS[name]])
    done = subprocess.run(
        ["bash", "-c", f"{command} | head -1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0
    assert len(done.stdout.splitlines()) == 1
    assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
