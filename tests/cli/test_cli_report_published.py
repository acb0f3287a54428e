"""`finmath report` puts the papers' published cells beside runs named like the papers' models.

Real Inspect logs of `sara` on the real test split (scripted models), compared with the
retrieval paper's LLaMA2 rows of `tasks/sara/published.tsv`.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from inspect_ai import eval

from eval_helpers import scripted
from finmath_tasks.cli.compare import wilson
from finmath_tasks.cli.main import main
from finmath_tasks.cli.published import load_published
from finmath_tasks.tasks.sara import sara

pytestmark = pytest.mark.realdata

SETTING = {"split": "test", "kind": "entailment", "retrieval": "mentioned_only", "prompting": "cot"}
LIMIT = 8
BOUNDS = ("ci90_lower", "ci90_upper")
ACCURACY = "accuracy"


def _published(model: str) -> float:
    [cell] = [
        c
        for c in load_published("sara")
        if c.model == model and c.setting == SETTING and c.table == "Table 1"
    ]
    return cell.value


def _run(log_dir: Path, data_dir: Path, model: str, answers: list[str]) -> dict[str, float]:
    [log] = eval(
        sara(data_dir=str(data_dir), **{k: v for k, v in SETTING.items()}),
        model=scripted([f"Reasoning.\nAnswer: {a}" for a in answers], name=model),
        limit=LIMIT,
        log_dir=str(log_dir),
        display="none",
    )
    assert log.status == "success"
    assert log.results is not None
    [score] = [s for s in log.results.scores if s.name == "entailment"]
    return {k: m.value for k, m in score.metrics.items()}


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory, session_data_dir: Path) -> dict[str, object]:
    data_dir = session_data_dir
    root = tmp_path_factory.mktemp("published-report")
    logs = root / "logs"
    seventy = _run(logs, data_dir, "mockllm/llama2-70b", ["False", "True", "True"] * 3)
    mine = _run(logs, data_dir, "mockllm/my-model", ["True"] * LIMIT)
    out = root / "report"
    assert main(["report", str(logs), "--out", str(out), "--no-plots"]) == 0
    aliased = root / "aliased"
    assert (
        main(
            [
                "report",
                str(logs),
                "--out",
                str(aliased),
                "--no-plots",
                "--alias",
                "mockllm/my-model=LLaMA2-13B",
            ]
        )
        == 0
    )
    return {
        "seventy": seventy,
        "mine": mine,
        "plain": (out / "report.md").read_text(),
        "aliased": (aliased / "report.md").read_text(),
    }


def _rows(markdown: str) -> list[dict[str, str]]:
    section = markdown.split("### Published results beside yours", 1)
    assert len(section) == 2, "no published-results table in the report"
    table = section[1].split("\n### ", 1)[0]  # up to the next table (e.g. the usage ones)
    lines = [line for line in table.split("\n\n", 2)[2].splitlines() if line.startswith("|")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    return [dict(zip(cells[0], row, strict=True)) for row in cells[2:]]


def _expected_row(model: str, paper_model: str, metrics: dict[str, float]) -> dict[str, str]:
    published = _published(paper_model)
    p = metrics[ACCURACY]
    # Inspect's 90% Wilson interval over the 8 scored cases (one question per case: no
    # clustering), not the task's own normal interval
    low, high = wilson(p, LIMIT, 0.9) or (math.nan, math.nan)
    assert 0 <= low < high <= 1
    inside = "yes" if low <= published / 100 <= high else "no"
    return {
        "model": model,
        "published for": f"{paper_model} (rag-cot-semi-structured.txt, Table 1)",
        "setting": "split=test kind=entailment retrieval=mentioned_only prompting=cot",
        "metric": f"entailment {ACCURACY}",
        "published": f"{_published(paper_model):.1f}",
        "n published": "228",
        "measured": f"{p * 100:.1f} [{low * 100:.1f}, {high * 100:.1f}]",
        "n": str(LIMIT),
        "difference (points)": f"{(p - published / 100) * 100:+.1f}",
        "published inside the interval": inside,
    }


def _part(row: dict[str, str], like: dict[str, str]) -> dict[str, str]:
    return {k: row[k] for k in like}


@pytest.mark.slow
def test_a_run_named_like_a_papers_model_gets_its_published_cell(
    reported: dict[str, object],
) -> None:
    rows = _rows(str(reported["plain"]))
    seventy = reported["seventy"]
    assert isinstance(seventy, dict)
    mine = [r for r in rows if r["model"] == "mockllm/llama2-70b"]
    # the same setting is in two of the paper's tables (Table 1 "+ Ret" and Table 4's CoT)
    assert [r["published for"] for r in mine] == [
        "LLaMA2-70B (rag-cot-semi-structured.txt, Table 1)",
        "LLaMA2-70B (rag-cot-semi-structured.txt, Table 4)",
    ]
    assert 0 < seventy[ACCURACY] < 1
    expected = _expected_row("mockllm/llama2-70b", "LLaMA2-70B", seventy)
    assert _part(mine[0], expected) == expected
    assert "228 entailment cases" in mine[0]["note"]  # the paper's set differs: said in the note
    assert "small run: 8 of the 228 questions published" in mine[0]["note"]
    # the model without a paper name has no row
    assert not [r for r in rows if r["model"] == "mockllm/my-model"]


def test_an_alias_compares_any_model_with_a_papers_row(reported: dict[str, object]) -> None:
    rows = _rows(str(reported["aliased"]))
    mine = reported["mine"]
    assert isinstance(mine, dict)
    row = next(r for r in rows if r["model"] == "mockllm/my-model")
    expected = _expected_row("mockllm/my-model", "LLaMA2-13B", mine)
    assert _part(row, expected) == expected
