"""The questions stage: per task type and document group, questions with a Python solution.

Document groups follow the released files: for a one-document type each pool
document is a group (``doc_id`` a string); for a k-document type each run of k
consecutive documents of the same decomposable query (``doc_id`` a list). One
call per group asks for ``--questions-per-group`` questions of the type (steps x
documents) with the quantity cells each uses, a solution ``def solve():`` and
the answer. Writes ``generated_questions_<type>.json`` (the reference's schema);
a task that misses a field or whose solution defines no function is dropped
with its reason, a group left without tasks is left out. ``--limit-groups N``
keeps the first N groups of each type (a small trial build).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.model import GenerateConfig

from finmath_tasks.tasks.mathhay.build.calls import Call, StageRun, run_calls
from finmath_tasks.tasks.mathhay.build.layout import (
    CELLS_FIELD,
    DOC_PREFIX,
    BuildError,
    Layout,
    read_json,
    write_json,
)
from finmath_tasks.tasks.mathhay.build.prompts import QUESTIONS, TASK_SHAPES, documents_block
from finmath_tasks.tasks.mathhay.build.qc import stated_answer
from finmath_tasks.tasks.mathhay.build.replies import ReplyError, json_object, require
from finmath_tasks.tasks.mathhay.dataset import DOCUMENTS_PER_TYPE, STEPS_PER_TYPE

DEFAULT_PER_GROUP = 2
MAX_TOKENS = 2048
"""Generation budget per group's reply (temperature 0)."""
CELLS_SHAPE = {
    1: "a list of cells",
    2: 'an object {"Document1": [cells], "Document2": [cells]}',
    3: 'an object {"Document1": [cells], "Document2": [cells], "Document3": [cells]}',
}


def document_groups(filtered: dict[str, Any], k: int) -> list[dict[str, Any]]:
    """Groups of ``k`` consecutive documents of one query, with their pool ids."""
    groups = []
    position = 0
    for topic, subtopics in filtered.items():
        for sub in subtopics:
            for q in sub["Queries"]:
                docs = q["filtered_documents"]
                ids = [f"{DOC_PREFIX}{position + i}" for i in range(len(docs))]
                position += len(docs)
                for start in range(0, len(docs) - k + 1):
                    base = {
                        "Topic": topic,
                        "Subtopic": sub["subtopic"],
                        "decomposable_query": q["decomposable_query"],
                        "atomic_queries": q["atomic_queries"],
                    }
                    if k == 1:
                        groups.append({**base, "doc_id": ids[start], "document": docs[start]})
                    else:
                        groups.append(
                            {
                                **base,
                                "doc_id": ids[start : start + k],
                                "document": docs[start : start + k],
                            }
                        )
    return groups


def task_parser(task_type: str) -> Any:
    k = DOCUMENTS_PER_TYPE[task_type]
    cells_field = CELLS_FIELD[k]

    def parse(reply: str) -> dict[str, Any]:
        tasks = require(json_object(reply), "tasks", list)
        kept, dropped = [], Counter[str]()
        for n, task in enumerate(tasks):
            try:
                if not isinstance(task, dict):
                    raise ReplyError(f"task {n} is not an object")
                question = require(task, "question", str, f" of task {n}")
                solution = require(task, "solution", str, f" of task {n}")
                cells = require(task, cells_field, list if k == 1 else dict, f" of task {n}")
                answer = require(task, "answer", (int, float, str), f" of task {n}")
                if not question.strip() or "def " not in solution:
                    raise ReplyError(f"task {n} has an empty question or no function")
                if stated_answer(answer) is None:
                    raise ReplyError(f"task {n}'s answer is not a number")
                steps = task.get("steps", STEPS_PER_TYPE[task_type])
                kept.append(
                    {
                        cells_field: cells,
                        "question": question.strip(),
                        "solution": solution,
                        "steps": steps if isinstance(steps, int) else STEPS_PER_TYPE[task_type],
                        "answer": answer,
                    }
                )
            except ReplyError as e:
                dropped[str(e).split(" of task")[0].replace(f"task {n}", "a task")] += 1
        if not kept:
            raise ReplyError(f"the reply holds no usable task ({dict(dropped)})")
        return {"tasks": kept, "dropped": dict(dropped)}

    return parse


@dataclass
class QuestionsResult:
    task_type: str
    groups: int = 0
    tasks: int = 0
    dropped: Counter[str] = field(default_factory=Counter)


def run_questions(
    layout: Layout,
    task_types: list[str],
    *,
    per_group: int = DEFAULT_PER_GROUP,
    limit_groups: int | None = None,
    overwrite: bool = False,
    **eval_args: Any,
) -> tuple[list[QuestionsResult], StageRun]:
    filtered = read_json(layout.filtered, "the filtered documents")
    if not isinstance(filtered, dict):
        raise BuildError(f"{layout.filtered}: expected an object topic -> subtopics")
    for t in task_types:
        layout.check_writable(layout.generated(t), overwrite)
    results, total = [], StageRun()
    for task_type in task_types:
        k = DOCUMENTS_PER_TYPE[task_type]
        groups = document_groups(filtered, k)[:limit_groups]
        result = QuestionsResult(task_type)
        steps, where = TASK_SHAPES[task_type]
        calls = [
            Call(
                f"{task_type}-{g:04d}",
                QUESTIONS.format(
                    documents=documents_block(group["document"] if k > 1 else [group["document"]]),
                    n=per_group,
                    steps=steps,
                    where=where,
                    cells_field=CELLS_FIELD[k],
                    cells_shape=CELLS_SHAPE[k],
                ),
            )
            for g, group in enumerate(groups)
        ]
        if not calls:
            result.dropped[f"no query with {k} documents"] += 1
            results.append(result)
            continue
        done, run = run_calls(
            layout,
            f"questions-{task_type}",
            calls,
            task_parser(task_type),
            config=GenerateConfig(temperature=0.0, max_tokens=MAX_TOKENS),
            **eval_args,
        )
        total.add(run)
        out = []
        for call, group in zip(calls, groups, strict=True):
            record = done[call.key]
            if not record["ok"]:
                result.dropped[
                    f"reply unusable: {record['reason'].split(':')[0].split(' (')[0]}"
                ] += 1
                continue
            result.dropped.update(record["value"]["dropped"])
            out.append({**group, "tasks": record["value"]["tasks"]})
            result.tasks += len(record["value"]["tasks"])
        result.groups = len(out)
        write_json(layout.generated(task_type), out)
        results.append(result)
    return results, total
