"""A tiny MathHay release written by us (same file layout and record shapes as upstream)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

RELEASE = "March-2024-to-September-2024"
POOL_SIZE = 8


def pool_text(i: int) -> str:
    words = " ".join(f"filler{i}w{k}" for k in range(60))
    return f"Pool document {i}.\n{words}\nIt ends here with number {i * 7}."


RELEVANT = {
    0: "Acme Corp report.\nRevenue in 2023 was 120 million dollars. Costs were 80 million.",
    1: "Beta Ltd note.\nBeta sold 40 units in May 2024 at 2.5 dollars each.",
    2: "Gamma survey.\nGamma counted 15 visitors on Monday and 25 on Tuesday.",
}


def order_without(own: list[str]) -> list[int]:
    order = list(range(POOL_SIZE))
    random.Random(2024).shuffle(order)
    return [i for i in order if f"Doc_{i}" not in own]


def record(task_type: str, doc_ids: list[int], question: str, answer: Any, steps: int) -> dict:
    ids = [f"Doc_{i}" for i in doc_ids]
    return {
        "Topic": "Financial Market Analysis",
        "Subtopic": "Earnings",
        "Query": "q",
        "Document_ID": ids,
        "Documents": [RELEVANT[i] for i in doc_ids],
        "task_type": task_type,
        "Task": {
            "relevant_quantity_cells": [],
            "question": question,
            "solution": "def solve():\n    return 120 - 80",
            "steps": steps,
            "answer": answer,
            "refined_flag": 1,
            "consistency": 1,
        },
        "Irrelevant_Documents_Indexs": order_without(ids),
    }


SSSD = [
    record("sssd", [0], "What was Acme's profit in 2023 in millions?", 40.0, 1),
    record("sssd", [1], "What was Beta's revenue in May 2024?", 100, 1),
]
SS2D = [record("ss2d", [0, 2], "Acme profit in millions plus Gamma visitors?", 80.0, 1)]


PAPER_RELEASE = "v1"
THREE = [record("3s3d", [0, 1, 2], "Acme profit plus Beta units plus Gamma visitors?", 120.0, 3)]


def as_v1(records: list[dict]) -> list[dict]:
    """The records as v1 has them: document ids ``DOC_<index>`` (the later release's are
    ``Doc_<index>``)."""
    return [
        {**r, "Document_ID": [i.replace("Doc_", "DOC_") for i in r["Document_ID"]]} for r in records
    ]


def write_release(root: Path, with_pool: bool = True) -> Path:
    """The later release (full files) and, beside it, a v1 folder with the paper's sets.

    v1: verified = the sssd and ss2d questions and one 3s3d; unverified = the sssd
    questions in reverse order and the 3s3d one (no ss2d file). Returns the later
    release's folder.
    """
    folder = root / "mathhay" / RELEASE
    folder.mkdir(parents=True)
    (folder / "full_haystack_question_sssd.json").write_text(json.dumps(SSSD))
    (folder / "full_haystack_question_ss2d.json").write_text(json.dumps(SS2D))
    v1 = root / "mathhay" / PAPER_RELEASE
    v1.mkdir(parents=True)
    (v1 / "verified_haystack_question_sssd.json").write_text(json.dumps(as_v1(SSSD)))
    (v1 / "verified_haystack_question_ss2d.json").write_text(json.dumps(as_v1(SS2D)))
    (v1 / "verified_haystack_question_3s3d.json").write_text(json.dumps(as_v1(THREE)))
    (v1 / "unverified_haystack_question_sssd.json").write_text(json.dumps(as_v1(SSSD[::-1])))
    (v1 / "unverified_haystack_question_3s3d.json").write_text(json.dumps(as_v1(THREE)))
    if with_pool:
        pool = [
            {"Document_ID": f"Doc_{i}", "Document": RELEVANT.get(i, pool_text(i))}
            for i in range(POOL_SIZE)
        ]
        (folder / "documents.json").write_text(json.dumps(pool))
        (v1 / "documents.json").write_text(json.dumps(pool))
    return folder
