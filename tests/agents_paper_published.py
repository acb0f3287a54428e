"""Checks of the financial-agents paper's published numbers (``published.tsv`` rows of
``tatqa`` and ``finqa``) against the paper's text, shared by both benchmarks' tests.

The paper's extraction (../shared/docs/papers/financial-agents.txt) has seven Markdown
tables, in order: Table 1 (accuracy per approach), Table 2 (oracle vs no oracle),
Table 3 (answer flips: minor vs major), Tables 4 and 5 (the improved critic's
confidence statistics; their row labels are lost), Table 6 (TAT-QA int vs float) and
Table 7 (FinQA int vs float). A table starts at a line followed by a ``|---|`` line; the
flip table's header has no such line in the extraction and starts at "| Answer Flip".
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from paper_text import papers_dir as located_papers_dir

REPO_ROOT = Path(__file__).resolve().parents[1]
PAPER = "financial-agents.txt"


def papers_dir() -> Path:
    """Where the papers are (:func:`paper_text.papers_dir`); a path that does not exist
    when they are absent (the caller skips)."""
    return located_papers_dir() or REPO_ROOT.parent / "shared" / "docs" / "papers"


HEADER = [
    "table", "model", "setting", "score", "metric", "group", "value", "unit", "n", "source",
    "note", "generation", "grader", "data",
]  # fmt: skip

TABLE_ORDER = ["Table 1", "Table 2", "Table 3", "Table 4", "Table 5", "Table 6", "Table 7"]
TABLE1 = {
    "CoT": "cot",
    "PoT": "pot",
    "CoT+critic": "critic",
    "CoT+i-critic": "icritic",
    "CoT+cal": "calculator",
    "CoT+critic+cal": "critic_calculator",
    "CoT+i-critic+cal": "icritic_calculator",
}
"""The paper's Table 1 rows -> our solvers."""
MODELS = {"llama3": "llama3-70B", "GPT4t": "GPT4-turbo"}
"""The tables' column labels -> the model names the paper's prose gives them."""
_BY_BENCH = [f"{b} {m}" for b in ("TATQA", "FinQA") for m in ("llama3", "GPT4t")]
COLUMNS = {
    "Table 1": [*_BY_BENCH, "Combined llama3", "Combined GPT4t"],
    "Table 2": _BY_BENCH,
    "Table 3": [f"{c} {k}" for c in _BY_BENCH for k in ("minor", "major")],
    "Table 6": [f"{m} {k}" for m in ("llama3", "GPT4t") for k in ("int", "float")],
    "Table 7": [f"{m} {k}" for m in ("llama3", "GPT4t") for k in ("int", "float")],
}
"""Each transcribed table's value columns, in the order of the row's cells."""
HEADERS = {
    "Table 1": "| Approach | TATQA | FinQA | Combined |",
    "Table 2": "| Approach | TATQA | FinQA |",
    "Table 3": "| Answer Flip | TATQA | FinQA |",
    "Table 6": "| Approach | llama3 | GPT4t |",
    "Table 7": "| Approach | llama3 | GPT4t |",
}
_SEPARATOR = re.compile(r"^\|(\s*-+\s*\|)+\s*$")
_SOURCE = re.compile(
    r"^(?P<paper>[^;]+); (?P<table>[^;]+); row (?P<row>[^;]+); column (?P<col>.+)$"
)


def paper_text() -> str:
    path = papers_dir() / PAPER
    if not path.is_file():
        pytest.skip(f"the papers are not here ({path}): place them at ../shared/docs/papers")
    return path.read_text(encoding="utf-8")


def table_blocks(text: str) -> dict[str, list[str]]:
    """The paper's Markdown tables by name (see the module docstring)."""
    lines = text.splitlines()
    blocks: list[list[str]] = []
    current: list[str] = []
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            if current:
                blocks.append(current)
            current = []
            continue
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if current and (_SEPARATOR.match(following) or line.startswith("| Answer Flip")):
            blocks.append(current)
            current = []
        current.append(line)
    if current:
        blocks.append(current)
    assert len(blocks) == len(TABLE_ORDER), [b[0] for b in blocks]
    named = dict(zip(TABLE_ORDER, blocks, strict=True))
    for name, header in HEADERS.items():
        assert named[name][0].startswith(header), (name, named[name][0])
    assert named["Table 1"][0] != named["Table 2"][0]
    return named


def row_cells(block: list[str], label: str) -> list[str]:
    """The value cells of the row whose first cell is ``label`` (exactly one such row)."""
    found = []
    for line in block:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == label:
            found.append(cells[1:])
    assert len(found) == 1, f"row {label!r}: {len(found)} lines in the table"
    return found[0]


def read_published(path: Path) -> tuple[list[str], list[dict[str, str]], list[str]]:
    """(header, rows, comment lines) of a published.tsv file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    comments = [line for line in lines[1:] if line.startswith("#")]
    body = [line for line in lines[1:] if line and not line.startswith("#")]
    rows = [dict(zip(header, r, strict=True)) for r in csv.reader(body, delimiter="\t")]
    return header, rows, comments


def check_row(row: dict[str, str], tables: dict[str, list[str]]) -> None:
    """The row's value is printed in its table, row and column of the paper."""
    m = _SOURCE.match(row["source"])
    assert m is not None, row["source"]
    assert m["paper"] == PAPER and m["table"] == row["table"], row["source"]
    columns = COLUMNS[row["table"]]
    assert m["col"] in columns, (m["col"], columns)
    cells = row_cells(tables[row["table"]], m["row"])
    assert len(cells) >= len(columns), (row["source"], cells)
    printed = cells[columns.index(m["col"])]
    assert printed == f"{row['value']}%", f"{row['source']}: the paper prints {printed!r}"
    assert row["unit"] == "%"
    model = next(label for label in MODELS if f" {label}" in f" {m['col']} ")
    assert row["model"] == MODELS[model], (row["model"], m["col"])


def setting_args(setting: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in setting.split())
