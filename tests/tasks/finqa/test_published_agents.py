"""tasks/finqa/published.tsv, the financial-agents paper's rows (those whose source is
financial-agents.txt), each checked against the paper's text (skipped without
../shared/docs/papers). The retrieval paper's FinQA rows have their own test."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import finmath_tasks.tasks.finqa as finqa_package
from agents_paper_published import (
    HEADER,
    PAPER,
    check_row,
    paper_text,
    read_published,
    setting_args,
    table_blocks,
)
from finmath_tasks.tasks.finqa.grid import GRID

PUBLISHED = Path(finqa_package.__file__).parent / "published.tsv"


def rows() -> list[dict[str, str]]:
    return [r for r in read_published(PUBLISHED)[1] if r["source"].startswith(f"{PAPER};")]


def test_header_and_the_agents_paper_comment_comes_first() -> None:
    header, _, comments = read_published(PUBLISHED)
    assert header == HEADER
    assert comments[0].startswith("# financial-agents.txt")
    lines = PUBLISHED.read_text(encoding="utf-8").splitlines()
    first_data = next(i for i, line in enumerate(lines[1:], 1) if not line.startswith("#"))
    assert lines[first_data].split("\t")[9].startswith(f"{PAPER};")


def test_every_finqa_cell_of_tables_1_2_3_and_7_is_transcribed() -> None:
    # Table 1: 7 approaches x 2 models; Table 2: 5 x 2; Table 3: 4 x 2 x minor/major;
    # Table 7: 7 x 2 x int/float (the Combined column is in tatqa's file)
    counts = Counter(r["table"] for r in rows())
    assert counts == {"Table 1": 14, "Table 2": 10, "Table 3": 16, "Table 7": 28}
    assert len({r["source"] for r in rows()}) == len(rows())
    assert all("FinQA" in r["source"] or r["table"] == "Table 7" for r in rows())


def test_every_value_is_printed_in_the_paper_where_the_row_says() -> None:
    tables = table_blocks(paper_text())
    for row in rows():
        check_row(row, tables)


def test_a_typo_fails_the_check() -> None:
    tables = table_blocks(paper_text())
    row = dict(next(r for r in rows() if r["table"] == "Table 7"))
    row["value"] = row["value"].replace(".", "")
    with pytest.raises(AssertionError):
        check_row(row, tables)


def test_reproducible_cells_are_runs_of_the_grid_on_dev() -> None:
    runs = GRID.arg_sets()
    for row in rows():
        if row["setting"] == "-":
            assert row["note"], row["source"]
            continue
        args = setting_args(row["setting"])
        assert args in runs, row["setting"]
        assert args["split"] == "dev"  # the agents paper's FinQA split (883 questions)
