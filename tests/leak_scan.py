"""Scan every text the package ships to a model against every evaluation record.

Two detectors, both defined here so that the unit tests and the real-data scan use the
same code:

* **shared distinctive numbers**: a number written in a text is *distinctive* when
  - it is written with digits (``1,202.9``, ``1202.9``, ``$1,202.90``, ``(1,202.9)``
    and ``-1202.9`` are all the number 1202.9: thousands separators, the sign, a
    currency sign, parentheses, a percent sign and trailing zeros after the decimal
    point are dropped before comparing);
  - it has at least :data:`MIN_SIGNIFICANT_DIGITS` (3) significant digits, counted
    after that normalisation and without trailing zeros of an integer (``44.1``,
    ``293.6``, ``0.125``, ``1,234`` and ``12,345`` qualify; ``12.5`` has 3 and
    qualifies; ``0.05``, ``1.5``, ``250,000`` and ``1,200`` do not);
  - it is not a multiple of 100 (``12,300`` is a round number);
  - it is not an integer from 1900 to 2100 (a year), and not part of a date written
    with a month name (``december 31, 2009``; FinQA glues such dates into
    ``december 312009``, which would otherwise read as the number 312009);
  - it is not an integer below 1000. Reason: three-digit integers are the commonest
    figures of long web pages and statistics tables (counts, ranks, page and section
    numbers, day counts such as 252, 360 and 365, IRC sections 151 and 152), so three
    of them are shared by chance: without this rule a FinQA train exemplar
    (ETR/2007/page_36.pdf-1: 111, 156 and 40.5) and another (MRK/2013/page_116.pdf-1:
    102, 619, 682) "leak" MathHay web pages they have nothing to do with.
  A text *leaks* a record when the text and the record share at least
  :data:`MIN_SHARED_NUMBERS` (3) distinct distinctive numbers. A leak can be spread
  over several texts (an earlier calculator prompt copied five figures of a TAT-QA
  document, two answer-format instructions one of them), so every other shipped text
  holding one of the leaked figures is reported beside the leak. One or two shared
  figures are not a leak: the evaluation records hold about 28,600 distinct
  distinctive numbers (MathHay's web pages 11,300 of them), and of the 99 distinctive
  numbers of the package once those figures were replaced, 31 occur in some record by chance
  (4096 in the sandbox code, IRC section numbers 3306 and 7703, ...).

* **copied sentence**: both sides are normalised to lower-case word tokens (runs of
  letters, or numbers after the normalisation above); a text *leaks* a record when they
  share a run of at least :data:`SHINGLE_WORDS` (12) consecutive tokens.

The shipped side is small (about 1,500 texts), so it is indexed (number -> texts,
12-token shingle -> texts) and each record is streamed past the index once; identical
strings (MathHay repeats its documents in every question) are analysed once.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import Any

from benchmark_list import BENCHMARKS, default_task, need, ships_its_data

MIN_SIGNIFICANT_DIGITS = 3
MIN_SHARED_NUMBERS = 3
SHINGLE_WORDS = 12
MIN_CONSTANT_CHARS = 20
"""Shorter string constants can hold neither 3 distinctive numbers nor a 12-word run."""

YEARS = range(1900, 2101)

_NUMBER = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_GROUPED = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_TOKEN = re.compile(r"[a-z]+|\d+(?:\.\d+)?")
_MONTH = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_DATE = re.compile(rf"\b(?:{_MONTH})\.?\s+\d{{1,2}}\s*,?\s*(?:19|20)\d\d\b", re.IGNORECASE)


# --------------------------------------------------------------------------- detectors


def _in_date(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is part of a month-name date."""
    offset = max(0, start - 16)
    return any(d.end() > start - offset for d in _DATE.finditer(text[offset:end]))


@cache
def normalise_number(raw: str) -> str | None:
    """The canonical form of a number written with digits (``1,202.90`` -> ``1202.9``)."""
    try:
        value = abs(Decimal(raw.replace(",", "")))
    except InvalidOperation:
        return None
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def is_distinctive(canonical: str) -> bool:
    """See the module docstring: >= 3 significant digits, not round, not a year."""
    value = Decimal(canonical)
    digits = value.normalize().as_tuple().digits
    if len(digits) < MIN_SIGNIFICANT_DIGITS:
        return False
    is_integer = value == value.to_integral_value()
    return not (is_integer and (value < 1000 or value % 100 == 0 or int(value) in YEARS))


def distinctive_numbers(text: str) -> set[str]:
    """The distinctive numbers written in ``text``, canonical."""
    found = set()
    for m in _NUMBER.finditer(_DATE.sub(" ", text)):
        canonical = normalise_number(m.group())
        if canonical is not None and is_distinctive(canonical):
            found.add(canonical)
    return found


def tokens(text: str) -> list[str]:
    """Lower-case word tokens, numbers without thousands separators."""
    return _TOKEN.findall(_GROUPED.sub("", text.lower()))


def shingles(text: str, size: int = SHINGLE_WORDS) -> set[tuple[str, ...]]:
    words = tokens(text)
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def shared_numbers(a: str, b: str) -> set[str]:
    return distinctive_numbers(a) & distinctive_numbers(b)


def copied_run(a: str, b: str) -> str | None:
    """A run of >= :data:`SHINGLE_WORDS` tokens of ``a`` that ``b`` also holds, else None."""
    common = shingles(a) & shingles(b)
    return " ".join(min(common)) if common else None


def leaks(text: str, record: str) -> bool:
    """Whether ``text`` leaks ``record`` by either detector (for the unit tests)."""
    return len(shared_numbers(text, record)) >= MIN_SHARED_NUMBERS or bool(copied_run(text, record))


# --------------------------------------------------------------------------- shipped texts


@dataclass(frozen=True)
class Text:
    name: str
    """Where it comes from: ``<file>`` / ``<file>[i] (id)`` / ``<module file>:<constant>``."""
    text: str


EXEMPT_FILES: set[str] = set()
"""Package files not scanned. Empty: the offline demo split
(``tasks/knowledgefmath/data/demo.json``) is scanned too, because its README documents it
as 15 problems of our own (not a subset of validation), so it must share nothing with an
evaluation record either (it shares nothing today)."""
DOC_SUFFIXES = {".md"}
"""User documentation: never part of a model's input."""
REPORT_DATA = re.compile(r"published[\w-]*\.tsv")
"""The papers' published numbers (``tasks/<name>/published*.tsv``): read by ``finmath
report`` and ``finmath published``, never part of a model's input."""


def _strings(value: Any, numbers: bool = True) -> Iterator[str]:
    """The text leaves of a JSON-like value; numbers as their repr unless ``numbers`` is off."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        if numbers:
            yield repr(value)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v, numbers)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v, numbers)


def _item_label(item: Any) -> str:
    if isinstance(item, dict):
        for key in ("id", "term", "question_id", "name"):
            if isinstance(item.get(key), str):
                return f" ({key}={item[key]})"
    return ""


def data_file_texts(package_dir: Path) -> Iterator[Text]:
    """Every package data file but code and user docs; a JSON list or object per item."""
    for path in sorted(package_dir.rglob("*")):
        relative = path.relative_to(package_dir).as_posix()
        if (
            not path.is_file()
            or path.suffix in {".py", ".pyc"}
            or path.suffix in DOC_SUFFIXES
            or REPORT_DATA.fullmatch(path.name)
            or "__pycache__" in path.parts
            or relative in EXEMPT_FILES
        ):
            continue
        content = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".json":
            data = json.loads(content)
            if isinstance(data, list):
                for i, item in enumerate(data):
                    yield Text(f"{relative}[{i}]{_item_label(item)}", "\n".join(_strings(item)))
                continue
            if isinstance(data, dict):
                for key, item in data.items():
                    yield Text(f"{relative}[{key!r}]", "\n".join(_strings(item)))
                continue
        yield Text(relative, content)


def _docstring_nodes(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def source_constant_texts(package_dir: Path) -> Iterator[Text]:
    """Every string literal of the package's modules (not docstrings) of >= 20 characters.

    Named ``<file>:<NAME>`` for a module-level assignment, else ``<file>:<line>``.
    Docstrings are documentation, never sent to a model.
    """
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstring_nodes(tree)
        names: dict[int, str] = {}
        for statement in tree.body:
            targets: list[str] = []
            value: ast.expr | None = None
            if isinstance(statement, ast.Assign):
                targets = [t.id for t in statement.targets if isinstance(t, ast.Name)]
                value = statement.value
            elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                targets, value = [statement.target.id], statement.value
            if targets and value is not None:
                for sub in ast.walk(value):
                    names[id(sub)] = targets[0]
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and len(node.value) >= MIN_CONSTANT_CHARS
                and id(node) not in docstrings
            ):
                label = names.get(id(node), str(node.lineno))
                yield Text(f"{relative}:{label}", node.value)


OPTIONAL_PACKAGES = {"lm_eval"}
"""Third-party packages of optional extras that some of our modules import at their top
(``finmath_tasks.lm_eval.task``: the ``lm-eval`` extra)."""


def module_global_texts(package: str = "finmath_tasks") -> Iterator[Text]:
    """String globals of every imported module (catches strings built at import time)."""
    root = importlib.import_module(package)
    names = [package] + [
        m.name
        for m in pkgutil.walk_packages(root.__path__, prefix=f"{package}.")
        if not m.name.endswith(".__main__")  # running it would start the command line
    ]
    for module_name in sorted(names):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name not in OPTIONAL_PACKAGES:
                raise
            continue  # an optional extra's module without its package: its literals are
            # still scanned from the source (source_constant_texts)
        for name, value in sorted(vars(module).items()):
            if getattr(value, "__module__", module_name) != module_name:
                continue
            # text only: a module's numbers are settings or run-time caches (token counts
            # filled by whatever ran earlier in the process), never text sent to a model
            strings = (
                list(_strings(value, numbers=False))
                if isinstance(value, str | list | tuple | dict)
                else []
            )
            text = "\n".join(s for s in strings if isinstance(s, str))
            if len(text) >= MIN_CONSTANT_CHARS and not name.startswith("__"):
                yield Text(f"{module_name}.{name}", text)


def finqa_rendered_exemplars(data_dir: Path) -> Iterator[Text]:
    """The FinQA few-shot turns as the model sees them (train records + our explanations)."""
    from finmath_tasks.tasks.finqa.prompts import load_exemplars

    for exemplar in load_exemplars(str(data_dir)):
        yield Text(
            f"finqa rag_cot exemplar {exemplar.id} (rendered from the train split)",
            exemplar.user() + "\n" + exemplar.assistant(),
        )


def dedupe(texts: Iterable[Text]) -> list[Text]:
    """One Text per distinct content (the first name wins)."""
    seen: dict[str, Text] = {}
    for t in texts:
        seen.setdefault(t.text, t)
    return list(seen.values())


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Record:
    name: str
    """``<file relative to the data dir>: <id>``."""
    parts: tuple[str, ...]
    questions: tuple[tuple[str, str], ...] = ()
    """(label, text) of the questions a document record holds, to name those a leak hits."""


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def tatqa_records(data_dir: Path) -> Iterator[Record]:
    for file in ("tatqa_dataset_dev.json", "tatqa_dataset_test_gold.json"):
        path = data_dir / "tatqa" / file
        if path.is_file():
            for context in _json(path):
                questions = tuple(
                    (f"{q['uid']} {q['question']!r}", "\n".join(_strings(q)))
                    for q in context.get("questions", [])
                )
                yield Record(
                    f"tatqa/{file}: document {context['table']['uid']}",
                    tuple(_strings(context)),
                    questions,
                )


def finqa_records(data_dir: Path) -> Iterator[Record]:
    for file in ("dev.json", "test.json"):
        path = data_dir / "finqa" / file
        if path.is_file():
            for record in _json(path):
                yield Record(f"finqa/{file}: {record['id']}", tuple(_strings(record)))


def financemath_records(data_dir: Path) -> Iterator[Record]:
    for file in ("validation.json", "test.json"):
        path = data_dir / "financemath" / file
        if path.is_file():
            for record in _json(path):
                yield Record(
                    f"financemath/{file}: {record['question_id']}", tuple(_strings(record))
                )


def sara_records(data_dir: Path) -> Iterator[Record]:
    split = data_dir / "sara" / "splits" / "test"
    if split.is_file():
        for case in split.read_text(encoding="utf-8").split():
            path = data_dir / "sara" / "cases" / f"{case}.pl"
            yield Record(f"sara/cases/{case}.pl", (path.read_text(encoding="utf-8"),))


MATHHAY_RELEASES = ("March-2024-to-September-2024", "v1")


def mathhay_records(data_dir: Path) -> Iterator[Record]:
    """Every question (with its documents) and every document of the pool, both releases."""
    for release in MATHHAY_RELEASES:
        folder = data_dir / "mathhay" / release
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*_haystack_question_*.json")):
            for i, question in enumerate(_json(path)):
                documents = ", ".join(
                    str(question[k]) for k in sorted(question) if k.startswith("Document_ID")
                )
                yield Record(
                    f"mathhay/{release}/{path.name}: question {i} ({documents})",
                    tuple(_strings(question)),
                )
        pool = folder / "documents_reconstructed.json"
        if pool.is_file():
            for document in _json(pool)["documents"]:
                ident = document.get("Document_ID", document.get("index"))
                yield Record(
                    f"mathhay/{release}/documents_reconstructed.json: {ident}",
                    tuple(_strings(document)),
                )


RECORD_SOURCES: dict[str, Callable[[Path], Iterator[Record]]] = {
    "tatqa": tatqa_records,
    "finqa": finqa_records,
    "knowledgefmath": financemath_records,
    "sara": sara_records,
    "mathhay": mathhay_records,
}
"""Per benchmark, its evaluation records read from its files (hand entries; a benchmark with
none gets :func:`task_records`)."""


def task_records(benchmark: str) -> Callable[[Path], Iterator[Record]]:
    """A benchmark's records as its task loads them at its defaults (and its own
    ``SHARED_TEST_ARGS``): each sample's input, target and metadata texts. None for a
    benchmark whose data ships in the package: its questions are shipped texts already,
    with no held-out file of the authors to leak."""
    if ships_its_data(benchmark):
        return lambda data_dir: iter(())
    task = default_task(benchmark)

    def records(data_dir: Path) -> Iterator[Record]:
        for sample in task.dataset:
            given = sample.input
            texts = [given] if isinstance(given, str) else [m.text for m in given]
            texts += [sample.target] if isinstance(sample.target, str) else list(sample.target)
            yield Record(
                f"{benchmark}: {sample.id}", (*texts, *_strings(dict(sample.metadata or {})))
            )

    return records


def evaluation_records(data_dir: Path) -> Iterator[Record]:
    where = "tests/leak_scan.py RECORD_SOURCES"
    sources = [
        need(RECORD_SOURCES, b, "evaluation records", where, default=task_records)
        for b in BENCHMARKS
    ]
    for source in sources:
        yield from source(data_dir)


EXPECTED_SOURCES = {
    "tatqa": ("tatqa/tatqa_dataset_dev.json", "tatqa/tatqa_dataset_test_gold.json"),
    "finqa": ("finqa/dev.json", "finqa/test.json"),
    "knowledgefmath": ("financemath/validation.json", "financemath/test.json"),
    "sara": ("sara/splits/test",),
    "mathhay": tuple(f"mathhay/{r}" for r in MATHHAY_RELEASES),
}


# --------------------------------------------------------------------------- the scan


@dataclass
class Finding:
    record: str
    kind: str
    """``numbers`` or ``sentence``."""
    text: str
    evidence: str
    companions: list[str] = field(default_factory=list)
    """Other texts holding some of the same shared numbers (a leak spread over texts)."""
    questions: list[str] = field(default_factory=list)
    """The record's questions that hold a leaked number (TAT-QA documents)."""

    def __str__(self) -> str:
        lines = [f"{self.text}  <->  {self.record}: {self.kind}: {self.evidence}"]
        lines += [f"    also in this record: {c}" for c in self.companions]
        lines += [f"    question hit: {q}" for q in self.questions]
        return "\n".join(lines)


@dataclass
class ScanResult:
    texts: int
    records: int
    findings: list[Finding]


class Index:
    def __init__(self, texts: list[Text]) -> None:
        self.texts = texts
        self.by_number: dict[str, set[int]] = defaultdict(set)
        self.by_shingle: dict[tuple[str, ...], set[int]] = defaultdict(set)
        self.vocabulary: set[str] = set()
        for i, t in enumerate(texts):
            for n in distinctive_numbers(t.text):
                self.by_number[n].add(i)
            words = tokens(t.text)
            self.vocabulary.update(words)
            for s in shingles(t.text):
                self.by_shingle[s].add(i)
        self._numbers_memo: dict[str, frozenset[str]] = {}
        self._shingle_memo: dict[str, dict[int, tuple[str, ...]]] = {}

    def numbers(self, part: str) -> frozenset[str]:
        """The shipped texts' distinctive numbers that ``part`` holds."""
        hit = self._numbers_memo.get(part)
        if hit is None:
            hit = frozenset(
                n
                for m in _NUMBER.finditer(part)
                if (n := normalise_number(m.group())) in self.by_number
                and not _in_date(part, m.start(), m.end())
            )
            self._numbers_memo[part] = hit
        return hit

    def copied(self, part: str) -> dict[int, tuple[str, ...]]:
        """Shipped text index -> one shingle it shares with ``part``."""
        hit = self._shingle_memo.get(part)
        if hit is None:
            hit = {}
            words = tokens(part)
            run: list[str] = []
            # only runs of words that the shipped texts use can be shared
            for word in [*words, ""]:
                if word in self.vocabulary:
                    run.append(word)
                    continue
                for i in range(len(run) - SHINGLE_WORDS + 1):
                    s = tuple(run[i : i + SHINGLE_WORDS])
                    for t in self.by_shingle.get(s, ()):
                        hit.setdefault(t, s)
                run = []
            self._shingle_memo[part] = hit
        return hit


_LONG_PART = 2000


def scan(texts: list[Text], records: Iterable[Record]) -> ScanResult:
    index = Index(texts)
    findings: list[Finding] = []
    count = 0
    for record in records:
        count += 1
        numbers: set[str] = set()
        copies: dict[int, tuple[str, ...]] = {}
        # the many short fields at once; long ones (MathHay's documents, repeated in
        # every question) one by one, each analysed once per scan
        short = "\n".join(p for p in record.parts if len(p) < _LONG_PART)
        long = [p for p in record.parts if len(p) >= _LONG_PART]
        for part in [short, *long]:
            numbers |= index.numbers(part)
            for t, s in index.copied(part).items():
                copies.setdefault(t, s)
        per_text: dict[int, set[str]] = defaultdict(set)
        for n in numbers:
            for t in index.by_number[n]:
                per_text[t].add(n)
        leaking = {t for t, ns in per_text.items() if len(ns) >= MIN_SHARED_NUMBERS}
        for t in sorted(leaking):
            companions = [
                f"{texts[o].name} ({', '.join(sorted(per_text[o] & per_text[t], key=float))})"
                for o in sorted(per_text)
                if o != t and per_text[o] & per_text[t]
            ]
            questions = [
                label for label, text in record.questions if distinctive_numbers(text) & per_text[t]
            ]
            findings.append(
                Finding(
                    record.name,
                    "numbers",
                    texts[t].name,
                    ", ".join(sorted(per_text[t], key=float)),
                    companions,
                    questions,
                )
            )
        for t, s in sorted(copies.items()):
            findings.append(
                Finding(record.name, "sentence", texts[t].name, '"' + " ".join(s) + '"')
            )
    return ScanResult(len(texts), count, findings)
