"""The haystack stage: consistent tasks -> ``full_haystack_question_<type>.json``.

The reference's reorganisation (``bench_generation/haystack_construction``),
described here: for each task type, every task of
``high_quality_questions_<type>.json`` with ``consistency`` 1, in file order,
becomes one record ``{Topic, Subtopic, Query (the decomposable query),
Document_ID (a list), Documents (a list), task_type, Task (the task as quality
control left it), Irrelevant_Documents_Indexs}``; the last is the pool order
(the pool's positions shuffled with seed 2024, :func:`..haystack.pool_order`)
without the record's own documents. The pool order is the one the ``mathhay``
task uses (:func:`finmath_tasks.tasks.mathhay.haystack.irrelevant_order`); it
is not computed twice here.

The reference's script as published also caps each topic at 12 records per
type (2 "to verify" + 10 "unverified"); the released files were not built with
that cap (sssd holds all 82 consistent tasks, 24 would survive it), so the
default here is no cap, which reproduces the release; ``--per-topic 12`` applies it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from finmath_tasks.tasks.mathhay.build.layout import (
    DOC_PREFIX,
    BuildError,
    Layout,
    pool_size,
    read_json,
    write_json,
)
from finmath_tasks.tasks.mathhay.haystack import irrelevant_order

PER_TOPIC: int | None = None
"""Records kept per topic and task type: no cap (the released files); the script's is 12."""


@dataclass
class HaystackResult:
    task_type: str
    consistent: int = 0
    kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)


def _group_documents(group: dict[str, Any], where: str) -> tuple[list[str], list[str]]:
    ids, docs = group.get("doc_id"), group.get("document")
    if isinstance(ids, str):
        ids, docs = [ids], [docs]
    if not isinstance(ids, list) or not isinstance(docs, list) or len(ids) != len(docs):
        raise BuildError(f"{where}: doc_id and document must be a string each or equal lists")
    if not all(isinstance(x, str) for x in [*ids, *docs]):
        raise BuildError(f"{where}: doc_id and document entries must be strings")
    return ids, docs


def haystack_records(
    groups: list[Any],
    task_type: str,
    size: int,
    *,
    per_topic: int | None = PER_TOPIC,
    source: str = "",
) -> tuple[list[dict[str, Any]], HaystackResult]:
    """The evaluation records of one type from its quality-controlled groups."""
    result = HaystackResult(task_type)
    if not isinstance(groups, list):
        raise BuildError(f"{source}: expected a JSON list of document groups")
    per: Counter[str] = Counter()
    rows = []
    for g, group in enumerate(groups):
        where = f"{source} group {g}"
        if not isinstance(group, dict) or not isinstance(group.get("tasks"), list):
            raise BuildError(f"{where}: not a document group with a 'tasks' list")
        ids, docs = _group_documents(group, where)
        for task in group["tasks"]:
            if not isinstance(task, dict) or task.get("consistency") != 1:
                result.dropped["not consistent"] += 1
                continue
            result.consistent += 1
            topic = str(group.get("Topic", ""))
            if per_topic is not None and per[topic] >= per_topic:
                per[topic] += 1
                result.dropped[f"more than {per_topic} for the topic"] += 1
                continue
            per[topic] += 1
            rows.append(
                {
                    "Topic": group.get("Topic", ""),
                    "Subtopic": group.get("Subtopic", ""),
                    "Query": group.get("decomposable_query", ""),
                    "Document_ID": ids,
                    "Documents": docs,
                    "task_type": task_type,
                    "Task": task,
                    "Irrelevant_Documents_Indexs": irrelevant_order(size, ids, DOC_PREFIX),
                }
            )
    result.kept = len(rows)
    return rows, result


def run_haystack(
    layout: Layout,
    task_types: list[str],
    *,
    per_topic: int | None = PER_TOPIC,
    overwrite: bool = False,
) -> list[HaystackResult]:
    """Write ``full_haystack_question_<type>.json`` for each type with a quality-controlled file."""
    size = pool_size(layout)
    results = []
    todo = [t for t in task_types if layout.high_quality(t).is_file()]
    if not todo:
        raise BuildError(
            f"{layout.folder}: no high_quality_questions_<type>.json for "
            f"{', '.join(task_types)}; run the qc stage first"
        )
    for task_type in todo:
        layout.check_writable(layout.haystack(task_type), overwrite)
    for task_type in todo:
        path = layout.high_quality(task_type)
        groups = read_json(path, "quality-controlled questions")
        rows, result = haystack_records(
            groups, task_type, size, per_topic=per_topic, source=str(path)
        )
        write_json(layout.haystack(task_type), rows)
        results.append(result)
    return results
