"""A TAT-QA document in the raw schema (our own wording and numbers, not a benchmark item)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

DOCUMENT: dict[str, Any] = {
    "table": {
        "uid": "t-1",
        "table": [
            ["", "2021", "2020"],
            ["Revenue", "$ 1,250.0", "$ 1,000.0"],
            ["Costs | other", "(300.5)", "250.0"],
            ["Units"],
        ],
    },
    "paragraphs": [
        {"uid": "p-2", "order": 2, "text": "Amounts are in millions."},
        {"uid": "p-1", "order": 1, "text": "Widget Co. sells widgets and gadgets."},
    ],
    "questions": [
        {
            "uid": "q-arith",
            "order": 1,
            "question": "What is the change in revenue?",
            "answer": 250.0,
            "derivation": "1,250.0 - 1,000.0",
            "answer_type": "arithmetic",
            "answer_from": "table",
            "rel_paragraphs": [],
            "req_comparison": False,
            "scale": "million",
        },
        {
            "uid": "q-pct",
            "order": 2,
            "question": "What is the percentage change in revenue?",
            "answer": 25,
            "derivation": "250 / 1,000",
            "answer_type": "arithmetic",
            "answer_from": "table",
            "rel_paragraphs": [],
            "req_comparison": False,
            "scale": "percent",
        },
        {
            "uid": "q-span",
            "order": 3,
            "question": "What does the company sell?",
            "answer": ["widgets", "gadgets"],
            "derivation": "",
            "answer_type": "multi-span",
            "answer_from": "text",
            "rel_paragraphs": ["1"],
            "req_comparison": False,
            "scale": "",
        },
        {
            "uid": "q-count",
            "order": 4,
            "question": "How many years are shown?",
            "answer": 2,
            "derivation": "2021 ## 2020",
            "answer_type": "count",
            "answer_from": "table",
            "rel_paragraphs": [],
            "req_comparison": False,
            "scale": "",
        },
    ],
}


def arithmetic_question(
    uid: str, question: str, derivation: str, answer: float, scale: str = "million", order: int = 1
) -> dict[str, Any]:
    """One arithmetic question over a document's table (the fields the loader reads)."""
    return {
        "uid": uid,
        "order": order,
        "question": question,
        "answer": answer,
        "derivation": derivation,
        "answer_type": "arithmetic",
        "answer_from": "table",
        "rel_paragraphs": [],
        "req_comparison": False,
        "scale": scale,
    }


def document(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(DOCUMENT)
    doc.update(changes)
    return doc


def write_split(
    directory: Path, docs: list[dict[str, Any]], name: str = "tatqa_dataset_dev.json"
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(json.dumps(docs), encoding="utf-8")
    return path
