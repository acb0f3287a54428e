"""The eight fixed exemplars: the paper's cases (Figure 4), train cases only, our explanations."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from finmath_tasks.loading import DatasetError
from finmath_tasks.tasks.sara.dataset import load_data, read_case, read_split
from finmath_tasks.tasks.sara.prompts import (
    EXEMPLAR_COUNT,
    EXEMPLAR_SPECS,
    exemplar_answer,
    load_exemplars,
)
from finmath_tasks.tasks.sara.retrieval import retrieve
from paper_text import paper_path

PAPER = paper_path("rag-cot-semi-structured.txt")

PAPER_CASES = [
    "s151_d_3_B_pos", "s152_c_1_B_pos", "s3306_a_3_pos", "s63_f_1_A_pos",
    "s151_d_3_B_neg", "s152_c_1_B_neg", "s3306_b_15_neg", "s1_b_i_neg",
]  # fmt: skip
"""The cases of the paper's Figure 4, in its order (identified in the release below)."""


def test_eight_exemplars_in_the_papers_order_with_explanations() -> None:
    assert EXEMPLAR_COUNT == len(EXEMPLAR_SPECS) == 8  # section 4.2: 8 examples for SARA
    assert [s.paper_case for s in EXEMPLAR_SPECS] == PAPER_CASES
    labels = [s.case_id.rsplit("_", 1)[1] for s in EXEMPLAR_SPECS]
    assert labels == ["pos"] * 4 + ["neg"] * 4  # four True, then four False, as the paper
    for spec in EXEMPLAR_SPECS:
        assert len(spec.explanation.split()) >= 40, spec.case_id
        assert (spec.substitute is None) == (spec.case_id == spec.paper_case), spec.case_id


def test_missing_exemplar_cases_are_an_error_naming_them(tmp_path: Path) -> None:
    from sara_fixtures import write_release

    base = write_release(tmp_path)
    (base / "splits" / "train").write_text("s10_a_2_neg\n")
    with pytest.raises(DatasetError, match=r"s151_d_3_B_pos.*not in"):
        load_exemplars(load_data(str(tmp_path)))


@pytest.mark.realdata
def test_exemplars_are_the_papers_train_cases_and_substitutes_match(data_dir: Path) -> None:
    data = load_data(str(data_dir))
    train = set(read_split(data.root, "train"))
    test = set(read_split(data.root, "test"))
    for spec in EXEMPLAR_SPECS:
        assert spec.case_id in train and spec.case_id not in test, spec.case_id
        if spec.substitute:
            # only a paper case of the test split is replaced: same verdict, same subsection
            assert spec.paper_case in test, spec.paper_case
            assert spec.case_id.rsplit("_", 1)[1] == spec.paper_case.rsplit("_", 1)[1]
            assert spec.case_id.split("_")[:2] == spec.paper_case.split("_")[:2]
        else:
            assert spec.paper_case in train
    exemplars = load_exemplars(data)
    for exemplar in exemplars:
        r = retrieve(data.statutes, exemplar.question, "mentioned_only", "entailment")
        assert r.fallback is None and r.unresolved == [] and len(r.cited) == 1, exemplar.id
        # every dollar amount an explanation uses is one the case or its statute states
        stated = (exemplar.text + " " + exemplar.question + " " + r.text).replace(",", "")
        for amount in re.findall(r"\$(\d[\d,]*)", exemplar.explanation):
            assert f"${amount.replace(',', '')}" in stated, (exemplar.id, amount)
    assert exemplar_answer(exemplars[0], "few_shot") == "True"
    assert exemplar_answer(exemplars[-1], "cot").endswith("\nFalse")


@pytest.mark.realdata
def test_the_papers_figure_4_shows_these_cases(data_dir: Path) -> None:
    if PAPER is None or not PAPER.is_file():
        pytest.skip("paper text not found: set FINMATH_PAPERS_DIR or place it at ../shared/docs")
    paper = " ".join(PAPER.read_text(encoding="utf-8").replace("\\$", "$").split())
    assert "(8 examples for SARA and 12 examples for FinQA" in paper
    assert "The complete prompt contains 8 in-context examples" in paper
    data = load_data(str(data_dir))
    for case_id in PAPER_CASES:
        record = read_case(data.root, case_id)
        assert " ".join(record["question"].split()) in paper, case_id

    # our explanations are our own words: no run of 8 words from the paper's prompt figure
    # (other than words of the case itself or of its statute, which the paper quotes too)
    def grams(text: str) -> set[str]:
        words = re.sub(r"[^a-z0-9$() ]", " ", text.lower().replace(",", "")).split()
        return {" ".join(words[i : i + 8]) for i in range(len(words) - 7)}

    in_paper = grams(paper)
    for spec in EXEMPLAR_SPECS:
        record = read_case(data.root, spec.case_id)
        statute = retrieve(data.statutes, record["question"], "mentioned_only", "entailment").text
        own = grams(spec.explanation) - grams(f"{record['text']} {record['question']} {statute}")
        assert not own & in_paper, (spec.case_id, own & in_paper)
