"""record_to_sample and the loader on the record shapes of both releases."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from mathhay_fixtures import SS2D, SSSD, write_release

from finmath_tasks.loading import DatasetError
from finmath_tasks.tasks.mathhay.dataset import (
    literal,
    load_data,
    parse_question,
    record_to_sample,
)


def test_record_to_sample_on_the_2024_shape() -> None:
    sample = record_to_sample({**SSSD[0], "_position": 7, "_file_task_type": "sssd"})
    assert sample.id == "sssd-007"
    assert sample.input == "What was Acme's profit in 2023 in millions?"
    assert sample.target == "40.0"
    meta = sample.metadata or {}
    assert meta["task_type"] == "sssd" and meta["documents"] == 1 and meta["steps"] == 1
    assert meta["document_ids"] == ["Doc_0"]
    # the stderr's cluster: the document group the subtopic's questions share
    assert meta["document"] == "Financial Market Analysis/Earnings"
    assert "Documents" not in meta and "documents_text" not in meta  # built in at solve time


def test_record_to_sample_on_the_v1_shapes() -> None:
    one = {"Topic": "t", "Subtopic": "s", "Query": "q", "Document_ID": "DOC_4",
           "Document": "text four", "Summarized_Document": "sum", "task_type": "2ssd",
           "Task": {"question": "Q?", "solution": "s", "steps": 1, "answer": 3},
           "Irrelevant_Documents_Indexs": [2, 0]}  # fmt: skip
    q = parse_question({**one, "_file_task_type": "sssd"})
    # the file decides the task type (120 v1 records of the sssd file say 2ssd)
    assert q.task_type == "sssd" and q.record_task_type == "2ssd"
    assert q.documents == ("text four",) and q.document_ids == ("DOC_4",) and q.order == (2, 0)
    two = {"Document_ID1": "DOC_1", "Document_ID2": "DOC_2", "Document1": "a",
           "Document2": "b", "task_type": "3s2d",
           "Task": {"question": "Q?", "solution": "s", "steps": 3, "answer": 2.5}}  # fmt: skip
    q2 = parse_question(two)
    assert q2.documents == ("a", "b") and q2.order is None and q2.answer == 2.5


def test_python_literal_fields_are_parsed_safely() -> None:
    record = {
        **SS2D[0],
        "Document_ID": "['Doc_0', 'Doc_2']",
        "Documents": repr(SS2D[0]["Documents"]),
        "Task": repr(SS2D[0]["Task"]),
        "Irrelevant_Documents_Indexs": repr(SS2D[0]["Irrelevant_Documents_Indexs"]),
    }
    q = parse_question(record)
    assert q.document_ids == ("Doc_0", "Doc_2") and q.answer == 80.0
    assert list(q.order or ()) == SS2D[0]["Irrelevant_Documents_Indexs"]
    with pytest.raises(ValueError, match="not a valid literal"):
        literal("__import__('os').system('false')", list, "Documents")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"Task": {"question": "Q", "answer": float("nan"), "steps": 1}}, "not a finite number"),
        ({"Task": {"question": "", "answer": 1, "steps": 1}}, "question is empty"),
        ({"Documents": ["only one"], "task_type": "ss2d"}, "needs 2 non-empty"),
        ({"task_type": "4s4d"}, "unknown task_type"),
        ({"Irrelevant_Documents_Indexs": [1, -2]}, "non-negative integers"),
    ],
)
def test_malformed_records(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_question({**SSSD[0], **change})


def test_loader_finds_the_release_directly_or_in_a_mathhay_folder(tmp_path: Path) -> None:
    write_release(tmp_path)
    nested = load_data(str(tmp_path), "March-2024-to-September-2024", "full", ["sssd", "ss2d"])
    direct = load_data(str(tmp_path / "mathhay"), "March-2024-to-September-2024", "full",
                       ["ss2d"])  # fmt: skip
    assert [s.id for s in nested.dataset] == ["sssd-000", "sssd-001", "ss2d-000"]
    assert [s.id for s in direct.dataset] == ["ss2d-000"]
    assert nested.pool_size == 8 and nested.missing_pool_entries == 0


def test_loader_errors_name_the_file(tmp_path: Path) -> None:
    folder = write_release(tmp_path)
    with pytest.raises(DatasetError, match=r"full_haystack_question_3s3d\.json not found"):
        load_data(str(tmp_path), "March-2024-to-September-2024", "full", ["3s3d"])
    bad = json.loads((folder / "full_haystack_question_sssd.json").read_text())
    del bad[1]["Task"]
    (folder / "full_haystack_question_sssd.json").write_text(json.dumps(bad))
    with pytest.raises(DatasetError, match=r"record #1 is malformed: missing field 'Task'"):
        load_data(str(tmp_path), "March-2024-to-September-2024", "full", ["sssd"])
    (folder / "documents.json").unlink()
    with pytest.raises(DatasetError, match="no document pool"):
        load_data(str(tmp_path), "March-2024-to-September-2024", "full", ["ss2d"])


@pytest.mark.realdata
def test_real_records_convert(data_dir: Path) -> None:
    data = load_data(str(data_dir), "March-2024-to-September-2024", "full",
                     ["sssd", "2ssd", "3ssd", "ss2d", "2s2d", "3s2d", "3s3d"])  # fmt: skip
    assert len(data.dataset) == 602
    counts: dict[str, int] = {}
    for sample in data.dataset:
        meta = sample.metadata or {}
        counts[meta["task_type"]] = counts.get(meta["task_type"], 0) + 1
        assert math.isfinite(float(sample.target))  # type: ignore[arg-type]
    assert counts == {"sssd": 82, "2ssd": 90, "3ssd": 87, "ss2d": 94, "2s2d": 89,
                      "3s2d": 85, "3s3d": 75}  # fmt: skip
    verified = load_data(str(data_dir), "v1", "verified",
                         ["sssd", "2ssd", "3ssd", "ss2d", "2s2d", "3s2d", "3s3d"])  # fmt: skip
    assert len(verified.dataset) == 126 and verified.missing_pool_entries == 0


@pytest.mark.realdata
def test_each_document_text_is_held_once(data_dir: Path) -> None:
    """The paper's 673 questions use 140 distinct documents 1,028 times: every question's
    document is the pool's own text object (one copy in memory), with its text unchanged."""
    data = load_data(str(data_dir), "v1", "verified+unverified",
                     ["sssd", "2ssd", "3ssd", "ss2d", "2s2d", "3s2d", "3s3d"])  # fmt: skip
    pool = {id(text): text for text in data.pool_documents.values()}
    uses = [d for q in data.questions.values() for d in q.documents]
    assert len(uses) == 1028 and len(set(uses)) == 140
    assert all(pool.get(id(d)) is d for d in uses)
    # the texts are the files' own
    first = json.loads((data.root / "verified_haystack_question_sssd.json").read_text())[0]
    assert data.questions["sssd-000"].documents == (first["Document"],)
