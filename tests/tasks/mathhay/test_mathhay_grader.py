"""Which model judges MathHay: the ``grader`` role, else the evaluated model (real evals).

Without a grader role the judge still runs, on the evaluated model: its scripted reply
decides the verdict, each judged score names it and one warning says so. With a role,
the role's model judges and is named.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from inspect_ai.log import EvalLog, resolve_sample_attachments
from inspect_ai.model import Model
from mathhay_fixtures import RELEASE, write_release

from eval_helpers import grader_warnings, metrics, scripted
from finmath_tasks.scorers.grader import FROM_EVALUATED, FROM_ROLE
from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.mathhay.task import in_files_order

WARNING = "no grader role: mockllm/model grades its own answers; the paper's grader was gpt-4o"
EXACT = '```json\n{"reasoning": "120 - 80 = 40", "answer": 40}\n```'
CLOSE = '```json\n{"reasoning": "40 * 2.5", "answer": 100.1}\n```'


def verdict(output: str) -> str:
    return json.dumps({"reasoning": "compared", "output": output})


def run(tmp_path: Path, model: Model, roles: dict[str, Model] | None = None) -> EvalLog:
    """Two sssd questions: the first answered exactly (no judge), the second 100.1 for 100."""
    write_release(tmp_path)
    [log] = eval(
        in_files_order(mathhay(release=RELEASE, subset="full", data_dir=str(tmp_path),
                               task_type="sssd", length=1200)),
        model=model, model_roles=roles, max_samples=1, display="none",
        log_dir=str(tmp_path / "logs"),
    )  # fmt: skip
    assert log.status == "success", log.error
    return log


@pytest.mark.parametrize(("reply", "official"), [("Yes", 1.0), ("No", 0.5)])
def test_without_a_grader_role_the_evaluated_model_judges(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, reply: str, official: float
) -> None:
    caplog.set_level(logging.WARNING)
    # the evaluated model answers both questions, then (in order) judges the second
    log = run(tmp_path, scripted([EXACT, CLOSE, verdict(reply)]))
    assert metrics(log, "mathhay")["accuracy"] == official  # its own verdict decides
    assert metrics(log, "exact_match")["accuracy"] == 0.5
    assert "judge_skipped" not in metrics(log, "exact_match")
    assert log.samples is not None
    first, second = (s.scores["mathhay"] for s in log.samples)  # type: ignore[index]
    assert first.metadata["judge"] == "not asked (exact match)"  # type: ignore[index]
    judged = second.metadata or {}
    assert judged["judge"] == reply.lower()
    assert (judged["grader_model"], judged["grader_source"]) == ("mockllm/model", FROM_EVALUATED)
    # the judge's prompt went to the evaluated model
    events = resolve_sample_attachments(log.samples[1]).events
    [ask] = [e for e in events if e.event == "model" and "Answer1:" in e.input[0].text]
    assert ask.model == "mockllm/model"
    # one warning for the run, in the log and on the console
    [warning] = grader_warnings(log)
    assert WARNING in warning and "--model-role grader=" in warning
    assert len([r for r in caplog.records if "no grader role" in r.getMessage()]) == 1


def test_a_bound_grader_role_judges_and_is_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    other = scripted([verdict("Yes")], "mockllm/other")
    log = run(tmp_path, scripted([EXACT, CLOSE]), {"grader": other})
    assert metrics(log, "mathhay")["accuracy"] == 1.0
    assert log.samples is not None
    judged = log.samples[1].scores["mathhay"].metadata or {}  # type: ignore[index]
    assert (judged["grader_model"], judged["grader_source"]) == ("mockllm/other", FROM_ROLE)
    assert grader_warnings(log) == []
    assert not [r for r in caplog.records if "no grader role" in r.getMessage()]
    assert log.eval.model_roles is not None and "grader" in log.eval.model_roles


def test_judge_false_is_exact_match_alone_and_asks_no_model(tmp_path: Path) -> None:
    write_release(tmp_path)
    args: dict[str, Any] = {"release": RELEASE, "subset": "full", "data_dir": str(tmp_path),
                            "task_type": "sssd", "length": 1200}  # fmt: skip
    [log] = eval(in_files_order(mathhay(**args, judge=False)), model=scripted([EXACT, CLOSE]), max_samples=1,
                 display="none", log_dir=str(tmp_path / "logs"))  # fmt: skip
    assert log.status == "success" and log.samples is not None
    assert metrics(log, "mathhay")["accuracy"] == 0.5
    second = log.samples[1].scores["mathhay"].metadata or {}  # type: ignore[index]
    assert second["judge"] == "disabled (-T judge=false)" and "grader_model" not in second
    assert grader_warnings(log) == []
