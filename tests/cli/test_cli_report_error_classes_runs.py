"""`finmath report`'s error tables and transitions over every run and every pair, end to end:
real scripted knowledgefmath runs of the demo split (15 questions) through the real
``finmath`` command line:

- ``original``: a memoriser, right on every original question (no wrong answer);
- ``fresh 1``, ``fresh 2``: its fresh variants of seeds 1 and 2 (instantiated in the
  bubblewrap sandbox), where it recalls the published answers except on a few questions;
- ``two epochs``: the original setting with ``--epochs 2``, answering 0 to everything.

Each run has its column in the error table (the perfect one: correct 100%), named by what
tells it apart (variant, seed, epochs), the log file only in the legend and the HTML
tooltip; each pair the report compares (the gap's original/fresh pairs, the paired
1-epoch/2-epoch pair) has its transitions table, which says on which sample-epochs it
counts. Every count is checked against the logs' own per-sample scores."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import EvalLog
from report_check import parse_markdown
from test_cli_report_gap import (
    MODEL,
    SCORE,
    _fresh_ids,
    _fresh_outputs,
    _original_golds,
    _reply,
    _run,
)

from finmath_tasks.scorers.causes import ERROR_CAUSE_KEY
from finmath_tasks.scorers.error_classes import ERROR_CLASS_KEY, WRONG
from finmath_tasks.tasks.knowledgefmath import knowledgefmath

pytestmark = [pytest.mark.slow, pytest.mark.bwrap]

LOG_NAME = re.compile(r"\S+\.(eval|json)\b")
"""A log file's name as Inspect writes it (``2026-...-00-00_knowledgefmath_<id>.eval``)."""


def _classes(log: EvalLog) -> dict[tuple[str, int], str]:
    """(sample id, epoch) -> the class the scorer gave the official score, or correct."""
    out = {}
    for sample in log.samples or []:
        score = (sample.scores or {})[SCORE]
        cls = (score.metadata or {}).get(ERROR_CLASS_KEY)
        out[(str(sample.id), sample.epoch)] = cls if isinstance(cls, str) else "correct"
    return out


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from finmath_tasks.sandbox.bwrap import bwrap_available

    if not bwrap_available()[0]:
        pytest.skip("needs the bubblewrap sandbox (fresh variants are instantiated there)")
    root = tmp_path_factory.mktemp("classes")
    logs = root / "logs"
    golds = _original_golds()
    assert all(g != 0 for g in golds.values())  # 0 is wrong for every question
    task = knowledgefmath(split="demo", solver="cot")
    runs = {"original": _run(task, [_reply(g) for g in golds.values()], MODEL, logs)}
    for seed, knows in ((1, {0, 2, 3, 9}), (2, {1, 4})):
        fresh = knowledgefmath(split="demo", solver="cot", variant="fresh", variant_seed=seed)
        runs[f"fresh {seed}"] = _run(
            fresh, _fresh_outputs(fresh, golds, knows), MODEL, logs, sample_id=_fresh_ids(fresh)
        )
    runs["two epochs"] = _run(task, [_reply(0)] * 30, MODEL, logs, epochs=2)
    out = root / "report"
    done = subprocess.run(
        [sys.executable, "-m", "finmath_tasks.cli", "report", str(logs), "--out", str(out)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return {"out": out, "runs": runs, "stderr": done.stderr}


def _name(log: EvalLog) -> str:
    return Path(log.location).name


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_every_run_has_its_column_counted_as_its_log_says(report: dict[str, Any]) -> None:
    runs = report["runs"]
    tables = parse_markdown((report["out"] / "report.md").read_text(encoding="utf-8"))
    title = f"finmath_tasks/knowledgefmath: error classes of {SCORE}"
    header, body = tables[title]
    assert len(header) == 1 + 4  # every run, the perfect one too
    column = {}
    for key, want in (
        ("original", ["variant=original", "epochs=1"]),
        ("fresh 1", ["variant=fresh", "variant_seed=1"]),
        ("fresh 2", ["variant=fresh", "variant_seed=2"]),
        ("two epochs", ["variant=original", "epochs=2"]),
    ):
        [i] = [i for i, h in enumerate(header) if all(w in h for w in want)]
        column[key] = i
        assert MODEL in header[i] and not LOG_NAME.search(header[i])
    rows = {row[0]: row for row in body}
    # the perfect run: 15 of 15 correct; the epochs counted apart: 30 of 30 wrong
    assert rows["correct"][column["original"]] == "15 (100.0%)"
    assert "n=15" in header[column["original"]] and "n=30" in header[column["two epochs"]]
    assert rows[WRONG][column["two epochs"]] == "30 (100.0%)"
    assert rows["correct"][column["two epochs"]] == "0"
    for seed, right in (("fresh 1", 4), ("fresh 2", 2)):
        counted = Counter(_classes(runs[seed]).values())
        assert counted["correct"] == right and sum(counted.values()) == 14  # SKIPPED left out
        for cls, row in rows.items():
            k = counted.get(cls, 0)
            assert row[column[seed]] == (f"{k} ({k / 14 * 100:.1f}%)" if k else "0"), cls
    # the CSV has the same columns, by log
    by_log = {(r["log"], r["error_class"]): int(r["count"]) for r in _csv(
        report["out"] / "error_classes.csv") if r["score"] == SCORE}  # fmt: skip
    assert by_log[(_name(runs["original"]), "correct")] == 15
    assert by_log[(_name(runs["two epochs"]), WRONG)] == 30


def _transitions(report: dict[str, Any], a: str, b: str) -> list[dict[str, str]]:
    names = {_name(report["runs"][a]), _name(report["runs"][b])}
    return [
        r
        for r in _csv(report["out"] / "error_transitions.csv")
        if r["score"] == SCORE and {r["log_a"], r["log_b"]} == names
    ]


def test_every_pair_has_its_transitions_on_the_samples_and_epochs_both_scored(
    report: dict[str, Any],
) -> None:
    runs = report["runs"]
    original = _classes(runs["original"])
    tables = parse_markdown((report["out"] / "report.md").read_text(encoding="utf-8"))
    prefix = f"finmath_tasks/knowledgefmath: error class transitions of {SCORE}, "
    shown = [t for t in tables if t.startswith(prefix)]
    # the gap's two pairs (the perfect original against each seed) and the epochs pair
    assert len(shown) == 3
    assert all(not LOG_NAME.search(t) for t in shown)
    for seed in ("fresh 1", "fresh 2"):
        rows = _transitions(report, "original", seed)
        fresh = _classes(runs[seed])
        want = Counter((original[k], fresh[k]) for k in fresh)  # the 14 both scored
        assert {(r["from_class"], r["to_class"]): int(r["count"]) for r in rows} == want
        assert {(r["n"], r["epochs"], r["only_a"], r["only_b"]) for r in rows} == {
            ("14", "1", "1", "0")  # SKIPPED: scored by the original only
        }
        [title] = [t for t in shown if seed.replace("fresh ", "variant_seed=") in t]
        body = {row[0]: row[1:] for row in tables[title][1]}
        right = sum(1 for v in fresh.values() if v == "correct")
        # correct: 14 in A, right in B, 14 - right became wrong, none fixed
        assert body["correct"] == ["14", str(right), "–", "–", str(14 - right), "0"]
        for cls, count in Counter(fresh.values()).items():
            if cls != "correct":
                assert body[cls] == ["0", str(count), "0", str(count), "0", "0"]
    rows = _transitions(report, "original", "two epochs")
    # epoch 1 of each question against the one epoch of the original; epoch 2 left out
    assert {(r["n"], r["epochs"]) for r in rows} == {("15", "1")}
    forward = rows[0]["log_a"] == _name(runs["original"])
    assert {(r["only_a"], r["only_b"]) for r in rows} == {("0", "15") if forward else ("15", "0")}
    pair = ("correct", WRONG) if forward else (WRONG, "correct")
    assert {(r["from_class"], r["to_class"]): int(r["count"]) for r in rows} == {pair: 15}
    [title] = [t for t in shown if "epochs=2" in t]
    body = {row[0]: row[1:] for row in tables[title][1]}
    assert body["correct"] == (["15", "0", "–", "–", "15", "0"] if forward else
                               ["0", "15", "–", "–", "0", "15"])  # fmt: skip
    md = (report["out"] / "report.md").read_text(encoding="utf-8")
    assert "epoch 1: a sample's epoch in A against the same epoch in B); left out" in md
    assert "15 scored by B only" in md or "15 scored by A only" in md


def test_the_gap_names_its_model_interval_and_unit(report: dict[str, Any]) -> None:
    tables = parse_markdown((report["out"] / "report.md").read_text(encoding="utf-8"))
    [(header, rows)] = [t for title, t in tables.items() if title.startswith("Memorisation gap")]
    assert header[1] == "model" and {r[1] for r in rows} == {MODEL}
    seeds = [r for r in rows if r[header.index("seed")] in ("1", "2") and r[0].startswith(SCORE)]
    assert len(seeds) == 2
    for row in seeds:
        for cell in row:
            assert not LOG_NAME.search(cell)
        assert "variant=fresh" in row[header.index("fresh run")]
        assert "variant=original" in row[header.index("original run")]
        note = row[header.index("note")]
        # no question of the demo split shares a document: a paired stderr over questions
        assert "over the 14 questions" in note and ("interval" in note)


def test_no_different_data_warning_for_an_original_and_its_variants(
    report: dict[str, Any],
) -> None:
    assert "read different data" not in report["stderr"]


class _Cells(HTMLParser):
    """Every table's cells (text and title) and the page's style."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict[str, Any]] = []
        self.heading = ""
        self.style = ""
        self._where = ""
        self._cell: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("h3", "style"):
            self._where, self.heading = tag, "" if tag == "h3" else self.heading
        elif tag == "table":
            self.tables.append({"title": self.heading, "cells": []})
        elif tag in ("td", "th") and self.tables:
            self._cell = {"text": "", "title": dict(attrs).get("title"),
                          "class": dict(attrs).get("class")}  # fmt: skip

    def handle_endtag(self, tag: str) -> None:
        if tag in ("h3", "style"):
            self._where = ""
        elif tag in ("td", "th") and self._cell is not None:
            self.tables[-1]["cells"].append(self._cell)
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell["text"] += data
        elif self._where == "h3":
            self.heading += data
        elif self._where == "style":
            self.style += data


def test_report_html_names_runs_by_setting_and_fits_the_page(report: dict[str, Any]) -> None:
    page = _Cells()
    page.feed((report["out"] / "report.html").read_text(encoding="utf-8"))
    names = {_name(log) for log in report["runs"].values()}
    titled: set[str] = set()
    for table in page.tables:
        for cell in table["cells"]:
            # a word too long for a column (a log file's name, a path) may be cut anywhere
            if any(len(word) > 24 for word in cell["text"].split()):
                assert cell["class"] == "long", cell["text"]
        if table["title"] == "Logs":  # the legend itself: each file and its run
            continue
        for cell in table["cells"]:
            assert not LOG_NAME.search(cell["text"]), (table["title"], cell["text"])
            if cell["title"]:
                titled.add(cell["title"])
    assert names <= titled  # each run's file is in a tooltip of a cell naming it
    # no table wider than the page: at most its width, cells wrap between words, and
    # inside a long word
    rules = dict(rule.split("{", 1) for rule in page.style.split("}") if "{" in rule)
    assert "max-width:100%" in rules["table"]
    assert "overflow-wrap:break-word" in rules["td,th"]
    assert "overflow-wrap:anywhere" in rules["td.long,th.long"]


def _causes(log: EvalLog) -> dict[tuple[str, int], str]:
    """(sample id, epoch) -> the cause the scorer gave the official score, or correct."""
    out = {}
    for sample in log.samples or []:
        score = (sample.scores or {})[SCORE]
        cause = (score.metadata or {}).get(ERROR_CAUSE_KEY)
        out[(str(sample.id), sample.epoch)] = cause if isinstance(cause, str) else "correct"
    return out


def test_the_causes_tables_and_their_transitions_count_as_the_logs_say(
    report: dict[str, Any],
) -> None:
    runs = report["runs"]
    tables = parse_markdown((report["out"] / "report.md").read_text(encoding="utf-8"))
    header, body = tables[f"finmath_tasks/knowledgefmath: error causes of {SCORE}"]
    assert header[1] == "paper's category"  # KnowledgeFMATH's Table 6
    rows = {row[0]: row for row in body}
    by_log = {(r["log"], r["error_cause"]): r for r in _csv(report["out"] / "error_causes.csv")
              if r["score"] == SCORE}  # fmt: skip
    wrong = 0
    for key, log in runs.items():
        counted = Counter(_causes(log).values())
        n = sum(counted.values())
        [i] = [i for i, h in enumerate(header) if f"(n={n})" in h and _label_of(key, h)]
        for cause, row in rows.items():
            k = counted.get(cause, 0)
            assert row[i] == (f"{k} ({k / n * 100:.1f}%)" if k else "0"), (key, cause)
        for cause, k in counted.items():
            assert int(by_log[(_name(log), cause)]["count"]) == k
        wrong += n - counted["correct"]
    assert wrong >= 30  # the two-epoch run alone is wrong 30 times: each has a cause
    if "method" in rows:
        assert rows["method"][1] == "misinterpretation of required knowledge"
    # the original (perfect) against each fresh variant, by cause
    for seed in ("fresh 1", "fresh 2"):
        names = {_name(runs["original"]), _name(runs[seed])}
        moves = [r for r in _csv(report["out"] / "error_cause_transitions.csv")
                 if r["score"] == SCORE and {r["log_a"], r["log_b"]} == names]  # fmt: skip
        fresh = _causes(runs[seed])
        want = Counter(("correct", fresh[k]) for k in fresh)
        assert {(r["from_cause"], r["to_cause"]): int(r["count"]) for r in moves} == want
    assert any(t.startswith(f"finmath_tasks/knowledgefmath: error cause transitions of {SCORE}")
               for t in tables)  # fmt: skip


def _label_of(key: str, header: str) -> bool:
    want = {
        "original": ["variant=original", "epochs=1"],
        "fresh 1": ["variant=fresh", "variant_seed=1"],
        "fresh 2": ["variant=fresh", "variant_seed=2"],
        "two epochs": ["variant=original", "epochs=2"],
    }[key]
    return all(w in header for w in want)
