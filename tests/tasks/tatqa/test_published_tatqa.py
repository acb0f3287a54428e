"""tasks/tatqa/published.tsv: the financial-agents paper's TAT-QA numbers, each checked
against the paper's text (skipped without ../shared/docs/papers)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import finmath_tasks.tasks.tatqa as tatqa_package
from agents_paper_published import (
    HEADER,
    TABLE1,
    check_row,
    paper_text,
    read_published,
    row_cells,
    setting_args,
    table_blocks,
)
from finmath_tasks.tasks.tatqa.grid import GRID

PUBLISHED = Path(tatqa_package.__file__).parent / "published.tsv"


def rows() -> list[dict[str, str]]:
    return read_published(PUBLISHED)[1]


def test_header_and_comment() -> None:
    header, body, comments = read_published(PUBLISHED)
    assert header == HEADER
    assert comments and comments[0].startswith("# financial-agents.txt")
    assert all(len(r) == len(HEADER) for r in body)


def test_every_cell_of_tables_1_2_3_and_6_is_transcribed() -> None:
    # Table 1: 7 approaches x 2 models (TAT-QA) + the 14 Combined cells; Table 2: 5 rows x
    # 2 models; Table 3: 4 flip rows x 2 models x minor/major; Table 6: 7 x 2 x int/float
    counts = Counter(r["table"] for r in rows())
    assert counts == {"Table 1": 28, "Table 2": 10, "Table 3": 16, "Table 6": 28}
    assert len({(r["source"]) for r in rows()}) == len(rows())


def test_every_value_is_printed_in_the_paper_where_the_row_says() -> None:
    tables = table_blocks(paper_text())
    for row in rows():
        check_row(row, tables)


def test_a_typo_fails_the_check() -> None:
    tables = table_blocks(paper_text())
    row = dict(next(r for r in rows() if r["table"] == "Table 1"))
    row["value"] = f"{float(row['value']) + 0.1:.1f}"
    with pytest.raises(AssertionError):
        check_row(row, tables)
    swapped = dict(next(r for r in rows() if "column TATQA GPT4t" in r["source"]))
    swapped["source"] = swapped["source"].replace("column TATQA GPT4t", "column TATQA llama3")
    with pytest.raises(AssertionError):
        check_row(swapped, tables)


def test_combined_is_the_mean_of_the_two_benchmarks() -> None:
    # the Combined column (not reproducible by one run) is the mean of TAT-QA and FinQA
    table1 = table_blocks(paper_text())["Table 1"]
    for row in rows():
        if "column Combined" not in row["source"]:
            continue
        label = row["source"].split("; row ")[1].split(";")[0]
        cells = [float(c.rstrip("%")) for c in row_cells(table1, label)]
        offset = 0 if row["model"] == "llama3-70B" else 1
        mean = (cells[0 + offset] + cells[2 + offset]) / 2
        assert abs(mean - float(row["value"])) <= 0.05 + 1e-9, (label, mean, row["value"])


def test_reproducible_cells_are_runs_of_the_grid() -> None:
    runs = GRID.arg_sets()
    for row in rows():
        if row["setting"] == "-":
            assert row["note"], row["source"]
            continue
        args = setting_args(row["setting"])
        assert args in runs, row["setting"]
        assert args["split"] == "dev" and args["subset"] == "arithmetic"
        if row["score"] != "-":
            # the flip analysis (Table 3) is compared with the critic's flip shares
            flips = row["table"] == "Table 3"
            expected = ("minor_change", "major_change") if flips else ("rounding",)
            assert row["score"] in expected, row["source"]
        else:
            assert row["note"], row["source"]


def test_table_1_rows_map_to_our_solvers() -> None:
    for row in rows():
        if row["table"] == "Table 1" and row["setting"] != "-":
            label = row["source"].split("; row ")[1].split(";")[0]
            assert setting_args(row["setting"])["solver"] == TABLE1[label]
