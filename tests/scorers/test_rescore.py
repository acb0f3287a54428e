"""Every task's scorers are rebuilt by Inspect from a log: ``inspect score LOG --overwrite``
in a fresh process reproduces every metric and every sample's score (from a copy of the
log whose scores were removed), ``--scorer`` with arguments and another grader re-scores
a knowledgefmath log, and the ``unscored`` count is right after ``inspect eval-retry``,
an eval-set resume and ``inspect score``."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval, eval_retry, eval_set
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from inspect_ai.model import Model, get_model
from inspect_ai.util import registry_create, registry_info

from benchmark_list import cases, default_task, need, oracle_model
from eval_helpers import scripted
from finmath_tasks.tasks.finqa import finqa
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.sara import sara
from finmath_tasks.tasks.tatqa import tatqa

pytestmark = pytest.mark.realdata

REPLY = (
    "Work: 120 - 80 = 40.\n"
    + json.dumps({"steps": ["120 - 80 = 40"], "answer": "40", "reasoning": "120 - 80"})
    + "\nAnswer: 40"
)
LIMIT = 3
ORACLES = ("knowledgefmath", "finqa", "tatqa")

TASKS: dict[str, tuple[Callable[[Path], Task], list[str]]] = {
    # the oracles answer with the gold answers: accuracies of 1 beside the replies' 0
    "knowledgefmath": (lambda d: knowledgefmath(split="demo", solver="oracle"), []),
    "knowledgefmath_test": (
        lambda d: knowledgefmath(split="test", data_dir=str(d)),
        [REPLY] * LIMIT,
    ),
    "sara": (lambda d: sara(), ["Entailment", "Contradiction", "False"]),
    "finqa": (lambda d: finqa(solver="oracle"), []),
    "tatqa": (lambda d: tatqa(solver="oracle"), []),
    "tatqa_agent": (lambda d: tatqa(solver="critic"), [REPLY] * 20),
    "mathhay": (lambda d: mathhay(subset="verified"), [REPLY] * 20),
}
"""Hand entries: the runs whose values a test below asserts. A benchmark with none runs its
task at its defaults (and its own ``SHARED_TEST_ARGS``) answered with each sample's target
(:func:`generic_run`)."""


def generic_run(benchmark: str) -> tuple[Callable[[Path], Task], Model]:
    """A benchmark's generic re-scoring run: its task as its folder builds it, and a model
    answering each sample with its target."""
    task = default_task(benchmark)
    return (lambda d: task), oracle_model(task)


def run(task: Task, tmp_path: Path, replies: list[str] | Model) -> EvalLog:
    model = replies if isinstance(replies, Model) else scripted(replies or ["unused"])
    [log] = eval(
        task,
        model=model,
        limit=LIMIT,
        max_samples=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    return log


def all_metrics(log: EvalLog) -> dict[tuple[str, str], float]:
    assert log.results is not None
    return {(s.name, k): m.value for s in log.results.scores for k, m in s.metrics.items()}


def sample_values(log: EvalLog) -> dict[tuple[str, str], Any]:
    return {
        (str(s.id), name): score.value
        for s in log.samples or []
        for name, score in (s.scores or {}).items()
    }


def same(a: dict[Any, Any], b: dict[Any, Any]) -> bool:
    def eq(x: Any, y: Any) -> bool:
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            return True
        return bool(x == y)

    return a.keys() == b.keys() and all(eq(a[k], b[k]) for k in a)


def inspect_score(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``inspect score PATH --overwrite --action overwrite ARGS`` in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "score", str(path), "--overwrite",
         "--action", "overwrite", "--display", "none", *args],
        capture_output=True, text=True, timeout=300, env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def without_scores(log: EvalLog, path: Path) -> None:
    """A copy of ``log`` at ``path`` with no sample score and no metric left."""
    copy = log.model_copy(deep=True)
    for sample in copy.samples or []:
        sample.scores = None
    assert copy.results is not None
    copy.results.scores = []
    write_eval_log(copy, str(path))


@pytest.mark.slow
@pytest.mark.parametrize("case", cases(TASKS))
def test_inspect_score_rebuilds_every_scorer_and_reproduces_every_metric(
    data_dir: Path, tmp_path: Path, case: str
) -> None:
    where = "tests/scorers/test_rescore.py TASKS"
    make, replies = need(TASKS, case, "re-scoring run", where, default=generic_run)
    log = run(make(data_dir), tmp_path, replies)
    before = all_metrics(log)
    if case in ORACLES:  # not only zeros: the oracles' official accuracy is 1
        assert log.results.scores[0].metrics["accuracy"].value == 1.0  # type: ignore[union-attr]
    if case not in TASKS:  # answered with the targets: some metric is not zero
        assert any(v for v in before.values() if isinstance(v, int | float)), before
    stripped = tmp_path / "stripped.eval"
    without_scores(log, stripped)
    assert not all_metrics(read_eval_log(str(stripped)))
    # the model only the mathhay judge calls: a scripted mockllm's outputs are not
    # rebuilt from the log, and the replies above hold no judge verdict either way
    inspect_score(stripped, "--model", "mockllm/model")
    after = read_eval_log(str(stripped))
    assert after.status == "success"
    assert [s.name for s in after.results.scores] == [s.name for s in log.results.scores]  # type: ignore[union-attr]
    assert same(all_metrics(after), before), (all_metrics(after), before)
    assert same(sample_values(after), sample_values(log))
    # each scorer is recorded with the builder's name and plain arguments
    for spec in after.eval.scorers or []:
        assert spec.options and spec.options["task"] == log.eval.task.split("/")[-1]
    if case == "knowledgefmath_test":  # answers withheld: every sample unscored, counted
        [count] = [s for s in after.results.scores if s.name == "unscored"]  # type: ignore[union-attr]
        assert count.metrics["n"].value == LIMIT
        official = after.results.scores[0]  # type: ignore[union-attr]
        assert official.unscored_samples == LIMIT


@pytest.mark.slow
def test_another_grader_re_scores_a_knowledgefmath_log(tmp_path: Path) -> None:
    """The extractor reads the answers with the grader role: re-scored with another grader
    (``--model-role grader=``), and with ``--scorer`` and arguments from a rules run."""
    [log] = eval(
        knowledgefmath(split="demo", solver="oracle", extractor="model"),
        model=scripted(["unused"]),
        model_roles={"grader": scripted(["7"] * LIMIT, name="mockllm/first")},
        limit=LIMIT,
        max_samples=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    graders = {s.scores["financemath"].metadata["grader_model"] for s in log.samples or []}  # type: ignore[index]
    assert graders == {"mockllm/first"}
    path = Path(str(log.location))
    inspect_score(path, "--model-role", "grader=mockllm/second")
    after = read_eval_log(str(path))
    for sample in after.samples or []:
        meta = sample.scores["financemath"].metadata  # type: ignore[index]
        assert meta["grader_model"] == "mockllm/second" and meta["grader_source"] == "grader role"
        # the second grader's reply (mockllm's default text) holds no number: unreadable
        assert meta["extractor_reply"].startswith("Default output from mockllm")
    assert [s.name for s in after.results.scores] == [s.name for s in log.results.scores]  # type: ignore[union-attr]
    unreadable = after.results.scores[0].metrics["unreadable"].value  # type: ignore[union-attr]
    assert unreadable == LIMIT

    # a rules run re-scored by one scorer given by name and arguments (-S)
    rules = run(knowledgefmath(split="demo", solver="oracle"), tmp_path / "rules", [])
    rules_path = Path(str(rules.location))
    inspect_score(
        rules_path, "--scorer", "financemath", "-S", "task=knowledgefmath",
        "-S", "solver=oracle", "-S", "extractor=model", "--model-role", "grader=mockllm/third",
    )  # fmt: skip
    rescored = read_eval_log(str(rules_path))
    assert [s.name for s in rescored.results.scores] == ["financemath"]  # type: ignore[union-attr]
    for sample in rescored.samples or []:
        meta = sample.scores["financemath"].metadata  # type: ignore[index]
        assert meta["extractor"] == "model" and meta["grader_model"] == "mockllm/third"


def test_the_unprefixed_names_keep_inspects_own_scorers() -> None:
    """``exact`` is one of our keys and one of Inspect's scorers: without ``task`` the
    unprefixed name builds Inspect's, with it ours."""

    def metric_names(scorer: Any) -> list[str]:
        return [registry_info(m).name for m in registry_info(scorer).metadata["metrics"]]

    inspects = registry_create("scorer", "exact")
    assert metric_names(inspects) == ["inspect_ai/mean", "inspect_ai/stderr"]
    ours = registry_create("scorer", "exact", task="knowledgefmath", profile="exact")
    assert metric_names(ours) == ["inspect_ai/accuracy", "inspect_ai/stderr"]
    assert registry_info(ours).name == "exact"


# ---- the unscored count after a retry and a resume --------------------------------


def fail_once(monkeypatch: pytest.MonkeyPatch, fail_at: int) -> None:
    """The ``fail_at``-th generation of ``mockllm/model`` fails as a provider would (the
    others, and every later one, answer with mockllm's default reply). A retry rebuilds
    the model from the log, so the model is named, not scripted."""
    provider = type(get_model("mockllm/model").api)
    generate = provider.generate
    calls = {"n": 0}

    async def flaky(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise RuntimeError("provider unavailable")
        return await generate(self, *args, **kwargs)

    monkeypatch.setattr(provider, "generate", flaky)


def unscored_count(log: EvalLog) -> float:
    assert log.results is not None
    [count] = [s for s in log.results.scores if s.name == "unscored"]
    return float(count.metrics["n"].value)


FOUR = 4


def test_unscored_is_right_after_eval_retry(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four test-split samples (answers withheld: all unscored), one provider failure, then
    ``eval_retry``: four unscored, as Inspect's own count says."""
    fail_once(monkeypatch, 2)
    [first] = eval(
        knowledgefmath(split="test", data_dir=str(data_dir)),
        model="mockllm/model",
        limit=FOUR,
        max_samples=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert first.status == "error"
    assert sum(1 for s in first.samples or [] if s.error) == 1
    [retried] = eval_retry(first, display="none", log_dir=str(tmp_path / "logs"))
    assert retried.status == "success", retried.error
    assert retried.results is not None and retried.results.completed_samples == FOUR
    assert unscored_count(retried) == FOUR
    assert all(s.unscored_samples == FOUR for s in retried.results.scores if s.name != "unscored")


def test_unscored_is_right_after_an_eval_set_resume(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = str(tmp_path / "set")
    fail_once(monkeypatch, 3)
    done, [first] = eval_set(
        knowledgefmath(split="test", data_dir=str(data_dir)),
        log_dir=logs,
        model="mockllm/model",
        limit=FOUR,
        max_samples=1,
        retry_attempts=0,
        display="none",
    )
    assert not done and first.status == "error"
    done, [resumed] = eval_set(
        knowledgefmath(split="test", data_dir=str(data_dir)),
        log_dir=logs,
        model="mockllm/model",
        limit=FOUR,
        max_samples=1,
        retry_attempts=0,
        display="none",
    )
    assert done and resumed.status == "success", resumed.error
    assert unscored_count(resumed) == FOUR


@pytest.mark.slow
def test_a_log_without_scoring_arguments_gets_one_line_naming_the_way_out(
    tmp_path: Path,
) -> None:
    """Logs of versions before the rebuildable scorers record no scorer arguments."""
    log = run(knowledgefmath(split="demo", solver="oracle"), tmp_path, [])
    old = log.model_copy(deep=True)
    for spec in old.eval.scorers or []:
        spec.options = {}
    path = tmp_path / "old.eval"
    write_eval_log(old, str(path))
    done = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "score", str(path), "--overwrite",
         "--action", "overwrite", "--display", "none"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode != 0
    message = " ".join((done.stdout + done.stderr).split())
    assert "scorer 'financemath': missing argument task (-S task=<task>" in message
    assert "a log that records no scoring arguments" in message
    assert "--scorer financemath -S task=<task>" in message
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_scorer_given_without_its_task_names_the_missing_argument(tmp_path: Path) -> None:
    """``inspect score LOG --scorer tolerant`` without ``-S task=``: one line naming the
    argument and the tasks whose scoring has that key, not the log's version."""
    log = run(knowledgefmath(split="demo", solver="oracle"), tmp_path, [])
    done = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "score", str(log.location), "--scorer",
         "tolerant", "--overwrite", "--action", "overwrite", "--display", "none"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ),
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode != 0
    message = " ".join((done.stdout + done.stderr).split())
    assert "scorer 'tolerant': missing argument task (-S task=<task>, one of " in message
    assert "knowledgefmath" in message and "sara" not in message  # sara has no tolerant
    assert "Traceback" not in done.stderr


DOCUMENTED = re.compile(r"`inspect score (?:LOG|<log>)((?: --[a-z-]+(?: [a-z]+)?)*)`")
README_FILES = [
    Path(__file__).parents[2] / "README.md",
    *sorted((Path(__file__).parents[2] / "src/finmath_tasks/tasks").glob("*/README.md")),
    *sorted((Path(__file__).parents[2] / "docs").glob("*.md")),
]


@pytest.mark.slow
def test_the_documented_inspect_score_command_runs_unattended(tmp_path: Path) -> None:
    """Every ``inspect score LOG ...`` the READMEs write re-scores in place with no
    terminal (stdin closed): Inspect asks "overwrite or append?" and "overwrite or
    create?" unless both ``--action overwrite`` and ``--overwrite`` are given."""
    commands = {
        tuple(m.group(1).split())
        for path in README_FILES
        for m in DOCUMENTED.finditer(" ".join(path.read_text().split()))
    }
    assert commands, "no `inspect score LOG ...` command in the READMEs"
    log = run(knowledgefmath(split="demo", solver="oracle"), tmp_path, [])
    for flags in commands:
        assert flags, "a README writes `inspect score LOG` without flags"
        before = Path(str(log.location)).stat().st_mtime_ns
        done = subprocess.run(
            [sys.executable, "-m", "inspect_ai", "score", str(log.location), *flags,
             "--display", "none"],
            capture_output=True, text=True, timeout=300, env=dict(os.environ),
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, (flags, done.stdout + done.stderr)
        assert Path(str(log.location)).stat().st_mtime_ns != before  # rewritten in place
        assert len(list(Path(str(log.location)).parent.iterdir())) == 1  # no second file
        assert read_eval_log(str(log.location)).results.scores[0].metrics["accuracy"].value == 1.0  # type: ignore[union-attr]
