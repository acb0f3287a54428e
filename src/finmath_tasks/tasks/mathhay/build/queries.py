"""The queries stage: per topic, subtopics with decomposable and atomic queries.

Writes ``subtopics_and_queries.json`` in the reference's schema:
``{topic: [{"subtopic", "Queries": [{"decomposable_query", "atomic_queries"}]}]}``.
A topic whose reply is unusable is left out, with its reason in the report.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from finmath_tasks.tasks.mathhay.build.calls import Call, StageRun, run_calls
from finmath_tasks.tasks.mathhay.build.layout import BuildError, Layout, read_json, write_json
from finmath_tasks.tasks.mathhay.build.prompts import QUERIES
from finmath_tasks.tasks.mathhay.build.replies import ReplyError, json_object, require

DEFAULT_SUBTOPICS = 9
DEFAULT_QUERIES = 2
"""The released window: 9 subtopics per topic, 2 decomposable queries each."""


def parse_subtopics(reply: str) -> list[dict[str, Any]]:
    out = []
    for sub in require(json_object(reply), "subtopics", list):
        if not isinstance(sub, dict) or not isinstance(sub.get("subtopic"), str):
            continue
        queries = []
        for q in sub.get("queries") or sub.get("Queries") or []:
            if not isinstance(q, dict):
                continue
            dq, atomic = q.get("decomposable_query"), q.get("atomic_queries")
            if not isinstance(dq, str) or not dq.strip() or not isinstance(atomic, list):
                continue
            atomic = [a.strip() for a in atomic if isinstance(a, str) and a.strip()]
            if atomic:
                queries.append({"decomposable_query": dq.strip(), "atomic_queries": atomic})
        if queries:
            out.append({"subtopic": sub["subtopic"].strip(), "Queries": queries})
    if not out:
        raise ReplyError("the reply holds no subtopic with a query and atomic queries")
    return out


def read_queries(layout: Layout) -> dict[str, list[dict[str, Any]]]:
    data = read_json(layout.queries, "the subtopics and queries")
    if not isinstance(data, dict):
        raise BuildError(f"{layout.queries}: expected an object topic -> subtopics")
    for topic, subs in data.items():
        if not isinstance(subs, list) or not all(
            isinstance(s, dict) and isinstance(s.get("Queries"), list) for s in subs
        ):
            raise BuildError(f"{layout.queries}: topic {topic!r}: expected [{{subtopic, Queries}}]")
    return data


def run_queries(
    layout: Layout,
    topics: list[str],
    *,
    n_subtopics: int = DEFAULT_SUBTOPICS,
    n_queries: int = DEFAULT_QUERIES,
    overwrite: bool = False,
    **eval_args: Any,
) -> tuple[dict[str, Any], StageRun, Counter[str]]:
    layout.check_writable(layout.queries, overwrite)
    calls = [
        Call(
            f"topic-{i:03d}",
            QUERIES.format(
                topic=t,
                period=layout.period.replace("-", " "),
                n_subtopics=n_subtopics,
                n_queries=n_queries,
            ),
        )
        for i, t in enumerate(topics)
    ]
    done, run = run_calls(layout, "queries", calls, parse_subtopics, **eval_args)
    out: dict[str, Any] = {}
    dropped: Counter[str] = Counter()
    for call, topic in zip(calls, topics, strict=True):
        record = done[call.key]
        if record["ok"]:
            out[topic] = record["value"]
        else:
            dropped[f"topic reply unusable: {record['reason'].split(':')[0]}"] += 1
    if not out:
        raise BuildError("queries: no topic got a usable reply (see the stage's log)")
    write_json(layout.queries, out)
    return out, run, dropped
