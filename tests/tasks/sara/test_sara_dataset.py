"""Case files to samples; the loader's layout rules and its errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from sara_fixtures import EXEMPLAR_IDS, case_file, write_release

from finmath_tasks.loading import DatasetError
from finmath_tasks.tasks.sara.dataset import (
    find_root,
    load_data,
    load_dataset,
    parse_case,
    record_to_sample,
)
from finmath_tasks.tasks.sara.prompts import EXEMPLAR_SPECS


def test_entailment_case_to_sample() -> None:
    record = parse_case(
        case_file("Ann sold 12 widgets\n% in 2019.", "Section 10(a)(1) applies to Ann. Entailment"),
        "s10_a_1_pos",
    )
    sample = record_to_sample(record)
    assert sample.id == "s10_a_1_pos"
    assert sample.input == "Section 10(a)(1) applies to Ann."
    assert sample.target == "Entailment"
    assert sample.metadata == {
        "case_id": "s10_a_1_pos",
        "document": "s10_a_1_pos",  # the stderr's cluster: the case
        "kind": "entailment",
        "text": "Ann sold 12 widgets in 2019.",
        "question": "Section 10(a)(1) applies to Ann.",
        "label": "Entailment",
        "amount": None,
        "section": "s10",
        "citations": ["s10(a)(1)"],
    }


def test_tax_case_to_sample() -> None:
    record = parse_case(
        case_file("Eve sold widgets.", "How much does Eve pay? $12,345"), "tax_case_9"
    )
    sample = record_to_sample(record)
    assert sample.target == "12345"
    assert sample.metadata["kind"] == "tax" and sample.metadata["section"] == "tax"
    assert sample.metadata["amount"] == 12345.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("% Question\n% Is it? Entailment\n", r"x\.pl: no '% Text' block"),
        ("% Text\n% Facts here.\n\n% Facts\nfoo.\n", r"x\.pl: no '% Question' block"),
        ("% Text\n% F.\n% Question\n% Is it? Maybe\n", r"x\.pl: .*must end in .* got 'Maybe'"),
        ("% Text\n% F.\n% Question\n% Entailment\n", r"x\.pl: the question block holds only"),
        ("% Text\nFacts without a percent\n% Question\n% Q? Entailment\n", r"does not start"),
        ("% Text\n% A\n% Text\n% B\n", r"'% Text' block appears twice"),
    ],
)
def test_malformed_case_files_name_file_and_problem(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_case(text, "x", "x.pl")


def test_loader_finds_the_release_in_a_subfolder_and_filters_kinds(tmp_path: Path) -> None:
    write_release(tmp_path)
    data = load_data(str(tmp_path))
    assert data.root == tmp_path / "sara"
    test_all = load_dataset(data, "test", "all")
    assert [s.id for s in test_all] == ["s10_a_1_pos", "s10_b_pos", "s11_neg", "tax_case_1"]
    assert [s.id for s in load_dataset(data, "test", "tax")] == ["tax_case_1"]
    train = load_dataset(data, "train", "entailment")
    assert [s.id for s in train] == ["s10_a_2_neg", *EXEMPLAR_IDS]
    without = load_dataset(data, "train", "entailment", frozenset(EXEMPLAR_IDS))
    assert [s.id for s in without] == ["s10_a_2_neg"]
    assert set(data.statutes.sections) == {"10", "11"}


def test_loader_directly_in_data_dir(tmp_path: Path) -> None:
    write_release(tmp_path, subfolder=None)
    assert find_root(str(tmp_path)) == tmp_path


def test_loader_errors(tmp_path: Path, no_data_env: None) -> None:
    # no data directory: the authors' files, here from a mirror that does not answer
    with pytest.raises(DatasetError, match=r"sara: cannot download .*-T data_dir="):
        find_root(None)
    with pytest.raises(DatasetError, match="holds no SARA release"):
        find_root(str(tmp_path))
    base = write_release(tmp_path)
    (base / "cases" / "s11_neg.pl").unlink()
    with pytest.raises(DatasetError, match=r"case 's11_neg' of the split has no file"):
        load_dataset(load_data(str(tmp_path)), "test", "all")
    (base / "cases" / "s11_neg.pl").write_text("% Text\n% Dan.\n% Question\n% Q? Perhaps\n")
    with pytest.raises(DatasetError, match=r"s11_neg\.pl: the question must end"):
        load_dataset(load_data(str(tmp_path)), "test", "all")
    (base / "statutes" / "source" / "section11").write_text("no title\n")
    with pytest.raises(DatasetError, match=r"section11: line 1: expected a title"):
        load_data(str(tmp_path))


@pytest.mark.realdata
def test_real_release_counts(data_dir: Path) -> None:
    data = load_data(str(data_dir))
    counts = {
        (split, kind): len(load_dataset(data, split, kind))
        for split in ("train", "test")
        for kind in ("entailment", "tax", "all")
    }
    assert counts == {
        ("train", "entailment"): 176, ("train", "tax"): 80, ("train", "all"): 256,
        ("test", "entailment"): 100, ("test", "tax"): 20, ("test", "all"): 120,
    }  # fmt: skip
    labels = [s.target for s in load_dataset(data, "test", "entailment")]
    assert labels.count("Entailment") == labels.count("Contradiction") == 50
    # the paper's n: all 276 entailment cases less its 40 validation and 8 exemplar cases
    assert counts[("train", "entailment")] + counts[("test", "entailment")] - 40 - 8 == 228
    # the task leaves the 8 exemplars (train cases) out of split=train, none out of test
    exemplars = frozenset(s.case_id for s in EXEMPLAR_SPECS)
    assert len(load_dataset(data, "train", "entailment", exemplars)) == 168
    assert len(load_dataset(data, "test", "all", exemplars)) == 120
