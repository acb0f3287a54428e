"""Killing this process's sandbox workers from outside, as an OOM killer or an operator
would: the sandbox fails, not the program it was running."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path


def _children() -> list[int]:
    me = str(os.getpid())
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:  # the parent's pid
            found.append(int(stat.parent.name))
    return found


def kill_bwrap_workers() -> int:
    """SIGKILL every bubblewrap worker this process started (each leads a session of its
    own: its whole process group goes); how many there were."""
    killed = 0
    for pid in _children():
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"bwrap" in command:
            try:
                os.killpg(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    return killed


def kill_later(seconds: float) -> threading.Timer:
    """Kill the workers in ``seconds`` (while a program runs)."""
    timer = threading.Timer(seconds, kill_bwrap_workers)
    timer.daemon = True
    timer.start()
    return timer


def kill_during_first_program(monkeypatch: object) -> list[int]:
    """Make the first program sent to a bubblewrap worker die with its worker: once the
    request is on its way, every worker is SIGKILLed from outside (this process). Returns
    a list that gets the number of workers killed."""
    import asyncio

    import pytest

    from finmath_tasks.sandbox.bwrap_worker import BwrapWorker

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    roundtrip = BwrapWorker._roundtrip
    killed: list[int] = []

    async def killing(self: BwrapWorker, payload: bytes, guard: float) -> bytes:
        answer = asyncio.ensure_future(roundtrip(self, payload, guard))
        if not killed:
            await asyncio.sleep(0.5)  # the worker has the program
            killed.append(kill_bwrap_workers())
        return await answer

    monkeypatch.setattr(BwrapWorker, "_roundtrip", killing)
    return killed
