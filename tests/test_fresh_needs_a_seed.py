"""A fresh variant needs a seed of 1 or more: ``-T variant=fresh`` alone (or with
``variant_seed=0``) would run the published questions under the fresh variant's name.
``inspect eval`` stops with one line naming the parameter, writes no log saying "fresh",
and calls no model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

CASES = [
    ("knowledgefmath", ["-T", "split=demo"]),
    ("finqa", ["-T", "split=dev", "-T", "solver=cot"]),
    ("mathhay", ["-T", "subset=verified", "-T", "judge=false"]),
]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [[], ["-T", "variant_seed=0"]], ids=["no seed", "seed 0"])
@pytest.mark.parametrize(("task", "args"), CASES, ids=[c[0] for c in CASES])
def test_inspect_eval_refuses_fresh_without_a_seed(
    task: str, args: list[str], seed: list[str], data_dir: Path, tmp_path: Path
) -> None:
    log_dir = tmp_path / "logs"
    command = [
        sys.executable, "-m", "inspect_ai", "eval", f"finmath_tasks/{task}", *args,
        "-T", "variant=fresh", *seed, "--model", "mockllm/model", "--limit", "2",
        "--log-dir", str(log_dir), "--display", "plain",
    ]  # fmt: skip
    # a wide console: Inspect's display wraps a message at the terminal's width
    env = {**os.environ, "FINMATH_DATA_DIR": str(data_dir), "COLUMNS": "400"}
    run = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    said = run.stdout + run.stderr
    assert run.returncode != 0, said
    assert "Traceback" not in said
    wanted = f"{task}: -T variant=fresh needs -T variant_seed=N with N from 1 to"
    [line] = [line for line in said.splitlines() if wanted in line]
    assert "variant=original" in line
    logs = [read_eval_log(i, header_only=True) for i in list_eval_logs(str(log_dir))]
    assert all(log.status != "success" for log in logs)  # nothing ran
    assert all((log.eval.task_args or {}).get("variant") != "fresh" or log.results is None
               for log in logs)  # fmt: skip
