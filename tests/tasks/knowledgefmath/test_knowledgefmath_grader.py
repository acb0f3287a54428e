"""Which model extracts KnowledgeFMATH's answers (``-T extractor=model``): the ``grader``
role, else the evaluated model (real evals with scripted models)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from inspect_ai import eval
from inspect_ai.log import resolve_sample_attachments

from eval_helpers import grader_warnings, metric, scripted, whole_score
from finmath_tasks.scorers.grader import FROM_EVALUATED, FROM_ROLE
from finmath_tasks.tasks.knowledgefmath import knowledgefmath

WARNING = (
    "no grader role: mockllm/model grades its own answers; the paper's grader was "
    "gpt-3.5-turbo-1106 (the leaderboard's: gpt-4o-mini); bind one with --model-role grader="
)


def test_without_a_grader_role_the_evaluated_model_extracts_warned_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    task = knowledgefmath(split="demo", solver="cot", extractor="model")
    task.dataset = task.dataset[:3]
    gold = [float(s.target) for s in task.dataset]  # type: ignore[arg-type]
    # one model: each sample's solution, then its own extraction of it (max_samples=1)
    replies = ["work 1", repr(gold[0]), "work 2", repr(gold[1] * 3 + 7), "work 3", repr(gold[2])]
    [log] = eval(task, model=scripted(replies), log_dir=str(tmp_path), display="none",
                 max_samples=1)  # fmt: skip
    assert log.status == "success" and log.samples is not None
    # its extraction decides: the second reply is a wrong number
    assert metric(log, "financemath") == pytest.approx(2 / 3)
    for sample in log.samples:
        meta = whole_score(sample).metadata or {}
        assert (meta["grader_model"], meta["grader_source"]) == ("mockllm/model", FROM_EVALUATED)
        asks = [e for e in resolve_sample_attachments(sample).events
                if e.event == "model" and e.input[-1].role == "assistant"]  # fmt: skip
        assert [a.model for a in asks] == ["mockllm/model"]
    # three extractions, one warning for the run (in the log and on the console)
    [warning] = grader_warnings(log)
    assert WARNING in warning
    assert len([r for r in caplog.records if "no grader role" in r.getMessage()]) == 1


def test_a_bound_grader_role_extracts_and_is_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    task = knowledgefmath(split="demo", solver="cot", extractor="model")
    task.dataset = task.dataset[:2]
    gold = [float(s.target) for s in task.dataset]  # type: ignore[arg-type]
    other = scripted([repr(gold[0]), repr(gold[1])], "mockllm/other")
    [log] = eval(task, model=scripted(["work 1", "work 2"]), model_roles={"grader": other},
                 log_dir=str(tmp_path), display="none", max_samples=1)  # fmt: skip
    assert log.status == "success" and log.samples is not None
    assert metric(log, "financemath") == 1.0
    for sample in log.samples:
        meta = whole_score(sample).metadata or {}
        assert (meta["grader_model"], meta["grader_source"]) == ("mockllm/other", FROM_ROLE)
    assert grader_warnings(log) == []
    assert not [r for r in caplog.records if "no grader role" in r.getMessage()]
