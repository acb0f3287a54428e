"""FinQA records (the original czyssrs/FinQA schema) to samples, and the document rendering.

A record has ``id``, ``pre_text`` and ``post_text`` (lists of sentences),
``table`` (rows of cells; row 0 is usually the header) and ``qa`` with
``question``, ``program`` (the gold program in FinQA's DSL), ``exe_ans`` (its
value: a number, or "yes"/"no") and ``gold_inds`` (the supporting facts:
``text_i`` indexes pre_text + post_text, ``table_j`` indexes the table's rows).

A sample keeps those raw fields in metadata, plus ``question``, ``document``
(the report: company/year of the id) and ``context``: the whole document rendered as its text paragraphs with the table
as Markdown between them. Its ``target`` is ``exe_ans`` as text (numbers in
plain decimal notation, yes/no as "yes"/"no").

Data: ``-T data_dir=`` (or ``$FINMATH_DATA_DIR``) with the upstream
``train.json``/``dev.json``/``test.json``, directly or in a ``finqa/``
subfolder; ``-T revision=`` reads the Hub copy below (the upstream JSON files,
loaded with the ``json`` builder); else the authors' files in czyssrs/FinQA at
the pinned commit (downloaded once, checked against their git blob ids, cached).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from inspect_ai.dataset import MemoryDataset, Sample

from finmath_tasks.loading import (
    Upstream,
    attach_provenance,
    check_revision_or_folder,
    find_local_file,
    hub_provenance,
    hub_split_dataset,
    json_file_dataset,
    load_hub_records,
    local_provenance,
    resolve_data_dir,
)
from finmath_tasks.scorers.comparisons import (
    GOLD_WRITTEN_KEY,
    PERCENT_IN_PLAY_KEY,
    asks_for_percent,
)
from finmath_tasks.scorers.metrics import DOCUMENT_KEY
from finmath_tasks.tasks.finqa.dsl import DSLError, constant_value, parse_program
from finmath_tasks.verification import verify_local

BENCHMARK = "finqa"
DATA_REPOSITORY = "czyssrs/FinQA"
DATA_COMMIT = "0f16e2867befa6840783e58be38c9efb9229d742"
UPSTREAM = Upstream.from_manifest(
    BENCHMARK, DATA_REPOSITORY, DATA_COMMIT, Path(__file__).parent / "upstream.tsv"
)
"""The default data: the authors' files (``dataset/<split>.json``) in czyssrs/FinQA."""
UPSTREAM_FOLDER = "dataset"

# A third-party Hub copy of the upstream files (czyssrs/FinQA dataset/*.json,
# unchanged) in a dataset repository of plain JSON files (no loading script), read
# with `-T revision=<commit>`. Its later commits removed the files: the revision
# below holds them. The Hub is unreachable from our CI; the code path is tested
# with the same `datasets` json builder on local copies.
DATASET_ID = "mihirinamdar/finqa"
DATASET_REVISION = "1558227b828a7e9401a02810c9997fbf5ff64960"

Split = Literal["train", "dev", "test"]
FILES: Mapping[str, str] = {"train": "train.json", "dev": "dev.json", "test": "test.json"}

_IND_RE = re.compile(r"(text|table)_(\d+)")


def gold_value(exe_ans: Any) -> float | str:
    """``exe_ans`` checked: "yes"/"no", or a finite number rounded to 5 decimals.

    Every exe_ans upstream has at most 5 decimals (the reference compares it
    with a result rounded to 5 decimals). The rounding undoes the last-bit
    error of Arrow's JSON reader on the Hub path (0.5619700000000001 for
    0.56197); a numeric string (Arrow may stringify a mixed column) is read.
    """
    if isinstance(exe_ans, str):
        text = exe_ans.strip().lower()
        if text in ("yes", "no"):
            return text
        try:
            exe_ans = float(text)
        except ValueError:
            raise ValueError(f"qa.exe_ans must be a number or yes/no, got {exe_ans!r}") from None
    if isinstance(exe_ans, bool) or not isinstance(exe_ans, int | float):
        raise ValueError(f"qa.exe_ans must be a number or yes/no, got {exe_ans!r}")
    if not math.isfinite(exe_ans):
        raise ValueError(f"qa.exe_ans must be finite, got {exe_ans!r}")
    return round(float(exe_ans), 5)


def gold_as_written(exe_ans: Any) -> str | None:
    """A numeric ``exe_ans`` as the data writes it: the repr of its float ("114.0", "0.56197").

    FinQA's files are written by Python: every numeric exe_ans is a float's repr, a
    whole number included ("114.0": one decimal place for ``rounding``, as an
    implementation that counts the digits of the gold's text sees it). Read through
    :func:`gold_value` (rounded to 5 decimals), the repr is the file's literal for
    every record we hold (tests/tasks/finqa check it). None for yes/no.
    """
    value = gold_value(exe_ans)
    return None if isinstance(value, str) else repr(value)


def answer_text(exe_ans: Any) -> str:
    """``exe_ans`` as the sample's target: "0.34719", "407", "yes"."""
    value = gold_value(exe_ans)
    if isinstance(value, str):
        return value
    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def table_markdown(rows: Sequence[Sequence[Any]]) -> str:
    """Rows as a Markdown table; the first row is the header (empty cells stay empty)."""
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    padded = [[_cell(c) for c in row] + [""] * (width - len(row)) for row in rows]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(row) + " |" for row in padded[1:]]
    return "\n".join(lines)


def render_context(
    pre_text: Sequence[str], table: Sequence[Sequence[Any]], post_text: Sequence[str]
) -> str:
    """The whole document: pre_text paragraphs, the table as Markdown, post_text paragraphs."""
    parts = [" ".join(s.strip() for s in pre_text).strip(), table_markdown(table)]
    parts.append(" ".join(s.strip() for s in post_text).strip())
    return "\n\n".join(p for p in parts if p)


def _strings(value: Any, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise ValueError(f"{name} must be a list of strings")
    return value


def _table(value: Any) -> list[list[str]]:
    if not isinstance(value, list) or not all(
        isinstance(row, list) and all(isinstance(c, str) for c in row) for row in value
    ):
        raise ValueError("table must be a list of rows of strings")
    return value


def gold_facts(gold_inds: Any, sentences: int, rows: int) -> dict[str, str]:
    """``qa.gold_inds`` checked: keys ``text_i``/``table_j`` in range.

    Hub copies load the records through Arrow, which turns this mapping into a
    struct with every key of the file: keys whose value is None are dropped.
    """
    if gold_inds is None:
        return {}
    if not isinstance(gold_inds, dict):
        raise ValueError("qa.gold_inds must be an object")
    facts: dict[str, str] = {}
    for key, text in gold_inds.items():
        if text is None:
            continue
        m = _IND_RE.fullmatch(str(key))
        if m is None:
            raise ValueError(f"qa.gold_inds key {key!r} is not text_<i> or table_<j>")
        limit = sentences if m.group(1) == "text" else rows
        if int(m.group(2)) >= limit:
            raise ValueError(
                f"qa.gold_inds key {key!r} is out of range ({limit} {m.group(1)} units)"
            )
        facts[str(key)] = str(text)
    return facts


def report_of(record_id: str) -> str:
    """The annual report a FinQA id names: its company/year part (``ADI/2009`` of
    ``ADI/2009/page_49.pdf-1``); an id without one is its own report."""
    parts = record_id.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else record_id


def record_to_sample(record: dict[str, Any]) -> Sample:
    """One FinQA record (original schema) to a Sample; validates every field used."""
    record_id = record["id"]
    if not isinstance(record_id, str) or not record_id:
        raise ValueError(f"id must be a non-empty string, got {record_id!r}")
    qa = record["qa"]
    if not isinstance(qa, dict):
        raise ValueError("qa must be an object")
    question = qa["question"]
    if not isinstance(question, str) or not question.strip():
        raise ValueError("qa.question must be a non-empty string")
    program = qa["program"]
    if not isinstance(program, str) or not program.strip():
        raise ValueError("qa.program must be a non-empty string")
    try:  # the gold program is scored against (program accuracy): it must parse
        parse_program(program)
    except DSLError as e:
        raise ValueError(f"qa.program (the gold program) does not parse: {e}") from None
    exe_ans = gold_value(qa["exe_ans"])
    target = answer_text(exe_ans)
    pre_text = _strings(record["pre_text"], "pre_text")
    post_text = _strings(record["post_text"], "post_text")
    table = _table(record["table"])
    facts = gold_facts(qa.get("gold_inds"), len(pre_text) + len(post_text), len(table))
    return Sample(
        id=record_id,
        input=question,
        target=target,
        metadata={
            "id": record_id,
            "question": question,
            "context": render_context(pre_text, table, post_text),
            "pre_text": pre_text,
            "post_text": post_text,
            "table": table,
            "program": program,
            "exe_ans": exe_ans,
            GOLD_WRITTEN_KEY: gold_as_written(exe_ans),
            PERCENT_IN_PLAY_KEY: percent_in_play_of(program, question),
            "answer": str(qa.get("answer") or ""),
            "gold_inds": facts,
            "answer_type": "yes_no" if isinstance(exe_ans, str) else "number",
            # the annual report (company/year of the id) whose pages several questions
            # read: the stderr is clustered by it
            DOCUMENT_KEY: report_of(record_id),
        },
    )


def percent_in_play_of(program: str, question: str) -> bool:
    """Whether a FinQA gold is a ratio or a percentage: its program's last step divides by a
    figure of the document (not by a constant, as an average over two years does) or
    multiplies by 100, or the question asks for one by its words."""
    steps = parse_program(program)
    last = steps[-1] if steps else None
    if last is not None and last.op == "divide" and constant_value(last.args[1]) is None:
        return True
    if last is not None and last.op == "multiply" and "const_100" in last.args:
        return True
    return asks_for_percent(question)


def hub_records(
    split: str,
    revision: str | None = DATASET_REVISION,
    path: str = DATASET_ID,
    data_files: str | None = None,
) -> list[dict[str, Any]]:
    """The split's records from the Hub copy (``path``/``data_files`` for tests: "json")."""
    files = {split: data_files or FILES[split]}
    return load_hub_records(path, split=split, revision=revision, data_files=files)


def verified_provenance(folder: Path, path: Path, split: str) -> dict[str, Any]:
    """A local split file's provenance, compared with the authors' file (other data warned)."""
    provenance = local_provenance(folder, [path])
    [name] = provenance["files"]
    return verify_local(UPSTREAM, provenance, {name: f"{UPSTREAM_FOLDER}/{FILES[split]}"})


def file_provenance(split: str, data_dir: str | None, revision: str | None) -> dict[str, Any]:
    """Where ``split``'s file comes from, without reading its records (the exemplars' train
    file, recorded beside the evaluated split): its blob id, or for the Hub its revision."""
    local = resolve_data_dir(data_dir)
    if local is not None:
        return verified_provenance(local, find_local_file(local, BENCHMARK, FILES[split]), split)
    if revision:
        return {"source": "hub", "hub_id": DATASET_ID, "revision": revision, "files": {}}
    return UPSTREAM.provenance([f"{UPSTREAM_FOLDER}/{FILES[split]}"])


def load_dataset(
    split: str = "test", data_dir: str | None = None, revision: str | None = None
) -> MemoryDataset:
    """One split: from ``data_dir``/``$FINMATH_DATA_DIR``, the Hub copy (``revision``), else the
    authors' files at the pinned commit (a verified local copy), read by Inspect's
    ``json_dataset`` / ``hf_dataset`` with every record checked and named on error."""
    if split not in FILES:
        raise ValueError(f"{BENCHMARK}: unknown split {split!r}")
    name = f"{BENCHMARK}-{split}"
    check_revision_or_folder(BENCHMARK, revision, data_dir)
    local = resolve_data_dir(data_dir)
    if local is not None:
        path = find_local_file(local, BENCHMARK, FILES[split])
        origin, provenance = str(path), verified_provenance(local, path, split)
    elif revision:
        origin = f"hf://{DATASET_ID}@{revision}/{FILES[split]}"
        dataset, records = hub_split_dataset(
            DATASET_ID,
            record_to_sample,
            split=split,
            source=origin,
            name=name,
            revision=revision,
            id_field="id",
            answers=True,
            data_files={split: FILES[split]},
        )
        return attach_provenance(dataset, hub_provenance(DATASET_ID, revision, split, records))
    else:
        upstream_path = f"{UPSTREAM_FOLDER}/{FILES[split]}"
        path = UPSTREAM.fetch_one(upstream_path)
        origin = f"{UPSTREAM.label}:{upstream_path}"
        provenance = UPSTREAM.provenance([upstream_path])
    dataset = json_file_dataset(
        path, record_to_sample, source=origin, name=name, id_field="id", answers=True
    )
    return attach_provenance(dataset, provenance)
