"""One interval per number: a task logs Inspect's Wilson interval, and ``finmath report``
prints the interval the log holds. A SARA run of three cases and a MathHay run of two
questions, every answer wrong (0/n), log an interval of non-zero width (a normal
approximation's would be [0, 0]) and the report prints that same interval."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai.log import EvalLog
from inspect_ai.scorer import SampleScore, ci_wilson

from eval_helpers import scripted
from finmath_tasks.cli.main import main
from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.sara import sara

pytestmark = pytest.mark.realdata


def run(task: Task, replies: list[str], limit: int, log_dir: Path) -> EvalLog:
    [log] = eval(
        task,
        model=scripted(replies),
        limit=limit,
        max_samples=1,
        display="none",
        log_dir=str(log_dir),
    )
    assert log.status == "success", log.error
    return log


def logged(log: EvalLog, score: str, level: int) -> tuple[float, float, float]:
    assert log.results is not None
    [found] = [s for s in log.results.scores if s.name == score]
    m = found.metrics
    assert f"ci{level}_low" not in m  # no normal-approximation interval any more
    return m["accuracy"].value, m[f"ci{level}_lower"].value, m[f"ci{level}_upper"].value


def cell(p: float, low: float, high: float) -> str:
    return f"{p * 100:.1f} [{low * 100:.1f}, {high * 100:.1f}]"


@pytest.mark.parametrize("case", ["sara", "mathhay"])
def test_a_zero_of_n_run_logs_the_interval_the_report_prints(
    data_dir: Path, tmp_path: Path, case: str
) -> None:
    logs = tmp_path / "logs"
    if case == "sara":
        # entailment cases answered with a word that is neither verdict: all wrong
        log = run(sara(), ["Maybe."] * 3, 3, logs)
        score, level, n = "entailment", 90, 3
    else:
        # a number no question has as its answer; the judge (the evaluated model, as no
        # grader role is bound) replies with no verdict: incorrect
        log = run(mathhay(subset="verified"), ['{"answer": 123456789}'] * 8, 2, logs)
        score, level, n = "mathhay", 95, 2
    p, low, high = logged(log, score, level)
    assert p == 0.0 and low == 0.0 and high > 0.3  # 0/n: a width all the same
    # Inspect's Wilson interval over the n scored samples
    zeros = [SampleScore(score=s.scores[score], sample_id=s.id) for s in log.samples or []]  # type: ignore[index]
    assert len(zeros) == n
    expected = ci_wilson(level / 100)(zeros)  # type: ignore[arg-type]
    assert math.isclose(high, expected["upper"])  # type: ignore[index]
    out = tmp_path / "report"
    assert main(["report", str(logs), "--out", str(out), "--no-plots"]) == 0
    report = (out / "report.md").read_text()
    assert f"| {cell(p, low, high)} |" in report, report
