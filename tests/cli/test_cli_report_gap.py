"""``finmath report``'s memorisation gap, end to end: real scripted knowledgefmath runs on
the demo questions (the original run and fresh variants of seeds 1 and 2, instantiated in
the bubblewrap sandbox), and fresh runs of another model and another temperature that
must not be paired with the original. The gap rows in ``report.md`` and ``gap.csv`` are
checked against a hand computation from the logs' per-sample scores."""

from __future__ import annotations

import csv
from pathlib import Path
from statistics import mean, stdev
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from inspect_ai.scorer import value_to_float
from report_check import parse_markdown
from scipy.stats import binomtest

from eval_helpers import scripted
from finmath_tasks.cli.main import main
from finmath_tasks.loading import PROVENANCE_KEY
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.knowledgefmath.variants import RULES

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(not bwrap_available()[0], reason="needs the bubblewrap sandbox"),
]

SCORE = "financemath"
MODEL, OTHER_MODEL = "mockllm/alpha", "mockllm/beta"
TO_FLOAT = value_to_float()


def _reply(value: float) -> str:
    return f"Therefore, the answer is {value}."


def _original_golds() -> dict[str, float]:
    return {str(s.id): float(str(s.target)) for s in knowledgefmath(split="demo").dataset}


def _run(task: Task, outputs: list[str], model: str, folder: Path, **config: Any) -> EvalLog:
    [log] = eval(
        task, model=scripted(outputs, model), display="none", log_dir=str(folder), max_samples=1,
        **config,
    )  # fmt: skip
    assert log.status == "success", log.error
    return read_eval_log(log.location)


SKIPPED = "demo-3"
"""A question the fresh runs leave out (``sample_id``), as a variant leaves out a question
it cannot instantiate: the pair is on the 14 samples both scored."""


def _fresh_ids(task: Task) -> list[str]:
    return [str(s.id) for s in task.dataset if str(s.id) != SKIPPED]


def _fresh_outputs(task: Task, originals: dict[str, float], knows: set[int]) -> list[str]:
    """A model that recalls the published answer, except on the questions ``knows`` (by
    position) where it works the fresh values out."""
    out = []
    for i, sample in enumerate(s for s in task.dataset if str(s.id) != SKIPPED):
        fresh = float(str(sample.target))
        out.append(_reply(fresh if i in knows else originals[str(sample.id)]))
    return out


@pytest.fixture(scope="module")
def gap_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("gap")
    logs = root / "logs"
    originals = _original_golds()
    # the original run: right except on two questions
    original_task = knowledgefmath(split="demo", solver="cot")
    wrong = {2, 5}
    outputs = [_reply(g * 3 + 7 if i in wrong else g) for i, g in enumerate(originals.values())]
    original = _run(original_task, outputs, MODEL, logs)
    fresh: dict[int, EvalLog] = {}
    for seed, knows in ((1, {0, 2, 3, 9}), (2, {1, 4})):
        task = knowledgefmath(split="demo", solver="cot", variant="fresh", variant_seed=seed)
        fresh[seed] = _run(
            task, _fresh_outputs(task, originals, knows), MODEL, logs, sample_id=_fresh_ids(task)
        )
    task = knowledgefmath(split="demo", solver="cot", variant="fresh", variant_seed=1)
    replies = _fresh_outputs(task, originals, set())
    ids = _fresh_ids(task)
    other_model = _run(task, replies, OTHER_MODEL, logs, sample_id=ids)
    other_temperature = _run(task, replies, MODEL, logs, temperature=0.5, sample_id=ids)
    # seed 2's log with its task arguments edited to name seed 3: its data is seed 2's
    edited = read_eval_log(fresh[2].location)
    edited.eval.task_args = {**edited.eval.task_args, "variant_seed": 3}
    edited_path = logs / Path(fresh[2].location).name.replace(".eval", "-edited.eval")
    write_eval_log(edited, str(edited_path))
    out = root / "report"
    assert main(["report", str(logs), "--out", str(out), "--no-plots"]) == 0
    return {
        "out": out,
        "original": original,
        "fresh": fresh,
        "unpaired": [other_model, other_temperature],
        "edited": edited_path.name,
    }


def _scores(log: EvalLog) -> dict[str, float]:
    return {str(s.id): TO_FLOAT(s.scores[SCORE].value) for s in log.samples or [] if s.scores}


def _gap_csv(out: Path) -> list[dict[str, str]]:
    with (out / "gap.csv").open() as f:
        return list(csv.DictReader(f))


def _name(log: EvalLog) -> str:
    return Path(log.location).name


@pytest.mark.slow
def test_each_seed_row_matches_a_hand_computation(gap_report: dict[str, Any]) -> None:
    original = _scores(gap_report["original"])
    rows = {r["seed"]: r for r in _gap_csv(gap_report["out"]) if r["metric"].startswith(SCORE)}
    assert set(rows) == {"1", "2", "mean"}
    gaps, fresh_accuracies = [], []
    for seed, log in gap_report["fresh"].items():
        fresh = _scores(log)
        common = [i for i in original if i in fresh]
        # the fresh runs score 14 of the 15 (SKIPPED left out): paired on those
        assert len(common) == len(fresh) == 14 and len(original) == 15
        a = mean(original[i] for i in common)
        b = mean(fresh[i] for i in common)
        only_original = sum(original[i] > fresh[i] for i in common)
        only_fresh = sum(original[i] < fresh[i] for i in common)
        p = binomtest(only_original, only_original + only_fresh, 0.5).pvalue
        row = rows[str(seed)]
        assert row["log_original"] == _name(gap_report["original"])
        assert row["log_fresh"] == _name(log)
        assert int(row["n"]) == 14
        assert float(row["original"]) == pytest.approx(a, abs=1e-5)
        assert float(row["fresh"]) == pytest.approx(b, abs=1e-5)
        assert float(row["gap"]) == pytest.approx(a - b, abs=1e-5)
        assert float(row["p_mcnemar"]) == pytest.approx(p, rel=1e-4)
        assert float(row["ci_low"]) < a - b < float(row["ci_high"])
        assert "on the 14 samples both scored" in row["note"]
        gaps.append(a - b)
        fresh_accuracies.append(b)
    # the scripted model recalls published answers: a real gap on both seeds
    assert all(g > 0.3 for g in gaps)
    overall = rows["mean"]
    assert float(overall["gap"]) == pytest.approx(mean(gaps), abs=1e-5)
    assert float(overall["spread_gap"]) == pytest.approx(stdev(gaps), abs=1e-5)
    assert float(overall["spread_fresh"]) == pytest.approx(stdev(fresh_accuracies), abs=1e-5)


@pytest.mark.slow
def test_the_report_shows_the_gap_table(gap_report: dict[str, Any]) -> None:
    tables = parse_markdown((gap_report["out"] / "report.md").read_text())
    [(header, rows)] = [t for title, t in tables.items() if title.startswith("Memorisation gap")]
    shown = {(r[header.index("metric")], r[header.index("seed")]): r for r in rows}
    for row in _gap_csv(gap_report["out"]):
        cells = shown[(row["metric"], row["seed"])]
        assert cells[header.index("gap (points)")] == f"{float(row['gap']) * 100:+.1f}"
        if row["seed"] != "mean":
            assert cells[header.index("n (both scored)")] == "14"
            assert cells[header.index("McNemar exact p")] == f"{float(row['p_mcnemar']):.3g}"


def test_another_model_or_temperature_is_not_paired(gap_report: dict[str, Any]) -> None:
    fresh_logs = {r["log_fresh"] for r in _gap_csv(gap_report["out"]) if r["log_fresh"]}
    assert fresh_logs == {_name(log) for log in gap_report["fresh"].values()}
    for log in gap_report["unpaired"]:
        assert _name(log) not in fresh_logs
        # and no row uses them as the original either (they are fresh runs)
        assert all(r["log_original"] != _name(log) for r in _gap_csv(gap_report["out"]))


def test_a_fresh_variant_is_other_data_for_the_generic_pairs(gap_report: dict[str, Any]) -> None:
    # a variant's questions and golds are not the original's: its own data fingerprint
    # (derived from the original's and the seed), so paired.csv never sets a fresh run
    # against the original as if on the same data; only the gap table pairs them
    def data(log: EvalLog) -> dict[str, Any]:
        return dict((log.eval.metadata or {})[PROVENANCE_KEY])

    original = data(gap_report["original"])
    fingerprints = {original["fingerprint"]}
    for seed, log in gap_report["fresh"].items():
        fresh = data(log)
        assert fresh["variant"] == {
            "name": "fresh",
            "seed": seed,
            "original_fingerprint": original["fingerprint"],
            "rules": RULES,
        }
        fingerprints.add(fresh["fingerprint"])
    assert len(fingerprints) == 3
    with (gap_report["out"] / "paired.csv").open() as f:
        pairs = list(csv.DictReader(f))
    names = {_name(log) for log in gap_report["fresh"].values()}
    original_name = _name(gap_report["original"])
    for row in pairs:
        assert not (
            {row["log_a"], row["log_b"]} & names and original_name in (row["log_a"], row["log_b"])
        )


def test_a_log_whose_arguments_contradict_its_variant_gets_no_row_and_a_reason(
    gap_report: dict[str, Any],
) -> None:
    # the seed is read from the log's provenance (2), not its edited task arguments (3)
    rows = _gap_csv(gap_report["out"])
    assert all(gap_report["edited"] not in (r["log_fresh"], r["log_original"]) for r in rows)
    assert {r["seed"] for r in rows} == {"1", "2", "mean"}
    report = (gap_report["out"] / "report.md").read_text()
    assert (
        f"{gap_report['edited']} (fresh seed 2) is not set against "
        f"{_name(gap_report['original'])}: the fresh run's task arguments (variant=fresh "
        "variant_seed=3) contradict its data provenance (variant fresh, seed 2)"
    ) in report
