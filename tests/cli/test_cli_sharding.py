"""Two ``finmath grid --worker`` processes into one log directory report like one process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

from cli.report_check import parse_markdown
from finmath_tasks.cli.grid import shard
from finmath_tasks.cli.main import main

GRID = [
    "knowledgefmath", "--model", "mockllm/model", "--model", "mockllm/other",
    "-T", "split=demo", "-T", "solver=oracle",
    "--only", "solver=cot", "--only", "knowledge=none,oracle", "--limit", "4",
]  # fmt: skip


def finmath(*args: str, cwd: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "finmath_tasks.cli", *args],
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out[-3000:]
    return out


LOG_NAME = re.compile(r"\d{4}-\d\d-\d\dT[\w-]+\.eval")


def tables(log_dir: Path, out: Path) -> dict[str, tuple[list[str], list[list[str]]]]:
    assert main(["report", str(log_dir), "--out", str(out), "--no-plots"]) == 0
    found = parse_markdown((out / "report.md").read_text())
    found.pop("Logs")  # file names differ; everything else must not
    # usage: per run, the log names and wall times differ; in total, the tokens must not
    found.pop("Usage and cost per run")
    header, rows = found.pop("Usage and cost in total")
    wall = header.index("wall time")
    found["usage in total, without wall time"] = (
        header[:wall] + header[wall + 1 :],
        [row[:wall] + row[wall + 1 :] for row in rows],
    )
    # the paired differences name each run by its settings, not its log file: equal too
    for title in [t for t in found if t.startswith("Paired differences")]:
        assert not [c for row in found[title][1] for c in row if LOG_NAME.search(c)]
    return found


def test_shards_take_every_nth_task() -> None:
    tasks = [{"sequence": i, "identifier": str(i)} for i in range(5)]
    assert [t["identifier"] for t in shard(tasks, 0, 2)] == ["0", "2", "4"]
    assert [t["identifier"] for t in shard(tasks, 1, 2)] == ["1", "3"]
    assert shard(tasks, 2, 3)[0]["identifier"] == "2"


@pytest.mark.slow  # five processes (about 30 s); the acceptance test of sharding
def test_two_workers_report_the_same_tables_as_one_process(tmp_path: Path) -> None:
    sharded, single = tmp_path / "sharded", tmp_path / "single"
    plan = tmp_path / "plan.json"
    out = finish(
        finmath("grid", *GRID, "--log-dir", str(sharded), "--plan", str(plan), cwd=tmp_path)
    )
    assert "wrote the plan of 4 tasks" in out
    manifest = json.loads(plan.read_text())["manifest"]
    assert len(manifest["tasks"]) == 4 and not sharded.exists()  # capture runs nothing

    worker0 = finmath("grid", "--plan", str(plan), "--worker", "0", "--of", "2", cwd=tmp_path)
    worker1 = finmath(  # the index from a Kubernetes Indexed Job's variable
        "grid", "--plan", str(plan), "--of", "2", cwd=tmp_path, JOB_COMPLETION_INDEX="1"
    )
    outputs = [finish(worker0), finish(worker1)]
    assert "worker 0 of 2: 2 task(s)" in outputs[0]
    assert "worker 1 of 2: 2 task(s)" in outputs[1]
    logs = [read_eval_log(i, header_only=True) for i in list_eval_logs(str(sharded))]
    assert len(logs) == 4 and all(log.status == "success" for log in logs)
    assert {log.eval.eval_set_id for log in logs} == {manifest["eval_set_id"]}

    assert main(["grid", *GRID, "--log-dir", str(single), "--display", "none"]) == 0
    sharded_tables = tables(sharded, tmp_path / "r1")
    single_tables = tables(single, tmp_path / "r2")
    for found in (sharded_tables, single_tables):  # the data table: a row per run, any order
        header, rows = found["Data"]
        assert header[0] == "run"  # named by its settings, not its log file
        found["Data"] = (header, sorted(rows))
    assert sharded_tables == single_tables
    header, rows = sharded_tables["Knowledge settings (official comparison)"]
    assert header == ["model", "solver", "none", "oracle"]
    assert [r[0] for r in rows] == ["mockllm/model", "mockllm/other"]

    # a worker started again (a restarted pod) finds its shard done and runs nothing
    again = finish(finmath("grid", "--plan", str(plan), "--worker", "0", "--of", "2", cwd=tmp_path))
    assert "already complete, skipped" in again and "nothing to run" in again
    assert len(list_eval_logs(str(sharded))) == 4
