"""The build folder: the reference's file layout and schemas, read and written safely.

``--out DIR`` holds ``DIR/main_topics.json`` and ``DIR/<period>/`` with the
files of the reference's ``outputs/data/<period>/``:

=================================  ==========================================================
file                               written by the stage / schema
=================================  ==========================================================
``main_topics.json``               topics: a JSON list of topic names
``subtopics_and_queries.json``     queries: ``{topic: [{subtopic, Queries: [{decomposable_query,
                                   atomic_queries: [...]}]}]}``
``collected_documents.json``       documents: one record per atomic query with its top result
``filtered_documents.json``        filter: the records whose text passed, with ``doc_id``
``documents.json``                 filter: the pool, ``[{Document_ID: "Doc_<i>", Document}]``
``generated_questions_<t>.json``   questions: per document group ``{Topic, Subtopic,
                                   decomposable_query, atomic_queries, doc_id, document, tasks}``
``high_quality_questions_<t>.json`` qc: the same, each task with ``consistency`` 1/0
``full_haystack_question_<t>.json`` haystack: what ``mathhay`` evaluates
=================================  ==========================================================

Our own book-keeping lives in ``DIR/<period>/.build/`` (checkpoints of finished
model calls, one JSON line per finished item; the stage logs; ``build.json``).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finmath_tasks.errors import UsageError
from finmath_tasks.tasks.mathhay.dataset import POOL_FILE, RECONSTRUCTED_POOL_FILE

TOPICS_FILE = "main_topics.json"
QUERIES_FILE = "subtopics_and_queries.json"
COLLECTED_FILE = "collected_documents.json"
FILTERED_FILE = "filtered_documents.json"
REPORT_FILE = "build_report.md"
STATE_DIR = ".build"

STAGES: tuple[str, ...] = (
    "topics",
    "queries",
    "documents",
    "filter",
    "questions",
    "qc",
    "haystack",
)

DOC_PREFIX = "Doc_"
"""Document ids of the pool are ``Doc_<position in documents.json>`` (the reference's)."""

CELLS_FIELD = {
    1: "relevant_quantity_cells",
    2: "relevant_quantity_cells_from_two_documents",
    3: "relevant_quantity_cells_from_three_documents",
}
"""The task field holding the quantity cells, by the number of documents of the type."""

_PERIOD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


class BuildError(UsageError):
    """The build cannot go on; the message names the file, record or parameter."""


def check_period(period: str) -> str:
    """A period name is one folder name: letters, digits, ``-``, ``_``, ``.``; no ``..``."""
    if not isinstance(period, str) or not _PERIOD.fullmatch(period) or ".." in period:
        raise BuildError(
            f"--period {period!r}: a period is one folder name (letters, digits, '-', '_', '.'; "
            "no '/' and no '..'), e.g. January-2026-to-June-2026"
        )
    return period


def generated_file(task_type: str) -> str:
    return f"generated_questions_{task_type}.json"


def high_quality_file(task_type: str) -> str:
    return f"high_quality_questions_{task_type}.json"


def haystack_file(task_type: str) -> str:
    return f"full_haystack_question_{task_type}.json"


def read_json(path: Path, what: str) -> Any:
    """A JSON file's value; a clear error naming the file otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise BuildError(f"{path}: not found ({what} is needed here)") from e
    except (OSError, UnicodeDecodeError) as e:
        raise BuildError(f"{path}: cannot read {what} ({e})") from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise BuildError(
            f"{path}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}"
        ) from e


def write_json(path: Path, value: Any) -> None:
    """Write atomically (a temporary file renamed over the target): never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(value, f, indent=2, ensure_ascii=False)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Layout:
    """Paths of one build: ``out`` and its ``period`` folder."""

    out: Path
    period: str

    def __post_init__(self) -> None:
        check_period(self.period)

    @property
    def folder(self) -> Path:
        return self.out / self.period

    @property
    def state(self) -> Path:
        return self.folder / STATE_DIR

    @property
    def topics(self) -> Path:
        return self.out / TOPICS_FILE

    @property
    def queries(self) -> Path:
        return self.folder / QUERIES_FILE

    @property
    def collected(self) -> Path:
        return self.folder / COLLECTED_FILE

    @property
    def filtered(self) -> Path:
        return self.folder / FILTERED_FILE

    @property
    def pool(self) -> Path:
        return self.folder / POOL_FILE

    @property
    def reconstructed_pool(self) -> Path:
        return self.folder / RECONSTRUCTED_POOL_FILE

    @property
    def report(self) -> Path:
        return self.folder / REPORT_FILE

    def generated(self, task_type: str) -> Path:
        return self.folder / generated_file(task_type)

    def high_quality(self, task_type: str) -> Path:
        return self.folder / high_quality_file(task_type)

    def haystack(self, task_type: str) -> Path:
        return self.folder / haystack_file(task_type)

    def checkpoint(self, stage: str, key: str = "") -> Path:
        return self.state / f"{stage}{'-' + key if key else ''}.jsonl"

    def log_dir(self) -> Path:
        return self.state / "logs"

    def check_writable(self, path: Path, overwrite: bool) -> None:
        """A finished stage's file is never overwritten silently."""
        if path.exists() and not overwrite:
            raise BuildError(
                f"{path} exists (a finished stage): pass --overwrite to replace it, or leave "
                "this stage out of --stages to build on it"
            )


def pool_size(layout: Layout) -> int:
    """Size of the document pool: ``documents.json`` (ours or the reference's), else the
    reconstructed pool's ``pool_size_inferred`` (the shared release)."""
    if layout.pool.is_file():
        pool = read_json(layout.pool, "the document pool")
        if not isinstance(pool, list):
            raise BuildError(f"{layout.pool}: expected a JSON list of documents")
        return len(pool)
    if layout.reconstructed_pool.is_file():
        data = read_json(layout.reconstructed_pool, "the reconstructed pool")
        try:
            return int(data["pool_size_inferred"])
        except (KeyError, TypeError, ValueError) as e:
            raise BuildError(f"{layout.reconstructed_pool}: no pool_size_inferred") from e
    raise BuildError(
        f"{layout.folder}: no document pool ({POOL_FILE}); run the filter stage, or copy the "
        "reference's documents.json there"
    )
