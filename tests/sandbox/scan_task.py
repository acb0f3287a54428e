"""One sample whose program (the file ``-T program=FILE``) runs in the eval's sandbox through
the solvers' client, ``run_program``, with ``-T timeout=`` seconds; the score's value is 1 when
the program returned 0, and its metadata holds the whole result (value, stdout, error).

Run by the tests as a real ``inspect eval tests/sandbox/scan_task.py --sandbox ...`` (in an
editable and in a wheel install), with the scanning program of ``package_scan.py``.
"""

from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Target, accuracy, scorer
from inspect_ai.solver import Generate, TaskState, solver

from finmath_tasks.sandbox.client import run_program

RESULT = "program"


@solver
def run_input(timeout: float) -> Any:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        result = await run_program(state.input_text, timeout=timeout, max_output=65536)
        state.store.set(RESULT, result.to_dict())
        return state

    return solve


@scorer(metrics=[accuracy()])
def returned_zero() -> Any:
    async def score(state: TaskState, target: Target) -> Score:
        result = state.store.get(RESULT)
        ok = bool(result["ok"]) and result["value"] == 0
        return Score(value=int(ok), answer=str(result["value"]), metadata=result)

    return score


@task
def scan(program: str, timeout: float = 120.0) -> Task:
    return Task(
        dataset=[Sample(input=Path(program).read_text(encoding="utf-8"), target="0", id="scan")],
        solver=run_input(float(timeout)),
        scorer=returned_zero(),
    )
