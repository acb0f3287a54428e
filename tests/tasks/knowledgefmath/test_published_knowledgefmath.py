"""Every number of knowledgefmath's ``published.tsv`` against the paper's text.

Each row's value must sit in its table's row at its column's position (Table
4: 8 topic columns x CoT/PoT, Portfolio's two cells share one field of the
extraction; Table 5: the row of its retriever block, the model's column), so a
typo, a swapped column or a row moved to another model fails. Skipped without
``../shared/docs/papers``.
"""

from __future__ import annotations

import csv
import re
from importlib.resources import files
from pathlib import Path

import pytest

from finmath_tasks.tasks.knowledgefmath.grid import GRIDS
from paper_text import papers_dir as located_papers_dir

REPO_ROOT = Path(__file__).resolve().parents[3]


def papers_dir() -> Path:
    """:func:`paper_text.papers_dir`, or a path that does not exist (the tests skip)."""
    return located_papers_dir() or REPO_ROOT.parent / "shared" / "docs" / "papers"


PAPER = papers_dir() / "knowledgefmath.txt"
COLUMNS = ["table", "model", "setting", "score", "metric", "group", "value", "unit", "n"]
COLUMNS += ["source", "note", "generation", "grader", "data"]
TOPIC_COLUMNS = [
    "Quantitative",
    "Derivatives",
    "Accounting",
    "Management",
    "Portfolio",
    "Economics",
    "Corporate",
    "Avg.",
]


def published_rows() -> list[dict[str, str]]:
    text = files("finmath_tasks.tasks.knowledgefmath").joinpath("published.tsv").read_text("utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    reader = csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
    assert reader.fieldnames == COLUMNS
    rows = list(reader)
    for row in rows:
        assert None not in row and all(v is not None for v in row.values()), row
    return rows


@pytest.fixture(scope="module")
def paper() -> list[str]:
    if not PAPER.is_file():
        pytest.skip(f"the papers are not available ({PAPER} is absent)")
    return PAPER.read_text("utf-8").splitlines()


def block(lines: list[str], first: str, caption: str) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    end = next(i for i, line in enumerate(lines) if line.startswith(caption))
    return lines[start:end]


def table4_cells(line: str) -> list[str]:
    """The 16 cells of a model row, in column order (CoT, PoT per topic, then Avg.)."""
    fields = [f.strip() for f in line.split("\t")][3:]
    cells = fields[:8] + fields[8].split(" ") + fields[9:]
    return [re.sub(r"</?u>", "", c) for c in cells]


def row_label(line: str) -> str:
    """A Table 4 model row's label: "GPT-4-0613" (no size), "Llama 2 70B" (name and size)."""
    fields = line.split("\t")
    if len(fields) < 3:
        return ""
    return fields[0] if fields[1] in ("_", "-") else f"{fields[0]} {fields[1]}"


def test_schema_and_counts() -> None:
    rows = published_rows()
    table4 = [r for r in rows if r["table"] == "Table 4"]
    table5 = [r for r in rows if r["table"] == "Table 5"]
    # 26 models x 8 columns x CoT/PoT, less the 5 PoT averages the extraction lost; 4 human rows
    assert len(table4) == 26 * 16 - 5 + 4
    assert len(table5) == 12 * 2
    for row in rows:
        assert row["unit"] == "%" and float(row["value"]) >= 0
        assert row["source"].startswith(f"knowledgefmath.txt; {row['table']}; row ")
        if row["setting"] != "-":
            assert (row["score"], row["metric"]) == ("knowledgefmath2023", "accuracy")


def test_reproducible_cells_are_runs_of_a_named_grid() -> None:
    runs = [
        {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in args.items()}
        for grid in GRIDS.values()
        for args in grid.arg_sets()
    ]
    for row in published_rows():
        if row["setting"] == "-":
            continue
        setting = dict(pair.split("=", 1) for pair in row["setting"].split())
        assert setting in runs, row["setting"]


def test_table4_values_match_the_paper(paper: list[str]) -> None:
    lines = block(paper, "Model\tSize\tNotes", "Table 4: Results")
    checked = 0
    for row in published_rows():
        if row["table"] != "Table 4":
            continue
        where = re.fullmatch(r"knowledgefmath\.txt; Table 4; row (.+); column (.+)", row["source"])
        assert where, row["source"]
        label, column = where.groups()
        if row["setting"] == "-":  # human rows: "Close-book / Non-Expert", Avg. only
            book, who = label.split(" / ")
            start = next(i for i, x in enumerate(lines) if x.split("\t")[0] == book)
            line = next(x for x in lines[start + 1 :] if x.split("\t")[0] == who)
            first, second = [f for f in line.split("\t") if f][-2:]
            # the extraction splits "58.0" into "58" and "8.0"
            assert first + second[1:] == row["value"], (row, line)
            checked += 1
            continue
        topic, method = column.rsplit(" ", 1)
        matching = [x for x in lines if row_label(x) == label]
        assert len(matching) == 1, (label, matching)
        cells = table4_cells(matching[0])
        index = 2 * TOPIC_COLUMNS.index(topic) + ("CoT", "PoT").index(method)
        assert cells[index] == row["value"], (row["source"], cells)
        assert row["model"] == label
        expected_setting = (
            "split=test solver=cot extractor=model" if method == "CoT" else "split=test solver=pot"
        )
        assert row["setting"] == expected_setting
        assert (row["group"] == "") is (topic == "Avg.")
        checked += 1
    assert checked == 26 * 16 - 5 + 4


def test_table5_values_match_the_paper(paper: list[str]) -> None:
    lines = block(paper, "Setting\tLlama-2-70B", "Table 5: Results")
    models = ["Llama-2-70B", "GPT-3.5-1106"]
    checked = 0
    for row in published_rows():
        if row["table"] != "Table 5":
            continue
        where = re.fullmatch(r"knowledgefmath\.txt; Table 5; row (.+); column (.+)", row["source"])
        assert where, row["source"]
        label, column = where.groups()
        assert column == row["model"] and column in models
        if " / " in label:
            section, name = label.split(" / ")
            retriever, n = re.fullmatch(r"(.+) \(n = (\d)\)", section).groups()  # type: ignore[union-attr]
            start = next(
                i for i, x in enumerate(lines) if x.startswith(retriever) and f"(n = {n})" in x
            )
            line = next(x for x in lines[start + 1 :] if x.split("\t")[0] == name)
            assert f"top_n={n}" in row["setting"]
            assert ("retriever=dense" in row["setting"] or "knowledge=dense" in row["setting"]) is (
                retriever.startswith("OpenAI")
            )
        else:
            line = next(x for x in lines if x.split("\t")[0] == label)
        cell = line.split("\t")[1 + models.index(column)]
        assert cell.split(" ")[0] == row["value"], (row["source"], line)
        checked += 1
    assert checked == 24


def test_prose_agrees_with_the_table(paper: list[str]) -> None:
    text = " ".join(paper)
    rows = {
        (r["table"], r["model"], r["group"], r["setting"]): r["value"] for r in published_rows()
    }
    # "GPT-4 ... achieving an accuracy of 56.6% ... with CoT" (section 4.1)
    assert "accuracy of 56.6%" in text
    gpt4 = ("Table 4", "GPT-4-1106-preview", "", "split=test solver=cot extractor=model")
    assert rows[gpt4] == "56.6"
    assert "(average 58%)" in text and "(average 92%)" in text
