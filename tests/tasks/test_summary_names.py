"""What a user reads after a run: a summary that fits the screen, plain metric names.

For each task's default settings and every agent solver, a scripted-model eval on real
records: the metric names in the log are plain (no package prefix), the official score
comes first, the first answer and the flips appear only for a solver with a critic or
calculator stage, and Inspect's own end-of-run summary at 100 columns cuts no label.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval

from eval_helpers import assert_readable_summary, scripted
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.solvers.agents import (
    AGENT_NAMES,
    CALCULATOR_AGENTS,
    FLIP_KEYS,
    REVIEW_AGENTS,
    UNSOURCED_KEY,
)
from finmath_tasks.tasks.finqa import finqa
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.sara import sara
from finmath_tasks.tasks.tatqa import tatqa

pytestmark = pytest.mark.realdata

REPLY = (
    "Work: 120 - 80 = 40.\n"
    + json.dumps({"steps": ["120 - 80 = 40"], "answer": "40", "reasoning": "120 - 80"})
    + "\nAnswer: 40"
)
PROGRAM = "```python\ndef solution():\n    return 40\n```"
REVIEW_KEYS = ["first_answer", *FLIP_KEYS]
LIMIT = 2


def run(task: Task, tmp_path: Path, reply: str = REPLY, sandbox: str | None = None) -> Any:
    [log] = eval(
        task,
        model=scripted([reply] * 40),
        sandbox=sandbox,
        limit=LIMIT,
        max_samples=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    return log


def names(log: Any) -> list[str]:
    return [s.name for s in log.results.scores]


def agent_keys(official: list[str], solver: str) -> list[str]:
    return (
        official
        + (REVIEW_KEYS if solver in REVIEW_AGENTS else [])
        + ([UNSOURCED_KEY] if solver in CALCULATOR_AGENTS else [])
    )


BWRAP_OK, BWRAP_REASON = bwrap_available()
NEEDS_BWRAP = [
    pytest.mark.bwrap,
    pytest.mark.skipif(not BWRAP_OK, reason=f"bubblewrap unavailable: {BWRAP_REASON}"),
]
SOLVERS = [
    pytest.param(s, marks=NEEDS_BWRAP) if s == "pot" else s for s in AGENT_NAMES
]  # pot's programs run in the bubblewrap sandbox


def sandbox_for(solver: str) -> str | None:
    """Inspect's ``--sandbox`` for the run: pot's programs in bubblewrap."""
    return "finmath_bwrap" if solver == "pot" else None


@pytest.mark.slow
@pytest.mark.parametrize("solver", SOLVERS)
def test_finqa_agents(data_dir: Path, tmp_path: Path, solver: str) -> None:
    task = finqa(solver=solver)  # type: ignore[arg-type]
    log = run(task, tmp_path, PROGRAM if solver == "pot" else REPLY, sandbox_for(solver))
    assert names(log) == agent_keys(["rounding", "tolerant"], solver)
    rounding = log.results.scores[0].metrics
    assert list(rounding)[:2] == ["accuracy", "stderr"]
    # every record has an answer: no `unscored` score (it counts withheld answers)
    assert all(k.startswith("gold=") for k in list(rounding)[2:])
    if solver in REVIEW_AGENTS:
        flips = {s.name: s.metrics for s in log.results.scores}
        assert list(flips["correct_to_wrong"])[:2] == ["count", "rate"]
    assert_readable_summary(log)


@pytest.mark.slow
@pytest.mark.parametrize("solver", SOLVERS)
def test_tatqa_agents(data_dir: Path, tmp_path: Path, solver: str) -> None:
    task = tatqa(solver=solver)  # type: ignore[arg-type]
    log = run(task, tmp_path, PROGRAM if solver == "pot" else REPLY, sandbox_for(solver))
    assert names(log) == agent_keys(["rounding", "tolerant"], solver)
    assert_readable_summary(log)


def test_tatqa_all_subset_reports_answer_types(data_dir: Path, tmp_path: Path) -> None:
    log = run(tatqa(subset="all", solver="critic"), tmp_path)
    assert names(log) == ["em", "f1", *REVIEW_KEYS]
    assert any(k.startswith("type=") for k in log.results.scores[0].metrics)
    assert_readable_summary(log)


def test_finqa_default(data_dir: Path, tmp_path: Path) -> None:
    log = run(finqa(), tmp_path)
    assert "tolerant" in names(log)
    assert_readable_summary(log)


def test_knowledgefmath_default(data_dir: Path, tmp_path: Path) -> None:
    log = run(knowledgefmath(), tmp_path)
    assert_readable_summary(log)


@pytest.mark.parametrize(
    ("kind", "keys"),
    [
        ("entailment", ["entailment"]),
        ("tax", ["exact_dollar", "sara_tolerance"]),
        ("all", ["entailment", "exact_dollar", "sara_tolerance"]),
    ],
)
def test_sara(data_dir: Path, tmp_path: Path, kind: str, keys: list[str]) -> None:
    log = run(sara(kind=kind), tmp_path)  # type: ignore[arg-type]
    assert names(log) == keys
    first = log.results.scores[0].metrics
    # the paper's 90% interval (Wilson), then Inspect's stderr (both clustered by case)
    assert list(first)[:4] == ["accuracy", "ci90_lower", "ci90_upper", "stderr"]
    assert log.results.scores[0].scored_samples == LIMIT or kind == "all"
    assert_readable_summary(log)
    assert_readable_summary(log, width=80)


def test_mathhay_default(data_dir: Path, tmp_path: Path) -> None:
    # the default set (verified+unverified) needs the unverified files: the verified set
    log = run(mathhay(subset="verified"), tmp_path)
    assert names(log) == ["mathhay", "exact_match", "tolerant"]
    official = log.results.scores[0].metrics
    assert list(official)[:4] == ["accuracy", "ci95_lower", "ci95_upper", "stderr"]
    assert log.results.scores[0].scored_samples == LIMIT
    assert all(k.startswith("category=") for k in list(official)[4:])
    assert all("stderr" in score.metrics for score in log.results.scores)
    assert "judge_error" in log.results.scores[1].metrics
    assert_readable_summary(log)
