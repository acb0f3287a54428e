"""Loading knowledge banks (ours and a user's) and the oracle annotations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from finmath_tasks.retrieval import Hit
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.knowledgefmath.dataset import load_dataset
from finmath_tasks.tasks.knowledgefmath.knowledge import (
    KnowledgeBankError,
    Term,
    bank_hash,
    load_bank,
    load_oracle,
    merge_round_robin,
    parse_written_terms,
)

GOOD = {
    "term": "Current ratio",
    "topic": "accounting",
    "definition": "Current assets over current liabilities.",
}


def write(tmp_path: Path, entries: Any) -> Path:
    path = tmp_path / "bank.json"
    path.write_text(entries if isinstance(entries, str) else json.dumps(entries))
    return path


def test_packaged_bank_loads_with_unique_terms() -> None:
    bank = load_bank()
    assert len({t.term.casefold() for t in bank}) == len(bank) >= 400
    assert all(t.definition and t.topic for t in bank)


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ("[{", r"bank.json: malformed JSON at line 1"),
        ({"term": "x"}, r"bank.json: must be a non-empty JSON list"),
        ([], r"must be a non-empty JSON list"),
        ([GOOD, "text"], r"bank.json: entry #1: must be an object, got str"),
        (
            [GOOD, {"term": "NPV", "topic": "corporate finance"}],
            r"entry #1 \('NPV'\): missing field 'definition'",
        ),
        (
            [{**GOOD, "topic": ""}],
            r"entry #0 \('Current ratio'\): field 'topic' must be a non-empty string",
        ),
        ([{**GOOD, "term": 5}], r"entry #0: field 'term' must be a non-empty string, got 5"),
        (
            [GOOD, {**GOOD, "term": "current RATIO"}],
            r"entry #1 \('current RATIO'\): field 'term' repeats entry #0",
        ),
        (
            [{**GOOD, "formula": "def f(:\n  pass"}],
            r"entry #0 \('Current ratio'\): field 'formula' is not valid Python",
        ),
        ([{**GOOD, "formula": "x = 1"}], r"field 'formula' must define a function"),
        ([{**GOOD, "formula": 3}], r"field 'formula' must be a string of Python source"),
        (
            [{**GOOD, "defintion": "typo"}],
            r"entry #0 \('Current ratio'\): unknown field\(s\) defintion",
        ),
    ],
)
def test_malformed_bank_names_file_entry_and_field(
    tmp_path: Path, entries: Any, message: str
) -> None:
    path = write(tmp_path, entries)
    with pytest.raises(KnowledgeBankError, match=message) as info:
        load_bank(path)
    assert str(path) in str(info.value)


def test_malformed_bank_stops_the_task_before_the_eval(tmp_path: Path) -> None:
    path = write(tmp_path, [{**GOOD, "definition": None}])
    with pytest.raises(ValueError, match=r"entry #0 \('Current ratio'\): field 'definition'"):
        knowledgefmath(split="demo", knowledge="bm25", knowledge_bank=str(path))
    with pytest.raises(ValueError, match="knowledge bank not found"):
        knowledgefmath(split="demo", knowledge="bm25", knowledge_bank=str(tmp_path / "nope.json"))


def test_bank_hash_changes_with_content() -> None:
    a = [Term("A", "x", "one")]
    assert bank_hash(a) == bank_hash([Term("A", "x", "one")])
    assert bank_hash(a) != bank_hash([Term("A", "x", "two")])


def test_oracle_annotations_cover_demo_and_name_bank_terms() -> None:
    oracle = load_oracle()
    names = {t.term for t in load_bank()}
    assert all(1 <= len(v) <= 3 and set(v) <= names for v in oracle.values())
    assert {s.id for s in load_dataset("demo")} <= set(oracle)
    assert sum(k.startswith("validation-") for k in oracle) == 200
    # ids only: nothing but term names is stored
    assert all(isinstance(n, str) and len(n) < 80 for v in oracle.values() for n in v)


@pytest.mark.realdata
def test_oracle_annotations_match_the_real_validation_ids(data_dir: Path) -> None:
    ids = {s.id for s in load_dataset("validation", data_dir=str(data_dir))}
    annotated = {k for k in load_oracle() if k.startswith("validation-")}
    assert annotated == ids


def test_bad_oracle_file(tmp_path: Path) -> None:
    path = tmp_path / "oracle.json"
    path.write_text(json.dumps({"q1": []}))
    with pytest.raises(KnowledgeBankError, match="'q1' must list 1 to 3 term names"):
        load_oracle(path)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("NPV: sum of discounted flows", [("NPV", "sum of discounted flows")]),
        (
            "- **Duration**: time-weighted\n2) WACC: weighted cost",
            [("Duration", "time-weighted"), ("WACC", "weighted cost")],
        ),
        ("No structured lines here.", []),
        (
            "Term: Net proceeds\nFormula: gross proceeds less fees\nTerm: Offer price\nDefinition: per share",
            [("Net proceeds", "gross proceeds less fees"), ("Offer price", "per share")],
        ),
        ("Formula: orphan body line", []),
    ],
)
def test_parse_written_terms(reply: str, expected: list[tuple[str, str]]) -> None:
    assert parse_written_terms(reply) == expected


def test_merge_round_robin() -> None:
    first = [Hit(1, 1, 3.0), Hit(2, 2, 2.0), Hit(3, 3, 1.0)]
    second = [Hit(2, 1, 5.0), Hit(4, 2, 4.0), Hit(1, 3, 0.5)]
    merged = merge_round_robin([first, second], 3)
    assert [(h.index, h.rank) for h in merged] == [(1, 1), (2, 2), (4, 3)]
    assert [h.index for h in merge_round_robin([first], 5)] == [1, 2, 3]
