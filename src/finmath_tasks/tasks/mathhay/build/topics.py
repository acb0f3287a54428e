"""The topics stage: one call for the main topics -> ``<out>/main_topics.json`` (a list)."""

from __future__ import annotations

from typing import Any

from inspect_ai.model import Model

from finmath_tasks.tasks.mathhay.build.calls import Call, StageRun, run_calls
from finmath_tasks.tasks.mathhay.build.layout import BuildError, Layout, read_json, write_json
from finmath_tasks.tasks.mathhay.build.prompts import TOPICS
from finmath_tasks.tasks.mathhay.build.replies import ReplyError, json_object, require

DEFAULT_TOPICS = 10
"""The paper's number of main topics."""


def parse_topics(reply: str) -> list[str]:
    topics = require(json_object(reply), "topics", list)
    names = [t.strip() for t in topics if isinstance(t, str) and t.strip()]
    if not names:
        raise ReplyError("the reply's 'topics' holds no topic name")
    return list(dict.fromkeys(names))


def read_topics(layout: Layout) -> list[str]:
    topics = read_json(layout.topics, "the topics (main_topics.json)")
    if not isinstance(topics, list) or not all(isinstance(t, str) and t for t in topics):
        raise BuildError(f"{layout.topics}: expected a JSON list of topic names")
    return topics


def run_topics(
    layout: Layout, *, n: int = DEFAULT_TOPICS, overwrite: bool = False, **eval_args: Any
) -> tuple[list[str], StageRun]:
    layout.check_writable(layout.topics, overwrite)
    done, run = run_calls(
        layout, "topics", [Call("topics", TOPICS.format(n=n))], parse_topics, **eval_args
    )
    record = done["topics"]
    if not record["ok"]:
        raise BuildError(f"topics: the model's reply was not usable: {record['reason']}")
    topics: list[str] = record["value"][:n]
    write_json(layout.topics, topics)
    return topics, run


__all__ = ["DEFAULT_TOPICS", "Model", "read_topics", "run_topics"]
