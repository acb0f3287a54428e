"""``finmath report`` over random sets of runs of every task: whatever the recorded
settings (data copies, a grader role at an endpoint with a base URL, MathHay placements,
generation seeds, epochs, repeats, fresh variants drawn from other data), the report's
output files keep four promises:

- every log is in an accuracy table (``runs.csv`` names the tables, each present in
  ``report.md``) or in the "not shown" list with its reason;
- no row of ``paired.csv`` joins runs whose data fingerprints differ, and no row of
  ``gap.csv`` sets a fresh variant against an original run of other data than the one it
  was instantiated from;
- the interval of a task that clusters is clustered: each accuracy cell is Inspect's
  interval (``ci_wilson``, ``ci`` for fractional means over epochs) clustered by the
  task's document, computed here from the log's samples; each paired row clusters where
  the questions both runs scored share documents;
- no interval has zero width (``report.md``, ``paired.csv``, ``gap.csv``).

The runs are written through Inspect's log API from one real scripted run of each task
(its header and samples), changed as another run would have recorded them.
"""

from __future__ import annotations

import csv
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from statistics import mean
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from inspect_ai import eval
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from inspect_ai.model import ModelConfig
from inspect_ai.scorer import SampleScore, Score, ci, ci_wilson, value_to_float
from report_check import parse_markdown
from test_cli_report_identity import _base

from benchmark_list import BENCHMARKS
from eval_helpers import scripted
from finmath_tasks.cli.declare import by_task_name, declarations
from finmath_tasks.cli.main import main
from finmath_tasks.cli.report import NOT_SHOWN_TITLE
from finmath_tasks.cli.stats import _clustered
from finmath_tasks.loading import PROVENANCE_KEY
from finmath_tasks.variants import derived_fingerprint

pytestmark = pytest.mark.slow

MODEL = "mockllm/alpha"
COPY_DATA = "c0ffee00c0ffee00"
"""The fingerprint of a local copy of the data with edited records."""
GRADERS = [
    None,
    ("openai-api/local/judge", "http://127.0.0.1:8012/v1"),
    ("openai-api/local/judge", "http://127.0.0.1:9000/v1"),
]
TO_FLOAT = value_to_float()
CELL = re.compile(r"(-?\d+\.\d) \[([-+]?\d+\.\d), ([-+]?\d+\.\d)\]")


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, EvalLog]:
    """One real scripted run of each task, read back whole."""
    found = {}
    for benchmark in BENCHMARKS:
        root = tmp_path_factory.mktemp(benchmark)
        task, outputs, _detail, _value = _base(benchmark, root)
        [log] = eval(task, model=scripted(outputs, MODEL), display="none", log_dir=str(root))
        assert log.status == "success", log.error
        found[benchmark] = read_eval_log(log.location)
    return found


def _setting(benchmark: str) -> st.SearchStrategy[dict[str, Any]]:
    variants = benchmark in ("knowledgefmath", "finqa")
    return st.fixed_dictionaries(
        {
            "data": st.sampled_from(["authors", "copy"]),
            "variant_seed": st.sampled_from([0, 0, 1, 2]) if variants else st.just(0),
            "grader": st.sampled_from(range(len(GRADERS))),
            "placement": (
                st.sampled_from([None, "first", "middle", "last"])
                if benchmark == "mathhay"
                else st.just(None)
            ),
            "seed": st.sampled_from([None, 1, 7]),
            "epochs": st.sampled_from([1, 1, 2]),
            "repeats": st.sampled_from([1, 1, 2]),
            "flips": st.lists(st.booleans(), min_size=8, max_size=8),
        }
    )


def _flip(value: Any) -> Any:
    if isinstance(value, str) and value in ("C", "I"):
        return "I" if value == "C" else "C"
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float) and value in (0, 1):
        return type(value)(1 - value)
    return value


def _write(template: EvalLog, setting: dict[str, Any], folder: Path, index: int) -> list[str]:
    """The logs of one random setting (its repeats): their file names."""
    log = template.model_copy(deep=True)
    spec = log.eval
    metadata = dict(spec.metadata or {})
    provenance = dict(metadata[PROVENANCE_KEY])
    base = COPY_DATA if setting["data"] == "copy" else str(provenance["fingerprint"])
    provenance["fingerprint"] = base
    samples = list(log.samples or [])
    seed = setting["variant_seed"]
    if seed:
        provenance["fingerprint"] = derived_fingerprint(base, seed)
        provenance["variant"] = {"name": "fresh", "seed": seed, "original_fingerprint": base}
        spec.task_args = {**spec.task_args, "variant": "fresh", "variant_seed": seed}
        samples = samples[:-1] if len(samples) > 2 else samples  # one not instantiated
    metadata[PROVENANCE_KEY] = provenance
    spec.metadata = metadata
    grader = GRADERS[setting["grader"]]
    if grader is not None:
        spec.model_roles = {"grader": ModelConfig(model=grader[0], base_url=grader[1])}
    if setting["placement"] is not None:
        spec.task_args = {**spec.task_args, "placement": setting["placement"]}
        for sample in samples:
            sample.id = f"{str(sample.id).rsplit('-', 1)[0]}-{setting['placement']}"
    if setting["seed"] is not None:
        log.plan.config.seed = setting["seed"]
    for i, sample in enumerate(samples):
        if setting["flips"][i % len(setting["flips"])]:
            for score in (sample.scores or {}).values():
                score.value = _flip(score.value)
    epochs = setting["epochs"]
    if epochs > 1:
        second = []
        for i, sample in enumerate(samples):
            again = sample.model_copy(deep=True)
            again.epoch = 2
            if setting["flips"][(i + 3) % len(setting["flips"])]:
                for score in (again.scores or {}).values():
                    score.value = _flip(score.value)
            second.append(again)
        samples = samples + second
        spec.config.epochs = epochs
    spec.dataset.sample_ids = list(dict.fromkeys(s.id for s in samples))
    spec.dataset.samples = len(spec.dataset.sample_ids)
    log.samples = samples
    assert log.results is not None
    log.results.total_samples = log.results.completed_samples = len(samples)
    for score in log.results.scores:
        values = [
            TO_FLOAT(s.scores[score.name].value)
            for s in samples
            if s.scores
            and score.name in s.scores
            and not isinstance(s.scores[score.name].value, dict)
        ]
        if values and "accuracy" in score.metrics:
            score.metrics["accuracy"].value = mean(values)
        score.scored_samples = len(values) or score.scored_samples
    names = []
    for repeat in range(setting["repeats"]):
        spec.task_id = f"RUN{index:03d}R{repeat}".ljust(22, "0")
        name = f"2026-01-01T00-{index:02d}-{repeat:02d}-00-00_{spec.task.split('/')[-1]}_{spec.task_id}.eval"
        write_eval_log(log, str(folder / name))
        names.append(name)
    return names


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _check(folder: Path, out: Path, benchmark: str) -> None:
    logs = {p.name: read_eval_log(str(p)) for p in folder.glob("*.eval")}
    md = (out / "report.md").read_text(encoding="utf-8")
    tables = parse_markdown(md)
    # every log: in an accuracy table, or not shown with its reason
    listed = {r["log"]: r for r in _csv(out / "runs.csv")}
    assert set(listed) == set(logs)
    for name, row in listed.items():
        assert row["shown_in"] or row["not_shown"], name
        for title in filter(None, row["shown_in"].split("; ")):
            assert title in tables, (name, title)
        if row["not_shown"]:
            assert NOT_SHOWN_TITLE in md and name in md

    # no pair across data
    def data(name: str) -> dict[str, Any]:
        return dict((logs[name].eval.metadata or {}).get(PROVENANCE_KEY) or {})

    for row in _csv(out / "paired.csv"):
        assert data(row["log_a"]).get("fingerprint") == data(row["log_b"]).get("fingerprint")
        assert float(row["ci_low"]) < float(row["ci_high"]), row
        _check_clustered(row, logs, benchmark)
    for row in _csv(out / "gap.csv"):
        if not row["log_fresh"]:
            continue
        fresh = data(row["log_fresh"])
        assert fresh["variant"]["original_fingerprint"] == data(row["log_original"])["fingerprint"]
        assert float(row["ci_low"]) < float(row["ci_high"]), row
    # no interval of zero width in any table
    for title, (_header, rows) in tables.items():
        for row in rows:
            for cell in row:
                for match in CELL.finditer(cell):
                    assert float(match.group(2)) < float(match.group(3)), (title, cell)
    # the accuracy cells: the task's interval, clustered where it clusters
    declaration = by_task_name(declarations([]))[
        logs[next(iter(logs))].eval.task_registry_name or ""
    ]
    report = declaration.report
    by_title = {t.title: t for t in report.tables}
    for name, row in listed.items():
        for title in filter(None, row["shown_in"].split("; ")):
            table = by_title.get(title)
            if table is None or table.columns == "groups" or table.values:
                continue
            expected = _expected_cell(logs[name], table.score, report)
            if expected is not None:
                shown = [c for r in tables[title][1] for c in r]
                assert expected in shown, (name, title, expected, shown)


def _cluster_of(report: Any) -> Callable[[Any], str]:
    return lambda sample: (
        report.cluster(str(sample.id), sample.metadata or {}) if report.cluster else ""
    )


def _expected_cell(log: EvalLog, score: str, report: Any) -> str | None:
    """The accuracy cell of ``score`` by hand: each question's mean over its epochs, and
    Inspect's interval over questions, clustered by the task's document when questions
    share one."""
    assert log.results is not None
    [found] = [s for s in log.results.scores if s.name == score] or [None]
    if found is None:
        return None
    per: dict[str, list[float]] = {}
    documents: dict[str, str] = {}
    cluster = _cluster_of(report)
    for sample in log.samples or []:
        if sample.scores and score in sample.scores:
            per.setdefault(str(sample.id), []).append(TO_FLOAT(sample.scores[score].value))
            documents[str(sample.id)] = cluster(sample)
    means = {i: mean(v) for i, v in per.items()}
    ids = list(means)
    clustered = _clustered(documents, ids)
    scores = [
        SampleScore(
            score=Score(value=means[i]), sample_id=i, sample_metadata={"doc": documents[i] or i}
        )
        for i in ids
    ]
    binary = all(v in (0.0, 1.0) for v in means.values())
    level = report.interval.level
    method = (ci_wilson if binary else ci)(level, cluster="doc" if clustered else None)
    bounds = method(scores)  # type: ignore[arg-type]
    assert isinstance(bounds, dict)
    p = found.metrics["accuracy"].value
    low, high = max(0.0, bounds["lower"]), min(1.0, bounds["upper"])
    if not high > low:
        return None  # the report's score interval where Inspect's has no width: checked above
    return f"{p * 100:.1f} [{min(low, p) * 100:.1f}, {max(high, p) * 100:.1f}]"


def _check_clustered(row: dict[str, str], logs: dict[str, EvalLog], benchmark: str) -> None:
    declaration = by_task_name(declarations([]))[logs[row["log_a"]].eval.task_registry_name or ""]
    cluster = _cluster_of(declaration.report)
    if declaration.report.cluster is None:
        assert "clustered" not in row["note"]
        return
    documents = {}
    ids: dict[str, set[str]] = {}
    for name in (row["log_a"], row["log_b"]):
        ids[name] = set()
        for sample in logs[name].samples or []:
            if sample.scores:
                documents[str(sample.id)] = cluster(sample)
                ids[name].add(str(sample.id))
    common = sorted(ids[row["log_a"]] & ids[row["log_b"]])
    if _clustered(documents, common):
        k = len({documents[i] for i in common})
        assert f"clustered by {k} documents" in row["note"], (benchmark, row)
    else:
        assert "clustered by" not in row["note"], (benchmark, row)


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_every_report_of_random_runs_keeps_its_promises(
    benchmark: str, templates: dict[str, EvalLog]
) -> None:
    @settings(
        max_examples=6,
        deadline=None,
        # no shrinking: each example writes logs and a report (seconds on a shared
        # machine); the failing example is printed as found
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(st.lists(_setting(benchmark), min_size=2, max_size=4))
    def check(settings_: list[dict[str, Any]]) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            folder, out = Path(tmp) / "logs", Path(tmp) / "report"
            folder.mkdir()
            for index, setting in enumerate(settings_):
                _write(templates[benchmark], setting, folder, index)
            assert main(["report", str(folder), "--out", str(out), "--no-plots"]) == 0
            _check(folder, out, benchmark)

    check()
