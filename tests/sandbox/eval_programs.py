"""An Inspect eval whose solver runs each sample's input as a program in a sandbox.

Shared by the tests of the ``local``, ``finmath_bwrap`` and ``finmath_docker``
sandboxes: ``run_program`` (the solvers' client) inside a real eval.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog
from inspect_ai.scorer import Score, Target, accuracy, scorer
from inspect_ai.solver import Generate, TaskState, solver

from finmath_tasks.sandbox.client import run_program


@solver
def execute() -> Any:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        result = await run_program(state.input_text, timeout=3.0)
        state.metadata["program"] = result.to_dict()
        return state

    return solve


@scorer(metrics=[accuracy()])
def matches(approx: bool = False) -> Any:
    """Target: a number (the program's value: equal, or ``pytest.approx`` with
    ``approx``), ``error`` (the program failed) or ``error:TEXT`` (it failed
    and the reason contains TEXT)."""

    async def score(state: TaskState, target: Target) -> Score:
        program = state.metadata["program"]
        if target.text.startswith("error"):
            _, _, text = target.text.partition(":")
            return Score(value=int(not program["ok"] and text in program["error"]))
        expected = float(target.text)
        value = program["value"]
        return Score(
            value=int(program["ok"] and value == (pytest.approx(expected) if approx else expected))
        )

    return score


def eval_programs(
    samples: list[tuple[str, str]],
    sandbox: Any,
    log_dir: Path,
    *,
    approx: bool = False,
    name: str | None = None,
) -> EvalLog:
    """Run (program, target) samples in an eval with ``sandbox``; all must score."""
    task = Task(
        dataset=[Sample(input=code, target=target) for code, target in samples],
        solver=execute(),
        scorer=matches(approx),
        sandbox=sandbox,
        name=name,
    )
    [log] = eval(task, model="mockllm/model", log_dir=str(log_dir), display="none")
    assert log.status == "success", log.error
    assert log.results is not None
    assert log.results.scores[0].metrics["accuracy"].value == 1.0
    return log
