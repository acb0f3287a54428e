"""rag_cot's settings pinned to the retrieval paper (Mavi et al.; the README's audit table)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finmath_tasks.tasks.finqa.prompts import EXEMPLAR_SPLIT, exemplar_specs
from finmath_tasks.tasks.finqa.task import DEFAULT_TOP_K
from paper_text import paper_path


def test_twelve_train_exemplars_and_three_facts() -> None:
    assert len(exemplar_specs()) == 12  # section 4.2 and Figure 5: 12 examples for FinQA
    assert EXEMPLAR_SPLIT == "train"  # never an evaluation split (dev, test)
    assert DEFAULT_TOP_K == 3  # the paper is silent: FinQANet's retriever passes on 3


def test_the_paper_states_the_counts_we_pin() -> None:
    path = paper_path("rag-cot-semi-structured-alt-extraction.txt")
    if path is None:
        pytest.skip("paper text not found (FINMATH_PAPERS_DIR or ../shared/docs)")
    text = " ".join(path.read_text(encoding="utf-8").split())
    assert "8 examples for SARA and 12 examples for FinQA" in text
    assert "The complete prompt contains 12 in-context examples" in text
    assert "we randomly sample 200 examples from the public test set" in text


@pytest.mark.realdata
def test_no_exemplar_is_a_dev_or_test_record(data_dir: Path) -> None:
    ids = {spec.id for spec in exemplar_specs()}
    for split in ("dev", "test"):
        records = json.loads((data_dir / "finqa" / f"{split}.json").read_text(encoding="utf-8"))
        assert not ids & {r["id"] for r in records}, split
    train = json.loads((data_dir / "finqa" / "train.json").read_text(encoding="utf-8"))
    assert ids <= {r["id"] for r in train}
