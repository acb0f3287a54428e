"""MathHay's stderr is clustered by document group (a subtopic's documents, gathered once
and shared by its questions): a scripted eval on two subtopics of three questions each."""

from __future__ import annotations

import json
from pathlib import Path

from inspect_ai import eval
from mathhay_fixtures import RELEASE, record, write_release

from clustered_stderr import RIGHT, assert_clustered
from eval_helpers import scripted
from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.mathhay.task import in_files_order

GROUPS = ["Financial Market Analysis/Earnings"] * 3 + ["Financial Market Analysis/Sales"] * 3


def fenced(answer: float) -> str:
    body = json.dumps({"relevant_quantities": [], "reasoning": "r", "answer": answer})
    return f"```json\n{body}\n```"


def test_stderr_is_clustered_by_document_group(tmp_path: Path) -> None:
    folder = write_release(tmp_path)
    records = []
    for n, group in enumerate(GROUPS):
        question = f"What was Acme's profit in 2023 in millions? ({n})"
        records.append({**record("sssd", [0], question, 40.0, 1), "Subtopic": group.split("/")[1]})
    (folder / "full_haystack_question_sssd.json").write_text(json.dumps(records))
    task = in_files_order(mathhay(
        data_dir=str(tmp_path), release=RELEASE, subset="full", task_type="sssd",
        length=1200, judge=False,  # exact_match's stderr: no judge asked
    ))  # fmt: skip
    [log] = eval(
        task,
        model=scripted([fenced(40.0 if ok else 7.0) for ok in RIGHT]),
        max_samples=1,  # the scripted outputs are consumed in sample order
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert_clustered(log, "exact_match", GROUPS)
