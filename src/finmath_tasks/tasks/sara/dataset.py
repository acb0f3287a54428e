"""SARA v1 cases and statutes: the authors' repository at a pinned commit, or a local copy.

Layout of the release (``-T data_dir=`` or ``$FINMATH_DATA_DIR``, directly or in
a ``sara/`` subfolder): ``cases/<id>.pl``, ``statutes/source/sectionN`` and
``splits/train`` / ``splits/test`` (one case id per line).

With neither, the task reads SgfdDttt/sara at the pinned commit (:data:`UPSTREAM`):
its case and statute files are downloaded once, checked and cached, and the
train/test split is derived from the repository's own ``dataset/train.tsv`` and
``dataset/test.tsv`` (case text, hypothesis, answer per line) by matching each case's
text and question to exactly one line (:func:`derive_splits`); the lists are written
beside the cached files as ``splits/train`` and ``splits/test``, so the cache folder is
a release in the layout above.

A case file has ``% Text`` (the facts), ``% Question``, ``% Facts`` and ``% Test``
blocks, each line of the first two starting with ``%``. The question's last
token is the answer: ``Entailment``/``Contradiction`` for the 276 entailment
cases (the rest is the hypothesis, citing one statute unit), a dollar amount
``$1234`` for the 100 tax cases. Parsing is strict: a file without a text or a
question block, or whose question does not end in an answer, stops loading
with an error naming the file and what is missing.

The official release: https://nlp.jhu.edu/law/ (SARA v1), also the GitHub
repository ``SgfdDttt/sara``. A Hub copy, ``jhu-clsp/SARA`` (JSON lines in
``nli/`` and ``qa/``), could not be inspected from our machines (schema, and
whether it has the statute files retrieval parses), so the task reads the
release's own layout only. Inspect's readers take one JSON, JSON-lines or CSV file of
records; a SARA split is a list of ids naming one ``.pl`` case file each (parsed by
:func:`parse_case`), so the cases are read here and converted by
:func:`~finmath_tasks.loading.records_to_dataset`, which names the record on error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from inspect_ai.dataset import MemoryDataset, Sample

from finmath_tasks.loading import (
    DatasetError,
    Upstream,
    attach_provenance,
    file_blob_id,
    fingerprint,
    local_provenance,
    records_to_dataset,
    resolve_data_dir,
    write_atomically,
)
from finmath_tasks.scorers.metrics import DOCUMENT_KEY
from finmath_tasks.tasks.sara.citations import extract_citations
from finmath_tasks.tasks.sara.statutes import StatuteCode, StatuteError, load_statutes
from finmath_tasks.verification import Pin, verify_local

BENCHMARK = "sara"
RELEASE_URL = "https://nlp.jhu.edu/law/"
RELEASE_REPO = "https://github.com/SgfdDttt/sara"
DATA_REPOSITORY = "SgfdDttt/sara"
DATA_COMMIT = "b5e746f207086685f22211d6a151d8fe23e4dece"
UPSTREAM = Upstream.from_manifest(
    BENCHMARK, DATA_REPOSITORY, DATA_COMMIT, Path(__file__).parent / "upstream.tsv"
)
"""The default data: SgfdDttt/sara at the pinned commit (cases, statutes, split TSVs)."""
SPLITS = ("train", "test")
SPLIT_BLOBS = {
    "train": "ba431392659919fc05be166f74ce9c8dfc8053c0",
    "test": "c9c2f2f94c7293f96ae1c058820a59b6358287c9",
}
"""Git blob ids of the split lists :func:`derive_splits` makes from the pinned
``dataset/train.tsv`` and ``dataset/test.tsv`` (sorted case ids, one a line): a local copy's
``splits/<split>`` is the authors' split when it is this file."""
STATUTES = "statutes/source"

Split = Literal["train", "test"]
Kind = Literal["entailment", "tax", "all"]
LABELS = ("Entailment", "Contradiction")

_BLOCK_RE = re.compile(r"^%\s*(Text|Question|Facts|Test)\s*$")
_AMOUNT_RE = re.compile(r"^\$(?P<amount>\d[\d,]*(?:\.\d+)?)$")


@dataclass(frozen=True)
class SaraData:
    """The release's root and its parsed statutes."""

    root: Path
    statutes: StatuteCode
    upstream: Upstream | None = None
    """Set when ``root`` is the cache of the authors' files (the default source)."""


def find_root(data_dir: str | None) -> Path:
    """The directory holding cases/, statutes/ and splits/ (directly or in ``sara/``);
    with no data directory, the cached upstream files (downloaded where missing)."""
    base = resolve_data_dir(data_dir)
    if base is None:
        return upstream_root()
    parts = ("cases", "statutes", "splits")
    for candidate in (base, base / BENCHMARK):
        if all((candidate / part).is_dir() for part in parts):
            return candidate
    for candidate in (base, base / BENCHMARK):  # a release with a part missing: name it
        if any((candidate / part).is_dir() for part in parts):
            missing = [str(candidate / part) for part in parts if not (candidate / part).is_dir()]
            raise DatasetError(
                f"{BENCHMARK}: {candidate} is a SARA release without {' and '.join(missing)}: "
                f"copy it from {RELEASE_REPO} (at commit {DATA_COMMIT[:7]})"
            )
    raise DatasetError(
        f"{BENCHMARK}: {base} holds no SARA release: expected cases/, statutes/ and splits/ "
        f"in it or in {base / BENCHMARK}"
    )


def upstream_root() -> Path:
    """The authors' files at the pinned commit, fetched into the cache (verified), with the
    split lists derived from the repository's TSVs written beside them."""
    files = UPSTREAM.fetch(UPSTREAM.blobs)
    root = UPSTREAM.folder()
    cases = {
        Path(path).stem: parse_case(
            local.read_text(encoding="utf-8"), Path(path).stem, f"{UPSTREAM.label}:{path}"
        )
        for path, local in files.items()
        if path.startswith("cases/") and path.endswith(".pl")
    }
    tsv = {split: files[f"dataset/{split}.tsv"].read_text(encoding="utf-8") for split in SPLITS}
    for split, ids in derive_splits(cases, tsv).items():
        text = "".join(f"{case_id}\n" for case_id in ids)
        target = root / "splits" / split
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            write_atomically(target, text.encode())
    return root


def _normal(text: str) -> str:
    return " ".join(text.split())


def derive_splits(cases: dict[str, dict[str, Any]], tsv: dict[str, str]) -> dict[str, list[str]]:
    """Each split's case ids (sorted): the cases whose text and question (without its answer)
    are those of one line of the split's TSV. Every case must match exactly one line and
    every line exactly one case; anything else is an error naming the case or the line."""
    lines: dict[tuple[str, str], tuple[str, int]] = {}
    for split, text in tsv.items():
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) != 3:
                raise DatasetError(
                    f"{BENCHMARK}: dataset/{split}.tsv line {number}: expected 3 tab-separated "
                    f"fields (text, hypothesis, answer), found {len(fields)}"
                )
            key = (_normal(fields[0]), _normal(fields[1]))
            if key in lines:
                raise DatasetError(
                    f"{BENCHMARK}: dataset/{split}.tsv line {number} repeats "
                    f"dataset/{lines[key][0]}.tsv line {lines[key][1]}"
                )
            lines[key] = (split, number)
    splits: dict[str, list[str]] = {split: [] for split in tsv}
    used: set[tuple[str, str]] = set()
    for case_id, record in sorted(cases.items()):
        key = (_normal(record["text"]), _normal(record["question"]))
        if key not in lines:
            raise DatasetError(
                f"{BENCHMARK}: case {case_id!r} matches no line of dataset/*.tsv (its text and "
                "question): the split cannot be derived"
            )
        used.add(key)
        splits[lines[key][0]].append(case_id)
    unused = [where for key, where in lines.items() if key not in used]
    if unused:
        split, number = unused[0]
        raise DatasetError(
            f"{BENCHMARK}: dataset/{split}.tsv line {number} (and {len(unused) - 1} more) "
            "matches no case file"
        )
    return splits


def parse_case(text: str, case_id: str, source: str = "") -> dict[str, Any]:
    """One case file's text to a record; errors name ``source`` and what is missing."""
    where = source or case_id
    blocks: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = _BLOCK_RE.match(line.strip())
        if m:
            current = m.group(1).lower()
            if current in blocks:
                raise ValueError(f"{where}: the '% {m.group(1)}' block appears twice")
            blocks[current] = []
        elif current in ("text", "question") and line.strip():
            if not line.lstrip().startswith("%"):
                raise ValueError(
                    f"{where}: line {line.strip()[:60]!r} of the {current} block does not "
                    "start with '%'"
                )
            blocks[current].append(line.lstrip()[1:].strip())
    for name in ("text", "question"):
        if not " ".join(blocks.get(name, [])).strip():
            raise ValueError(f"{where}: no '% {name.capitalize()}' block (or it is empty)")
    facts = " ".join(blocks["text"]).strip()
    question_line = " ".join(blocks["question"]).strip()
    head, _, last = question_line.rpartition(" ")
    record: dict[str, Any] = {"case_id": case_id, "text": facts, "source": where}
    if last in LABELS:
        record.update(kind="entailment", question=head.strip(), label=last, amount=None)
    elif m := _AMOUNT_RE.match(last):
        amount = float(m.group("amount").replace(",", ""))
        record.update(kind="tax", question=head.strip(), label=None, amount=amount)
    else:
        raise ValueError(
            f"{where}: the question must end in Entailment, Contradiction or a $amount, "
            f"got {last!r}"
        )
    if not record["question"]:
        raise ValueError(f"{where}: the question block holds only the answer")
    return record


def section_group(record: dict[str, Any]) -> str:
    """The metric group of a case: its cited section ("s7703"), or "tax"."""
    if record["kind"] == "tax":
        return "tax"
    citations = extract_citations(record["question"])
    return f"s{citations[0].section}" if citations else "uncited"


def record_to_sample(record: dict[str, Any]) -> Sample:
    """A parsed case record to a Sample (the prompt is rendered by the task's solver)."""
    case_id = record["case_id"]
    if not isinstance(case_id, str) or not case_id:
        raise ValueError(f"case_id must be a non-empty string, got {case_id!r}")
    kind = record["kind"]
    if kind == "entailment":
        if record["label"] not in LABELS:
            raise ValueError(f"label must be one of {LABELS}, got {record['label']!r}")
        target = record["label"]
    elif kind == "tax":
        amount = record["amount"]
        if isinstance(amount, bool) or not isinstance(amount, int | float) or amount < 0:
            raise ValueError(f"amount must be a non-negative number, got {amount!r}")
        target = f"{amount:g}" if amount != int(amount) else str(int(amount))
    else:
        raise ValueError(f"kind must be entailment or tax, got {kind!r}")
    return Sample(
        id=case_id,
        input=record["question"],
        target=target,
        metadata={
            "case_id": case_id,
            # each case is its own facts and question: the stderr's cluster is the case
            DOCUMENT_KEY: case_id,
            "kind": kind,
            "text": record["text"],
            "question": record["question"],
            "label": record.get("label"),
            "amount": record.get("amount"),
            "section": section_group(record),
            "citations": [c.label for c in extract_citations(record["question"])],
        },
    )


def read_split(root: Path, split: str) -> list[str]:
    path = root / "splits" / split
    if not path.is_file():
        raise DatasetError(f"{BENCHMARK}: split file not found: {path}")
    ids = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not ids:
        raise DatasetError(f"{path}: no case ids")
    return ids


def read_case(root: Path, case_id: str) -> dict[str, Any]:
    path = root / "cases" / f"{case_id}.pl"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise DatasetError(f"{BENCHMARK}: case {case_id!r} of the split has no file {path}") from e
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"{path}: cannot read ({e})") from e
    try:
        return parse_case(text, case_id, str(path))
    except ValueError as e:
        raise DatasetError(str(e)) from e


def load_records(
    root: Path, split: str, kind: str, exclude: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """The split's cases of ``kind``, without the case ids in ``exclude``."""
    ids = [case_id for case_id in read_split(root, split) if case_id not in exclude]
    records = [read_case(root, case_id) for case_id in ids]
    return [r for r in records if kind == "all" or r["kind"] == kind]


def load_data(data_dir: str | None) -> SaraData:
    root = find_root(data_dir)
    try:
        statutes = load_statutes(root / STATUTES)
    except StatuteError as e:
        raise DatasetError(f"{BENCHMARK}: {e}") from e
    return SaraData(root, statutes, UPSTREAM if root == UPSTREAM.folder() else None)


def check_citations(records: list[dict[str, Any]], data: SaraData) -> None:
    """Every section a case's question cites is among the statutes (as in the authors'
    release); else an error naming the case file and the missing statute file."""
    for record in records:
        for citation in extract_citations(record["question"]):
            if citation.section not in data.statutes.sections:
                missing = data.root / STATUTES / f"section{citation.section}"
                raise DatasetError(
                    f"{record['source']}: the question cites {citation.text!r}, but the "
                    f"statutes have no section {citation.section}: {missing} not found"
                )


def provenance(data: SaraData, split: str) -> dict[str, Any]:
    """Where the split came from, and the blob ids of its case files, the statutes and
    the split list (the same for a local copy of the release and for the cache)."""
    listing = data.root / "splits" / split
    cases = [data.root / "cases" / f"{case_id}.pl" for case_id in read_split(data.root, split)]
    statutes = sorted((data.root / STATUTES).glob("section*"))
    if data.upstream is None:
        local = local_provenance(data.root, [*cases, *statutes, listing])
        names = {name: name for name in local["files"]}
        split_pin = Pin(SPLIT_BLOBS[split], f"split list derived from dataset/{split}.tsv")
        derived = {f"splits/{split}": split_pin} if split in SPLIT_BLOBS else {}
        # every statute is read (all_statutes, and the tax cases' prompts): one missing is
        # not the authors' data either
        absent = [
            path
            for path in UPSTREAM.blobs
            if path.startswith(f"{STATUTES}/") and not (data.root / path).is_file()
        ]
        return verify_local(UPSTREAM, local, names, derived, absent)
    paths = [str(path.relative_to(data.root)) for path in [*cases, *statutes]]
    record = data.upstream.provenance(paths)
    files = {**record["files"], f"splits/{split}": file_blob_id(listing)}
    derived_from = {f"dataset/{s}.tsv": data.upstream.blobs[f"dataset/{s}.tsv"] for s in SPLITS}
    return {
        **record,
        "files": files,
        "split_derived_from": derived_from,
        "fingerprint": fingerprint(files.values()),
    }


def load_dataset(
    data: SaraData, split: str, kind: str, exclude: frozenset[str] = frozenset()
) -> MemoryDataset:
    """The split's cases of ``kind`` as a dataset; ``exclude``: case ids left out (exemplars)."""
    records = load_records(data.root, split, kind, exclude)
    if not records:
        raise DatasetError(f"{BENCHMARK}: split {split!r} has no {kind} cases")
    check_citations(records, data)
    dataset = records_to_dataset(
        records,
        record_to_sample,
        source=str(data.root / "splits" / split),
        name=f"{BENCHMARK}-{split}-{kind}",
        id_field="case_id",
        answers=True,
    )
    return attach_provenance(dataset, provenance(data, split))
