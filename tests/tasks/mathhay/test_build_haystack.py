"""``finmath mathhay build --stages haystack``: consistent tasks -> the evaluation files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from finmath_tasks.tasks.mathhay.build.haystack import haystack_records, run_haystack
from finmath_tasks.tasks.mathhay.build.layout import BuildError, Layout, write_json
from finmath_tasks.tasks.mathhay.haystack import pool_order

PERIOD = "March-2024-to-September-2024"
SHARED_TYPES = ("sssd", "2ssd", "ss2d")


def group(topic: str, ids: str | list[str], consistencies: list[int]) -> dict:
    docs = "text" if isinstance(ids, str) else ["text"] * len(ids)
    return {
        "Topic": topic,
        "Subtopic": "s",
        "decomposable_query": "dq",
        "atomic_queries": ["a"],
        "doc_id": ids,
        "document": docs,
        "tasks": [
            {"question": f"q{k}", "answer": float(k), "consistency": c}
            for k, c in enumerate(consistencies)
        ],
    }


def test_records_keep_consistent_tasks_in_order_with_the_pool_order() -> None:
    groups = [group("A", "Doc_1", [1, 0, 1]), group("B", ["Doc_0", "Doc_3"], [0, 1])]
    rows, result = haystack_records(groups, "ss2d", 5)
    assert [r["Task"]["question"] for r in rows] == ["q0", "q2", "q1"]
    assert result.consistent == 3 and result.kept == 3
    assert result.dropped["not consistent"] == 2
    assert rows[0]["Document_ID"] == ["Doc_1"] and rows[0]["Documents"] == ["text"]
    assert rows[0]["Irrelevant_Documents_Indexs"] == [i for i in pool_order(5) if i != 1]
    assert rows[2]["Irrelevant_Documents_Indexs"] == [i for i in pool_order(5) if i not in (0, 3)]
    assert {r["task_type"] for r in rows} == {"ss2d"}
    assert rows[2]["Query"] == "dq"


def test_the_scripts_per_topic_cap_when_asked() -> None:
    groups = [group("A", "Doc_0", [1] * 5), group("B", "Doc_1", [1, 1])]
    rows, result = haystack_records(groups, "sssd", 3, per_topic=2)
    assert [r["Topic"] for r in rows] == ["A", "A", "B", "B"]
    assert result.dropped == {"more than 2 for the topic": 3}


@pytest.mark.parametrize(
    "bad",
    [{"tasks": "x"}, {"doc_id": ["Doc_0"], "document": ["a", "b"], "tasks": []}, "group"],
)
def test_malformed_groups_name_the_file_and_group(bad: object) -> None:
    with pytest.raises(BuildError, match=r"f\.json group 1"):
        haystack_records([group("A", "Doc_0", [1]), bad], "sssd", 3, source="f.json")


def test_a_finished_file_is_not_overwritten_silently(tmp_path: Path) -> None:
    layout = Layout(tmp_path, "P-1")
    write_json(layout.pool, [{"Document_ID": f"Doc_{i}", "Document": "d"} for i in range(4)])
    write_json(layout.high_quality("sssd"), [group("A", "Doc_2", [1])])
    [result] = run_haystack(layout, ["sssd", "2ssd"])
    assert result.kept == 1
    rows = json.loads(layout.haystack("sssd").read_text())
    assert rows[0]["Irrelevant_Documents_Indexs"] == [i for i in pool_order(4) if i != 2]
    with pytest.raises(BuildError, match=r"exists.*--overwrite"):
        run_haystack(layout, ["sssd"])
    run_haystack(layout, ["sssd"], overwrite=True)


def test_no_pool_or_no_input_is_a_clear_error(tmp_path: Path) -> None:
    layout = Layout(tmp_path, "P-1")
    write_json(layout.high_quality("sssd"), [])
    with pytest.raises(BuildError, match="no document pool"):
        run_haystack(layout, ["sssd"])
    write_json(layout.pool, [])
    with pytest.raises(BuildError, match="run the qc stage first"):
        run_haystack(layout, ["3s3d"])


@pytest.mark.realdata
def test_reproduces_the_released_evaluation_files(data_dir: Path, tmp_path: Path) -> None:
    """From the shared high_quality_questions_<type>.json and the pool's size, the shared
    full_haystack_question_<type>.json, record for record (tasks, answers, documents,
    Irrelevant_Documents_Indexs)."""
    shared = data_dir / "mathhay"
    pipeline = shared / "pipeline" / PERIOD
    if not pipeline.is_dir():
        pytest.skip(f"{pipeline} not found")
    layout = Layout(tmp_path, PERIOD)
    layout.folder.mkdir(parents=True)
    for task_type in SHARED_TYPES:
        shutil.copy(pipeline / f"high_quality_questions_{task_type}.json", layout.folder)
    shutil.copy(shared / PERIOD / "documents_reconstructed.json", layout.folder)
    results = run_haystack(layout, list(SHARED_TYPES))
    assert {r.task_type: r.kept for r in results} == {"sssd": 82, "2ssd": 90, "ss2d": 94}
    for task_type in SHARED_TYPES:
        ours = json.loads(layout.haystack(task_type).read_text(encoding="utf-8"))
        theirs = json.loads(
            (shared / PERIOD / f"full_haystack_question_{task_type}.json").read_text("utf-8")
        )
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            assert a == b


def test_the_command_line_runs_a_stage_and_prints_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from finmath_tasks.cli.main import main as finmath

    layout = Layout(tmp_path, "P-1")
    write_json(layout.pool, [{"Document_ID": f"Doc_{i}", "Document": "d"} for i in range(3)])
    write_json(layout.high_quality("sssd"), [group("A", "Doc_1", [1, 0])])
    argv = ["mathhay", "build", "--period", "P-1", "--out", str(tmp_path), "--stages", "haystack"]
    assert finmath(argv) == 0
    out = capsys.readouterr().out
    assert "| haystack | sssd 1 | not consistent: 1 | 0 | 0 | 0 |" in out
    assert layout.report.read_text().startswith("# MathHay build: P-1")
    assert finmath(argv) == 2  # finished: not overwritten silently
    assert "--overwrite" in capsys.readouterr().err
    assert finmath([*argv, "--overwrite"]) == 0
    assert finmath([*argv[:-1], "qc"]) == 2  # qc needs --model
    assert "--model is needed" in capsys.readouterr().err
