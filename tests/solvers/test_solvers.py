"""The generic solvers keep what earlier solvers did and turn their own failures into results."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.solver import Generate, Solver, TaskState, chain, solver

from eval_helpers import scripted
from finmath_tasks.sandbox.client import PROGRAM_RESULT_KEY
from finmath_tasks.solvers import pot as pot_module
from finmath_tasks.solvers.cot import cot
from finmath_tasks.solvers.pot import execute_program, fenced_code


@solver
def insert_passage(text: str) -> Solver:
    """What a retrieval solver does: put a passage in front of the question."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.user_prompt.text = f"{text}\n\n{state.user_prompt.text}"
        return state

    return solve


def test_cot_keeps_the_work_of_solvers_before_it(tmp_path: Path) -> None:
    task = Task(
        dataset=MemoryDataset([Sample(input="What is 2+2?", target="4")]),
        solver=[insert_passage("Passage: 2+2=4."), cot("Think {carefully} about {final answer}.")],
    )
    [log] = eval(task, model=scripted(["4"]), log_dir=str(tmp_path), display="none")
    assert log.status == "success" and log.samples is not None
    messages = log.samples[0].messages
    assert [m.role for m in messages] == ["system", "user", "assistant"]
    assert messages[0].text == "Think {carefully} about {final answer}."  # unknown keys kept
    assert messages[1].text == "Passage: 2+2=4.\n\nWhat is 2+2?"


@pytest.mark.parametrize(
    ("output", "code", "fenced"),
    [
        ("a\n```python\nx = 1\n```\n```y```", "x = 1", True),
        ("```\nx = 2\n```", "x = 2", True),
        ("    x = 3\n```\nrest", "    x = 3\n", False),
        ("x = 4", "x = 4", False),
    ],
)
def test_fenced_code(output: str, code: str, fenced: bool) -> None:
    assert fenced_code(output) == (code, fenced)


def test_execute_program_failures_are_the_samples_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken_sandbox(*args: object, **kwargs: object) -> None:
        raise RuntimeError("sandbox exploded")

    def broken_extractor(output: str) -> str:
        raise ValueError("cannot read")

    monkeypatch.setattr(pot_module, "run_program", broken_sandbox)
    monkeypatch.setattr(pot_module, "is_unisolated", lambda env: False)
    records: list[dict] = []

    @solver
    def keep() -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            records.append(state.store.get(PROGRAM_RESULT_KEY))
            return state

        return solve

    from inspect_ai.solver import generate

    task = Task(
        dataset=MemoryDataset([Sample(id=i, input="q", target="1") for i in (1, 2)]),
        solver=chain(
            generate(),
            execute_program(),
            keep(),
            execute_program(extract=broken_extractor),
            keep(),
        ),
        sandbox="local",
    )
    [log] = eval(task, model=scripted(["```x = 1```"] * 2), log_dir=str(tmp_path), display="none")
    assert log.status == "success"
    assert len(records) == 4
    assert "sandbox exploded" in records[0]["error"] and not records[0]["ok"]
    assert records[1]["error"] == "no program found in the output"
