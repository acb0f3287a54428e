"""Issue 33 on real FinQA dev records: every agent solver and combination sends each
call as its own single-turn prompt carrying that agent's inputs (``tests/agent_calls.py``),
in a real Inspect eval of the ``finqa`` task with a scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import eval, task_with
from inspect_ai.dataset import MemoryDataset

from agent_calls import assert_calls, call_prompts, script
from eval_helpers import metrics, scripted
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.solvers.agents import AGENT_NAMES, CALCULATOR_AGENTS, UNSOURCED_KEY
from finmath_tasks.tasks.finqa import finqa
from finmath_tasks.tasks.finqa.task import ANSWER_INSTRUCTION

pytestmark = pytest.mark.realdata
BWRAP_OK, BWRAP_REASON = bwrap_available()


@pytest.mark.parametrize(
    "solver",
    [
        pytest.param(
            name,
            marks=[pytest.mark.bwrap, pytest.mark.skipif(not BWRAP_OK, reason=BWRAP_REASON)],
        )
        if name == "pot"
        else name
        for name in AGENT_NAMES
    ],
)
def test_every_agent_call_carries_its_inputs(data_dir: Path, tmp_path: Path, solver: str) -> None:
    sandbox = {"sandbox": "bwrap"} if solver == "pot" else {}
    task = finqa(split="dev", solver=solver, data_dir=str(data_dir), **sandbox)  # type: ignore[arg-type]
    samples = list(task.dataset)[:2]
    scripts = []
    for n, sample in enumerate(samples):
        assert sample.metadata is not None
        gold = str(sample.target) if solver == "critic_oracle" and n == 1 else None
        scripts.append(
            script(
                solver,
                n,
                sample.metadata["context"],
                sample.metadata["question"],
                ANSWER_INSTRUCTION,
                gold,
            )
        )
    task = task_with(task, dataset=MemoryDataset(samples))
    replies = [r for s in scripts for r in s.replies]
    [log] = eval(
        task, model=scripted(replies), max_samples=1, display="none", log_dir=str(tmp_path)
    )
    assert log.status == "success", log.error
    assert log.samples is not None
    by_id = {s.id: s for s in log.samples}
    for sample, expected in zip(samples, scripts, strict=True):
        assert_calls(call_prompts(by_id[sample.id]), expected, (solver, sample.id))
    if solver in CALCULATOR_AGENTS:
        assert metrics(log, UNSOURCED_KEY) == {"count": 1.0, "extracted": 2.0, "samples": 1.0}
    else:
        assert log.results is not None
        assert UNSOURCED_KEY not in [s.name for s in log.results.scores]
