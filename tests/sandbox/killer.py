"""Killing a sandbox worker from outside, as an OOM killer or an operator would: the
sandbox fails, not the program it was running."""

from __future__ import annotations

import contextlib
import os
import signal


def kill_during_first_program(monkeypatch: object, marker: bytes = b"") -> list[int]:
    """Make the first program sent to a bubblewrap worker (the first whose request holds
    ``marker``, where one is given: a model's program, not a scorer's probe of the gold)
    die with its worker: once the
    request is on its way, that worker's whole process group (it leads a session of its
    own) is SIGKILLed from outside (this process). Only that worker: the pool's other
    workers, idle or busy, live on, so exactly one program meets a dead sandbox (killing
    an idle worker too would fail whichever program is sent to it before its death is
    seen, a race that load decides). Returns a list that gets the killed worker's pid."""
    import asyncio

    import pytest

    from finmath_tasks.sandbox.bwrap_worker import BwrapWorker

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    roundtrip = BwrapWorker._roundtrip
    killed: list[int] = []

    async def killing(self: BwrapWorker, payload: bytes, guard: float) -> bytes:
        answer = asyncio.ensure_future(roundtrip(self, payload, guard))
        if not killed and marker in payload:
            pid = self.host_pid
            assert pid is not None
            killed.append(pid)
            await asyncio.sleep(0.5)  # the worker has the program
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        return await answer

    monkeypatch.setattr(BwrapWorker, "_roundtrip", killing)
    return killed
