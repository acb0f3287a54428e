"""MathHay's published numbers (tasks/mathhay/published.tsv) checked against the paper's text.

Every row of Table 3 (24 model rows x 11 numbers) is transcribed; each value must be
the token printed at its row and column. The counts (n) are checked against the
values themselves (each a multiple of 100/n) and against the data files.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from finmath_tasks.tasks.mathhay.grid import GRIDS
from finmath_tasks.tasks.mathhay.task import mathhay
from paper_text import paper_path

REPO_ROOT = Path(__file__).resolve().parents[3]
COLUMNS = ["table", "model", "setting", "score", "metric", "group", "value", "unit", "n",
           "source", "note", "generation", "grader", "data"]  # fmt: skip
TABLE3_COLUMNS = [
    "SSSD Verified", "SSSD Unverified", "MSSD Verified", "MSSD Unverified",
    "SSMD Verified", "SSMD Unverified", "MSMD Verified", "MSMD Unverified",
    "Overall Verified", "Overall Unverified", "Overall Full",
]  # fmt: skip
MODELS = ["LLaMA-3.1-8B-Instruct", "Qwen-2.5-7B-Instruct", "GPT-4o-mini", "GPT-4o", "o1-mini",
          "o1-preview", "Claude-3.5-Sonnet", "Gemini-1.5-Pro-002"]  # fmt: skip
BLOCKS = {"32K": 32000, "64K": 64000, "128K": 128000}


def papers_dir() -> Path | None:
    """The papers' folder when it holds mathhay.txt (:func:`paper_text.paper_path`)."""
    path = paper_path("mathhay.txt")
    return path.parent if path else None


def published() -> list[dict[str, str]]:
    text = (resources.files("finmath_tasks.tasks.mathhay") / "published.tsv").read_text("utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    reader = csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
    assert reader.fieldnames == COLUMNS
    return list(reader)


def setting_args(setting: str) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for pair in setting.split():
        name, value = pair.split("=", 1)
        args[name] = int(value) if value.isdigit() else value
    return args


def paper_table3(paper: str) -> dict[tuple[str, int], list[str]]:
    """(model, length) -> the 11 numbers as printed, from the paper's Table 3 block."""
    start = paper.index("Table 3: Performance of Selected Models")
    end = paper.index("\n4.2 RESULTS", start)
    rows: dict[tuple[str, int], list[str]] = {}
    length = None
    for line in paper[start:end].splitlines():
        if line.strip() in BLOCKS:
            length = BLOCKS[line.strip()]
            continue
        parts = line.split("\t")
        if length is not None and parts[0] in MODELS:
            assert len(parts) == 13, line  # model, claimed length, 11 numbers
            rows[(parts[0], length)] = parts[2:]
    return rows


def column_of(row: dict[str, str]) -> str:
    return row["source"].split("; column ")[1]


def test_schema_and_every_cell_once() -> None:
    rows = published()
    assert len(rows) == 24 * 11
    cells = {(r["model"], setting_args(r["setting"])["length"], column_of(r)) for r in rows}
    assert cells == {(m, n, c) for m in MODELS for n in BLOCKS.values() for c in TABLE3_COLUMNS}
    for r in rows:
        assert r["table"] == "Table 3" and r["unit"] == "%" and r["score"] == "mathhay"
        assert r["metric"] == "accuracy"
        args = setting_args(r["setting"])
        column = column_of(r)
        subset = {"Verified": "verified", "Unverified": "unverified", "Full": "verified+unverified"}
        assert args["subset"] == subset[column.split()[1]] and args["release"] == "v1"
        category = column.split()[0]
        assert r["group"] == ("" if category == "Overall" else f"category={category}")
        o1_at_128k = r["model"].startswith("o1-") and args["length"] == 128000
        assert args.get("reserve") == (20000 if o1_at_128k else None)


def test_every_setting_is_a_run_of_a_grid_and_a_valid_task() -> None:
    runs = [{k: str(v) for k, v in a.items()} for grid in GRIDS.values() for a in grid.arg_sets()]
    for setting in {r["setting"] for r in published()}:
        args = setting_args(setting)
        assert {k: str(v) for k, v in args.items()} in runs, setting
    # the task accepts each setting's arguments (parameters are checked before data loads)
    with pytest.raises(Exception, match="data_dir=/nonexistent/mathhay: no such directory"):
        mathhay(**setting_args(published()[0]["setting"]), data_dir="/nonexistent/mathhay")


def test_counts_are_consistent_with_the_values() -> None:
    """Each value is k/n (2 decimals) and the categories' counts add up to Overall, V + U = Full."""
    counts: dict[tuple[str, int, str], dict[str, int]] = defaultdict(dict)
    for r in published():
        value, n = float(r["value"]), int(r["n"])
        k = round(value * n / 100)
        if r["note"].startswith("as printed, but"):
            assert abs(k / n * 100 - value) > 0.006  # the paper's own inconsistency, noted
        else:
            assert abs(k / n * 100 - value) <= 0.006, r
        args = setting_args(r["setting"])
        counts[(r["model"], args["length"], args["subset"])][r["group"] or "overall"] = k
    checked = 0
    for (model, length, subset), by_group in counts.items():
        if subset == "verified+unverified":
            verified, unverified = (counts[(model, length, s)]["overall"] for s in
                                    ("verified", "unverified"))  # fmt: skip
            assert by_group["overall"] == verified + unverified, (model, length)
            checked += 1
            continue
        parts = sum(v for g, v in by_group.items() if g != "overall")
        if (model, length, subset) == ("GPT-4o", 128000, "verified"):
            assert parts == by_group["overall"] + 1  # the printed 45.00 (MSSD) is off by one
        else:
            assert parts == by_group["overall"], (model, length, subset)
    assert checked == 24


def test_every_value_is_printed_at_its_row_and_column() -> None:
    folder = papers_dir()
    if folder is None:
        pytest.skip("the papers are absent (../shared/docs/papers or $FINMATH_PAPERS_DIR)")
    table = paper_table3((folder / "mathhay.txt").read_text(encoding="utf-8"))
    assert len(table) == 24
    for r in published():
        length = setting_args(r["setting"])["length"]
        printed = table[(r["model"], length)]
        assert printed[TABLE3_COLUMNS.index(column_of(r))] == r["value"], r["source"]
        label = {32000: "32K", 64000: "64K", 128000: "128K"}[length]
        assert r["source"].startswith(f"mathhay.txt; Table 3; row {r['model']} ({label});")


@pytest.mark.realdata
def test_verified_counts_per_category_match_the_data(data_dir: Path) -> None:
    """Table 2: 126 verified questions; per category as the transcribed n."""
    task = mathhay(data_dir=str(data_dir), release="v1", subset="verified")
    per_category: dict[str, int] = defaultdict(int)
    for sample in task.dataset:
        per_category[str((sample.metadata or {})["category"])] += 1
    assert dict(per_category) == {"SSSD": 32, "MSSD": 28, "SSMD": 20, "MSMD": 46}
    assert per_category["SSSD"] + per_category["SSMD"] == 52  # Table 2: verified single-step
    expected = {
        r["group"].removeprefix("category="): int(r["n"])
        for r in published()
        if r["group"] and r["setting"].startswith("release=v1 subset=verified ")
    }
    assert expected == dict(per_category)
