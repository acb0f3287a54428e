"""The FinanceMath leaderboard cells (``published_leaderboard.tsv``) against the published files.

Every model, accuracy, execution rate and per-topic number of the four results files
of yale-nlp/FinanceMath at bdddc58 (``../shared/data/financemath/reference_results/``)
must be a cell of ours with the same value as written, the right score, setting, group
and n, and no cell of ours may be absent from the files.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from finmath_tasks.cli.published import Published, load_published

pytestmark = pytest.mark.realdata

FILES = {
    ("validation", "cot"): 52,
    ("validation", "pot"): 51,
    ("test", "cot"): 54,
    ("test", "pot"): 52,
}
SETTING = {
    "cot": {"solver": "cot", "extractor": "model"},
    "pot": {"solver": "pot"},
}
TOPICS = 7


def leaderboard_cells() -> list[Published]:
    return [c for c in load_published("knowledgefmath") if c.table.startswith("Leaderboard ")]


def _expected(data_dir: Path) -> dict[tuple[str, str, str, tuple[str, str] | None], str]:
    """(table, model, score, group) -> the value as the file writes it, for every number."""
    out: dict[tuple[str, str, str, tuple[str, str] | None], str] = {}
    for (split, solver), models in FILES.items():
        path = data_dir / "financemath" / "reference_results" / f"{split}_{solver}_results.json"
        entries = json.loads(path.read_text("utf-8"), parse_float=str, parse_int=str)
        assert len(entries) == models, path
        table = f"Leaderboard {split} {solver.replace('cot', 'CoT').replace('pot', 'PoT')}"
        for entry in entries:
            model = entry["model_name"]
            assert set(entry) == {
                "model_name", "accuracy", "execution_rate", "topic_accuracy",
                "topic_execution_rate",
            }, entry  # fmt: skip
            numbers: dict[tuple[str, tuple[str, str] | None], str] = {
                ("financemath", None): entry["accuracy"],
                ("execution_rate", None): entry["execution_rate"],
            }
            for topic, value in entry["topic_accuracy"].items():
                numbers[("financemath", ("topic", topic))] = value
            for topic, value in entry["topic_execution_rate"].items():
                numbers[("execution_rate", ("topic", topic))] = value
            assert len(numbers) == 2 + 2 * TOPICS, model
            for (score, group), value in numbers.items():
                key = (table, model, score, group)
                assert key not in out, f"{key} twice in {path}"
                out[key] = value
    return out


def test_every_number_of_the_four_files_is_a_cell_with_its_value(session_data_dir: Path) -> None:
    expected = _expected(session_data_dir)
    cells = leaderboard_cells()
    found = {(c.table, c.model, c.score, c.group): c for c in cells}
    assert len(found) == len(cells), "two cells for the same number"
    assert set(found) - set(expected) == set(), "cells the files do not have"
    assert set(expected) - set(found) == set(), "numbers of the files we lack"
    wrong = [
        f"{c.location}: {c.printed} != {expected[key]}"
        for key, c in found.items()
        if c.printed != expected[key]
    ]
    assert not wrong, "\n".join(wrong)
    assert len(cells) == sum(FILES.values()) * (2 + 2 * TOPICS) == 3344


def test_cells_name_their_setting_source_and_question_counts(session_data_dir: Path) -> None:
    counts = {
        split: Counter(
            r["topic"]
            for r in json.loads((session_data_dir / "financemath" / f"{split}.json").read_text())
        )
        for split in ("validation", "test")
    }
    for cell in leaderboard_cells():
        _, split, kind = cell.table.split(" ")
        solver = kind.lower()
        assert cell.setting == {"split": split, **SETTING[solver]}, cell.location
        assert cell.metric == "accuracy" and cell.unit == "%" and not cell.note
        assert cell.paper == (
            f"yale-nlp/FinanceMath@bdddc58 outputs/results/{split}_{solver}_results.json"
        )
        what = "accuracy" if cell.score == "financemath" else "execution_rate"
        column = f"topic_{what}[{cell.group[1]}]" if cell.group else what
        assert cell.source.endswith(f"; {cell.table}; row {cell.model}; column {column}")
        total = sum(counts[split].values())
        assert cell.n == (counts[split][cell.group[1]] if cell.group else total), cell.location
