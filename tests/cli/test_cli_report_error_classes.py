"""`finmath report`'s error classes: per run and score a table and ``error_classes.csv``,
a plot, and for two paired runs the transitions table and ``error_transitions.csv``,
checked against a hand count of the two runs' replies.

Two real evals of knowledgefmath's demo split (six questions, in order) with scripted
replies; the report is the real ``finmath report`` command."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai import eval
from inspect_ai.log import read_eval_log
from report_check import parse_markdown

from eval_helpers import scripted
from finmath_tasks.scorers.error_classes import NEAR, ROUNDING, SCALE, SIGN, WRONG
from finmath_tasks.tasks.knowledgefmath import knowledgefmath

REFUSED = "no_answer:refused"

# demo golds: 14685.0, 3.5, 19994.87, 951.06, 6.57, 75606.306
REPLIES_A = [
    "The answer is 14685",  # correct
    "The answer is 3500",  # tolerant: scale (financemath accepts 10^k)
    "The answer is -19994.87",  # tolerant: sign (financemath accepts it)
    "The answer is 960",  # 0.94% off: rounding
    "I cannot answer this question.",  # no_answer:refused
    "The answer is 80000",  # 5.8% off: near
]
REPLIES_B = [
    "The answer is 15000",  # 2.1% off: near (appeared)
    "The answer is 3.5",  # correct (scale fixed)
    "The answer is -19994.87",  # sign (kept)
    "The answer is 951.06",  # correct (rounding fixed)
    "The answer is 6.57",  # correct (refusal fixed)
    "The answer is 1",  # wrong (near moved to wrong)
]
# the hand count of the tolerant key's (A, B) classes
HAND_TRANSITIONS = {
    ("correct", NEAR): 1,
    (SCALE, "correct"): 1,
    (SIGN, SIGN): 1,
    (ROUNDING, "correct"): 1,
    (REFUSED, "correct"): 1,
    (NEAR, WRONG): 1,
}
# class -> in A, in B, fixed, appeared, to another class, from another class: the table
# of the score the report pairs on (financemath, which accepts 3500 and -19994.87)
# the correct row: A 3 (14685, 3500, -19994.87), B 4; one became wrong, two were fixed
HAND_TABLE = {
    "correct": ["3", "4", "–", "–", "1", "2"],
    NEAR: ["1", "1", "0", "1", "1", "0"],
    REFUSED: ["1", "0", "1", "0", "0", "0"],
    ROUNDING: ["1", "0", "1", "0", "0", "0"],
    WRONG: ["0", "1", "0", "0", "0", "1"],
}


def _run(log_dir: Path, replies: list[str], name: str) -> Path:
    [log] = eval(
        knowledgefmath(split="demo", solver="cot"),
        model=scripted(replies, name),
        limit=len(replies),
        max_samples=1,
        display="none",
        log_dir=str(log_dir),
    )
    assert log.status == "success", log.error
    return Path(str(log.location))


@pytest.mark.slow
def test_report_of_two_paired_runs_shows_classes_and_transitions(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    a = _run(logs, REPLIES_A, "mockllm/a")
    b = _run(logs, REPLIES_B, "mockllm/b")
    # the classes are the scorer's, in the logs
    classes_a = [
        ((s.scores or {})["tolerant"].metadata or {}).get("error_class")
        for s in read_eval_log(str(a)).samples or []
    ]
    assert classes_a == [None, SCALE, SIGN, ROUNDING, REFUSED, NEAR]
    out = tmp_path / "report"
    done = subprocess.run(
        [sys.executable, "-m", "finmath_tasks.cli", "report", str(logs), "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    with (out / "error_classes.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    tolerant_a = {
        r["error_class"]: (int(r["count"]), round(float(r["share"]), 4), int(r["n"]))
        for r in rows
        if r["log"] == a.name and r["score"] == "tolerant"
    }
    sixth = (1, round(1 / 6, 4), 6)
    assert tolerant_a == dict.fromkeys(["correct", SCALE, SIGN, ROUNDING, REFUSED, NEAR], sixth)
    official_a = {
        r["error_class"]: int(r["count"])
        for r in rows
        if r["log"] == a.name and r["score"] == "financemath"
    }
    # the official comparison accepts the scale and the sign errors
    assert official_a == {"correct": 3, ROUNDING: 1, REFUSED: 1, NEAR: 1}

    with (out / "error_transitions.csv").open(encoding="utf-8") as f:
        moves = [r for r in csv.DictReader(f) if r["score"] == "tolerant"]
    assert {r["log_a"] for r in moves} | {r["log_b"] for r in moves} == {a.name, b.name}
    forward = moves[0]["log_a"] == a.name
    counted = {
        ((r["from_class"], r["to_class"]) if forward else (r["to_class"], r["from_class"])): int(
            r["count"]
        )
        for r in moves
    }
    assert counted == HAND_TRANSITIONS
    assert {int(r["n"]) for r in moves} == {6}

    tables = parse_markdown((out / "report.md").read_text(encoding="utf-8"))
    prefix = "finmath_tasks/knowledgefmath: error class transitions of "
    assert not [t for t in tables if t.startswith(prefix + "tolerant")]  # in the CSV only
    [title] = [t for t in tables if t.startswith(prefix + "financemath")]
    header, body = tables[title]
    assert header[0] == "error class" and header[3].startswith("fixed")
    shown = {row[0]: row[1:] for row in body}
    if forward:
        assert shown == HAND_TABLE
    else:  # the report pairs B with A: the same count, read the other way
        assert {k: [v[1], v[0], v[3], v[2], v[5], v[4]] for k, v in shown.items()} == HAND_TABLE
    [per_run] = [t for t in tables if t.endswith("error classes of tolerant")]
    header, body = tables[per_run]
    assert len(header) == 3 and all("n=6" in h for h in header[1:])
    # the plot: one bar series per run, the shares per class
    pngs = list(out.glob("*error_classes_tolerant.png"))
    assert len(pngs) == 1
    from PIL import Image

    drawn = json.loads(Image.open(pngs[0]).info["finmath-series"])
    assert len(drawn["series"]) == 2
    assert all(len(s["y"]) == 7 for s in drawn["series"])  # correct and six classes
