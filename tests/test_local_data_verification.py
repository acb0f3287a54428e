"""A local copy of a benchmark is compared with the authors' pinned files: the log says
whether it is the authors' data, a copy that differs is "other data" (warned, in the log,
in the report), and what holds for the authors' files holds for every copy, each failure
naming the file and the record. Damaged copies are built in tmp_path from the real files."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval

from finmath_tasks.cli.main import main
from finmath_tasks.loading import DatasetError, git_blob_id
from finmath_tasks.tasks.mathhay.dataset import (
    POOL_BLOBS,
    POOL_KEY,
    TASK_TYPES,
    load_data,
    question_file,
)
from finmath_tasks.tasks.sara.dataset import SPLIT_BLOBS, SPLITS, derive_splits, parse_case
from finmath_tasks.tasks.sara.task import sara
from finmath_tasks.verification import Pin, differences


def copy_files(source: Path, target: Path, names: list[str]) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, target / name)
    return target


def change_one_byte(path: Path) -> None:
    """One space of the file becomes a tab: the same JSON records, other bytes."""
    data = path.read_bytes()
    at = data.index(b" ")
    path.write_bytes(data[:at] + b"\t" + data[at + 1 :])


def test_a_file_is_the_authors_only_when_its_blob_id_is_the_pinned_one() -> None:
    pins = {"a.json": Pin("1" * 40, "data/a.json"), "pool": Pin("", "the authors' pool")}
    assert differences({"a.json": "1" * 40}, pins) == {}
    assert differences({"a.json": "2" * 40}, pins) == {
        "a.json": f"git blob {'2' * 40}, the authors' data/a.json is {'1' * 40}"
    }
    assert differences({"extra.json": "1" * 40}, pins) == {
        "extra.json": "not a file of the authors' release"
    }
    assert differences({"pool": "3" * 40}, pins) == {"pool": "not the authors' pool"}


# ---- the log and the report -----------------------------------------------------------


def run_knowledgefmath(folder: Path, logs: Path, model: str) -> Any:
    [log] = inspect_eval(
        "finmath_tasks/knowledgefmath",
        task_args={"solver": "oracle", "data_dir": str(folder)},
        model=model,
        limit=2,
        log_dir=str(logs),
        display="none",
    )
    assert log.status == "success"
    return log


@pytest.mark.realdata
def test_the_authors_copy_and_a_copy_with_one_changed_byte_in_the_log_and_the_report(
    data_dir: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    authors = copy_files(data_dir / "financemath", tmp_path / "authors", ["validation.json"])
    other = copy_files(data_dir / "financemath", tmp_path / "other", ["validation.json"])
    change_one_byte(other / "validation.json")
    logs = tmp_path / "logs"
    with caplog.at_level(logging.WARNING):
        same = run_knowledgefmath(authors, logs, "mockllm/model")
        assert not [r for r in caplog.records if "other data" in r.getMessage()]
        changed = run_knowledgefmath(other, logs, "mockllm/other")
    assert same.results.scores[0].metrics["accuracy"].value == 1.0
    assert changed.results.scores[0].metrics["accuracy"].value == 1.0
    ours = same.eval.metadata["data"]
    assert ours["authors_data"] is True and "other_files" not in ours
    assert ours["compared_with"].startswith("yale-nlp/FinanceMath@")
    theirs = changed.eval.metadata["data"]
    assert theirs["authors_data"] is False
    assert list(theirs["other_files"]) == ["validation.json"]
    assert "the authors' data/validation.json is" in theirs["other_files"]["validation.json"]
    assert theirs["fingerprint"] != ours["fingerprint"]
    [warning] = [r.getMessage() for r in caplog.records if "other data" in r.getMessage()]
    assert str(other) in warning and "validation.json" in warning
    capsys.readouterr()
    out = tmp_path / "report"
    assert main(["report", str(logs), "--out", str(out), "--no-plots"]) == 0
    report = (out / "report.md").read_text()
    rows = {line for line in report.splitlines() if line.startswith("| ")}
    [row_ours] = [row for row in rows if f"| local {authors} |" in row]
    [row_theirs] = [row for row in rows if f"| local {other} |" in row]
    assert "| the authors' data |" in row_ours
    assert "| other data (1 file not the authors': validation.json) |" in row_theirs
    err = capsys.readouterr().err
    assert "runs compared read different data" in err and "other data" in err


# ---- SARA --------------------------------------------------------------------------------


def sara_copy(data_dir: Path, target: Path) -> Path:
    source = data_dir / "sara"
    names = [
        str(p.relative_to(source))
        for part in ("cases", "statutes", "splits")
        for p in (source / part).rglob("*")
        if p.is_file()
    ]
    return copy_files(source, target, names)


@pytest.mark.realdata
def test_a_sara_copy_of_the_authors_files_and_one_with_a_changed_case(
    data_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = sara_copy(data_dir, tmp_path / "sara")
    provenance = sara(data_dir=str(root)).metadata["data"]
    assert provenance["authors_data"] is True
    assert "splits/test" in provenance["files"]  # the split list compared too
    first = (root / "splits" / "test").read_text().split()[0]
    change_one_byte(root / "cases" / f"{first}.pl")
    with caplog.at_level(logging.WARNING):
        changed = sara(data_dir=str(root)).metadata["data"]
    assert changed["authors_data"] is False
    assert list(changed["other_files"]) == [f"cases/{first}.pl"]
    assert changed["fingerprint"] != provenance["fingerprint"]
    assert any(f"cases/{first}.pl" in r.getMessage() for r in caplog.records)


@pytest.mark.realdata
def test_the_pinned_split_lists_are_those_derived_from_the_authors_tsv(data_dir: Path) -> None:
    source = data_dir / "sara"
    cases = {p.stem: parse_case(p.read_text(), p.stem) for p in (source / "cases").glob("*.pl")}
    tsv = {split: (source / "dataset" / f"{split}.tsv").read_text() for split in SPLITS}
    for split, ids in derive_splits(cases, tsv).items():
        assert git_blob_id("".join(f"{i}\n" for i in ids).encode()) == SPLIT_BLOBS[split]


@pytest.mark.realdata
def test_a_sara_copy_without_a_statute_file_names_it(data_dir: Path, tmp_path: Path) -> None:
    root = sara_copy(data_dir, tmp_path / "sara")
    (root / "statutes" / "source" / "section152").unlink()
    with pytest.raises(DatasetError) as info:
        sara(data_dir=str(root))  # ten entailment cases of the test split cite section 152
    message = str(info.value)
    assert message.startswith(f"{root / 'cases'}/s152_") and "the question cites" in message
    assert f"{root / 'statutes' / 'source' / 'section152'} not found" in message
    # the tax cases cite no section, but every statute is in their prompts: other data
    provenance = sara(data_dir=str(root), kind="tax").metadata["data"]
    assert provenance["authors_data"] is False
    assert provenance["other_files"] == {
        "statutes/source/section152": "missing: the authors' release has it"
    }


@pytest.mark.realdata
def test_a_sara_copy_without_its_statutes_folder_names_it(data_dir: Path, tmp_path: Path) -> None:
    root = sara_copy(data_dir, tmp_path / "sara")
    shutil.rmtree(root / "statutes")
    with pytest.raises(DatasetError) as info:
        sara(data_dir=str(root))
    assert f"without {root / 'statutes'}" in str(info.value)


@pytest.mark.realdata
def test_a_sara_case_citing_a_section_the_statutes_lack_is_named(
    data_dir: Path, tmp_path: Path
) -> None:
    root = sara_copy(data_dir, tmp_path / "sara")
    first = (root / "splits" / "test").read_text().split()[0]
    case = root / "cases" / f"{first}.pl"
    text = case.read_text()
    section = first.split("_")[0].removeprefix("s")  # s151_c_neg cites section 151
    assert f"section {section}" in text
    case.write_text(text.replace(f"section {section}", "section 9999"))
    with pytest.raises(DatasetError) as info:
        sara(data_dir=str(root))
    message = str(info.value)
    assert str(case) in message and "no section 9999" in message


# ---- MathHay -----------------------------------------------------------------------------

VERIFIED = [question_file("verified", t) for t in TASK_TYPES]
POOL = "documents_reconstructed.json"


def mathhay_copy(data_dir: Path, target: Path, names: list[str]) -> Path:
    copy_files(data_dir / "mathhay" / "v1", target / "v1", names)
    return target


def load_verified(root: Path) -> Any:
    return load_data(str(root), "v1", "verified", list(TASK_TYPES))


def rewrite(path: Path, change: Any) -> None:
    records = json.loads(path.read_text())
    change(records)
    path.write_text(json.dumps(records))


@pytest.mark.realdata
def test_a_mathhay_copy_of_the_authors_files_and_one_with_a_changed_byte(
    data_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = mathhay_copy(data_dir, tmp_path / "copy", [*VERIFIED, POOL])
    data = load_verified(root)
    assert len(data.questions) == 126
    assert data.provenance["authors_data"] is True  # the reconstructed pool is v1's pool
    change_one_byte(root / "v1" / VERIFIED[0])
    with caplog.at_level(logging.WARNING):
        changed = load_verified(root).provenance
    assert changed["authors_data"] is False
    assert list(changed["other_files"]) == [VERIFIED[0]]
    assert changed["fingerprint"] != data.provenance["fingerprint"]
    assert any(VERIFIED[0] in r.getMessage() and "other data" in r.getMessage()
               for r in caplog.records)  # fmt: skip


@pytest.mark.realdata
def test_v1_pool_built_from_the_authors_question_files_is_the_pinned_pool(
    data_dir: Path, tmp_path: Path
) -> None:
    unverified = [question_file("unverified", t) for t in TASK_TYPES]
    names = [*VERIFIED, *unverified, question_file("full", "3s3d")]
    root = mathhay_copy(data_dir, tmp_path / "copy", names)  # no pool file
    data = load_verified(root)
    assert data.pool_file == root / "v1" and data.pool_size == 144
    assert data.provenance["authors_data"] is True
    assert data.provenance["files"][POOL_KEY] == POOL_BLOBS["v1"]


@pytest.mark.realdata
def test_an_empty_question_type_file_is_named(data_dir: Path, tmp_path: Path) -> None:
    root = mathhay_copy(data_dir, tmp_path / "copy", [*VERIFIED, POOL])
    path = root / "v1" / question_file("verified", "sssd")
    path.write_text("[]")
    with pytest.raises(DatasetError) as info:
        load_verified(root)  # not 119 of the 126 questions
    assert f"{path}: no questions (an empty list)" in str(info.value)


@pytest.mark.realdata
def test_an_irrelevant_document_index_outside_the_pool_is_named(
    data_dir: Path, tmp_path: Path
) -> None:
    root = mathhay_copy(data_dir, tmp_path / "copy", [*VERIFIED, POOL])
    path = root / "v1" / question_file("verified", "2ssd")

    def out_of_range(records: list[dict[str, Any]]) -> None:
        records[3]["Irrelevant_Documents_Indexs"] = str([5, 144, 7])

    rewrite(path, out_of_range)
    with pytest.raises(DatasetError) as info:
        load_verified(root)
    message = str(info.value)
    assert f"{path} record #3: Irrelevant_Documents_Indexs holds 144" in message
    assert "outside the document pool of 144 entries" in message


@pytest.mark.realdata
def test_a_question_whose_document_the_pool_lacks_is_named(data_dir: Path, tmp_path: Path) -> None:
    root = mathhay_copy(data_dir, tmp_path / "copy", [*VERIFIED, POOL])
    path = root / "v1" / question_file("verified", "sssd")
    doc_id = json.loads(path.read_text())[0]["Document_ID"]
    pool = json.loads((root / "v1" / POOL).read_text())
    index = int(doc_id.removeprefix("DOC_"))
    pool["documents"] = [d for d in pool["documents"] if d["index"] != index]
    (root / "v1" / POOL).write_text(json.dumps(pool))
    with pytest.raises(DatasetError) as info:
        load_verified(root)
    assert f"{path} record #0: document {doc_id!r} is not in the document pool" in str(info.value)


@pytest.mark.realdata
def test_a_question_without_its_document_id_is_named(data_dir: Path, tmp_path: Path) -> None:
    root = mathhay_copy(data_dir, tmp_path / "copy", [*VERIFIED, POOL])
    path = root / "v1" / question_file("verified", "sssd")
    rewrite(path, lambda records: records[2].pop("Document_ID"))
    with pytest.raises(DatasetError) as info:
        load_verified(root)
    assert f"{path} record #2: document '' is not in the document pool" in str(info.value)


@pytest.mark.realdata
def test_a_pool_question_file_missing_is_named(data_dir: Path, tmp_path: Path) -> None:
    # no pool file: v1's pool is built from its question files, and one of them is missing
    root = mathhay_copy(data_dir, tmp_path / "copy", VERIFIED)
    with pytest.raises(DatasetError) as info:
        load_verified(root)
    missing = root / "v1" / question_file("unverified", "sssd")
    assert f"{missing} not found" in str(info.value)
