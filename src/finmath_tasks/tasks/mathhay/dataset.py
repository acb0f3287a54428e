"""MathHay questions and document pool: the authors' repository at a pinned commit, or a
local copy of the release.

Upstream: https://github.com/SalesforceAIResearch/MathHay (``outputs/data/<release>/``);
there is no Hub copy. By default the task reads that repository at the pinned commit
(:data:`UPSTREAM`): the files it needs are downloaded once, checked and cached.
``-T data_dir=`` (or ``$FINMATH_DATA_DIR``) is instead the folder holding the release
subfolders, directly or in a ``mathhay/`` subfolder:

    <data_dir>/[mathhay/]March-2024-to-September-2024/full_haystack_question_sssd.json
    <data_dir>/[mathhay/]March-2024-to-September-2024/documents.json   (the pool)

The pool is ``documents.json`` (a JSON list; position = pool index) where
available, else ``documents_reconstructed.json`` (``{"pool_size_inferred",
"missing_indices", "documents": [{"index", "Document"}, ...]}``, rebuilt from
the questions' own documents; the missing entries are skipped and counted), else
(v1, which has no pool file upstream) the pool built from the release's question
files themselves (:func:`build_pool`): every question carries its documents and their
ids, ``DOC_<index>``, and together v1's files hold all 144.

Records of the 2024 release have ``Document_ID``/``Documents`` lists; v1 has
``Document_ID``/``Document`` (one document) or ``Document_ID1..3``/
``Document1..3``. A field that should be a list, dict or number but arrives as
a string holding a Python literal is parsed with :func:`ast.literal_eval`
(never ``eval``).

The files are read with our own reader, not Inspect's ``json_dataset``: a subset's
samples come from several question files (v1's verified and unverified parts in one
numbering, with a record repeated across them kept and named, a record repeated within a
file refused), and every question is parsed once more into the :class:`Question` the
haystack is built from, beside a document pool that is not a list of records.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from inspect_ai.dataset import MemoryDataset, Sample

from finmath_tasks.blobs import read_text
from finmath_tasks.loading import (
    DatasetError,
    Record,
    Upstream,
    file_blob_id,
    fingerprint,
    git_blob_id,
    local_provenance,
    read_json_records,
    records_to_dataset,
    resolve_data_dir,
)
from finmath_tasks.params import TaskParameterError
from finmath_tasks.scorers.metrics import DOCUMENT_KEY
from finmath_tasks.tasks.mathhay.haystack import irrelevant_order
from finmath_tasks.verification import Pin, verify_local

logger = logging.getLogger(__name__)

BENCHMARK = "mathhay"
REPOSITORY = "https://github.com/SalesforceAIResearch/MathHay"
DATA_REPOSITORY = "SalesforceAIResearch/MathHay"
DATA_COMMIT = "7ac339c2d8b337d2b5921918b45403d0d642597b"
UPSTREAM = Upstream.from_manifest(
    BENCHMARK, DATA_REPOSITORY, DATA_COMMIT, Path(__file__).parent / "upstream.tsv"
)
"""The default data: SalesforceAIResearch/MathHay at the pinned commit."""
UPSTREAM_FOLDER = "outputs/data"
"""The folder of the repository that holds the release folders."""
REPOSITORY_COMMIT = UPSTREAM.commit[:7]

TaskType = Literal["sssd", "2ssd", "3ssd", "ss2d", "2s2d", "3s2d", "3s3d"]
TASK_TYPES: tuple[str, ...] = ("sssd", "2ssd", "3ssd", "ss2d", "2s2d", "3s2d", "3s3d")
Release = Literal["v1", "March-2024-to-September-2024"]
Subset = Literal["verified+unverified", "verified", "unverified", "full"]
PAPER_SUBSETS = ("verified", "unverified", "verified+unverified")
"""The paper's sets (Table 2, Table 3): v1's verified (126) and unverified (547) files and
both together (673, the paper's "Full" column)."""

DOCUMENTS_PER_TYPE = {"sssd": 1, "2ssd": 1, "3ssd": 1, "ss2d": 2, "2s2d": 2, "3s2d": 2, "3s3d": 3}
STEPS_PER_TYPE = {"sssd": 1, "2ssd": 2, "3ssd": 3, "ss2d": 1, "2s2d": 2, "3s2d": 3, "3s3d": 3}
DEFAULT_PLACEMENT = {1: "middle", 2: "first-middle", 3: "first-first-first"}
"""The paper's placement per number of relevant documents (section 3.4: the hardest
placement of Figure 2 for each; also the reference script's verified runs)."""
CATEGORY_PER_TYPE = {
    "sssd": "SSSD", "2ssd": "MSSD", "3ssd": "MSSD", "ss2d": "SSMD",
    "2s2d": "MSMD", "3s2d": "MSMD", "3s3d": "MSMD",
}  # fmt: skip
"""The paper's four task categories (Table 3's column groups) of each task type."""
CATEGORIES: dict[str, tuple[str, ...]] = {
    c.lower(): tuple(t for t in TASK_TYPES if CATEGORY_PER_TYPE[t] == c)
    for c in ("SSSD", "MSSD", "SSMD", "MSMD")
}
"""``-T task_type=`` values naming a category: its task types (sssd is both)."""


@dataclass(frozen=True)
class ReleaseInfo:
    subsets: tuple[str, ...]
    id_prefix: str
    """Prefix of document ids; the pool order drops ``<prefix><index>`` of the question."""
    pool_questions: tuple[str, ...] = ()
    """Where the release has no pool file: the question files the pool is built from."""


V1_POOL_QUESTIONS = (
    *(
        f"{part}_haystack_question_{t}.json"
        for part in ("verified", "unverified")
        for t in TASK_TYPES
    ),
    "full_haystack_question_3s3d.json",
)
"""v1's verified and unverified files hold 143 of its 144 documents; full 3s3d holds the
last (DOC_99). (The full ss2d file, in the repository's tree, is not needed.)"""

RELEASES: Mapping[str, ReleaseInfo] = {
    "v1": ReleaseInfo(
        ("verified+unverified", "verified", "unverified", "full"), "DOC_", V1_POOL_QUESTIONS
    ),
    "March-2024-to-September-2024": ReleaseInfo(("full", "unverified"), "Doc_"),
}
BUILT_RELEASE = ReleaseInfo(("full",), "Doc_")
"""A release built by ``finmath mathhay build`` (the 2024 release's layout and ids)."""
POOL_FILE = "documents.json"
RECONSTRUCTED_POOL_FILE = "documents_reconstructed.json"
POOL_KEY = "pool (documents by index)"
"""The provenance's entry for the pool's content, wherever it was read from."""
POOL_BLOBS = {"v1": "9c15970d2ca903af740ac8963596104cd1149604"}
"""The git blob id of :data:`POOL_KEY` for a release without a pool file upstream: v1's
pool built from its pinned question files (:func:`build_pool`). A local copy's pool (built
the same way, or read from a reconstructed pool file) is the authors' when it is this."""


def release_info(release: str) -> ReleaseInfo:
    return RELEASES.get(release, BUILT_RELEASE)


def check_release(task: str, release: Any, data_dir: Any) -> str:
    """A known release, or the name of a built release folder (``finmath mathhay build``)
    under the data directory that holds evaluation files."""
    if isinstance(release, str) and release in RELEASES:
        return release
    known = ", ".join(RELEASES)
    if not isinstance(release, str) or not release or "/" in release or ".." in release:
        raise DatasetError(
            f"{task}: -T release={release!r} is not one of {known} or a built release"
        )
    try:
        root = release_root(data_dir, release)
    except DatasetError as e:
        raise TaskParameterError(
            f"{task}: -T release={release!r} is not one of {known}, and no built release "
            f"folder of that name was found ({e})"
        ) from e
    if not any((root / question_file("full", t)).is_file() for t in TASK_TYPES):
        raise DatasetError(
            f"{task}: {root} holds no full_haystack_question_<type>.json: finish its build "
            "(finmath mathhay build --stages haystack)"
        )
    return release


def question_file(subset: str, task_type: str) -> str:
    return f"{subset}_haystack_question_{task_type}.json"


def question_files(subset: str, task_type: str) -> list[str]:
    """The files of a subset's task type (``verified+unverified``: both, verified first)."""
    return [question_file(part, task_type) for part in subset.split("+")]


# ---- Python-literal fields -------------------------------------------------------


def literal(value: Any, expected: type | tuple[type, ...], field: str) -> Any:
    """``value``, or the Python literal a string holds (``ast.literal_eval``), of type ``expected``."""
    if isinstance(value, str) and not (isinstance(expected, type) and expected is str):
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as e:
            raise ValueError(f"field {field!r} is not a valid literal: {value[:80]!r}") from e
    if not isinstance(value, expected) or isinstance(value, bool):
        raise ValueError(f"field {field!r} is a {type(value).__name__}, expected {expected}")
    return value


def _number(value: Any, field: str) -> float | int:
    number = literal(value, (int, float), field)
    if not math.isfinite(number):
        raise ValueError(f"field {field!r} is not a finite number: {number!r}")
    return number


# ---- one question ------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """What a haystack and a score need of one record."""

    task_type: str
    question: str
    solution: str
    answer: float | int
    steps: int
    document_ids: tuple[str, ...]
    documents: tuple[str, ...]
    order: tuple[int, ...] | None
    """The stored pool order (``Irrelevant_Documents_Indexs``), if the record has it."""
    topic: str
    subtopic: str
    record_task_type: str
    """The record's own ``task_type`` field (some v1 records disagree with their file)."""


def _text(value: Any, field: str) -> str:
    """A document's text: a string (a number or a list here is a damaged record)."""
    if not isinstance(value, str):
        raise ValueError(
            f"field {field!r} is a {type(value).__name__}, expected the document's text"
        )
    return value


def _document_id(value: Any, field: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"field {field!r} is a {type(value).__name__}, expected a document id")
    return str(value)


def _documents(record: Record) -> tuple[list[str], list[str]]:
    if "Documents" in record:
        docs = literal(record["Documents"], list, "Documents")
        ids = literal(record.get("Document_ID", []), (list, str), "Document_ID")
        ids = [ids] if isinstance(ids, str) else ids
        return (
            [_document_id(i, "Document_ID") for i in ids],
            [_text(d, "Documents") for d in docs],
        )
    if "Document" in record:
        return (
            [_document_id(record.get("Document_ID", ""), "Document_ID")],
            [_text(record["Document"], "Document")],
        )
    ids, docs = [], []
    for k in (1, 2, 3):
        if f"Document{k}" in record:
            docs.append(_text(record[f"Document{k}"], f"Document{k}"))
            ids.append(_document_id(record.get(f"Document_ID{k}", ""), f"Document_ID{k}"))
    return ids, docs


SHARED_TEXT = 200
"""Strings of a record this long or longer are held once per load (:func:`share_texts`)."""


def share_texts(record: Record, shared: dict[str, str]) -> Record:
    """Make the record's long strings (those of :data:`SHARED_TEXT` characters or more, on
    their own or in a list) the ones already in ``shared``, in place, and return it.

    A release's questions reuse a few hundred documents and their summaries (v1: 1,028
    uses of 140 documents, 32 MB of text as parsed, 3 MB once shared). Texts not seen yet
    are added. Used as the JSON parser's object hook, so a repeated text is let go as soon
    as its record is parsed."""
    for key, value in record.items():
        if isinstance(value, str):
            if len(value) >= SHARED_TEXT:
                record[key] = shared.setdefault(value, value)
        elif isinstance(value, list) and any(isinstance(v, str) for v in value):
            record[key] = [
                shared.setdefault(v, v) if isinstance(v, str) and len(v) >= SHARED_TEXT else v
                for v in value
            ]
    return record


def parse_question(record: Record) -> Question:
    """Validate and normalise one record of either release."""
    task = literal(record["Task"], dict, "Task")
    record_type = str(record.get("task_type", "")).strip().strip("'\"")
    task_type = str(record.get(FILE_TYPE_FIELD) or record_type)
    if task_type not in TASK_TYPES:
        raise ValueError(f"unknown task_type {task_type!r}")
    ids, docs = _documents(record)
    expected = DOCUMENTS_PER_TYPE[task_type]
    if len(docs) != expected or not all(d.strip() for d in docs):
        raise ValueError(f"{task_type} needs {expected} non-empty document(s), found {len(docs)}")
    question = task["question"]
    if not isinstance(question, str) or not question.strip():
        raise ValueError("Task.question is empty")
    order = None
    if "Irrelevant_Documents_Indexs" in record:
        raw = literal(record["Irrelevant_Documents_Indexs"], list, "Irrelevant_Documents_Indexs")
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in raw):
            raise ValueError("Irrelevant_Documents_Indexs must be non-negative integers")
        order = tuple(raw)
    steps = literal(task.get("steps", STEPS_PER_TYPE[task_type]), int, "Task.steps")
    if isinstance(steps, bool) or steps < 0:
        raise ValueError(f"Task.steps is not a step count: {steps!r}")
    return Question(
        task_type=task_type,
        question=question,
        solution=str(task.get("solution", "")),
        answer=_number(task["answer"], "Task.answer"),
        steps=steps,
        document_ids=tuple(ids),
        documents=tuple(docs),
        order=order,
        topic=str(record.get("Topic", "")),
        subtopic=str(record.get("Subtopic", "")),
        record_task_type=record_type,
    )


FILE_TYPE_FIELD = "_file_task_type"
"""Added by the loader: the task type of the file a record came from. The reference
evaluates a file as one task type, so the file decides (in v1, 120 records of the sssd
file say task_type 2ssd, and the verified files mix types)."""
POSITION_FIELD = "_position"
"""Added by the loader: the record's place in its task type's files (the stable sample id;
with two files, the second file's records follow the first's)."""
SOURCE_FIELD = "_source"
"""Added by the loader: the subset file the record came from (verified, unverified, full)."""


def question_key(task_type: str, position: int) -> str:
    return f"{task_type}-{position:03d}"


def record_to_sample(record: Record) -> Sample:
    """One sample per record (documents stay out of the metadata: they are built in at solve time).

    ``record["_position"]`` and ``record["_file_task_type"]`` (added by the loader) are
    the record's place in its file and the file's task type.
    """
    q = parse_question(record)
    key = question_key(q.task_type, int(record.get(POSITION_FIELD, 0)))
    return Sample(
        id=key,
        input=q.question,
        target=repr(q.answer),
        metadata={
            "question_key": key,
            "task_type": q.task_type,
            "documents": len(q.documents),
            "steps": STEPS_PER_TYPE[q.task_type],
            "category": CATEGORY_PER_TYPE[q.task_type],
            "source": str(record.get(SOURCE_FIELD, "")),
            "question_steps": q.steps,
            "record_task_type": q.record_task_type,
            "document_ids": list(q.document_ids),
            "topic": q.topic,
            "subtopic": q.subtopic,
            # the documents of a subtopic are gathered once and shared by its questions:
            # the stderr is clustered by that document group
            DOCUMENT_KEY: f"{q.topic}/{q.subtopic}",
            "solution": q.solution,
            "answer": q.answer,
        },
    )


# ---- the release on disk -------------------------------------------------------------


@dataclass
class MathHayData:
    """The questions of the selected task types and the release's pool."""

    release: str
    root: Path
    questions: dict[str, Question]
    dataset: MemoryDataset
    pool_documents: dict[int, str]
    pool_size: int
    pool_file: Path
    """The pool's file, or the release folder when the pool was built from its questions."""
    missing_pool_entries: int
    provenance: dict[str, Any]
    repeated_records: tuple[str, ...] = ()
    """Records found in both files of a two-file subset (kept: the paper counts both)."""
    fresh: dict[str, Question] = field(default_factory=dict)
    """A fresh variant's questions by key (new numbers in the question and documents):
    their haystacks are the originals' with these documents spliced in."""

    def order(self, key: str) -> list[int]:
        q = self.questions[key]
        if q.order is not None:
            return list(q.order)
        return irrelevant_order(
            self.pool_size, q.document_ids, release_info(self.release).id_prefix
        )


def release_root(data_dir: str | None, release: str) -> Path:
    """The release folder: in ``data_dir`` (or ``$FINMATH_DATA_DIR``), else the cache folder of
    the authors' files (a file there is fetched when first asked for: :func:`release_file`)."""
    base = resolve_data_dir(data_dir)
    if base is None:
        if release not in RELEASES:
            raise DatasetError(
                f"{BENCHMARK}: release {release!r} is not in {REPOSITORY}: pass -T "
                "data_dir=<folder with the built release folder> or set FINMATH_DATA_DIR"
            )
        return UPSTREAM.folder() / UPSTREAM_FOLDER / release
    for candidate in (base / release, base / BENCHMARK / release):
        if candidate.is_dir():
            return candidate
    raise DatasetError(
        f"{BENCHMARK}: release folder {release!r} not found in {base} or {base / BENCHMARK}"
    )


def _upstream_path(root: Path, name: str) -> str | None:
    """``name``'s path in the repository when ``root`` is a release folder of the cache."""
    folder = UPSTREAM.folder()
    if not root.is_relative_to(folder):
        return None
    return (root / name).relative_to(folder).as_posix()


def has_file(root: Path, name: str) -> bool:
    """Whether the release has ``name`` (for the cache: whether the repository has it)."""
    upstream = _upstream_path(root, name)
    return UPSTREAM.has(upstream) if upstream is not None else (root / name).is_file()


def release_files(root: Path, names: list[str]) -> dict[str, Path]:
    """The release's files of ``names`` that it has, fetched (verified) for the cache."""
    present = [name for name in names if has_file(root, name)]
    if _upstream_path(root, "") is None:
        return {name: root / name for name in present}
    paths = {name: str(_upstream_path(root, name)) for name in present}
    fetched = UPSTREAM.fetch(paths.values())
    return {name: fetched[path] for name, path in paths.items()}


def build_pool(
    root: Path, release: str, shared: dict[str, str] | None = None
) -> tuple[dict[int, str], int, list[Path]]:
    """(documents by index, pool size, files read): the pool from the release's question files.

    A document's index is the number in its id (``DOC_17`` -> 17); the size is one more
    than the largest index any question uses (its documents or its stored order). Two
    files giving one index different texts is an error naming the index.
    """
    names = list(release_info(release).pool_questions)
    files = release_files(root, names)
    docs: dict[int, str] = {}
    largest = -1
    prefix = release_info(release).id_prefix
    for name in names:
        if name not in files:
            raise DatasetError(
                f"{BENCHMARK}: {root / name} not found: the folder has no {POOL_FILE} or "
                f"{RECONSTRUCTED_POOL_FILE}, so the document pool is built from the release's "
                f"question files, and this is one of them (copy it from "
                f"outputs/data/{release}/ of {REPOSITORY})"
            )
        hook = None if shared is None else partial(share_texts, shared=shared)
        for i, record in enumerate(read_json_records(files[name], hook)):
            try:
                ids, texts = _documents(record)
                indices = [int(str(d).removeprefix(prefix)) for d in ids]
                order = literal(
                    record.get("Irrelevant_Documents_Indexs", "[]"),
                    list,
                    "Irrelevant_Documents_Indexs",
                )
            except ValueError as e:
                raise DatasetError(f"{files[name]}: record #{i}: {e}") from e
            largest = max([largest, *indices, *(int(x) for x in order)])
            for index, text in zip(indices, texts, strict=True):
                if docs.setdefault(index, text) != text:
                    raise DatasetError(
                        f"{BENCHMARK}: {files[name]} record #{i} gives document {prefix}{index} "
                        "a text other than an earlier file's: the pool cannot be built"
                    )
    if not docs:
        raise DatasetError(
            f"{BENCHMARK}: no document pool in {root}: expected {POOL_FILE} (upstream), "
            f"{RECONSTRUCTED_POOL_FILE}, or the question files {', '.join(names) or '(none)'}"
        )
    return docs, largest + 1, list(files.values())


def load_pool(
    root: Path, release: str = "", shared: dict[str, str] | None = None
) -> tuple[dict[int, str], int, Path, int]:
    """(documents by index, pool size, file, missing entries) of a release folder; where it
    has no pool file, the pool built from its question files (the file is then the folder).
    ``shared``: texts already held (:func:`share_texts`), reused for equal documents."""
    hook = None if shared is None else partial(share_texts, shared=shared)
    original = release_files(root, [POOL_FILE]).get(POOL_FILE, root / POOL_FILE)
    if original.is_file():
        try:
            data = json.loads(read_text(original), object_hook=hook)
        except (OSError, ValueError) as e:
            raise DatasetError(f"{original}: cannot read the document pool ({e})") from e
        if not isinstance(data, list):
            raise DatasetError(f"{original}: expected a JSON list of documents")
        docs = {}
        for i, d in enumerate(data):
            if not isinstance(d, dict) or not isinstance(d.get("Document"), str):
                shape = type(d).__name__ if not isinstance(d, dict) else "object without a text"
                raise DatasetError(
                    f"{original}: entry #{i} is a {shape}, expected an object with a "
                    "'Document' string (a pool with a hole would shift every haystack)"
                )
            docs[i] = d["Document"]
        return docs, len(data), original, 0
    rebuilt = root / RECONSTRUCTED_POOL_FILE
    if not rebuilt.is_file():
        docs, size, _ = build_pool(root, release, shared)
        warn_incomplete_pool(root, size - len(docs), size)
        return docs, size, root, size - len(docs)
    try:
        data = json.loads(read_text(rebuilt), object_hook=hook)
        docs = {}
        for n, d in enumerate(data["documents"]):
            if not isinstance(d["Document"], str):
                raise ValueError(f"documents entry #{n}: 'Document' is not text")
            if isinstance(d["index"], bool) or not isinstance(d["index"], int):
                raise ValueError(f"documents entry #{n}: 'index' is not an integer")
            if d["index"] in docs:
                raise ValueError(f"documents entry #{n} repeats index {d['index']}")
            docs[d["index"]] = d["Document"]
        size = int(data.get("pool_size_inferred", max(docs) + 1))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DatasetError(f"{rebuilt}: malformed document pool ({type(e).__name__}: {e})") from e
    missing = size - len(docs)
    warn_incomplete_pool(rebuilt, missing, size)
    return docs, size, rebuilt, missing


_WARNED: set[tuple[str, int, int]] = set()
"""Incomplete pools already warned about in this process (file, missing, size)."""


def warn_incomplete_pool(path: Path, missing: int, size: int) -> None:
    """Warn that a reconstructed pool lacks entries, once per file and process (a grid
    or a dry run reads the pool once per run); nothing for a complete one. The task's
    metadata records ``missing_pool_entries`` in every log either way."""
    key = (str(path.resolve()), missing, size)
    if missing <= 0 or key in _WARNED:
        return
    _WARNED.add(key)
    logger.warning(
        "%s: %s is a reconstructed pool: %d of %d entries are missing and are skipped "
        "(haystacks differ from the paper's; use the upstream %s for exact ones)",
        BENCHMARK,
        path,
        missing,
        size,
        POOL_FILE,
    )


def subset_task_types(data_dir: str | None, release: str, subset: str) -> list[str]:
    """The task types ``-T task_type=all`` evaluates: all seven for a published release
    (a missing file is then an error naming it, never a smaller benchmark under the same
    name); a built release's own (those its build wrote)."""
    if release in RELEASES:
        return list(TASK_TYPES)
    root = release_root(data_dir, release)
    return [
        t for t in TASK_TYPES if all(has_file(root, name) for name in question_files(subset, t))
    ]


def load_data(
    data_dir: str | None, release: str, subset: str, task_types: list[str]
) -> MathHayData:
    root = release_root(data_dir, release)
    if not task_types:
        raise DatasetError(
            f"{BENCHMARK}: release {release} subset {subset}: no question files in {root} "
            f"(expected {question_file('<part>', '<type>')} for parts {subset.split('+')}; "
            f"copy them from outputs/data/{release}/ of {REPOSITORY})"
        )
    records: list[Record] = []
    sources = []
    names = [name for task_type in task_types for name in question_files(subset, task_type)]
    files = release_files(root, names)
    repeated: list[str] = []
    origins: dict[str, str] = {}  # a question's key -> its file and record
    shared: dict[str, str] = {}  # one copy of each long text (documents, summaries)
    for task_type in task_types:
        position = 0
        earlier: dict[str, str] = {}  # a record's content hash -> where it first appeared
        for name in question_files(subset, task_type):
            path = files.get(name, root / name)
            if not path.is_file():
                present = [
                    t
                    for t in TASK_TYPES
                    if all(has_file(root, n) for n in question_files(subset, t))
                ]
                raise DatasetError(
                    f"{BENCHMARK}: {path} not found (release {release} subset {subset} needs "
                    f"it for task type {task_type}; copy it from outputs/data/{release}/ of "
                    f"{REPOSITORY}, or choose the task types present: "
                    f"-T task_type={','.join(present) or '(none)'})"
                )
            source = name.split("_haystack_question_")[0]
            in_file: dict[str, int] = {}
            records_read = read_json_records(path, partial(share_texts, shared=shared))
            if not records_read:
                raise DatasetError(
                    f"{path}: no questions (an empty list): every question file of a release "
                    f"has some, and this one holds the {subset} {task_type} questions"
                )
            for i, record in enumerate(records_read):
                content = hashlib.sha256(
                    json.dumps(record, sort_keys=True, ensure_ascii=False).encode()
                ).hexdigest()
                if content in in_file:
                    raise DatasetError(
                        f"{path}: record #{i} repeats record #{in_file[content]} of the file "
                        "(the same question record twice: remove the copy)"
                    )
                in_file[content] = i
                if content in earlier:
                    # verified+unverified: v1 has one 3s3d record in both files; the paper's
                    # 673 questions count it twice, so it stays, named in the log
                    repeated.append(f"{path.name} record #{i} (also {earlier[content]})")
                earlier.setdefault(content, f"{path.name} record #{i}")
                records.append(
                    {**record, POSITION_FIELD: position, FILE_TYPE_FIELD: task_type,
                     SOURCE_FIELD: source}
                )  # fmt: skip
                origins[question_key(task_type, position)] = f"{path} record #{i}"
                position += 1
            sources.append(path.name)
    dataset = records_to_dataset(
        records,
        record_to_sample,
        source=f"{root} ({', '.join(sources)})",
        name=f"{BENCHMARK}-{release}-{subset}",
        answers=True,
    )
    questions = {}
    for record in records:
        q = parse_question(record)
        questions[question_key(q.task_type, int(record[POSITION_FIELD]))] = q
    if repeated:
        logger.warning(
            "%s: %d record(s) appear in both files of subset %s and are evaluated twice, as "
            "the paper counts them: %s",
            BENCHMARK, len(repeated), subset, "; ".join(repeated),
        )  # fmt: skip
    docs, size, pool_file, missing = load_pool(root, release, shared)
    del shared
    check_documents(questions, origins, docs, size, pool_file, release_info(release).id_prefix)
    provenance = data_provenance(root, release, [files[name] for name in names], docs, pool_file)
    return MathHayData(
        release,
        root,
        questions,
        dataset,
        docs,
        size,
        pool_file,
        missing,
        provenance,
        tuple(repeated),
    )


def check_documents(
    questions: Mapping[str, Question],
    origins: Mapping[str, str],
    docs: Mapping[int, str],
    size: int,
    pool_file: Path,
    prefix: str,
) -> None:
    """What holds for every question of the authors' releases holds here, else an error
    naming the file and record: each of its documents has an id, and the pool has that
    document; each index of its stored pool order points inside the pool."""
    for key, q in questions.items():
        where = origins.get(key, key)
        if len(q.document_ids) != len(q.documents):
            raise DatasetError(
                f"{where}: {len(q.documents)} document(s) but {len(q.document_ids)} document "
                f"id(s) {list(q.document_ids)}: each document needs its id"
            )
        for doc_id in q.document_ids:
            number = doc_id.removeprefix(prefix)
            if not number.isdigit() or int(number) not in docs:
                raise DatasetError(
                    f"{where}: document {doc_id!r} is not in the document pool {pool_file} "
                    f"(ids are {prefix}<index>; the pool has {len(docs)} of {size} entries)"
                )
        outside = [i for i in q.order or () if i >= size]
        if outside:
            raise DatasetError(
                f"{where}: Irrelevant_Documents_Indexs holds {outside[0]}"
                f"{f' (and {len(outside) - 1} more)' if len(outside) > 1 else ''}, outside "
                f"the document pool of {size} entries ({pool_file})"
            )


def data_provenance(
    root: Path, release: str, questions: list[Path], docs: dict[int, str], pool_file: Path
) -> dict[str, Any]:
    """Where the run's questions and pool came from. The fingerprint covers the question
    files and the pool's documents by index (not the file they were read from), so a
    pool built from the question files and the same pool read from a file agree."""
    canonical = json.dumps(sorted(docs.items()), ensure_ascii=False).encode()
    pool_entry = {POOL_KEY: git_blob_id(canonical)}
    if pool_file.is_file():
        pool_from = [pool_file]
    else:
        built = release_files(root, list(release_info(release).pool_questions))
        pool_from = list(built.values())
    upstream = _upstream_path(root, "")
    if upstream is None:
        record = local_provenance(root, questions)
        pool_blobs = {str(p.relative_to(root)): file_blob_id(p) for p in pool_from}
    else:
        folder = UPSTREAM.folder()
        record = UPSTREAM.provenance(p.relative_to(folder).as_posix() for p in questions)
        pool_blobs = {
            p.relative_to(folder).as_posix(): UPSTREAM.blobs[p.relative_to(folder).as_posix()]
            for p in pool_from
        }
    files = {**record["files"], **pool_entry}
    provenance = {
        **record,
        "files": files,
        "pool_from": pool_blobs,
        "fingerprint": fingerprint(files.values()),
    }
    if upstream is not None:
        return provenance
    folder_path = f"{UPSTREAM_FOLDER}/{release}"
    names = {name: f"{folder_path}/{name}" for name in files if name != POOL_KEY}
    pin = pool_pin(release, pool_blobs, pool_entry[POOL_KEY])
    return verify_local(UPSTREAM, provenance, names, {POOL_KEY: pin})


def pool_pin(release: str, pool_from: Mapping[str, str], actual: str) -> Pin:
    """What the pool's content should be: v1's known pool; else, when the files it was read
    from are the authors' (their ``documents.json``), what they hold."""
    if release in POOL_BLOBS:
        return Pin(POOL_BLOBS[release], f"pool (built from the {release} question files)")
    folder = f"{UPSTREAM_FOLDER}/{release}"
    if pool_from and all(
        UPSTREAM.blobs.get(f"{folder}/{name}") == blob for name, blob in pool_from.items()
    ):
        return Pin(actual, f"pool of {', '.join(pool_from)}")
    read = ", ".join(pool_from) or "no file"
    return Pin("", f"the authors' pool ({POOL_FILE}): it was read from {read}")
