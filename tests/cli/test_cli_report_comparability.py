"""``finmath report`` asks one comparability rule (``finmath_tasks.comparability``) for
every pair, and one interval per task for every cell, end to end on real scripted runs:

- an original run on a local copy of the data with changed golds is never set against a
  fresh variant drawn from the authors' data (the gap table says why), while the original
  run on the authors' data is;
- a MathHay run with a placement outside the paper's tables is in an accuracy table, and
  every log is in an accuracy table or in the "not shown" list (``runs.csv``);
- TAT-QA's main table shows the clustered interval (by table, t with clusters - 1
  degrees of freedom), equal to its comparison row's;
- a paired difference where every question moves the same way has an interval of
  non-zero width (Tango's score interval).
"""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path
from statistics import mean
from typing import Any

import pytest
from grid_logs import mathhay_reply, reply
from inspect_ai import Task, eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.scorer import SampleScore, Score, ci_wilson, value_to_float
from report_check import parse_markdown
from scipy.optimize import minimize_scalar
from scipy.stats import norm

from eval_helpers import scripted
from finmath_tasks.cli.main import main
from finmath_tasks.cli.stats import PerSample, accuracy
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.tatqa import tatqa
from tasks.mathhay.mathhay_fixtures import write_release as write_mathhay

MODEL = "mockllm/alpha"
TO_FLOAT = value_to_float()


def _run(task: Task, outputs: list[str], folder: Path, **config: Any) -> EvalLog:
    [log] = eval(
        task, model=scripted(outputs, MODEL), display="none", log_dir=str(folder),
        max_samples=1, **config,
    )  # fmt: skip
    assert log.status == "success", log.error
    return read_eval_log(log.location)


def _name(log: EvalLog) -> str:
    return Path(log.location).name


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _scores(log: EvalLog, score: str) -> dict[str, float]:
    return {str(s.id): TO_FLOAT(s.scores[score].value) for s in log.samples or [] if s.scores}


# --- an original run on edited data is not the original of the authors' fresh variant ---

LIMIT = 10
CHANGED = 6
"""Questions of the local copy whose gold is changed (of the first ``LIMIT``)."""


@pytest.fixture(scope="module")
def gap_on_other_data(
    session_data_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    if not bwrap_available()[0]:
        pytest.skip("a fresh variant is instantiated in the bubblewrap sandbox")
    root = tmp_path_factory.mktemp("gapdata")
    logs = root / "logs"
    authors = session_data_dir / "financemath" / "validation.json"
    records = json.loads(authors.read_text(encoding="utf-8"))
    golds = {r["question_id"]: float(r["ground_truth"]) for r in records[:LIMIT]}
    copy = root / "copy"
    (copy / "financemath").mkdir(parents=True)
    edited = [
        {**r, "ground_truth": float(r["ground_truth"]) * 2 + 1} if i < CHANGED else r
        for i, r in enumerate(records)
    ]
    (copy / "financemath" / "validation.json").write_text(json.dumps(edited), encoding="utf-8")
    shutil.copy(session_data_dir / "financemath" / "test.json", copy / "financemath")
    # a model that recalls the published answers
    recalled = [f"Therefore, the answer is {g}." for g in golds.values()]
    on_copy = knowledgefmath(data_dir=str(copy), solver="cot")
    on_authors = knowledgefmath(data_dir=str(session_data_dir), solver="cot")
    fresh = knowledgefmath(
        data_dir=str(session_data_dir), solver="cot", variant="fresh", variant_seed=1
    )
    ids = [str(s.id) for s in fresh.dataset][:LIMIT]
    fresh_ids = [i for i in ids if i in golds]
    runs = {
        "copy": _run(on_copy, recalled, logs, sample_id=list(golds)),
        "authors": _run(on_authors, recalled, logs, sample_id=list(golds)),
        "fresh": _run(
            fresh,
            [f"Therefore, the answer is {golds[i]}." for i in fresh_ids],
            logs,
            sample_id=fresh_ids,
        ),
    }
    out = root / "report"
    assert main(["report", str(logs), "--out", str(out), "--no-plots"]) == 0
    return {"out": out, **runs}


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.bwrap
def test_a_fresh_variant_is_set_against_the_original_of_its_own_data_only(
    gap_on_other_data: dict[str, Any],
) -> None:
    out = gap_on_other_data["out"]
    copy, authors, fresh = (gap_on_other_data[k] for k in ("copy", "authors", "fresh"))
    fingerprint = {k: gap_on_other_data[k].eval.metadata["data"] for k in ("copy", "authors")}
    # the copy reads other data; the variant was drawn from the authors' data
    assert fingerprint["copy"]["fingerprint"] != fingerprint["authors"]["fingerprint"]
    variant = fresh.eval.metadata["data"]["variant"]
    assert variant["original_fingerprint"] == fingerprint["authors"]["fingerprint"]
    rows = [
        r
        for r in _csv(out / "gap.csv")
        if r["seed"] == "1" and r["metric"] == "financemath accuracy"
    ]
    # one row: the authors' original against its variant; the copy's run in none
    assert [(r["log_original"], r["log_fresh"]) for r in rows] == [(_name(authors), _name(fresh))]
    # the figures of that row, by hand
    a, b = _scores(authors, "financemath"), _scores(fresh, "financemath")
    common = [i for i in a if i in b]
    [row] = rows
    assert int(row["n"]) == len(common) >= 5
    assert float(row["original"]) == pytest.approx(mean(a[i] for i in common), abs=1e-6)
    assert float(row["fresh"]) == pytest.approx(mean(b[i] for i in common), abs=1e-6)
    assert float(row["original"]) == 1.0  # the published answers, recalled
    # the copy's run (6 of 10 right: its golds changed) would have shown a gap of
    # another size; it is named with the reason instead
    on_copy = _scores(copy, "financemath")
    assert sum(on_copy.values()) == LIMIT - CHANGED
    tables = parse_markdown((out / "report.md").read_text(encoding="utf-8"))
    assert any(t.startswith("Memorisation gap") for t in tables)
    report = (out / "report.md").read_text(encoding="utf-8")
    said = f"{_name(fresh)} (fresh seed 1) is not set against {_name(copy)}"
    assert said in report
    assert (
        f"instantiated from data {fingerprint['authors']['fingerprint'][:8]}, the original "
        f"run read data {fingerprint['copy']['fingerprint'][:8]}"
    ) in report
    # nor does paired.csv set the two originals (different data) side by side
    for pair in _csv(out / "paired.csv"):
        assert {pair["log_a"], pair["log_b"]} != {_name(copy), _name(authors)}


# --- every log in an accuracy table; a placement outside the paper's tables included ------


@pytest.fixture(scope="module")
def mathhay_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("mathhay")
    logs = root / "logs"
    write_mathhay(root)
    args = {"release": "v1", "subset": "verified", "task_type": ["sssd", "ss2d", "3s3d"]}
    golds = {"sssd-000": 40, "sssd-001": 100, "ss2d-000": 80, "3s3d-000": 120}

    def outputs(task: Task, judged: bool, right: bool) -> list[str]:
        out = []
        for sample in task.dataset:
            gold = golds["-".join(str(sample.id).split("-")[:2])]
            if right:
                out.append(mathhay_reply(gold))
            else:
                # a wrong number, which the judge (the model itself) calls equivalent
                out.append(mathhay_reply(gold + 1))
                if judged:
                    out.append(json.dumps({"reasoning": "the same value", "output": "Yes"}))
        return out

    paper = mathhay(data_dir=str(root), length=800, **args)
    first = mathhay(data_dir=str(root), length=800, placement="first", **args)
    judged = mathhay(data_dir=str(root), length=800, judge=True, **args)
    exact = mathhay(data_dir=str(root), length=800, judge=False, **args)
    runs = {
        "paper": _run(paper, outputs(paper, True, True), logs),
        "first": _run(first, outputs(first, True, True), logs),
    }
    out = root / "report"
    assert main(["report", str(logs), "--out", str(out), "--no-plots"]) == 0
    # judge against exact match alone: every question moves the same way
    pair_logs = root / "pair"
    runs["judged"] = _run(judged, outputs(judged, True, False), pair_logs)
    runs["exact"] = _run(exact, outputs(exact, False, False), pair_logs)
    pair_out = root / "pair-report"
    assert main(["report", str(pair_logs), "--out", str(pair_out), "--no-plots"]) == 0
    return {"out": out, "pair_out": pair_out, **runs}


@pytest.mark.slow
def test_a_placement_outside_the_papers_tables_is_in_an_accuracy_table(
    mathhay_runs: dict[str, Any],
) -> None:
    out = mathhay_runs["out"]
    listed = {r["log"]: r for r in _csv(out / "runs.csv")}
    first = listed[_name(mathhay_runs["first"])]
    assert first["shown_in"] == "Runs outside the paper's tables" and not first["not_shown"]
    assert listed[_name(mathhay_runs["paper"])]["shown_in"]
    tables = parse_markdown((out / "report.md").read_text(encoding="utf-8"))
    header, rows = tables["Runs outside the paper's tables"]
    [row] = rows
    assert row[header.index("placement")] == "first"
    assert header[-1] == "mathhay"  # the score shown, no unnamed column
    # 4 of 4 right: Wilson's score interval at 4/4 (never of zero width)
    cell = row[-1]
    assert cell.startswith("100.0 [")
    low = float(cell.split("[")[1].split(",")[0])
    assert low == pytest.approx(_wilson_low(4, 4), abs=0.05)


def _wilson_low(k: int, n: int, level: float = 0.95) -> float:
    z = norm.ppf(0.5 + level / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half) * 100


@pytest.mark.slow
def test_every_log_is_in_an_accuracy_table_or_said_not_shown(
    mathhay_runs: dict[str, Any],
) -> None:
    for out in (mathhay_runs["out"], mathhay_runs["pair_out"]):
        folder = out.parent / ("logs" if out.name == "report" else "pair")
        listed = {r["log"]: r for r in _csv(out / "runs.csv")}
        assert set(listed) == {p.name for p in folder.glob("*.eval")}
        assert all(r["shown_in"] or r["not_shown"] for r in listed.values())


def _tango_by_hand(gained: int, lost: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Tango's interval for paired proportions, from its definition: the differences d
    whose score statistic, with the nuisance share found by maximising the constrained
    likelihood numerically, lies within the normal critical value."""
    z = norm.ppf(0.5 + level / 2)
    rest = n - gained - lost

    def statistic(d: float) -> float:
        def minus_loglik(q: float) -> float:
            p12, p21 = q + d, q
            total = 0.0
            for count, p in ((gained, p12), (lost, p21), (rest, 1 - p12 - p21)):
                if count:
                    total -= count * math.log(max(p, 1e-300))
            return total

        upper = (1 - d) / 2 if d >= 0 else (1 + d) / 2
        low = max(0.0, -d)
        q = minimize_scalar(minus_loglik, bounds=(low, low + upper), method="bounded").x
        variance = n * (2 * q + d * (1 - d))
        numerator = gained - lost - n * d
        if variance <= 0:
            return 0.0 if abs(numerator) < 1e-12 else math.inf
        return numerator / math.sqrt(variance)

    grid = [i / 2000 - 1 for i in range(4001)]
    inside = [d for d in grid if abs(statistic(d)) <= z]
    return min(inside), max(inside)


def test_a_paired_difference_where_every_question_moves_one_way_has_width(
    mathhay_runs: dict[str, Any],
) -> None:
    judged, exact = mathhay_runs["judged"], mathhay_runs["exact"]
    a, b = _scores(judged, "mathhay"), _scores(exact, "mathhay")
    assert len(a) == len(b) == 4 and set(a.values()) == {1.0} and set(b.values()) == {0.0}
    [row] = [
        r
        for r in _csv(mathhay_runs["pair_out"] / "paired.csv")
        if r["metric"] == "mathhay accuracy"
    ]
    sign = 1 if row["log_a"] == _name(judged) else -1
    assert float(row["difference"]) == sign * 1.0
    low, high = float(row["ci_low"]), float(row["ci_high"])
    assert high - low > 0.3
    # by hand: Tango's interval of 4 questions gained, none lost
    by_hand = _tango_by_hand(4, 0, 4) if sign == 1 else _tango_by_hand(0, 4, 4)
    assert low == pytest.approx(by_hand[0], abs=2e-3)
    assert high == pytest.approx(by_hand[1], abs=2e-3)
    assert "moves the same way" in row["note"]


# --- TAT-QA: the main table's interval is the task's clustered one -----------------------

TATQA_LIMIT = 40


@pytest.fixture(scope="module")
def tatqa_report(session_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("tatqa")
    logs = root / "logs"
    task = tatqa(data_dir=str(session_data_dir), solver="cot", subset="arithmetic")
    samples = list(task.dataset)[:TATQA_LIMIT]
    tables: list[str] = []
    outputs = []
    for sample in samples:
        table = str((sample.metadata or {}).get("table_uid"))
        if table not in tables:
            tables.append(table)
        # right on every other table's questions: the questions of a table go together
        right = tables.index(table) % 2 == 0
        gold = str(sample.target)
        outputs.append(reply(gold if right else "123456789"))
    log = _run(task, outputs, logs, sample_id=[s.id for s in samples])
    out = root / "report"
    assert (
        main(
            ["report", str(logs), "--out", str(out), "--no-plots", "--alias", f"{MODEL}=llama3-70B"]
        )
        == 0
    )
    return {"out": out, "log": log}


@pytest.mark.slow
@pytest.mark.realdata
def test_tatqa_main_table_gives_the_clustered_interval_of_its_comparison_row(
    tatqa_report: dict[str, Any],
) -> None:
    out, log = tatqa_report["out"], tatqa_report["log"]
    scores = [
        SampleScore(
            score=Score(value=TO_FLOAT(s.scores["rounding"].value)),
            sample_id=s.id,
            sample_metadata={"table": str(s.metadata["table_uid"])},
        )
        for s in log.samples or []
    ]
    clusters = len({s.sample_metadata["table"] for s in scores if s.sample_metadata})
    assert 3 <= clusters < len(scores)
    bounds = ci_wilson(0.95, cluster="table")(scores)  # type: ignore[arg-type]
    plain = ci_wilson(0.95)(scores)  # type: ignore[arg-type]
    assert isinstance(bounds, dict) and isinstance(plain, dict)
    p = mean(float(s.score.value) for s in scores)  # type: ignore[arg-type]
    expected = f"{p * 100:.1f} [{bounds['lower'] * 100:.1f}, {bounds['upper'] * 100:.1f}]"
    unclustered = f"{p * 100:.1f} [{plain['lower'] * 100:.1f}, {plain['upper'] * 100:.1f}]"
    assert expected != unclustered
    tables = parse_markdown((out / "report.md").read_text(encoding="utf-8"))
    cells = [
        cell
        for title, (header, rows) in tables.items()
        if "rounding" in title.lower() or "rounding" in " ".join(header)
        for row in rows
        for cell in row
        if cell.startswith(f"{p * 100:.1f} [")
    ]
    assert expected in cells and unclustered not in cells
    compared = [
        r
        for r in _csv(out / "comparisons.csv")
        if r["metric"] == "rounding accuracy" and r["log"] == _name(log)
    ]
    assert compared
    for comparison in compared:
        assert float(comparison["ci_low"]) == pytest.approx(bounds["lower"], abs=1e-6)
        assert float(comparison["ci_high"]) == pytest.approx(bounds["upper"], abs=1e-6)


def test_fractional_means_without_spread_get_a_score_interval() -> None:
    # 12 questions each right in one of two epochs: every mean 0.5, Inspect's t interval
    # [50.0, 50.0]; Wilson's score interval at 6 of 12 instead
    data = PerSample({str(i): [1.0, 0.0] for i in range(12)}, {})
    found = accuracy(data, 0.95)
    assert found is not None and found.value == 0.5 and not found.binary
    z = norm.ppf(0.975)
    half = z * math.sqrt(0.25 / 12 + z * z / (4 * 144)) / (1 + z * z / 12)
    assert found.low == pytest.approx(0.5 - half) and found.high == pytest.approx(0.5 + half)
