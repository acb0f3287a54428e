"""TAT-QA (raw schema) to samples: one sample per question, the document rendered as context.

A raw record is one document: ``table{uid, table: [[cell, ...], ...]}``,
``paragraphs[{uid, order, text}]`` and ``questions[{uid, order, question, answer,
derivation, answer_type, answer_from, scale, ...}]``. Answer types: ``span`` and
``multi-span`` (lists of strings), ``arithmetic`` (a number), ``count`` (a number).

Every sample has ``metadata["question"]``, ``metadata["document"]`` (the table's uid:
the questions on one table are a cluster) and ``metadata["context"]`` (the paragraphs
in their order, then the table as Markdown), the raw answer fields, and as target the
gold answer: the number as text for arithmetic and count questions (in the units of
``scale``: 12.5 for 12.5 percent), the list of spans otherwise.

The file is read with our own reader, not Inspect's ``json_dataset``/``hf_dataset``:
one record (a document) expands into many samples, and the checks span the file (a
question uid repeated in another document, a repeated question kept once in the
arithmetic subset, every question checked even when its subset leaves it out), which
Inspect's readers, converting one record at a time, leave to the caller.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Literal

from inspect_ai.dataset import MemoryDataset, Sample

from finmath_tasks.loading import (
    DatasetError,
    Record,
    Upstream,
    attach_provenance,
    check_revision_or_folder,
    find_local_file,
    hub_provenance,
    load_hub_records,
    local_provenance,
    read_json_records,
    records_to_dataset,
    resolve_data_dir,
)
from finmath_tasks.scorers.comparisons import GOLD_WRITTEN_KEY, PERCENT_IN_PLAY_KEY
from finmath_tasks.scorers.metrics import DOCUMENT_KEY
from finmath_tasks.verification import verify_local

NAME = "tatqa"
DATA_REPOSITORY = "NExTplusplus/TAT-QA"
DATA_COMMIT = "870accc41953dcde885aabeb963d94aabdc0fbc3"
UPSTREAM = Upstream.from_manifest(
    NAME, DATA_REPOSITORY, DATA_COMMIT, Path(__file__).parent / "upstream.tsv"
)
"""The default data: the authors' raw files in NExTplusplus/TAT-QA at the pinned commit."""
UPSTREAM_FOLDER = "dataset_raw"
DATASET_ID = "next-tat/TAT-QA"
"""The TAT-QA authors' Hub copy of the raw files (plain JSON, no loading script)."""
HUB_REVISION = "b47dc5894185d2504b3aad7af4af13edd972eb54"
"""The Hub commit that added the four raw files ("init tat-qa dataset"): pass it as
``-T revision=`` to read the Hub copy."""
DATASET_REVISION: str | None = None
"""No Hub revision by default: the task reads :data:`UPSTREAM`; ``-T revision=`` picks the Hub."""
LOCAL_SUBDIR = "tatqa"
FILES = {"dev": "tatqa_dataset_dev.json", "test": "tatqa_dataset_test_gold.json"}
"""Split -> upstream file name (the same names upstream, on the Hub and in a local directory)."""

Split = Literal["dev", "test"]
Subset = Literal["arithmetic", "all"]
ANSWER_TYPES = ("span", "multi-span", "arithmetic", "count")
SCALES = ("", "thousand", "million", "billion", "percent")


def _cell(text: Any) -> str:
    return " ".join(str(text if text is not None else "").split()).replace("|", "\\|")


def table_markdown(rows: list[list[Any]]) -> str:
    """A table (list of rows) as Markdown; the first row is the header, ragged rows padded."""
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    lines = []
    for i, row in enumerate(rows):
        cells = [_cell(c) for c in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if i == 0:
            lines.append("|" + "|".join(["---"] * width) + "|")
    return "\n".join(lines)


def _order(paragraph: dict[str, Any]) -> int:
    order = paragraph.get("order")
    return order if isinstance(order, int) and not isinstance(order, bool) else 0


def paragraph_texts(record: Record) -> list[str]:
    """The paragraphs' texts in the order the context gives them (checked by
    :func:`render_context` first)."""
    return [str(p["text"]) for p in sorted(record.get("paragraphs") or [], key=_order)]


def render_context(record: Record) -> str:
    """The document as the agents read it: paragraphs in order, then the table.

    Every part must have its shape (``paragraphs``: objects with a ``text`` string;
    ``table``: an object whose ``table`` is a list of rows): a part in another shape
    is an error, never a document silently evaluated without it.
    """
    paragraphs = record.get("paragraphs")
    if paragraphs is None:
        paragraphs = []
    if not isinstance(paragraphs, list):
        raise ValueError(f"paragraphs is a {type(paragraphs).__name__}, expected a list")
    for n, p in enumerate(paragraphs):
        if not isinstance(p, dict) or not isinstance(p.get("text"), str):
            shape = type(p).__name__ if not isinstance(p, dict) else "object without a text"
            raise ValueError(f"paragraph #{n} is a {shape}, expected an object with a text string")
    ordered = sorted(paragraphs, key=_order)
    texts = [str(p["text"]).strip() for p in ordered if str(p["text"]).strip()]
    table = record.get("table")
    if not isinstance(table, dict):
        raise ValueError(
            f"table is a {type(table).__name__}, expected an object with uid and table (rows)"
        )
    rows = table.get("table")
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        raise ValueError("table.table must be a list of rows")
    parts = []
    if texts:
        parts.append("\n\n".join(texts))
    if rows:
        parts.append("Table:\n" + table_markdown(rows))
    return "\n\n".join(parts)


def number_text(value: float | int) -> str:
    """A gold number as target text: integers without ".0", others as ``repr``."""
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"answer {value!r} is not a finite number")
    return str(int(number)) if number == int(number) and abs(number) < 1e15 else repr(number)


def gold_as_written(answer: Any) -> str | None:
    """A numeric answer as the data file writes it (its decimal places decide ``rounding``).

    The raw answers are JSON numbers: an integer is written without a decimal point
    ("-94") and a float as its shortest repr ("-22.22"; every arithmetic answer of dev
    and test reads back that way, tests/tasks/tatqa check it), so :func:`number_text`
    gives the text as written, also when a Hub copy turns an integer column into
    floats. An answer given as a numeric string is taken as written ("2.10").
    """
    if isinstance(answer, str):
        return answer.strip() if _numeric(answer) is not None else None
    value = _numeric(answer)
    if value is None:
        return None
    return number_text(value)


def _numeric(answer: Any) -> float | None:
    if isinstance(answer, bool):
        return None
    if isinstance(answer, int | float):
        return float(answer) if math.isfinite(float(answer)) else None
    if isinstance(answer, str):
        try:
            value = float(answer.strip())
        except ValueError:
            return None
        return value if math.isfinite(value) else None
    return None


def in_subset(question: dict[str, Any], subset: str) -> bool:
    """The agents paper's numerical subset: arithmetic questions (each with a numeric
    answer: every question is checked first, so an arithmetic answer that does not
    parse, or an answer type in another spelling, is an error, never a question left
    out of the subset)."""
    if subset == "all":
        return True
    return question.get("answer_type") == "arithmetic"


def question_to_sample(record: Record, question: dict[str, Any], context: str) -> Sample:
    """One question of a document to a Sample; validates the fields it uses."""
    uid = question.get("uid")
    text = question.get("question")
    if not isinstance(uid, str) or not uid:
        raise ValueError(f"question uid must be a non-empty string, got {uid!r}")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"question {uid}: question must be a non-empty string")
    answer_type = question.get("answer_type")
    if answer_type not in ANSWER_TYPES:
        raise ValueError(
            f"question {uid}: answer_type {answer_type!r} is not one of {ANSWER_TYPES}"
        )
    scale = question.get("scale") or ""
    if scale not in SCALES:
        raise ValueError(f"question {uid}: scale {scale!r} is not one of {SCALES}")
    answer = question.get("answer")
    target: str | list[str]
    if answer is None:
        target = ""  # answers withheld
    elif answer_type in ("span", "multi-span"):
        if not isinstance(answer, list) or not all(
            isinstance(a, str | int | float) for a in answer
        ):
            raise ValueError(f"question {uid}: a {answer_type} answer must be a list of strings")
        target = [str(a) for a in answer]
    else:
        value = _numeric(answer)
        if value is None:
            raise ValueError(
                f"question {uid}: an {answer_type} answer must be a number, got {answer!r}"
            )
        target = number_text(int(value) if answer_type == "count" else value)
    written = gold_as_written(answer) if target and isinstance(target, str) else None
    table = record.get("table") if isinstance(record.get("table"), dict) else {}
    return Sample(
        id=uid,
        input=text,
        target=target,
        metadata={
            "question": text,
            "context": context,
            "answer": answer,
            "answer_type": answer_type,
            "answer_from": question.get("answer_from"),
            "scale": scale,
            "derivation": question.get("derivation") or "",
            GOLD_WRITTEN_KEY: written,
            **_percent_in_play(scale),
            # the document's parts as rendered in the context (fresh variants rewrite them)
            "paragraphs": paragraph_texts(record),
            "table": [list(row) for row in (table or {}).get("table") or []],
            "table_uid": (table or {}).get("uid"),
            # questions on one table share its paragraphs: the stderr is clustered by it
            DOCUMENT_KEY: str((table or {}).get("uid") or uid),
        },
    )


def _percent_in_play(scale: str) -> dict[str, bool]:
    """The record's own word on percentages: ``scale`` "percent" puts one in play, a money
    scale (thousand, million, billion) says the gold is an amount; no scale: the question's
    words decide (``scorers.comparisons.percent_in_play``)."""
    if scale == "percent":
        return {PERCENT_IN_PLAY_KEY: True}
    if scale:
        return {PERCENT_IN_PLAY_KEY: False}
    return {}


PAPER_DEV_NUMERICAL_QUESTIONS = 717
"""The agents paper's count of TAT-QA dev numerical questions (its appendix B)."""


def duplicate_key(record: Record, question: Record) -> tuple[str, str, str]:
    """A question's identity for de-duplication: document, question text, answer."""
    table = record.get("table") if isinstance(record.get("table"), dict) else {}
    return (
        str((table or {}).get("uid")),
        " ".join(str(question.get("question", "")).split()).lower(),
        repr(question.get("answer")),
    )


def _table_uid(record: Any) -> Any:
    table = record.get("table") if isinstance(record, dict) else None
    return table.get("uid") if isinstance(table, dict) else None


def records_to_samples(records: list[Record], subset: str, source: str) -> MemoryDataset:
    """Every selected question of every document; errors name the document and question.

    ``subset="arithmetic"`` keeps one question of each group that repeats the same
    question with the same answer in the same document (the first by file order): TAT-QA
    dev has one such pair (61c7a52b-... and a6dca142-..., "What is the average discount
    rate over the 3 year period from 2017 to 2019?", 2.7), and dropping it gives the
    paper's 717 numerical dev questions (718 arithmetic questions in the file).
    """
    items: list[Record] = []
    seen: set[tuple[str, str, str]] = set()
    uids: dict[str, str] = {}
    number = 0  # a question's place among all the file's questions
    for i, record in enumerate(records):
        try:
            questions = record["questions"]
            if not isinstance(questions, list):
                raise ValueError("questions must be a list")
            context = render_context(record)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            detail = f"missing field {e}" if isinstance(e, KeyError) else str(e)
            raise DatasetError(
                f"{source}: document #{i} (table uid {_table_uid(record)!r}) is malformed: {detail}"
            ) from e
        for n, question in enumerate(questions):
            if not isinstance(question, dict):
                raise DatasetError(
                    f"{source}: document #{i} question #{n} is a {type(question).__name__}, "
                    "expected an object"
                )
            where = (
                f"record #{number} (uid={question.get('uid')!r}) of document #{i} "
                f"(table uid {_table_uid(record)!r})"
            )
            number += 1
            try:  # every question is checked, also those the subset leaves out
                question_to_sample(record, question, context)
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                detail = f"missing field {e}" if isinstance(e, KeyError) else str(e)
                raise DatasetError(f"{source}: {where} is malformed: {detail}") from e
            if question["uid"] in uids:
                raise DatasetError(
                    f"{source}: {where} repeats question uid {question['uid']!r} of "
                    f"{uids[question['uid']]}"
                )
            uids[question["uid"]] = where
            if in_subset(question, subset):
                if subset == "arithmetic":
                    key = duplicate_key(record, question)
                    if key in seen:
                        continue
                    seen.add(key)
                items.append(
                    {
                        "uid": question.get("uid"),
                        "record": record,
                        "question": question,
                        "context": context,
                    }
                )
    return records_to_dataset(
        items,
        lambda item: question_to_sample(item["record"], item["question"], item["context"]),
        source=source,
        id_field="uid",
        name=f"{NAME}-{subset}",
        answers=True,
    )


def hub_records(
    split: str, revision: str | None, *, hub_id: str = DATASET_ID, data_file: str | None = None
) -> list[Record]:
    """The split's raw records from the Hub: the upstream JSON file read by ``datasets``.

    ``hub_id="json"`` with ``data_file=<local path>`` runs the same code path offline.
    """
    return load_hub_records(
        hub_id, split="train", revision=revision, data_files=data_file or FILES[split]
    )


def load_dataset(
    split: str,
    subset: str = "arithmetic",
    data_dir: str | os.PathLike[str] | None = None,
    revision: str | None = DATASET_REVISION,
) -> MemoryDataset:
    """One split from ``data_dir``/``$FINMATH_DATA_DIR`` (directly or in ``tatqa/``), the Hub
    (``revision`` given), else the authors' files at the pinned commit (downloaded, cached)."""
    if split not in FILES:
        raise DatasetError(f"{NAME}: -T split={split!r} is not one of {', '.join(FILES)}")
    check_revision_or_folder(NAME, revision, data_dir)
    local = resolve_data_dir(data_dir)
    if local is not None:
        path: Path = find_local_file(local, LOCAL_SUBDIR, FILES[split])
        dataset = records_to_samples(read_json_records(path), subset, str(path))
        provenance = local_provenance(local, [path])
        [name] = provenance["files"]
        upstream_path = f"{UPSTREAM_FOLDER}/{FILES[split]}"
        return attach_provenance(dataset, verify_local(UPSTREAM, provenance, {name: upstream_path}))
    if revision:
        records = hub_records(split, revision)
        dataset = records_to_samples(
            records, subset, f"hf://{DATASET_ID}@{revision}/{FILES[split]}"
        )
        return attach_provenance(dataset, hub_provenance(DATASET_ID, revision, split, records))
    upstream_path = f"{UPSTREAM_FOLDER}/{FILES[split]}"
    path = UPSTREAM.fetch_one(upstream_path)
    dataset = records_to_samples(
        read_json_records(path), subset, f"{UPSTREAM.label}:{upstream_path}"
    )
    return attach_provenance(dataset, UPSTREAM.provenance([upstream_path]))
