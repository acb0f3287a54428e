"""The plan and the log name a run the same way, whatever form its model role takes.

A grid's planned identity and its log's identity both go through one normalisation of a
model role (``finmath_tasks.identity.role_text`` of the model Inspect builds for it):
a bare name, a provider reached at a base URL (an ``openai-api/<name>/<model>`` role
records the URL it resolves from ``<NAME>_BASE_URL``), a YAML or JSON role config,
several models for one role. The grid is run as a user runs it, twice, against a loopback
OpenAI-compatible server: the first run succeeds (exit 0), the second finds every run done
and calls no model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

from finmath_tasks.cli.declare import declarations
from finmath_tasks.cli.grid import GridOptions, build, outcome
from finmath_tasks.cli.main import main
from openai_server import ScriptedServer, scripted_server

# Inspect reaches `openai-api/...` models through the openai package (the `openai` extra)
pytest.importorskip("openai", reason="needs the openai package: pip install -e '.[openai]'")

REPLY = "Therefore, the answer is 14685.0."


@pytest.fixture(scope="module")
def server() -> Any:
    """The scripted server, as Inspect's ``openai-api/local/...`` provider reaches it (one
    for the module: Inspect keeps the evaluated model's client for the process)."""
    with scripted_server(lambda messages: REPLY) as served, pytest.MonkeyPatch.context() as mp:
        mp.setenv("LOCAL_BASE_URL", served.base_url.removesuffix("/chat/completions"))
        mp.setenv("LOCAL_API_KEY", "scripted")
        yield served


def _argv(log_dir: Path, role: str, *extra: str) -> list[str]:
    return [
        "grid", "knowledgefmath", "--model", "openai-api/local/m", "--model-role", role,
        "--only", "solver=cot", "--only", "knowledge=none", "-T", "split=demo",
        "--limit", "2", "--log-dir", str(log_dir), "--display", "none", *extra,
    ]  # fmt: skip


ROLES = {
    "provider with a base URL": ("grader=openai-api/local/g", ["-T", "extractor=model"]),
    "YAML role config": (
        "grader={model: openai-api/local/g, temperature: 0.5}",
        ["-T", "extractor=model"],
    ),
    "JSON role config": (
        'grader={"model": "openai-api/local/g", "max_tokens": 64, "model_args": {}}',
        ["-T", "extractor=model"],
    ),
    "several models for one role": (
        "grader=openai-api/local/g,openai-api/local/h",
        ["-T", "extractor=model"],
    ),
    "bare name": ("grader=mockllm/model", ["-T", "extractor=model"]),
}


@pytest.mark.parametrize("role", list(ROLES), ids=list(ROLES))
def test_a_grid_with_a_role_resumes_with_no_model_call(
    role: str,
    server: ScriptedServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    value, extra = ROLES[role]
    argv = _argv(tmp_path / "logs", value, *extra)
    before = len(server.requests)
    assert main(argv) == 0, capsys.readouterr()
    called = len(server.requests)
    assert called - before >= 2  # the evaluated model's two samples (and the grader's extractions)
    [info] = list_eval_logs(str(tmp_path / "logs"))
    log = read_eval_log(info)
    assert log.status == "success" and log.results is not None
    assert log.results.completed_samples == 2
    recorded = (log.eval.model_roles or {})["grader"]
    configs = recorded if isinstance(recorded, list) else [recorded]
    for config in configs:
        if config.model.startswith("openai-api/"):  # the URL the role resolved to
            assert config.base_url == server.base_url.removesuffix("/chat/completions")
    if value.startswith("grader={"):
        assert configs[0].config.temperature == 0.5 or configs[0].config.max_tokens == 64
    if "," in value and "{" not in value:
        assert [c.model for c in configs] == ["openai-api/local/g", "openai-api/local/h"]
    capsys.readouterr()

    assert main(argv) == 0  # every run done: nothing runs, nothing is said to be missing
    out = capsys.readouterr().out
    assert len(server.requests) == called
    assert "1 of 1 tasks succeeded" in out and "interrupted" not in out


def test_a_log_of_another_role_is_said_to_be_another_run_not_an_interruption(
    server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = tmp_path / "logs"
    assert main(_argv(log_dir, "grader=openai-api/local/g", "-T", "extractor=model")) == 0
    # the same arguments planned with the grader at another URL: the log is not this run
    declaration = declarations()["knowledgefmath"]
    options = GridOptions(
        benchmark="knowledgefmath",
        models=["openai-api/local/m"],
        log_dir=str(log_dir),
        task_args={"split": "demo", "extractor": "model"},
        only={"solver": "cot", "knowledge": "none"},
        model_roles={
            "grader": {"model": "openai-api/local/g", "base_url": "http://127.0.0.1:9/v1"}
        },
        limit=2,
    )
    done = outcome(declaration, options, build(declaration, options))
    assert done.status == 1  # not 130: nothing was interrupted
    [line] = [line for line in done.lines if line.startswith("failed: run 1")]
    assert "has its task arguments but another identity" in line
    assert "role.grader" in line and "http://127.0.0.1:9/v1" in line
    assert not any("interrupted" in line for line in done.lines)


def test_a_role_no_run_calls_is_refused_and_an_earlier_eval_leaves_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The grid builds its tasks with its own roles bound, as ``inspect eval`` does: a
    grader that no run of the grid calls is refused in one line, and the roles an earlier
    eval of the same process bound are not seen by a later grid's tasks."""
    base = [
        "grid", "knowledgefmath", "--model", "mockllm/model", "--only", "solver=cot",
        "--only", "knowledge=none", "-T", "split=demo", "-T", "solver=oracle", "--limit", "1",
    ]  # fmt: skip
    assert main([*base, "--model-role", "grader=mockllm/judge", "--dry-run"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "--model-role grader: it is called only with extractor=model" in line
    called = [*base, "--model-role", "grader=mockllm/judge", "-T", "extractor=model"]
    assert main([*called, "--log-dir", str(tmp_path / "a"), "--display", "none"]) == 0
    capsys.readouterr()
    # this process's last eval bound a grader; a grid without one builds its tasks without it
    assert main([*base, "--log-dir", str(tmp_path / "b"), "--display", "none"]) == 0
    [log] = [read_eval_log(i) for i in list_eval_logs(str(tmp_path / "b"))]
    assert log.status == "success" and not log.eval.model_roles
