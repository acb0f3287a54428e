"""``finmath report`` pools a setting's repeats rather than pairing them with each other:
``paired.csv`` compares settings, each side giving every question its mean over the
setting's repeats (the question is the unit, as with epochs), so its rows grow with the
settings compared, not with the square of the logs.

Real logs: one scripted knowledgefmath run (Inspect's ``eval``), copied through Inspect's
log API into three repeats of its setting (one of them with a question's scores turned
wrong) and two repeats of another setting (another temperature)."""

from __future__ import annotations

import csv
from pathlib import Path
from statistics import mean

import pytest
from cli_logs import cot_outputs
from inspect_ai import eval
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from report_check import parse_markdown

from eval_helpers import scripted
from finmath_tasks.cli.main import main
from finmath_tasks.tasks.knowledgefmath import knowledgefmath

TEMPERATURE = 0.123


def _write(log: EvalLog, folder: Path, task_id: str) -> None:
    write_eval_log(log, str(folder / f"2026-01-01T00-00-00-00-00_kf_{task_id}.eval"))


def _values(log: EvalLog, score: str) -> dict[str, float]:
    return {str(s.id): float((s.scores or {})[score].value) for s in log.samples or []}  # type: ignore[arg-type]


@pytest.mark.slow
def test_repeats_are_pooled_per_question_not_paired_with_each_other(tmp_path: Path) -> None:
    [log] = eval(
        knowledgefmath(split="demo", solver="cot"),
        model=scripted(cot_outputs(0, 0), "mockllm/alpha"),
        display="none",
        log_dir=str(tmp_path / "run"),
    )
    assert log.status == "success", log.error
    log = read_eval_log(log.location)
    folder = tmp_path / "logs"
    folder.mkdir()
    setting_a: list[EvalLog] = []
    for i in range(3):
        copy = log.model_copy(deep=True)
        copy.eval.task_id = f"A{i}".ljust(22, "0")
        if i == 1:  # this repeat got the first question the base run got right wrong
            right = next(s for s in copy.samples or [] if all(
                float(v.value) == 1.0 for v in (s.scores or {}).values()  # type: ignore[arg-type]
            ))  # fmt: skip
            for score in (right.scores or {}).values():
                score.value = 0.0
        setting_a.append(copy)
        _write(copy, folder, copy.eval.task_id)
    setting_b: list[EvalLog] = []
    for i in range(2):
        copy = log.model_copy(deep=True)
        copy.eval.task_id = f"B{i}".ljust(22, "0")
        copy.plan.config.temperature = TEMPERATURE
        setting_b.append(copy)
        _write(copy, folder, copy.eval.task_id)

    out = tmp_path / "report"
    assert main(["report", str(folder), "--out", str(out), "--no-plots"]) == 0
    with (out / "paired.csv").open() as f:
        rows = list(csv.DictReader(f))
    scores = sorted({r["metric"].removesuffix(" accuracy") for r in rows})
    assert scores  # the official scores
    assert len(rows) == len(scores)  # one pair of settings per score: not C(5, 2) = 10 each
    for row in rows:
        score = row["metric"].removesuffix(" accuracy")
        sides = {row["run_a"]: ("a", row["log_a"]), row["run_b"]: ("b", row["log_b"])}
        [label_a] = [k for k in sides if f"temperature={TEMPERATURE}" not in k]
        [label_b] = [k for k in sides if f"temperature={TEMPERATURE}" in k]
        assert "3 repeats pooled" in label_a and "2 repeats pooled" in label_b
        assert "3 repeats pooled, each question's mean over them" in row["note"]
        per_a = [_values(r, score) for r in setting_a]
        per_b = [_values(r, score) for r in setting_b]
        ids = list(per_a[0])
        a = mean(mean(p[i] for p in per_a) for i in ids)
        b = mean(mean(p[i] for p in per_b) for i in ids)
        side_a, _ = sides[label_a]
        got_a, got_b = (float(row["a"]), float(row["b"]))
        if side_a == "b":
            got_a, got_b = got_b, got_a
        assert int(row["n"]) == len(ids) == 15
        assert got_a == pytest.approx(a, abs=1e-5) and got_b == pytest.approx(b, abs=1e-5)
        assert got_a == pytest.approx(
            got_b - 1 / (3 * 15), abs=1e-5
        )  # one question, one repeat of 3
        difference = float(row["difference"])
        assert difference == pytest.approx(
            (got_a - got_b) if side_a == "a" else (got_b - got_a), abs=1e-5
        )
        assert row["p_mcnemar"] == ""  # means over repeats are fractional: no McNemar
    # the tables still show every repeat and their mean
    text = (out / "report.md").read_text()
    assert "repeat 3/3" in text and "mean of 3 repeats (sd between repeats)" in text
    # the data table: one row per setting (repeats read the same data)
    _, data_rows = parse_markdown(text)["Data"]
    assert sorted(" 3 repeats" in r[0] or " 2 repeats" in r[0] for r in data_rows) == [True, True]
    assert len(data_rows) == 2
    # usage per run: a setting's repeats summed in one row per model and role
    header, usage_rows = parse_markdown(text)["Usage and cost per run"]
    runs = [r[0] for r in usage_rows]
    assert any("3 repeats, summed" in r for r in runs) and any(
        "2 repeats, summed" in r for r in runs
    )
    assert not any("repeat 1/3" in r for r in runs)
    [three] = [r for r in usage_rows if "3 repeats, summed" in r[0] and r[3] == "evaluated"]
    one = log.stats.model_usage["mockllm/alpha"].input_tokens
    assert three[header.index("input")].replace(",", "") == str(3 * one)
