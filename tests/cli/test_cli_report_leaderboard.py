"""`finmath report` puts a validation run of a FinanceMath leaderboard model beside its row.

A real Inspect eval of `knowledgefmath` on the whole real validation split (CoT, the
reference's LLM extraction on the ``grader`` role), the model scripted under the
leaderboard's name ``gpt-4o``: every cell of gpt-4o's row of the published validation
CoT results (accuracy, execution rate, each topic's accuracy and execution rate) must
be in the report with its published value as the file writes it, beside the log's own
number, and nothing of the test leaderboard.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from inspect_ai.model import ChatMessage, ModelOutput, get_model

from finmath_tasks.cli.compare import wilson
from finmath_tasks.cli.main import main
from finmath_tasks.tasks.knowledgefmath import knowledgefmath

pytestmark = pytest.mark.realdata

MODEL = "mockllm/gpt-4o"
GRADER = "mockllm/gpt-4o-mini"
ROW = "gpt-4o"
ANSWER = re.compile(r"the answer is (\S+?)\.(?:\s|$)")


def _text(messages: list[ChatMessage]) -> str:
    return "\n".join(m.text for m in messages)


def _models(records: list[dict[str, Any]], name: str = MODEL) -> tuple[Any, Any]:
    """The solver: right on two questions in three (by file position), else a wrong number,
    and on one question in ten no answer at all; the extractor: the number after "the
    answer is" in the solution it is shown, else "None" (not executed)."""
    by_question = {r["question"]: (i, r) for i, r in enumerate(records)}

    def solve(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        text = _text(messages)
        found = [q for q in by_question if q in text]
        i, record = by_question[max(found, key=len)]
        gold = float(record["ground_truth"])
        answer = gold if i % 3 else gold * 3 + 7
        if i % 10 == 0:
            return ModelOutput.from_content(MODEL, "Step by step.\nI cannot tell.")
        return ModelOutput.from_content(
            MODEL, f"Step by step.\nTherefore, the answer is {answer!r}."
        )

    def extract(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        found = ANSWER.findall(_text(messages))
        return ModelOutput.from_content(GRADER, found[-1] if found else "None")

    return get_model(name, custom_outputs=solve), get_model(GRADER, custom_outputs=extract)


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory, session_data_dir: Path) -> dict[str, Any]:
    records = json.loads((session_data_dir / "financemath" / "validation.json").read_text())
    root = tmp_path_factory.mktemp("leaderboard-report")
    solver, grader = _models(records)
    [log] = eval(
        knowledgefmath(split="validation", solver="cot", extractor="model",
                       data_dir=str(session_data_dir)),
        model=solver, model_roles={"grader": grader}, log_dir=str(root / "logs"),
        display="none",
    )  # fmt: skip
    assert log.status == "success", log.error
    assert log.results is not None and log.samples is not None and len(log.samples) == 200
    out = root / "report"
    assert main(["report", str(root / "logs"), "--out", str(out), "--no-plots"]) == 0
    topics: dict[str, list[float]] = {}
    for sample in log.samples:
        topic = str((sample.metadata or {})["topic"])
        topics.setdefault(topic, []).append(float(sample.scores["financemath"].value))  # type: ignore[index,arg-type]
    [official] = [s for s in log.results.scores if s.name == "financemath"]
    [execution] = [s for s in log.results.scores if s.name == "execution_rate"]
    published = json.loads(
        (
            session_data_dir / "financemath/reference_results/validation_cot_results.json"
        ).read_text(),
        parse_float=str,
    )
    [row] = [m for m in published if m["model_name"] == ROW]
    return {
        "markdown": (out / "report.md").read_text(),
        "metrics": {k: m.value for k, m in official.metrics.items()},
        "execution": {k: m.value for k, m in execution.metrics.items()},
        "scores": [s.name for s in log.results.scores],
        "topics": topics,
        "row": row,
    }


def _rows(markdown: str) -> list[dict[str, str]]:
    section = markdown.split("### Published results beside yours", 1)
    assert len(section) == 2, "no published-results table in the report"
    table = section[1].split("\n### ", 1)[0]
    lines = [line for line in table.split("\n\n", 2)[2].splitlines() if line.startswith("|")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    return [dict(zip(cells[0], row, strict=True)) for row in cells[2:]]


def _interval(p: float, n: int) -> tuple[str, float, float]:
    """The report's text for a proportion over n samples: Inspect's 95% Wilson interval."""
    bounds = wilson(p, n, 0.95)
    assert bounds is not None
    low, high = bounds
    return f"{p * 100:.1f} [{low * 100:.1f}, {high * 100:.1f}]", low, high


@pytest.mark.slow
def test_every_cell_of_the_models_validation_row_is_beside_the_run(
    reported: dict[str, Any],
) -> None:
    rows = [r for r in _rows(reported["markdown"]) if r["model"] == MODEL]
    source = "yale-nlp/FinanceMath@bdddc58 outputs/results/validation_cot_results.json"
    assert {r["published for"] for r in rows} == {
        f"{ROW} ({source}, Leaderboard validation CoT)"
    }, rows
    assert {r["setting"] for r in rows} == {"split=validation solver=cot extractor=model"}
    by_metric = {r["metric"]: r for r in rows}
    assert len(by_metric) == len(rows) == 16
    row = reported["row"]
    metrics = reported["metrics"]

    def check(metric: str, printed: str, p: float, n: int, n_published: str) -> None:
        cells = by_metric.pop(metric)
        published = float(printed) / 100
        text, low, high = _interval(p, n)
        inside = "yes" if low - 1e-12 <= published <= high + 1e-12 else "no"
        assert [cells[k] for k in ("published", "measured", "n", "n published")] == [
            printed, text, str(n), n_published
        ], cells  # fmt: skip
        assert cells["difference (points)"] == f"{(p - published) * 100:+.1f}"
        assert cells["published inside the interval"] == inside
        # same split and size, the leaderboard's extractor's name on the grader: no note
        assert cells["note"] == "", cells

    p = metrics["accuracy"]
    assert 0.5 < p < 0.8
    check("financemath accuracy", row["accuracy"], p, 200, "200")
    assert set(reported["topics"]) == set(row["topic_accuracy"]) and len(row["topic_accuracy"]) == 7
    for topic, printed in row["topic_accuracy"].items():
        values = reported["topics"][topic]
        p = sum(values) / len(values)
        assert math.isclose(metrics[f"topic={topic}"], p)
        cell = by_metric[f"financemath accuracy [topic={topic}]"]
        check(f"financemath accuracy [topic={topic}]", printed, p, len(values),
              cell["n published"])  # fmt: skip
        assert cell["n published"] == str(len(values))  # the leaderboard's topic sizes
    # the CoT execution rate (extractor replies without "none": 180 of 200 here)
    p = reported["execution"]["accuracy"]
    assert p == pytest.approx(0.9)
    check("execution_rate accuracy", row["execution_rate"], p, 200, "200")
    # no execution rate per topic in a log: each of those cells says so, with no number
    for topic, printed in row["topic_execution_rate"].items():
        cells = by_metric.pop(f"execution_rate accuracy [topic={topic}]")
        assert [cells["published"], cells["measured"]] == [printed, "–"], cells
        assert "this log has no execution_rate accuracy" in cells["note"]
    assert not by_metric


def test_a_validation_run_is_not_put_beside_the_test_leaderboard(reported: dict[str, Any]) -> None:
    markdown = reported["markdown"]
    assert "Leaderboard test" not in markdown
    assert "published on test" not in markdown


@pytest.mark.slow
def test_table5_is_compared_with_the_papers_scoring_and_names_another_extractor(
    tmp_path: Path, session_data_dir: Path
) -> None:
    """A validation CoT run of the paper's GPT-3.5-1106 with another extractor: Table 5's
    cell compares with ``knowledgefmath2023`` (the paper's scoring) and says the
    extractor differs; a log of a task version without that score says so instead."""
    records = json.loads((session_data_dir / "financemath" / "validation.json").read_text())
    named, grader = _models(records, "mockllm/gpt-3.5-turbo-1106")
    [log] = eval(
        knowledgefmath(split="validation", solver="cot", extractor="model",
                       data_dir=str(session_data_dir)),
        model=named, model_roles={"grader": grader}, log_dir=str(tmp_path / "logs"),
        display="none", limit=20,
    )  # fmt: skip
    assert log.status == "success" and log.results is not None
    assert main(["report", str(tmp_path / "logs"), "--out", str(tmp_path / "r"), "--no-plots"]) == 0
    rows = _rows((tmp_path / "r" / "report.md").read_text())
    [table5] = [
        r for r in rows if r["published for"] == "GPT-3.5-1106 (knowledgefmath.txt, Table 5)"
    ]
    assert table5["setting"] == "split=validation solver=cot extractor=model knowledge=none"
    assert [table5["metric"], table5["published"]] == ["knowledgefmath2023 accuracy", "33.5"]
    assert [table5["n"], table5["n published"]] == ["20", "259"]
    assert "small run: 20 of the 259 questions published" in table5["note"]
    scores = {s.name: s for s in log.results.scores}
    p = scores["knowledgefmath2023"].metrics["accuracy"].value
    assert table5["measured"] == _interval(p, 20)[0]
    assert table5["difference (points)"] == f"{(p - 0.335) * 100:+.1f}"
    assert (
        f"the extractor differs ({GRADER}; the paper's: gpt-3.5-turbo-1106): the number "
        "is close to Table 4's scoring, not the same"
    ) in table5["note"]
