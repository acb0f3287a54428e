"""``finmath report`` never merges runs that differ in a recorded setting: for every
benchmark, a real scripted run and logs that differ from it in exactly one setting each
(written through Inspect's log API): the sample set at equal size, an argument that looks
like a detail (``max_prompt_tokens`` and the like), the data fingerprint, a generation
setting, and an independent repeat. Each is its own row (or repeat), labelled by what
tells it apart; an attempt of the same run (one task id) collapses to the most complete.
``paired.csv`` pairs runs on different data only when asked, and then says so."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_logs import cot_outputs
from grid_logs import (
    TATQA_COT,
    mathhay_outputs,
    rag_outputs,
    reply,
    tatqa_document,
)
from inspect_ai import Task, eval
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from inspect_ai.model import Model
from report_check import parse_markdown

from benchmark_list import BENCHMARKS, default_task, detail_argument, need, oracle_model
from eval_helpers import scripted
from finmath_tasks.cli.main import main
from finmath_tasks.tasks.finqa import finqa
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.sara import sara
from tasks.finqa.finqa_fixtures import write_task_data
from tasks.mathhay.mathhay_fixtures import write_release as write_mathhay
from tasks.sara.sara_fixtures import write_release as write_sara
from tasks.tatqa.tatqa_fixtures import write_split

MODEL = "mockllm/alpha"
OTHER_DATA = "0123456789abcdef"
TEMPERATURE = 0.123


Base = tuple[Task, list[str] | Model, str, Any]
"""A benchmark's small task, the scripted outputs of one run of it (or the model that
answers it), and an argument that looks like a detail (with a value other than its
default)."""


def _knowledgefmath(root: Path) -> Base:
    task = knowledgefmath(split="demo", solver="cot")
    return task, cot_outputs(0, 0), "embedding_model", "another/embedder"


def _sara(root: Path) -> Base:
    write_sara(root / "sara")
    task = sara(data_dir=str(root / "sara"))
    return task, ["Entailment", "Entailment", "Contradiction"], "max_prompt_tokens", 100000


def _finqa(root: Path) -> Base:
    write_task_data(root / "finqa")
    task = finqa(data_dir=str(root / "finqa"), solver="rag_cot", retrieval="bm25")
    return task, rag_outputs(0, 0), "top_k", 7


def _tatqa(root: Path) -> Base:
    write_split(root / "tatqa", [tatqa_document()])
    from finmath_tasks.tasks.tatqa import tatqa

    task = tatqa(data_dir=str(root / "tatqa"), solver="cot")
    return task, [reply(a) for a in TATQA_COT[0]], "profile", "official"


def _mathhay(root: Path) -> Base:
    write_mathhay(root)
    args = {"release": "v1", "subset": "verified", "task_type": "sssd", "length": 400}
    task = mathhay(data_dir=str(root), **args)
    return task, mathhay_outputs(0, 0), "max_prompt_tokens", 100000


SCRIPTED_RUNS: dict[str, Callable[[Path], Base]] = {
    "knowledgefmath": _knowledgefmath,
    "sara": _sara,
    "finqa": _finqa,
    "tatqa": _tatqa,
    "mathhay": _mathhay,
}
"""Per benchmark, its scripted run for the report's tests (hand entries; a benchmark with
none gets :func:`_generic`)."""
GENERIC_LIMIT = 3


def _generic(benchmark: str) -> Callable[[Path], Base]:
    """A benchmark's run as its folder builds it: its task at its defaults (and its own
    ``SHARED_TEST_ARGS``) on its first samples, answered with each sample's target, and a
    parameter of its task at another value as the detail."""
    detail, value = detail_argument(benchmark)
    task = default_task(benchmark)
    task.dataset = task.dataset[:GENERIC_LIMIT]
    return lambda root: (task, oracle_model(task, MODEL), detail, value)


def _base(benchmark: str, root: Path) -> Base:
    """The benchmark's scripted run (:data:`SCRIPTED_RUNS`), built under ``root``."""
    where = "tests/cli/test_cli_report_identity.py SCRIPTED_RUNS"
    return need(SCRIPTED_RUNS, benchmark, "scripted run", where, default=_generic)(root)


def _copy(log: EvalLog, folder: Path, name: str, task_id: str, change: Any = None) -> None:
    copy = log.model_copy(deep=True)
    copy.eval.task_id = task_id
    if change is not None:
        change(copy)
    write_eval_log(copy, str(folder / f"2026-01-01T00-00-00-00-00_{name}_{task_id}.eval"))


def _other_samples(log: EvalLog) -> None:
    """The same number of samples, one of them another question."""
    ids = list(log.eval.dataset.sample_ids or [])
    renamed = {ids[-1]: f"{ids[-1]}-other"}
    log.eval.dataset.sample_ids = [renamed.get(i, i) for i in ids]  # type: ignore[assignment]
    for sample in log.samples or []:
        sample.id = renamed.get(sample.id, sample.id)  # type: ignore[arg-type]


def _other_data(log: EvalLog) -> None:
    metadata = dict(log.eval.metadata or {})
    metadata["data"] = {**metadata["data"], "fingerprint": OTHER_DATA}
    log.eval.metadata = metadata


def _temperature(log: EvalLog) -> None:
    log.plan.config.temperature = TEMPERATURE


def _unfinished(log: EvalLog) -> None:
    log.status = "error"
    assert log.results is not None
    log.results.completed_samples = 1


@pytest.fixture(scope="module", params=BENCHMARKS)
def variants(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    benchmark = request.param
    root = tmp_path_factory.mktemp(benchmark)
    folder = root / "logs"
    folder.mkdir()
    task, outputs, detail, value = _base(benchmark, root)
    model = outputs if isinstance(outputs, Model) else scripted(outputs, MODEL)
    [log] = eval(task, model=model, display="none", log_dir=str(root / "run"))
    assert log.status == "success", log.error
    log = read_eval_log(log.location)
    assert log.eval.dataset.samples and log.eval.dataset.samples >= 2
    assert (log.eval.metadata or {}).get("data", {}).get("fingerprint")

    def detail_change(copy: EvalLog) -> None:
        copy.eval.task_args = {**copy.eval.task_args, detail: value}

    _copy(log, folder, "base", "BASE00000000000000000A")
    _copy(log, folder, "attempt", "BASE00000000000000000A", _unfinished)
    _copy(log, folder, "repeat", "REPEAT000000000000000B")
    _copy(log, folder, "samples", "SAMPLES00000000000000C", _other_samples)
    _copy(log, folder, "detail", "DETAIL000000000000000D", detail_change)
    _copy(log, folder, "data", "DATA00000000000000000E", _other_data)
    _copy(log, folder, "temperature", "TEMPERATURE0000000000F", _temperature)
    out = root / "report"
    assert main(["report", str(folder), "--out", str(out), "--no-plots"]) == 0
    across = root / "report-across"
    assert (
        main(["report", str(folder), "--out", str(across), "--no-plots", "--pair-across-data"]) == 0
    )
    return benchmark, log, detail, value, out, across


def _labels(out: Path) -> dict[str, str]:
    """Log file -> its label in the report's list of logs."""
    header, rows = parse_markdown((out / "report.md").read_text())["Logs"]
    return {row[0]: row[header.index("run")] for row in rows}


def _by(labels: dict[str, str], name: str) -> str:
    [label] = [v for k, v in labels.items() if f"_{name}_" in k]
    return label


@pytest.mark.slow
def test_each_setting_is_its_own_run_labelled_by_its_difference(variants: Any) -> None:
    _benchmark, log, _detail, _value, out, _ = variants
    labels = _labels(out)
    # the unfinished attempt of the base run (same task id) is not a run of its own
    assert len(labels) == 6 and not any("_attempt_" in k for k in labels), labels
    md = (out / "report.md").read_text()
    assert "attempt_BASE00000000000000000A.eval: left out, an attempt of the same run" in md
    base, repeat = _by(labels, "base"), _by(labels, "repeat")
    assert base.endswith("repeat 1/2") and repeat.endswith("repeat 2/2")
    assert f"temperature={TEMPERATURE}" in _by(labels, "temperature")
    assert f"data {OTHER_DATA[:8]}" in _by(labels, "data")
    n = len(log.eval.dataset.sample_ids or [])
    samples = _by(labels, "samples")
    assert f"{n} samples #" in samples and f"{n} samples #" in base
    assert samples.split("samples #")[1][:6] != base.split("samples #")[1][:6]
    assert "repeat" not in samples + _by(labels, "data") + _by(labels, "temperature")
    # nothing merged: no caption says a cell stood for several logs
    assert "the latest is shown" not in md and "differing only in" not in md


@pytest.mark.slow
def test_the_tables_keep_every_run_and_give_the_repeats_mean(variants: Any) -> None:
    benchmark, _log, detail, value, out, _ = variants
    tables = parse_markdown((out / "report.md").read_text())
    bodies = [(h, rows) for title, (h, rows) in tables.items() if title not in ("Logs", "Data")]
    cells = [" | ".join(row) for _, rows in bodies for row in rows]
    for text in ("repeat 1/2", "repeat 2/2", "mean of 2 repeats", f"temperature={TEMPERATURE}",
                 f"data {OTHER_DATA[:8]}"):  # fmt: skip
        assert any(text in c for c in cells), (benchmark, text)
    # the argument that looks like a detail is a column of its own, with its value
    shown = [row[h.index(detail)] for h, rows in bodies if detail in h for row in rows]
    assert str(value) in shown, (benchmark, detail, shown)


@pytest.mark.slow
def test_paired_rows_only_on_the_same_data_unless_asked(variants: Any) -> None:
    benchmark, log, _detail, _value, out, across = variants

    def pairs(folder: Path) -> list[dict[str, str]]:
        with (folder / "paired.csv").open() as f:
            return list(csv.DictReader(f))

    def on_other_data(row: dict[str, str]) -> bool:
        return "_data_" in row["log_a"] or "_data_" in row["log_b"]

    plain = pairs(out)
    assert plain, benchmark  # the runs on the same data are paired
    assert not any(on_other_data(r) for r in plain)
    asked = pairs(across)
    crossed = [r for r in asked if on_other_data(r)]
    assert crossed and len(asked) == len(plain) + len(crossed)
    assert all("DIFFERENT DATA" in r["note"] for r in crossed)
    assert not any("DIFFERENT DATA" in r["note"] for r in asked if not on_other_data(r))
    # the run on another sample set of equal size: compared on the samples both scored,
    # and the row says how many of each run's that is
    n = len(log.eval.dataset.sample_ids or [])
    rows = [
        r
        for r in plain
        if {r["log_a"].split("_")[1], r["log_b"].split("_")[1]} == {"base", "samples"}
    ]
    if n - 1 < 2:  # too few common samples to pair (MathHay's two fixture questions)
        assert not rows
        return
    assert rows and all(int(r["n"]) == n - 1 for r in rows)
    assert all(f"on the {n - 1} samples both scored" in r["note"] for r in rows)


def test_a_values_table_gives_each_repeat_and_their_mean() -> None:
    """Three runs of one identity and one at another temperature, logged counts 3, 5, 7
    and 9: three repeat rows, their mean (5) and sd (2), and the other run on its own."""
    from finmath_tasks.cli.declare import Column, Table, declarations
    from finmath_tasks.cli.report import build_values_table
    from finmath_tasks.cli.runs import Run, label_runs
    from finmath_tasks.identity import identity_of

    def run(i: int, count: float, temperature: float = 1.0) -> Run:
        identity = identity_of(
            task="finmath_tasks/finqa", version=1, args={}, metadata=None,
            sample_ids=["a", "b"], epochs=1, model=MODEL,
            generation={"temperature": temperature},
        )  # fmt: skip
        return Run(
            path=f"/logs/run{i}.eval", task="finmath_tasks/finqa", model=MODEL, args={},
            args_passed={}, samples=2, created=f"2026-01-0{i}", scores={"x": {"count": count}},
            identity=identity, task_id=f"task{i}",
        )  # fmt: skip

    runs = [run(1, 3), run(2, 5), run(3, 7), run(4, 9, temperature=0.5)]
    label_runs(runs)
    table = Table(title="Counts", values=[Column(score="x", metric="count", label="count")])
    rendered = build_values_table(declarations()["finqa"], table, runs)
    assert rendered is not None
    by_label = {row[1]: row[2] for row in rendered.rows}
    assert by_label == {
        "temperature=1.0 repeat 1/3": "3",
        "temperature=1.0 repeat 2/3": "5",
        "temperature=1.0 repeat 3/3": "7",
        "temperature=1.0 mean of 3 repeats (sd between repeats)": "5 (sd 2)",
        "temperature=0.5": "9",
    }


def test_an_accuracy_table_gives_the_repeats_mean_and_spread() -> None:
    from finmath_tasks.cli.declare import Table, declarations
    from finmath_tasks.cli.report import build_table
    from finmath_tasks.cli.runs import Run, label_runs
    from finmath_tasks.identity import identity_of

    identity = identity_of(
        task="finmath_tasks/finqa", version=1, args={}, metadata=None, sample_ids=["a"],
        epochs=1, model=MODEL,
    )  # fmt: skip
    runs = [
        Run(
            path=f"/logs/run{i}.eval",
            task="finmath_tasks/finqa",
            model=MODEL,
            args={},
            args_passed={},
            samples=10,
            created=f"2026-01-0{i}",
            scores={"x": {"accuracy": value}},
            identity=identity,
            task_id=f"task{i}",
        )
        for i, value in ((1, 0.5), (2, 0.7))
    ]
    label_runs(runs)
    rendered = build_table(declarations()["finqa"], Table(title="Accuracy", score="x"), runs)
    assert rendered is not None
    rows = {row[1]: row[2] for row in rendered.rows}
    assert rows["repeat 1/2"].startswith("50.0 [") and rows["repeat 2/2"].startswith("70.0 [")
    # mean 60.0; sample sd of (50, 70) is 14.1 points
    assert rows["mean of 2 repeats (sd between repeats)"] == "60.0 (sd 14.1)"
