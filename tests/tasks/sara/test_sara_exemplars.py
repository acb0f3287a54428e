"""The eight fixed exemplars: ours, balanced, modelled on train-split units only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finmath_tasks.tasks.sara.dataset import load_data, load_records, read_split
from finmath_tasks.tasks.sara.prompts import EXEMPLARS, HERE
from finmath_tasks.tasks.sara.retrieval import retrieve


def test_eight_exemplars_four_each_with_explanations() -> None:
    assert len(EXEMPLARS) == 8
    answers = [e.answer for e in EXEMPLARS]
    assert answers.count("Entailment") == answers.count("Contradiction") == 4
    for e in EXEMPLARS:
        assert len(e.explanation.split()) >= 30, e.id
        assert "section" in e.question.lower(), e.id


@pytest.mark.realdata
def test_exemplars_model_train_units_cite_real_units_and_copy_no_case(data_dir: Path) -> None:
    data = load_data(str(data_dir))
    train = set(read_split(data.root, "train"))
    test = set(read_split(data.root, "test"))
    records = json.loads((HERE / "data" / "exemplars.json").read_text())
    for record in records:
        unit = record["models_train_unit"]
        assert {f"{unit}_pos", f"{unit}_neg"} & train, unit
        assert not {f"{unit}_pos", f"{unit}_neg"} & test, unit
    cases = load_records(data.root, "train", "all") + load_records(data.root, "test", "all")
    texts = {c["text"] for c in cases} | {c["question"] for c in cases}
    for e in EXEMPLARS:
        assert e.text not in texts and e.question not in texts, e.id
        r = retrieve(data.statutes, e.question, "mentioned_only", "entailment")
        assert r.fallback is None and r.unresolved == [] and len(r.cited) == 1, e.id
