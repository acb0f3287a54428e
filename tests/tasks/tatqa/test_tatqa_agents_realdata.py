"""The agents' official metrics on real TAT-QA dev questions: the paper's ``rounding`` on
48 crafted CoT answers,
the change analysis on 36 scripted CoT + critic runs, and the gold's written digits.

Each case's verdict follows from how it is built (``agents_cases.py``), from the paper's
words; the runs are real Inspect evals of the ``tatqa`` task with a scripted model.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval, task_with
from inspect_ai.dataset import MemoryDataset
from inspect_ai.log import EvalLog

from eval_helpers import metric, scripted
from finmath_tasks.loading import find_local_file
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.scorers.comparisons import GOLD_WRITTEN_KEY
from finmath_tasks.solvers.agents import AGENT_ANSWERS_KEY
from finmath_tasks.tasks.tatqa import tatqa
from finmath_tasks.tasks.tatqa.dataset import FILES, LOCAL_SUBDIR, load_dataset
from tasks.tatqa.agents_cases import PER_KIND, change_cases, rounding_cases

pytestmark = pytest.mark.realdata
BWRAP_OK, BWRAP_REASON = bwrap_available()

TOTAL = "count"


def run(data_dir: Path, log_dir: Path, solver: str, ids: list[str], outputs: list[str]) -> EvalLog:
    """The ``tatqa`` task on the samples ``ids``, run one at a time in that order."""
    task = tatqa(split="dev", solver=solver, data_dir=str(data_dir))  # type: ignore[arg-type]
    by_id = {str(s.id): s for s in task.dataset}
    task = task_with(task, dataset=MemoryDataset([by_id[i] for i in ids]))
    [log] = eval(task, model=scripted(outputs), max_samples=1, display="none", log_dir=str(log_dir))
    assert log.status == "success", log.error
    assert log.samples is not None and sorted(str(s.id) for s in log.samples) == sorted(ids)
    log.samples.sort(key=lambda s: ids.index(str(s.id)))
    return log


@pytest.mark.parametrize("split", ["dev", "test"])
def test_gold_as_written_is_the_file_text(data_dir: Path, split: str) -> None:
    """Every arithmetic answer's digits, as the JSON file writes them, reach the scorer."""
    path = find_local_file(data_dir, LOCAL_SUBDIR, FILES[split])
    literal: dict[str, Any] = {}
    raw = json.loads(path.read_text(), parse_float=str, parse_int=str)
    for record in raw:
        for q in record["questions"]:
            literal[q["uid"]] = q["answer"]
    dataset = load_dataset(split, "arithmetic", data_dir)
    for sample in dataset:
        assert sample.metadata is not None
        assert sample.metadata[GOLD_WRITTEN_KEY] == literal[str(sample.id)], sample.id
        assert sample.target == literal[str(sample.id)]


@pytest.mark.slow
def test_48_crafted_cot_answers_follow_the_paper(data_dir: Path, tmp_path: Path) -> None:
    samples = list(load_dataset("dev", "arithmetic", data_dir))
    cases = rounding_cases(samples)
    assert len(cases) == 48
    assert Counter(c.kind for c in cases) == {k: PER_KIND for k in {c.kind for c in cases}}
    outputs = [json.dumps({"steps": "the derivation", "answer": c.answer}) for c in cases]
    log = run(data_dir, tmp_path, "cot", [c.sample_id for c in cases], outputs)
    assert log.samples is not None
    for case, s in zip(cases, log.samples, strict=True):
        assert s.store[AGENT_ANSWERS_KEY][0]["answer"] == case.answer
        assert s.scores is not None
        got = s.scores["rounding"].value
        assert got == float(case.correct), (case, s.scores["rounding"].explanation)
    right = sum(c.correct for c in cases)
    assert right == 24
    assert metric(log, "rounding") == right / 48
    # the two telling cases are among them: -12.6 as written, -22.22 coarser
    assert any(c.gold == "-12.6" and c.correct for c in cases)


@pytest.mark.slow
def test_36_cot_critic_runs_follow_the_papers_change_analysis(
    data_dir: Path, tmp_path: Path
) -> None:
    samples = list(load_dataset("dev", "arithmetic", data_dir))
    cases = change_cases(samples)
    assert len(cases) == 36
    outputs = [o for c in cases for o in c.outputs]
    log = run(data_dir, tmp_path, "critic", [c.sample_id for c in cases], outputs)
    assert log.samples is not None
    for case, s in zip(cases, log.samples, strict=True):
        assert s.scores is not None
        meta = s.scores["rounding"].metadata or {}
        assert (meta["flip"], meta["change"]) == (case.flip, case.change), (case.kind, meta)
        assert s.scores["minor_change"].value == float(case.change == "minor")
        assert s.scores["major_change"].value == float(case.change == "major")
    expected = Counter((c.flip, c.change) for c in cases)
    assert metric(log, "correct_to_wrong", TOTAL) == 12
    assert metric(log, "wrong_to_correct", TOTAL) == 12
    assert metric(log, "minor_change", TOTAL) == 15
    assert metric(log, "major_change", TOTAL) == 9
    # the paper's Table 3 shape: per direction, the share of minor and major changes
    cw = expected[("correct_to_wrong", "minor")] / 12
    wc = expected[("wrong_to_correct", "minor")] / 12
    assert metric(log, "minor_change", "share_c_to_w") == pytest.approx(cw)
    assert metric(log, "major_change", "share_c_to_w") == pytest.approx(1 - cw)
    assert metric(log, "minor_change", "share_w_to_c") == pytest.approx(wc)
    assert metric(log, "major_change", "share_w_to_c") == pytest.approx(1 - wc)
    assert (cw, wc) == (0.75, 0.5)


@pytest.mark.slow
@pytest.mark.bwrap
@pytest.mark.skipif(not BWRAP_OK, reason=f"bubblewrap unavailable: {BWRAP_REASON}")
def test_pot_full_precision_floats_round_to_the_gold(data_dir: Path, tmp_path: Path) -> None:
    """The PoT case: a program's -22.222222222222225 for the gold -22.22 is right."""
    samples = list(load_dataset("dev", "arithmetic", data_dir))
    chosen = [  # percent changes: a ratio, as a number of percent
        s
        for s in samples
        if s.metadata and s.metadata["scale"] == "percent" and "/" in s.metadata["derivation"]
    ][:4]
    programs = []
    for s in chosen:
        assert s.metadata is not None
        expression = str(s.metadata["derivation"]).replace(",", "").strip()
        programs.append(f"```python\ndef solution():\n    return ({expression}) * 100\n```")
    ids = [str(s.id) for s in chosen]
    task = tatqa(split="dev", solver="pot", data_dir=str(data_dir))
    by_id = {str(s.id): s for s in task.dataset}
    task = task_with(task, dataset=MemoryDataset([by_id[i] for i in ids]))
    [log] = eval(
        task,
        model=scripted(programs),
        sandbox="finmath_bwrap",
        max_samples=1,
        display="none",
        log_dir=str(tmp_path),
    )
    assert log.status == "success", log.error
    assert log.samples is not None
    values = {str(s.target): s.store[AGENT_ANSWERS_KEY][0] for s in log.samples}
    assert values["-22.22"]["answer"] == "-22.222222222222225"
    assert all("def solution" in v["steps"] for v in values.values())  # the program: steps
    assert metric(log, "rounding") == 1.0
