"""Every task resumes: run twice, the second run calls no model and exits 0.

Each of the five tasks at its default settings, the evaluated model and a ``grader`` role
(MathHay's judge, the extractors' model) reached as ``openai-api/local/...`` at a loopback
OpenAI-compatible server, as a user reaches vLLM or llama.cpp: ``finmath grid`` twice per
benchmark, and ``inspect eval-set`` twice over all five tasks. One eval set binds its
roles for every task, and a task refuses a role none of its solvers or scorers calls
(SARA, FinQA and TAT-QA call none): the eval set runs without one, MathHay's judge then
being the evaluated model at the same endpoint.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

from benchmark_list import BENCHMARKS, need
from finmath_tasks.cli.declare import load_declaration
from finmath_tasks.identity import task_defaults
from openai_server import ScriptedServer, scripted_server

# Inspect reaches `openai-api/...` models through the openai package (the `openai` extra)
pytest.importorskip("openai", reason="needs the openai package: pip install -e '.[openai]'")

pytestmark = [pytest.mark.realdata, pytest.mark.slow]

REPLY = "Therefore, the answer is 14685.0."

FILE = "test_cli_resume_tasks.py DEFAULT_RUNS"
MODEL = ["--model", "openai-api/local/m"]
GRADER = ["--model-role", "grader=openai-api/local/g"]
ROLE_RUNS: dict[str, list[str]] = {
    "knowledgefmath": ["-T", "extractor=model", *GRADER],  # the extractor asks the grader
    "mathhay": GRADER,  # the judge (judge=true by default)
}
"""The benchmarks whose runs call a grader role, and the settings that make them call it:
a task refuses a role none of its run's solvers or scorers calls (SARA, FinQA, TAT-QA)."""

DEFAULT_RUNS: dict[str, list[str]] = {
    "knowledgefmath": ["--only", "solver=cot", "--only", "knowledge=none"],
    # the default (cot) and the few-shot run: both send the exemplar turns
    "sara": ["--only", "retrieval=mentioned_only", "--only", "prompting=cot,few_shot"],
    "finqa": ["--only", "split=test", "--only", "solver=rag_cot", "--only", "retrieval=bm25"],
    "tatqa": ["--only", "solver=cot"],
    "mathhay": ["--only", "subset=verified", "--only", "length=32000"],
}
"""``--only`` selecting each benchmark's run at the task's default settings (hand entries; a
benchmark with none gets :func:`default_only`)."""


def default_only(benchmark: str) -> list[str]:
    """``--only`` selecting, on each axis of the benchmark's grid (its ``grid.py``), the
    task's default value: its run at the defaults, derived from its own folder. A benchmark
    with no grid (``grid.py`` is optional) is not run by ``finmath grid``: skipped, saying
    so (the eval-set test below resumes every task)."""
    declaration = load_declaration(benchmark)
    if declaration is None:
        pytest.skip(
            f"{benchmark} declares no grid (tasks/{benchmark}/grid.py): finmath grid does not run it"
        )
    defaults = task_defaults(benchmark)
    only = [
        ["--only", f"{axis}={defaults[axis]}"]
        for axis, values in declaration.grid.axes.items()
        if axis in defaults and defaults[axis] in values
    ]
    return [word for pair in only for word in pair]


@pytest.fixture
def server(data_dir: Path) -> Any:
    with scripted_server(lambda messages: REPLY) as served:
        yield served


def _env(server: ScriptedServer, data_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "FINMATH_DATA_DIR": str(data_dir),
        "LOCAL_BASE_URL": server.base_url.removesuffix("/chat/completions"),
        "LOCAL_API_KEY": "scripted",
    }


def _run(command: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=900)


def _successes(log_dir: Path, role: bool = True) -> list[Any]:
    logs = [read_eval_log(i) for i in list_eval_logs(str(log_dir))]
    for log in logs:
        assert log.status == "success", (log.location, log.error)
        assert log.results is not None and log.results.completed_samples == 2
        assert log.results.scores and log.results.scores[0].metrics
        if role:
            grader = (log.eval.model_roles or {})["grader"]
            assert not isinstance(grader, list) and grader.base_url  # the role's URL is recorded
    return logs


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_finmath_grid_twice_makes_no_model_call_the_second_time(
    benchmark: str, server: ScriptedServer, data_dir: Path, tmp_path: Path
) -> None:
    log_dir = tmp_path / "logs"
    where = "tests/cli/" + FILE
    only = need(DEFAULT_RUNS, benchmark, "--only at the defaults", where, default=default_only)
    command = [
        sys.executable, "-m", "finmath_tasks.cli", "grid", benchmark, *MODEL,
        *ROLE_RUNS.get(benchmark, []), *only, "--limit", "2", "--log-dir", str(log_dir),
        "--display", "none",
    ]  # fmt: skip
    env = _env(server, data_dir)
    first = _run(command, env, tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    logs = _successes(log_dir, role=benchmark in ROLE_RUNS)
    runs = 2 if benchmark == "sara" else 1
    assert len(logs) == runs
    defaults = task_defaults(benchmark)
    for log in logs:  # the task's defaults, the runs' own grid arguments aside
        args = log.eval.task_args
        assert all(
            args.get(k) == v
            for k, v in defaults.items()
            if k not in ("subset", "prompting", "extractor")
        )
    called = len(server.requests)
    assert called >= 2 * runs

    second = _run(command, env, tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert len(server.requests) == called  # nothing reran
    assert f"{runs} of {runs} tasks succeeded" in second.stdout
    assert len(list_eval_logs(str(log_dir))) == runs


def test_inspect_eval_set_twice_over_every_task(
    server: ScriptedServer, data_dir: Path, tmp_path: Path
) -> None:
    log_dir = tmp_path / "logs"
    command = [
        sys.executable, "-m", "inspect_ai", "eval-set",
        *(f"finmath_tasks/{name}" for name in BENCHMARKS), *MODEL,
        "--limit", "2", "--log-dir", str(log_dir), "--display", "plain",
    ]  # fmt: skip
    env = _env(server, data_dir)
    first = _run(command, env, tmp_path)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    logs = _successes(log_dir, role=False)
    assert sorted(log.eval.task_registry_name for log in logs) == sorted(
        f"finmath_tasks/{name}" for name in BENCHMARKS
    )
    called = len(server.requests)

    second = _run(command, env, tmp_path)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert len(server.requests) == called
    assert len(list_eval_logs(str(log_dir))) == len(BENCHMARKS)
