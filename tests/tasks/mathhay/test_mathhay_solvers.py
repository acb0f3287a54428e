"""The task's own solvers on their own: ``mathhay_haystack`` (the evaluation's haystack),
and the construction pipeline's ``answer_and_record`` and ``quality_control`` (each
call's record checkpointed as it finishes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.util import SandboxEnvironmentSpec
from mathhay_fixtures import RELEASE, RELEVANT, write_release

from eval_helpers import scripted, solve, state_of
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.tasks.mathhay.build.calls import (
    Checkpoint,
    answer_and_record,
    parsed,
    read_checkpoint,
)
from finmath_tasks.tasks.mathhay.build.qc import QC_ROLE, consistent, quality_control
from finmath_tasks.tasks.mathhay.build.replies import ReplyError
from finmath_tasks.tasks.mathhay.dataset import load_data
from finmath_tasks.tasks.mathhay.scoring import HAYSTACK_KEY
from finmath_tasks.tasks.mathhay.task import expand, mathhay_haystack, token_pool

BWRAP_OK, BWRAP_REASON = bwrap_available()


def haystack_states(tmp_path: Path, length: int) -> tuple[Any, list[Any]]:
    write_release(tmp_path)
    data = load_data(str(tmp_path), RELEASE, "full", ["sssd"])
    samples = list(expand(data.dataset, [length], [None]))
    return mathhay_haystack(data, token_pool(data)), [state_of(s) for s in samples]


def test_the_haystack_holds_the_questions_document(tmp_path: Path) -> None:
    solver, states = haystack_states(tmp_path, 1200)
    state = solve(solver, states[0])
    [turn] = state.messages
    assert turn.role == "user"
    assert RELEVANT[0] in turn.text and str(state.input) in turn.text
    assert "Pool document" in turn.text  # irrelevant documents around it
    built = state.store.get(HAYSTACK_KEY)
    assert built["prompt_tokens"] > 0 and built["relevant_tokens"] > 0
    assert not built["too_short"]


def test_a_haystack_that_cannot_be_built_is_the_samples_error(tmp_path: Path) -> None:
    solver, states = haystack_states(tmp_path, 1200)
    state = states[0]
    del state.metadata["length"]
    with pytest.raises(KeyError, match="length"):  # reaches Inspect: the sample's error
        solve(solver, state)


def parse_number(reply: str) -> float:
    try:
        return float(json.loads(reply)["value"])
    except (ValueError, KeyError, TypeError) as e:
        raise ReplyError(f"no value in the reply: {e}") from e


def test_answer_and_record_checkpoints_each_call(tmp_path: Path) -> None:
    checkpoint = tmp_path / "stage.jsonl"
    calls = [
        Sample(id=k, input=f"prompt {k}", metadata={"key": k, "digest": f"d{k}"}) for k in "ab"
    ]
    task = Task(
        dataset=calls,
        solver=answer_and_record(
            "generator", parse_number, Checkpoint(checkpoint), GenerateConfig(temperature=0.0)
        ),
        scorer=parsed(),
    )
    [log] = eval(
        task, model=scripted(['{"value": 3.5}', "no JSON here"]), max_samples=1,
        display="none", log_dir=str(tmp_path / "logs"),
    )  # fmt: skip
    assert log.status == "success" and log.results is not None
    assert log.results.scores[0].metrics["mean"].value == 0.5
    records = read_checkpoint(checkpoint)
    assert records["a"] == {"key": "a", "digest": "da", "ok": True, "value": 3.5, "reason": None}
    assert records["b"]["ok"] is False and records["b"]["value"] is None
    assert "no value in the reply" in records["b"]["reason"]


@pytest.mark.slow
@pytest.mark.bwrap
@pytest.mark.skipif(not BWRAP_OK, reason=f"bubblewrap unavailable: {BWRAP_REASON}")
def test_quality_control_runs_both_solutions_and_records_the_verdict(tmp_path: Path) -> None:
    checkpoint = tmp_path / "qc.jsonl"
    first = "def solve():\n    return 3 * 4"
    second = json.dumps(
        {"reasoning": "r", "python_solution": "def solve():\n    return 12", "answer": 12}
    )
    sample = Sample(
        id="q", input="qc prompt", metadata={"key": "q", "digest": "dq", "solution": first}
    )
    task = Task(
        dataset=[sample],
        solver=quality_control("strict", 5.0, Checkpoint(checkpoint)),
        scorer=consistent(),
        sandbox=SandboxEnvironmentSpec("finmath_bwrap"),
    )
    [log] = eval(
        task, model="mockllm/model", model_roles={QC_ROLE: scripted([second])},
        display="none", log_dir=str(tmp_path / "logs"),
    )  # fmt: skip
    assert log.status == "success", log.error
    record = read_checkpoint(checkpoint)["q"]
    assert record["consistency"] == 1 and record["mode"] == "strict"
    assert record["first"] == {"value": 12.0, "how": "executed", "error": None}
    assert record["second"]["value"] == 12.0 and record["second"]["how"] == "executed"
