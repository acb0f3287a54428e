"""The Kubernetes Indexed Job shipped in deploy/ stays in step with the ``finmath`` command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from finmath_tasks.cli.grid import WORKER_INDEX_ENV, GridOptions, selection_for, write_plan
from finmath_tasks.cli.inspect_options import read as read_inspect
from finmath_tasks.cli.inspect_options import split
from finmath_tasks.cli.main import _grid_options, _parser, main

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "grid-job.yaml"


def job() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(MANIFEST.read_text())
    return document


def command() -> list[str]:
    [container] = job()["spec"]["template"]["spec"]["containers"]
    argv: list[str] = container["command"]
    return argv


def test_the_manifest_is_an_indexed_job_of_one_pod_per_shard() -> None:
    spec = job()["spec"]
    assert job()["kind"] == "Job" and job()["apiVersion"] == "batch/v1"
    assert spec["completionMode"] == "Indexed"
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    # the grid's own options to its parser, Inspect's eval-set options to Inspect's
    assert command()[:2] == ["finmath", "grid"]
    mine, theirs = split(command()[2:], _grid_options(_parser()))
    args = _parser().parse_args(["grid", *mine])
    inspect = read_inspect(theirs)
    display = inspect.raw["display"] if inspect.given("display") else None
    assert args.command == "grid"
    # one shard per completion index, all running at once
    assert args.of == spec["completions"] == spec["parallelism"]
    # the index is not on the command line: the worker reads the variable Kubernetes sets
    assert args.worker is None and WORKER_INDEX_ENV == "JOB_COMPLETION_INDEX"
    assert args.plan.startswith("s3://") and args.benchmark is None
    assert not args.dry_run and display in (None, "plain", "log", "none")


def test_the_manifest_command_runs_every_task_of_a_plan_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each completion index of the manifest's command takes a disjoint shard; together all."""
    from finmath_tasks.cli.declare import declarations

    declaration = declarations()["knowledgefmath"]
    options = GridOptions(
        benchmark="knowledgefmath",
        models=[f"mockllm/m{i}" for i in range(5)],
        log_dir=str(tmp_path / "logs"),
        task_args={"split": "demo", "solver": "oracle"},
        only={"solver": "cot", "knowledge": ["none", "oracle"]},
        limit=1,
    )
    plan_path = tmp_path / "plan.json"
    plan, lines = write_plan(declaration, options, str(plan_path))
    assert not [line for line in lines if line.startswith("skipped")]
    identifiers = [t["identifier"] for t in plan["manifest"]["tasks"]]
    count = job()["spec"]["completions"]
    assert len(identifiers) > count  # some pods take more than one task

    taken: list[str] = []
    for index in range(count):
        selection, _ = selection_for(plan, index, count, options.log_dir)
        taken += [t["identifier"] for t in selection["tasks"]] if selection else []
    assert sorted(taken) == sorted(identifiers)

    # the command itself, with the plan moved to this folder, as pod 0 runs it
    argv = [str(plan_path) if a.startswith("s3://") else a for a in command()[1:]]
    monkeypatch.setenv(WORKER_INDEX_ENV, "0")
    capsys.readouterr()
    assert main([*argv, "--display", "none"]) == 0
    out = capsys.readouterr().out
    assert f"worker 0 of {count}: 2 task(s)" in out
