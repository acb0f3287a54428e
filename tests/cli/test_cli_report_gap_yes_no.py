"""The memorisation gap keeps yes/no questions apart (real FinQA test records): a scripted
model recites the published answers on the original run and on a fresh run; ``finmath
report`` gives numeric and yes/no rows, each a hand computation from the logs."""

from __future__ import annotations

import csv
from pathlib import Path
from statistics import mean

import pytest
from inspect_ai import eval
from inspect_ai.scorer import value_to_float

from eval_helpers import scripted
from finmath_tasks.cli.main import main
from finmath_tasks.tasks.finqa import finqa
from finmath_tasks.variants import VARIANT_KEY

pytestmark = pytest.mark.realdata
SCORE = "tolerant"


@pytest.mark.slow
def test_yes_no_questions_are_paired_apart(session_data_dir: Path, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    # dev: 9 yes/no questions instantiate at seed 1 (test: 1, too few to pair)
    original = finqa(split="dev", data_dir=str(session_data_dir))
    fresh = finqa(split="dev", variant="fresh", variant_seed=1, data_dir=str(session_data_dir))
    published = {str(s.id): s.metadata["exe_ans"] for s in original.dataset if s.metadata}
    runs = {}
    for name, task in (("original", original), ("fresh", fresh)):
        outputs = [f"Final answer: {published[str(s.id)]}" for s in task.dataset]
        [log] = eval(
            task, model=scripted(outputs), log_dir=str(logs), display="none", max_samples=1
        )
        assert log.status == "success" and log.samples
        runs[name] = log
    out = tmp_path / "report"
    assert main(["report", str(logs), "--out", str(out), "--no-plots"]) == 0
    with (out / "gap.csv").open() as f:
        rows = {(r["metric"], r["seed"]): r for r in csv.DictReader(f)}
    to_float = value_to_float()
    scores = {
        name: {str(s.id): to_float(s.scores[SCORE].value) for s in log.samples or [] if s.scores}
        for name, log in runs.items()
    }
    yes_no = {str(s.id) for s in fresh.dataset if str(s.target) in ("yes", "no")}
    assert len(yes_no) >= 2  # greater() questions that instantiate, enough to pair
    for kind, inside in (("numeric", False), ("yes/no", True)):
        row = rows[(f"{SCORE} accuracy ({kind})", "1")]
        common = [i for i in scores["fresh"] if (i in yes_no) == inside]
        assert int(row["n"]) == len(common)
        assert float(row["original"]) == pytest.approx(
            mean(scores["original"][i] for i in common), abs=1e-5
        )
        assert float(row["fresh"]) == pytest.approx(
            mean(scores["fresh"][i] for i in common), abs=1e-5
        )
    # reciting scores everything as published; on the numeric variants, nothing
    assert float(rows[(f"{SCORE} accuracy (numeric)", "1")]["original"]) >= 0.9
    assert float(rows[(f"{SCORE} accuracy (numeric)", "1")]["fresh"]) <= 0.01
    assert all(
        s.metadata[VARIANT_KEY]["original_exe_ans"] in ("yes", "no")
        for s in fresh.dataset
        if str(s.id) in yes_no and s.metadata
    )
