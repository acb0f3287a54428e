"""The agents' prompts on real TAT-QA dev records: every agent solver and combination sends each
call as its own single-turn prompt carrying that agent's inputs (``tests/agent_calls.py``),
in a real Inspect eval of the ``tatqa`` task with a scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_calls import SOLVERS, check_every_call
from finmath_tasks.tasks.tatqa import tatqa
from finmath_tasks.tasks.tatqa.task import ARITHMETIC_INSTRUCTION

pytestmark = pytest.mark.realdata


@pytest.mark.slow
@pytest.mark.parametrize("solver", SOLVERS)
def test_every_agent_call_carries_its_inputs(data_dir: Path, tmp_path: Path, solver: str) -> None:
    task = tatqa(split="dev", solver=solver, data_dir=str(data_dir))  # type: ignore[arg-type]
    check_every_call(task, solver, ARITHMETIC_INSTRUCTION, tmp_path)
