"""Every benchmark runs from its task file, the form inspect_evals' register gives in its
usage (``inspect eval src/finmath_tasks/tasks/<name>/task.py``), not only by its
registered name. Inspect loads such a file without registering the module in
``sys.modules``, which broke a dataclass defined in a task file under ``from __future__
import annotations``. The benchmarks are discovered from ``src/finmath_tasks/tasks/``: a
new folder with a ``task.py`` is covered with no list to edit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

from benchmark_list import BENCHMARKS

REPO = Path(__file__).resolve().parents[1]
TASKS = REPO / "src" / "finmath_tasks" / "tasks"
INSPECT = str(Path(sys.executable).with_name("inspect"))


def has_demo(folder: Path) -> bool:
    """A packaged demo split (``data/demo.json``) runs with no benchmark data."""
    return (folder / "data" / "demo.json").is_file()


TASK_FILES = [TASKS / name for name in BENCHMARKS]
CASES = [
    pytest.param(
        folder,
        id=folder.name,
        marks=[] if has_demo(folder) else [pytest.mark.realdata],
    )
    for folder in TASK_FILES
]


def test_the_benchmarks_are_discovered() -> None:
    assert len(TASK_FILES) >= 5, TASK_FILES


@pytest.mark.slow
@pytest.mark.parametrize("folder", CASES)
def test_a_task_runs_from_its_task_file(
    folder: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    options = ["-T", "split=demo"] if has_demo(folder) else []
    env = {k: v for k, v in os.environ.items() if k != "FINMATH_DATA_DIR"}
    if not has_demo(folder):
        env["FINMATH_DATA_DIR"] = str(request.getfixturevalue("data_dir"))  # skips if absent
    logs = tmp_path / "logs"
    command = [
        INSPECT, "eval", str(folder.relative_to(REPO) / "task.py"),
        "--limit", "1", "--model", "mockllm/model", "--log-dir", str(logs),
        "--display", "plain", *options,
    ]  # fmt: skip
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "Traceback" not in output, output
    found = list(list_eval_logs(str(logs)))
    assert len(found) == 1, output
    log = read_eval_log(found[0])
    assert log.status == "success", (log.error, output)
    assert log.eval.task.split("/")[-1] == folder.name
    assert log.results is not None and log.results.completed_samples == 1
    assert log.results.scores, "no score was recorded"
