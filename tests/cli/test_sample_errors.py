"""An exception in our own scoring code, in a real eval of a registered task.

It reaches Inspect as that sample's error (with the traceback): the task's
``continue_on_fail=True`` lets every other sample run and be scored, Inspect's
``fail_on_error`` then decides the log's status (any error: ``error``; the user can
accept some), ``--retry-on-error`` and ``inspect eval-retry`` rerun the sample, and
``finmath report`` / ``finmath export`` never show such a run as whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval, eval_retry
from inspect_ai.log import EvalLog
from inspect_ai.scorer import Target
from report_check import parse_markdown

from eval_helpers import metric, scripted
from finmath_tasks.cli.main import main as finmath
from finmath_tasks.scorers import numeric
from finmath_tasks.tasks.knowledgefmath import knowledgefmath

TASK = "finmath_tasks/knowledgefmath"
ARGS = {"split": "demo", "solver": "cot"}
SAMPLES = 3


@pytest.fixture
def golds() -> list[str]:
    task = knowledgefmath(**ARGS)  # type: ignore[arg-type]
    return [str(s.target) for s in list(task.dataset)[:SAMPLES]]


class Bug:
    """Makes our scorer raise on the sample whose gold is ``gold`` (``times`` times)."""

    def __init__(self, gold: str, times: int = 1_000) -> None:
        self.gold, self.left, self.read = gold, times, numeric._gold

    def __call__(self, target: Target, metadata: Any) -> Any:
        if target.text == self.gold and self.left > 0:
            self.left -= 1
            raise ZeroDivisionError("a bug in our scorer")
        return self.read(target, metadata)


@pytest.fixture
def bug(monkeypatch: pytest.MonkeyPatch, golds: list[str]) -> Iterator[Bug]:
    installed = Bug(golds[1])
    monkeypatch.setattr(numeric, "_gold", installed)
    yield installed


def run(golds: list[str], log_dir: Path, **eval_args: Any) -> EvalLog:
    # right, right, wrong: the second sample is the one whose scoring raises (a retry
    # of it generates again: the fourth output, right)
    outputs = [f"Therefore, the answer is {g}." for g in golds[:2]] + ["the answer is 1e9."]
    outputs.append(outputs[1])
    [log] = eval(
        TASK,
        task_args=ARGS,
        model=scripted(outputs),
        limit=SAMPLES,
        max_samples=1,
        display="none",
        log_dir=str(log_dir),
        **eval_args,
    )
    return log


def check_the_others_scored(log: EvalLog) -> None:
    assert log.samples is not None and len(log.samples) == SAMPLES
    first, broken, last = log.samples
    assert broken.error is not None and "a bug in our scorer" in broken.error.message
    assert "ZeroDivisionError" in broken.error.traceback and not broken.scores
    assert first.error is None and first.scores["financemath"].value == 1.0  # type: ignore[index]
    assert last.error is None and last.scores["financemath"].value == 0.0  # type: ignore[index]
    assert log.results is not None and log.results.completed_samples == SAMPLES - 1
    assert metric(log, "financemath") == 0.5  # over the two samples scored
    # every record has an answer (no `unscored` score): the errored one is Inspect's count
    assert log.results.scores[0].unscored_samples == 0
    assert "unscored" not in [s.name for s in log.results.scores]


def report_logs(log_dir: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Any, str]:
    assert finmath(["report", str(log_dir), "--out", str(out), "--no-plots"]) == 0
    err = capsys.readouterr().err
    header, rows = parse_markdown((out / "report.md").read_text())["Logs"]
    return [dict(zip(header, row, strict=True)) for row in rows], err


def test_default_the_others_are_scored_and_the_log_is_error(
    bug: Bug, golds: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = run(golds, tmp_path / "logs")
    assert log.status == "error"  # any error fails the run, as Inspect's default
    assert log.eval.config.continue_on_fail is True  # ours, recorded in the log
    check_the_others_scored(log)

    [row], err = report_logs(tmp_path / "logs", tmp_path / "report", capsys)
    assert row["status"] == "UNFINISHED (error)" and row["scored/total"] == "2/3"
    assert "status error, 2/3 samples: shown marked unfinished" in err

    assert log.location
    assert finmath(["export", log.location, "-o", str(tmp_path / "p.json")]) != 0
    refused = capsys.readouterr().err
    assert "status error" in refused and "1 of them ended in an error" in refused
    assert not (tmp_path / "p.json").exists()

    # inspect eval-retry reruns the errored sample (the bug fixed meanwhile); a retry
    # rebuilds the model from the log, so this run uses mockllm's default reply (wrong)
    [log] = eval(
        TASK, task_args=ARGS, model="mockllm/model", limit=SAMPLES, display="none",
        log_dir=str(tmp_path / "retry"),
    )  # fmt: skip
    assert log.status == "error" and log.samples and log.samples[1].error
    bug.left = 0
    [retried] = eval_retry(log, log_dir=str(tmp_path / "retry"), display="none")
    assert retried.status == "success", (retried.error, [s.error for s in retried.samples or []])
    assert retried.samples is not None and not any(s.error for s in retried.samples)
    assert retried.results is not None and retried.results.completed_samples == SAMPLES
    assert metric(retried, "financemath") == 0.0
    assert retried.results.scores[0].scored_samples == SAMPLES


def test_retry_on_error_reruns_the_sample(bug: Bug, golds: list[str], tmp_path: Path) -> None:
    bug.left = 1  # fails once
    log = run(golds, tmp_path, retry_on_error=1)
    assert log.status == "success"
    assert log.samples is not None and not any(s.error for s in log.samples)
    assert [s.scores["financemath"].value for s in log.samples] == [1.0, 1.0, 0.0]  # type: ignore[index]
    assert log.samples[1].error_retries  # the failed attempt is kept beside the sample


def test_a_user_who_accepts_errors_gets_success_marked_not_whole(
    bug: Bug, golds: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for accepted in (False, 0.5):  # --no-fail-on-error, --fail-on-error 0.5
        log = run(golds, tmp_path / f"logs-{accepted}", fail_on_error=accepted)
        assert log.status == "success", accepted
        check_the_others_scored(log)
    [row], err = report_logs(tmp_path / "logs-False", tmp_path / "report", capsys)
    assert row["status"] == "success, 1 errored" and row["scored/total"] == "2/3"
    assert "NOT WHOLE (1/3 samples errored)" in row["run"]
    assert "1 of 3 samples ended in an error" in err

    assert log.location
    out = tmp_path / "p.json"
    assert finmath(["export", log.location, "-o", str(out)]) == 0
    assert "1 of them ended in an error" in capsys.readouterr().out
    assert out.exists()


def test_our_default_yields_to_the_users_continue_on_fail(
    bug: Bug, golds: list[str], tmp_path: Path
) -> None:
    log = run(golds, tmp_path, continue_on_fail=False)
    assert log.status == "error" and log.error is not None
    assert "a bug in our scorer" in log.error.message
    assert log.samples is not None
    assert not log.samples[-1].scores  # the run stopped at the error
