"""``finmath grid``: runs that cannot run here, generation options, stratified ``--limit``,
one-line errors and a last line (and status) that tells how every task ended."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.dataset import Sample
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.model import GenerateConfig, ModelAPI, ModelOutput, modelapi

from eval_helpers import metric
from finmath_tasks.cli import prerequisites
from finmath_tasks.cli.declare import Strata, declarations
from finmath_tasks.cli.grid import GridOptions, build
from finmath_tasks.cli.main import main
from finmath_tasks.cli.selection import SELECTION_KEY, stratified
from tasks.finqa.finqa_fixtures import write_task_data

ROOT = Path(__file__).resolve().parents[2]
WITHOUT_SANDBOXES = ROOT / "scripts" / "without-sandboxes.sh"


def _finmath_without_sandboxes(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(WITHOUT_SANDBOXES), sys.executable, "-m", "finmath_tasks.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _logs(log_dir: Path) -> list[Any]:
    return [read_eval_log(i) for i in list_eval_logs(str(log_dir))]


@pytest.mark.slow
def test_finqa_without_a_sandbox_runs_every_other_run(tmp_path: Path) -> None:
    data = tmp_path / "finqa"
    write_task_data(data)
    log_dir = tmp_path / "logs"
    argv = ["grid", "finqa", "--model", "mockllm/model", "-T", f"data_dir={data}",
            "--limit", "1", "--log-dir", str(log_dir), "--display", "none"]  # fmt: skip
    dry = _finmath_without_sandboxes(*argv, "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr[-2000:]
    first = dry.stdout.splitlines()[0]
    assert first.startswith("cannot run here, a real grid skips run 5 (-T split=dev -T solver=pot")
    assert "no isolated sandbox" in first and "bwrap not found" in first
    assert (
        "5. -T split=dev -T solver=pot" in dry.stdout and "[skipped: cannot run here]" in dry.stdout
    )
    assert not log_dir.exists()

    real = _finmath_without_sandboxes(*argv, cwd=tmp_path)
    assert real.returncode == 1, real.stdout[-2000:] + real.stderr[-2000:]
    assert "Traceback" not in real.stderr and "SandboxUnavailableError" not in real.stderr
    lines = real.stdout.strip().splitlines()
    assert lines[-1].startswith("grid incomplete: 10 of 11 tasks succeeded, 1 skipped; logs in")
    assert any(
        line.startswith("skipped run 5 (-T split=dev -T solver=pot")
        and "no isolated sandbox" in line
        for line in lines
    )
    logs = _logs(log_dir)
    assert len(logs) == 10
    assert all(log.status == "success" and len(log.samples or []) == 1 for log in logs)

    # Inspect's --sandbox runs it even here (without isolation, as asked)
    pot_dir = tmp_path / "pot-logs"
    pot_argv = [*argv[:-4], "--log-dir", str(pot_dir), "--display", "none"]
    pot = _finmath_without_sandboxes(
        *pot_argv, "--only", "solver=pot", "--sandbox", "local", cwd=tmp_path
    )
    assert pot.returncode == 0, pot.stdout[-2000:] + pot.stderr[-2000:]
    [log] = _logs(pot_dir)
    assert log.eval.task_args["solver"] == "pot"
    assert log.status == "success" and log.eval.sandbox is not None
    assert log.eval.sandbox.type == "local"
    solvers = Counter(log.eval.task_args["solver"] for log in logs)
    assert "pot" not in solvers and solvers["rag_cot"] == 3 and solvers["critic_oracle"] == 1
    # mockllm's default reply holds no answer: every run scored its one sample, as wrong
    assert {metric(log, "tolerant") for log in logs} == {0.0}


TABLE5 = ["grid", "knowledgefmath", "--grid", "table5", "--model", "mockllm/model",
          "-T", "split=demo", "--limit", "1", "--display", "none"]  # fmt: skip


def test_table5_without_the_dense_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # not installed
    assert main([*TABLE5, "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("cannot run here, a real grid skips runs 6, 7, 8, 9, 10, 11: ")
    assert "'dense' extra is not installed" in out[0]
    assert "pip install -e '.[dense]' in the checkout" in out[0]
    # a task that still stops on the missing extra when built is skipped the same way
    monkeypatch.setattr("finmath_tasks.cli.grid.missing", lambda *a: {})
    log_dir = tmp_path / "logs"
    code = main([*TABLE5, "--only", "knowledge=none,dense", "--log-dir", str(log_dir)])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 1
    assert out[-1].startswith("grid incomplete: 1 of 3 tasks succeeded, 2 skipped")
    assert out[-2].startswith("skipped runs 2, 3: dense retrieval needs sentence-transformers")
    [log] = _logs(log_dir)
    assert log.status == "success" and log.eval.task_args["knowledge"] == "none"


@pytest.mark.slow
@pytest.mark.realdata
def test_a_judged_mathhay_run_without_a_grader_is_not_skipped(
    capsys: pytest.CaptureFixture[str], data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a grader role the evaluated model judges (warned at run time), so no run
    of the grid is skipped for the missing role (a dry run builds each task: it reads the
    data)."""
    monkeypatch.setenv("FINMATH_DATA_DIR", str(data_dir))
    base = ["grid", "mathhay", "--model", "mockllm/a", "--dry-run", "--only", "length=32000"]
    for extra in ([], ["--model-role", "grader=mockllm/judge"], ["-T", "judge=false"]):
        assert main([*base, *extra]) == 0
        out = capsys.readouterr().out
        assert "cannot run here" not in out and "needs --model-role" not in out


def test_needs_are_checked_per_sandbox_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prerequisites, "_docker", lambda: (False, "no engine"))
    monkeypatch.setattr(prerequisites, "_bwrap", lambda: (False, "not found"))
    kfm = declarations()["knowledgefmath"]
    runs = [{"solver": "pot", "knowledge": "none"}, {"solver": "cot", "knowledge": "none"}]
    found = prerequisites.missing(kfm, runs, {})
    assert set(found) == {0}
    assert "docker: no engine; bwrap: not found" in found[0]
    # the grid's --sandbox (Inspect's) decides for the runs that execute programs
    assert prerequisites.missing(kfm, runs, {}, "local") == {}
    assert prerequisites.missing(kfm, runs, {}, "finmath_bwrap") == {
        0: "--sandbox finmath_bwrap: not found"
    }
    monkeypatch.setattr(prerequisites, "_bwrap", lambda: (True, ""))
    assert prerequisites.missing(kfm, runs, {}) == {}
    assert prerequisites.missing(kfm, runs, {}, "finmath_bwrap") == {}
    assert prerequisites.missing(kfm, runs, {}, "finmath_docker") == {
        0: "--sandbox finmath_docker: no engine"
    }


def test_the_grid_sandbox_reaches_only_the_tasks_that_run_programs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from finmath_tasks.cli.grid import sandbox_spec

    data = tmp_path / "finqa"
    write_task_data(data)
    options = GridOptions(
        benchmark="finqa",
        models=["mockllm/model"],
        log_dir=str(tmp_path / "logs"),
        task_args={"data_dir": str(data)},
        sandbox="local",
    )
    built = build(declarations()["finqa"], options)
    assert not built.skipped and len(built.tasks) == len(built.runs) == 11
    sandboxes = {
        built.runs[i]["solver"]: task.sandbox
        for i, task in zip(built.built, built.tasks, strict=True)
    }
    assert sandboxes.pop("pot") == sandbox_spec("local")
    assert set(sandboxes.values()) == {None}  # a task that runs no program gets none
    monkeypatch.chdir(tmp_path)
    composed = sandbox_spec("docker:compose.yaml")
    assert (composed.type, composed.config) == ("docker", str(tmp_path / "compose.yaml"))


@pytest.fixture
def broken_finqa(tmp_path: Path) -> Path:
    """FinQA fixture data whose test file is cut in the middle of a record."""
    data = tmp_path / "truncated"
    test_file = write_task_data(data)
    text = test_file.read_text()
    test_file.write_text(text[: len(text) // 2])
    return data


KFM = ["grid", "knowledgefmath", "--model", "mockllm/model", "--only", "solver=cot",
       "--only", "knowledge=none", "--display", "none"]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-T", "split=foo"], "run 1 (-T solver=cot -T knowledge=none -T split=foo): "
         "knowledgefmath: -T split='foo' is not one of validation, test, demo"),
        (["--only", "knowledge=bm25", "-T", "top_n=0"], "-T top_n=0 must be an integer from 1"),
        (["-T", "split=validation", "-T", "data_dir={tmp}/nowhere"],
         "-T data_dir={tmp}/nowhere: no such directory"),
        (["--model", "nosuch/model"], "Model API nosuch of model 'nosuch/model' not recognized"),
        (["--log-dir", "{tmp}/a_file"], "--log-dir {tmp}/a_file: a file, not a folder"),
        (["--limit", "-1"], "--limit -1: must be at least 1"),
        (["--limit", "0"], "--limit 0: must be at least 1"),
        (["--max-samples", "0"], "--max-samples 0: must be at least 1"),
        (["--max-tokens", "-5"], "--max-tokens -5: must be at least 1"),
        (["--retry-attempts", "-1"], "--retry-attempts -1: must be at least 0"),
        (["--epochs", "0"], "--epochs 0: must be at least 1"),
        (["--top-p", "1.5"], "--top-p 1.5: must be from 0 to 1"),
        (["--temperature", "-1"], "--temperature -1: must be at least 0"),
        (["--sample-shuffle"], "--sample-shuffle chooses which samples --limit runs"),
    ],
)  # fmt: skip
def test_every_grid_error_is_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    (tmp_path / "a_file").write_text("not a folder")
    extra = [e.replace("{tmp}", str(tmp_path)) for e in extra]
    log_dir = ["--log-dir", str(tmp_path / "logs")] if "--log-dir" not in extra else []
    split = [] if any("split=" in e for e in extra) else ["-T", "split=demo"]
    model = ["--model", "mockllm/model"] if "--model" not in extra else []
    argv = [KFM[0], KFM[1], *model, *KFM[4:], *split, *log_dir, *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("finmath: ") and message.replace("{tmp}", str(tmp_path)) in err
    assert not (tmp_path / "logs").exists() or not list_eval_logs(str(tmp_path / "logs"))


def test_a_truncated_data_folder_is_one_line(
    tmp_path: Path, broken_finqa: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["grid", "finqa", "--model", "mockllm/model", "--only", "solver=rag_cot",
            "-T", f"data_dir={broken_finqa}", "--log-dir", str(tmp_path / "logs")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("finmath: run 1 (-T split=test"), err
    assert "test.json" in err


def test_generation_options_reach_the_logs(tmp_path: Path) -> None:
    log_dir = tmp_path / "logs"
    code = main(
        [*KFM,
         "-T", "split=demo", "-T", "solver=oracle", "--limit", "3", "--log-dir", str(log_dir),
         "--temperature", "0.3", "--top-p", "0.9", "--seed", "7", "--max-tokens", "50",
         "--epochs", "2"]
    )  # fmt: skip
    assert code == 0
    [log] = _logs(log_dir)
    assert log.status == "success"
    config = log.eval.model_generate_config
    assert (config.temperature, config.top_p, config.seed, config.max_tokens) == (0.3, 0.9, 7, 50)
    assert log.eval.config.epochs == 2
    assert log.eval.dataset.samples == 3 and log.eval.config.limit is None
    assert log.results is not None and log.results.total_samples == 6  # 3 x 2 epochs
    assert len(log.samples or []) == 6
    assert metric(log, "financemath") == 1.0  # the oracle answers every question right
    # 3 of the demo split's 7 topics, one sample each (stratified), recorded in the log
    topics = [s.metadata["topic"] for s in log.samples or [] if s.epoch == 1]
    assert len(set(topics)) == 3
    record = (log.eval.metadata or {})[SELECTION_KEY]
    assert record["strategy"] == "stratified" and record["of"] == 15
    assert record["strata"] == dict.fromkeys(topics, 1) and record["strata_in_dataset"] == 7


def test_sample_shuffle_is_inspects(tmp_path: Path) -> None:
    log_dir = tmp_path / "logs"
    argv = [*KFM, "-T", "split=demo", "-T", "solver=oracle", "--limit", "4",
            "--sample-shuffle", "11", "--log-dir", str(log_dir)]  # fmt: skip
    assert main(argv) == 0
    [log] = _logs(log_dir)
    assert log.status == "success"
    assert log.eval.config.sample_shuffle == 11 and log.eval.config.limit == 4
    assert len(log.samples or []) == 4


def test_stratified_choice_is_round_robin_in_dataset_order() -> None:
    kinds = ["a", "a", "a", "b", "c", "c", "b"]
    samples = [Sample(input=str(i), id=i, metadata={"k": k}) for i, k in enumerate(kinds)]
    strata = Strata(key="k", label="kind")
    assert [s.id for s in stratified(samples, strata, 3)] == [0, 3, 4]
    assert [s.id for s in stratified(samples, strata, 5)] == [0, 1, 3, 4, 6]  # a, b, c order
    assert [s.id for s in stratified(samples, strata, 2)] == [0, 3]
    assert [s.id for s in stratified(samples, strata, 99)] == list(range(7))
    ordered = Strata(key="k", label="kind", order=["c", "z"])  # c first; z never occurs
    assert [s.id for s in stratified(samples, ordered, 2)] == [0, 4]
    assert [s.id for s in stratified(samples, ordered, 4)] == [0, 3, 4, 5]
    for n in range(1, 8):  # the choice for n is part of the choice for n + 1
        assert set(map(id, stratified(samples, ordered, n))) <= set(
            map(id, stratified(samples, ordered, n + 1))
        )


@pytest.mark.realdata
def test_stratified_limit_covers_every_mathhay_task_type(data_dir: Path) -> None:
    mathhay = declarations()["mathhay"]
    options = GridOptions(
        benchmark="mathhay",
        models=["mockllm/model"],
        log_dir="unused",
        only={"subset": "verified", "length": 32000},
        model_roles={"grader": "mockllm/judge"},
        task_args={"data_dir": str(data_dir)},
        limit=7,
    )
    [task] = build(mathhay, options).tasks
    types = [s.metadata["task_type"] for s in task.dataset]  # type: ignore[index]
    assert sorted(types) == sorted(["sssd", "2ssd", "3ssd", "ss2d", "2s2d", "3s2d", "3s3d"])
    assert task.metadata[SELECTION_KEY]["strata_in_dataset"] == 7
    # Inspect's first 7 of the same run: 4 types; its first 3: no single-document question
    first = GridOptions(**{**options.__dict__, "selection": "first"})
    [whole] = build(mathhay, first).tasks
    firsts = [s.metadata["task_type"] for s in whole.dataset]  # type: ignore[index]
    assert len(set(firsts[:7])) == 4 and not {"sssd", "2ssd", "3ssd"} & set(firsts[:3])
    # stratified --limit 3: a single-document question, and one of each category first
    three = GridOptions(**{**options.__dict__, "limit": 3})
    [task] = build(mathhay, three).tasks
    assert {s.metadata["task_type"] for s in task.dataset} == {"sssd", "2ssd", "ss2d"}  # type: ignore[index]


@pytest.mark.realdata
def test_stratified_sara_pilot_has_every_section(data_dir: Path, tmp_path: Path) -> None:
    from finmath_tasks.tasks.sara import sara

    sections = {s.metadata["section"] for s in sara(data_dir=str(data_dir)).dataset}  # type: ignore[index]
    assert len(sections) > 1
    log_dir = tmp_path / "logs"
    argv = ["grid", "sara", "--model", "mockllm/model", "--only", "retrieval=none",
            "--only", "prompting=zero_shot", "-T", f"data_dir={data_dir}",
            "--limit", str(len(sections)), "--log-dir", str(log_dir), "--display", "none"]  # fmt: skip
    assert main(argv) == 0
    [log] = _logs(log_dir)
    assert log.status == "success"
    assert {s.metadata["section"] for s in log.samples or []} == sections
    assert len(log.samples or []) == len(sections)
    assert metric(log, "entailment") == 0.0  # mockllm's default reply is no verdict


SLOW_MODEL = """
import asyncio, sys
from pathlib import Path
from inspect_ai.model import GenerateConfig, ModelAPI, ModelOutput, modelapi

CALLED = Path(sys.argv[1])

@modelapi(name="finmath_slow")
class Slow(ModelAPI):
    def __init__(self, model_name, base_url=None, api_key=None, config=GenerateConfig(), **kw):
        super().__init__(model_name, base_url, api_key, [], config)
        self.calls = 0

    async def generate(self, input, tools, tool_choice, config):
        self.calls += 1
        if self.calls == 3:
            CALLED.write_text("3")
        await asyncio.sleep(0.3)
        return ModelOutput.from_content(self.model_name, "Therefore, the answer is 1.")

from finmath_tasks.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.slow
def test_an_interrupted_grid_says_so_and_fails(tmp_path: Path) -> None:
    script, called, log_dir = tmp_path / "run.py", tmp_path / "called", tmp_path / "logs"
    script.write_text(SLOW_MODEL)
    argv = [sys.executable, str(script), str(called), "grid", "knowledgefmath",
            "--model", "finmath_slow/m", "--only", "solver=cot", "--only", "knowledge=none",
            "-T", "split=demo", "--max-samples", "1", "--log-dir", str(log_dir),
            "--display", "none"]  # fmt: skip
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a process started in the background ignores SIGINT unless told otherwise
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler),
    )
    for _ in range(600):
        if called.exists() or proc.poll() is not None:
            break
        time.sleep(0.1)
    assert called.exists(), proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    lines = out.strip().splitlines()
    assert lines[-1].startswith("grid incomplete: 0 of 1 tasks succeeded, 1 interrupted")
    assert "run the same command again to resume" in lines[-1]
    assert lines[-2].startswith("interrupted: run 1 (-T solver=cot -T knowledge=none")
    assert "status cancelled" in lines[-2] and "of 15 samples" in lines[-2]
    [log] = _logs(log_dir)
    assert log.status == "cancelled"


def test_selection_is_recorded_in_the_plan(tmp_path: Path) -> None:
    from finmath_tasks.cli.grid import read_plan
    from finmath_tasks.cli.inspect_options import read as read_inspect

    plan = tmp_path / "plan.json"
    argv = [*KFM, "-T", "split=demo", "--limit", "2", "--temperature", "0", "--epochs", "2",
            "--log-dir", str(tmp_path / "logs"), "--plan", str(plan)]  # fmt: skip
    assert main(argv) == 0
    options = read_plan(str(plan))["options"]
    # Inspect's options as typed, read again by Inspect's parser in each worker
    temperature = read_inspect(options["inspect_args"]).generation()["temperature"]
    assert (temperature, options["epochs"], options["selection"]) == (0.0, 2, "stratified")
    assert json.loads(plan.read_text())["manifest"]["tasks"]


@modelapi(name="finmath_failing")
class FailingModel(ModelAPI):
    """Every call fails: the task's log ends in status error."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)

    async def generate(self, *args: Any, **kwargs: Any) -> ModelOutput:
        raise RuntimeError("this model always fails")


def test_a_failed_run_fails_the_grid_and_its_worker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["grid", "knowledgefmath", "--model", "finmath_failing/m", "--only", "solver=cot",
            "--only", "knowledge=none", "-T", "split=demo", "--limit", "2",
            "--retry-attempts", "0", "--display", "none"]  # fmt: skip
    assert main([*base, "--log-dir", str(tmp_path / "one")]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("grid incomplete: 0 of 1 tasks succeeded, 1 failed")
    assert out[-2].startswith("failed: run 1 (-T solver=cot -T knowledge=none -T split=demo)")
    assert "status error, 0 of 2 samples" in out[-2]

    plan = tmp_path / "plan.json"
    assert main([*base, "--log-dir", str(tmp_path / "sharded"), "--plan", str(plan)]) == 0
    capsys.readouterr()
    assert main(["grid", "--plan", str(plan), "--worker", "0", "--of", "1"]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == "worker 0 of 1: 0 of 1 task(s) succeeded"
    # the worker's eval keeps going past errored samples: a "success" log without scores
    assert out[-2] == (
        "not finished: finmath_tasks/knowledgefmath finmath_failing/m split=demo solver=cot "
        "knowledge=none: success without scores"
    )


def test_a_plan_leaves_out_the_runs_that_cannot_run_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from finmath_tasks.cli.grid import read_plan

    monkeypatch.setattr(prerequisites, "_docker", lambda: (False, "no engine"))
    monkeypatch.setattr(prerequisites, "_bwrap", lambda: (False, "not found"))
    data = tmp_path / "finqa"
    write_task_data(data)
    plan = tmp_path / "plan.json"
    argv = ["grid", "finqa", "--model", "mockllm/model", "-T", f"data_dir={data}",
            "--only", "split=dev", "--limit", "1", "--log-dir", str(tmp_path / "logs"),
            "--plan", str(plan)]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "skipped run 2 (-T split=dev -T solver=pot" in out and "docker: no engine" in out
    tasks = read_plan(str(plan))["manifest"]["tasks"]
    assert len(tasks) == 7 and "pot" not in {t["args"]["solver"] for t in tasks}
