"""Run a batch of benchmark programs in the sandbox outside an evaluation.

Within an evaluation, programs run in the sample's sandbox
(:func:`finmath_tasks.sandbox.client.run_program`). Some work happens before any
sample exists: a fresh variant of a question recomputes its gold by running the
question's own program on new values while the task is being built (and in the
tools that show variants). :func:`run_programs` runs such a batch on a private pool
of warm bubblewrap workers, with the same isolation as the ``finmath_bwrap``
sandbox, and returns one :class:`ProgramResult` per program, in order. Where
bubblewrap does not work it raises :class:`~finmath_tasks.errors.Unavailable` with
the reason.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from finmath_tasks.errors import Unavailable
from finmath_tasks.sandbox.protocol import (
    DEFAULT_ENTRY,
    DEFAULT_TIMEOUT,
    ProgramResult,
    parse_response,
)

EXEC_MARGIN = 10.0
"""Seconds a request may take beyond the program's own timeout (a worker's start-up)."""

__all__ = ["Runner", "in_sandbox", "run_programs"]


Runner = Callable[[Sequence[str]], Awaitable[list[ProgramResult]]]
"""Runs a batch of programs concurrently; one result per program, in order."""

T = TypeVar("T")


async def _session(
    work: Callable[[Runner], Awaitable[T]], entry: str, timeout: float, size: int
) -> T:
    from finmath_tasks.sandbox.bwrap_worker import BwrapPool

    pool = BwrapPool(size)

    async def one(code: str) -> ProgramResult:
        request = {"code": code, "entry": entry, "timeout": timeout, "max_output": 4096}
        try:
            response = await pool.run(request, timeout + EXEC_MARGIN)
        except TimeoutError:
            return ProgramResult.failure("timeout: the sandbox did not finish")
        return parse_response(json.dumps(response))

    async def run(programs: Sequence[str]) -> list[ProgramResult]:
        return list(await asyncio.gather(*(one(code) for code in programs)))

    try:
        return await work(run)
    finally:
        await pool.close()


def in_sandbox(
    work: Callable[[Runner], Awaitable[T]],
    *,
    entry: str = DEFAULT_ENTRY,
    timeout: float = DEFAULT_TIMEOUT,
    size: int = 2,
) -> T:
    """``await work(run)`` with ``run`` running batches of programs (each defining
    ``entry()``) on one pool of warm bubblewrap workers, started once for the session.

    Callable from synchronous code, whether or not an event loop is running (the session
    runs on its own loop in a worker thread)."""
    from finmath_tasks.sandbox.bwrap import bwrap_available

    ok, reason = bwrap_available()
    if not ok:
        raise Unavailable(
            "fresh variants recompute each gold by running the question's program in the "
            f"bubblewrap sandbox, which does not work here: {reason}"
        )
    with concurrent.futures.ThreadPoolExecutor(1) as executor:
        return executor.submit(asyncio.run, _session(work, entry, timeout, size)).result()


def run_programs(
    programs: Sequence[str],
    *,
    entry: str = DEFAULT_ENTRY,
    timeout: float = DEFAULT_TIMEOUT,
    size: int = 2,
) -> list[ProgramResult]:
    """Run each program in a bubblewrap sandbox (see :func:`in_sandbox`); results in order."""
    if not programs:
        return []

    async def work(run: Runner) -> list[ProgramResult]:
        return await run(programs)

    return in_sandbox(work, entry=entry, timeout=timeout, size=size)
