"""Every number of tasks/finqa/published_rag.tsv (the retrieval paper's Table 2) against the
paper's text, in both extractions, with its printed 90% interval."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

import finmath_tasks.tasks.finqa as package
from finmath_tasks.tasks.finqa.grid import GRID
from finmath_tasks.tasks.finqa.task import DEFAULT_TOP_K
from paper_text import grid_has_run, paper_path, row_pairs, table_block

TSV = Path(package.__file__).parent / "published_rag.tsv"
MAIN = "rag-cot-semi-structured.txt"
ALT = "rag-cot-semi-structured-alt-extraction.txt"
Z90 = 1.6448536269514722
COLUMNS = ["Program acc", "Answer acc"]
PAPER_ROWS = 17
"""Table 2's rows: 6 systems of other work, 6 with BERT retrieval, 2 human, 3 with gold facts."""


def rows() -> list[dict[str, str]]:
    lines = [
        line for line in TSV.read_text(encoding="utf-8").splitlines() if not line.startswith("#")
    ]
    return list(csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))


def label_and_column(source: str) -> tuple[str, str]:
    paper, table, row, column = (part.strip() for part in source.split(";"))
    assert paper == MAIN and table == "Table 2", source
    return row.removeprefix("row "), column.removeprefix("column ")


def test_every_cell_of_table_2_is_transcribed_once() -> None:
    cells = [label_and_column(r["source"]) for r in rows()]
    assert len(cells) == len(set(cells)) == 2 * PAPER_ROWS


@pytest.mark.parametrize("row", rows(), ids=lambda r: r["source"].split("; row ", 1)[1])
def test_value_and_interval_as_printed_in_both_extractions(row: dict[str, str]) -> None:
    label, column = label_and_column(row["source"])
    index = COLUMNS.index(column)
    for name in (MAIN, ALT):
        path = paper_path(name)
        if path is None:
            pytest.skip(f"paper text {name} not found (FINMATH_PAPERS_DIR or ../shared/docs)")
        pairs = row_pairs(table_block(path.read_text(encoding="utf-8"), "Table 2"), label)
        assert len(pairs) == 2, (name, label, pairs)
        value, half = pairs[index]
        assert value == row["value"], (name, label, column, value)
        p, n = float(value) / 100, int(row["n"])
        assert round(100 * Z90 * math.sqrt(p * (1 - p) / n), 2) == float(half), (name, label, n)


def test_the_papers_rows_are_runs_of_the_grid_and_pin_its_settings() -> None:
    ours = [r for r in rows() if r["setting"] != "-"]
    assert len(ours) == 2 * 8  # six with BERT retrieval, two with gold facts
    for row in ours:
        setting = dict(item.split("=", 1) for item in row["setting"].split())
        assert setting["split"] == "test" and setting["solver"] == "rag_cot"
        assert row["n"] == "200"  # footnote 4: 200 random questions of the test set
        assert grid_has_run(GRID, setting), setting
        if setting["retrieval"] == "bm25":
            assert int(setting["top_k"]) == DEFAULT_TOP_K == 3
        assert (
            row["score"]
            == {"Program acc": "execution_accuracy", "Answer acc": "tolerant"}[
                label_and_column(row["source"])[1]
            ]
        )
