"""The knowledge bank and the paper's six knowledge settings (KnowledgeFMATH, section 5).

The paper's own bank (1,760 terms) was never released; the package ships one
written by us (``data/knowledge_bank.json``) and loads a user's bank in the
same schema with ``-T knowledge_bank=<path>``:

    [
      {"term": "Net present value",          # unique, non-empty
       "topic": "corporate finance",          # non-empty
       "definition": "The sum of ...",        # non-empty
       "formula": "def net_present_value(rate, cash_flows):\n    ..."},   # optional
      ...
    ]

``formula`` is the source of one Python function (named parameters, a
docstring, returns a number). It is shown to the model, never run by the task.

Oracle annotations (``data/oracle_terms.json``) map a ``question_id`` to the 1
to 3 bank terms the question needs (no question text).

Settings (``-T knowledge=``): ``none``; ``oracle`` (the annotated terms);
``llm_kb`` (the model first writes the terms and definitions it needs, which
become the knowledge); ``bm25`` and ``dense`` (the question as the query,
``top_n`` terms); ``rerank`` (the ``retriever``, BM25 or dense, retrieves 3 x
``top_n`` candidates, the model picks ``top_n``); ``instructed`` (each term the
model writes as in ``llm_kb``, with its definition, is a query to the
``retriever``; the per-query rankings are merged round-robin into ``top_n``
terms). The paper runs both LLM-aided settings over both retrievers (Table 5).
The knowledge goes before the question in the user prompt.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from inspect_ai.model import ChatMessageUser, get_model
from inspect_ai.solver import Solver, TaskState

from finmath_tasks.errors import UsageError
from finmath_tasks.retrieval.base import Hit
from finmath_tasks.retrieval.bm25 import BM25Index
from finmath_tasks.retrieval.dense import DEFAULT_EMBEDDING_MODEL, DenseIndex
from finmath_tasks.retrieval.passages import Selection, insert_passages
from finmath_tasks.retrieval.rerank import rerank

Knowledge = Literal["none", "oracle", "llm_kb", "bm25", "dense", "rerank", "instructed"]
Retriever = Literal["bm25", "dense"]
"""The retriever under ``rerank`` and ``instructed`` (the paper's Table 5 runs both)."""
RETRIEVER_SETTINGS = ("rerank", "instructed")
"""Settings that take ``-T retriever=``."""
MODEL_SETTINGS = ("llm_kb", "rerank", "instructed")
"""Settings that make an extra call to the evaluated model before answering."""
RETRIEVAL_SETTINGS = ("bm25", "dense", "rerank", "instructed")
"""Settings that pick terms from the bank by retrieval: their recall is scored."""
RERANK_POOL = 3
"""``rerank`` retrieves this many times ``top_n`` candidates (the paper: top-3n)."""
LLM_KB_MAX_TERMS = 5
METADATA_KEY = "knowledge"

TOPICS = (
    "accounting",
    "corporate finance",
    "derivatives",
    "economics",
    "management",
    "portfolio",
    "quantitative methods",
)
"""Topics of our bank (the seven FinanceMath areas); a user's bank may use others."""

PROMPTS = Path(__file__).parent / "prompts"
KNOWLEDGE_HEADER = (PROMPTS / "knowledge_header.txt").read_text(encoding="utf-8")
KNOWLEDGE_TEMPLATE = KNOWLEDGE_HEADER + "{passages}\n\n{prompt}"
"""The knowledge block (header, then the passages) before the question."""
LLM_KB_PROMPT = (PROMPTS / "knowledge_llm_kb.txt").read_text(encoding="utf-8")


def default_bank_file() -> Path:
    return Path(str(resources.files(__package__) / "data" / "knowledge_bank.json"))


def oracle_file() -> Path:
    return Path(str(resources.files(__package__) / "data" / "oracle_terms.json"))


class KnowledgeBankError(UsageError, ValueError):
    """A knowledge bank or annotation file that cannot be used; names file, entry and field."""


@dataclass(frozen=True)
class Term:
    term: str
    topic: str
    definition: str
    formula: str | None = None

    def passage(self) -> str:
        """The text the model sees: the definition, then the formula function."""
        text = f"{self.term}: {self.definition}"
        if self.formula:
            text += f"\n```python\n{self.formula.rstrip()}\n```"
        return text

    def index_text(self) -> str:
        """The text retrieval indexes: term and definition."""
        return f"{self.term}. {self.definition}"


def _entry_error(path: Path, index: int, entry: Any, message: str) -> KnowledgeBankError:
    name = entry.get("term") if isinstance(entry, dict) else None
    label = f"entry #{index}" + (f" ({name!r})" if isinstance(name, str) and name else "")
    return KnowledgeBankError(f"knowledge bank {path}: {label}: {message}")


def _text_field(path: Path, index: int, entry: dict[str, Any], name: str) -> str:
    if name not in entry:
        raise _entry_error(path, index, entry, f"missing field '{name}'")
    value = entry[name]
    if not isinstance(value, str) or not value.strip():
        raise _entry_error(
            path, index, entry, f"field '{name}' must be a non-empty string, got {value!r:.60}"
        )
    return value.strip()


def _formula(path: Path, index: int, entry: dict[str, Any]) -> str | None:
    value = entry.get("formula")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _entry_error(path, index, entry, "field 'formula' must be a string of Python source")
    try:
        tree = ast.parse(value)
    except SyntaxError as exc:
        raise _entry_error(
            path,
            index,
            entry,
            f"field 'formula' is not valid Python: {exc.msg} (line {exc.lineno})",
        ) from None
    if not any(isinstance(node, ast.FunctionDef) for node in tree.body):
        raise _entry_error(path, index, entry, "field 'formula' must define a function")
    return value


def load_bank(path: str | Path | None = None) -> list[Term]:
    """The bank at ``path`` (default: ours), validated entry by entry."""
    path = Path(path) if path is not None else default_bank_file()
    if not path.is_file():
        raise KnowledgeBankError(f"knowledge bank not found: {path}")
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise KnowledgeBankError(
            f"knowledge bank {path}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except UnicodeDecodeError as exc:
        raise KnowledgeBankError(f"knowledge bank {path}: not UTF-8 text ({exc.reason})") from None
    if not isinstance(entries, list) or not entries:
        raise KnowledgeBankError(
            f"knowledge bank {path}: must be a non-empty JSON list of term objects"
        )
    terms: list[Term] = []
    seen: dict[str, int] = {}
    allowed = {"term", "topic", "definition", "formula"}
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise _entry_error(path, index, entry, f"must be an object, got {type(entry).__name__}")
        unknown = sorted(set(entry) - allowed)
        if unknown:
            raise _entry_error(path, index, entry, f"unknown field(s) {', '.join(unknown)}")
        name = _text_field(path, index, entry, "term")
        key = name.casefold()
        if key in seen:
            raise _entry_error(path, index, entry, f"field 'term' repeats entry #{seen[key]}")
        seen[key] = index
        terms.append(
            Term(
                term=name,
                topic=_text_field(path, index, entry, "topic"),
                definition=_text_field(path, index, entry, "definition"),
                formula=_formula(path, index, entry),
            )
        )
    return terms


def bank_hash(terms: Sequence[Term]) -> str:
    payload = json.dumps([t.__dict__ for t in terms], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def load_oracle(path: str | Path | None = None) -> dict[str, list[str]]:
    """question_id -> the bank terms the question needs."""
    path = Path(path) if path is not None else oracle_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise KnowledgeBankError(f"oracle annotations {path}: {exc}") from None
    if not isinstance(data, dict):
        raise KnowledgeBankError(f"oracle annotations {path}: must be a JSON object")
    for question_id, names in data.items():
        if (
            not isinstance(names, list)
            or not 1 <= len(names) <= 3
            or not all(isinstance(n, str) and n for n in names)
        ):
            raise KnowledgeBankError(
                f"oracle annotations {path}: {question_id!r} must list 1 to 3 term names"
            )
    return data


_ENTRY_LINE = re.compile(
    r"^\s*(?:[-*•]\s*|\d+[.)]\s*)?\**\s*([^:\n*]{2,80}?)\s*\**\s*:\s*\**\s*(\S.*)$", re.MULTILINE
)


NAME_LABELS = {"term", "concept", "name", "financial term", "key term"}
BODY_LABELS = {"definition", "formula", "explanation", "description", "meaning", "equation"}


def parse_written_terms(reply: str) -> list[tuple[str, str]]:
    """(term, definition) pairs from a reply written as "Term: definition" lines.

    Models often label the parts instead ("Term: NPV" then "Formula: ..."): a
    name label starts a new entry named by its text, and a body label adds its
    text to the entry before it.
    """
    entries: list[list[str]] = []
    for match in _ENTRY_LINE.finditer(reply):
        name, text = match.group(1).strip(), match.group(2).strip()
        label = name.casefold()
        if label in NAME_LABELS:
            entries.append([text, ""])
        elif label in BODY_LABELS:
            if entries:
                entries[-1][1] = f"{entries[-1][1]} {text}".strip()
        else:
            entries.append([name, text])
    return [(name, definition) for name, definition in entries]


def question_text(state: TaskState) -> str:
    """The question with its tables (the query and what the model reads in llm_kb)."""
    metadata = state.metadata or {}
    tables = metadata.get("tables") or []
    question = metadata.get("question") or state.input_text
    return "\n\n".join([*tables, question]) if tables else question


class KnowledgeBase:
    """A bank with its indexes, built once per task (per run)."""

    def __init__(
        self,
        terms: list[Term],
        oracle: dict[str, list[str]] | None = None,
        *,
        dense: bool = False,
        embedding_model: str = DEFAULT_EMBEDDING_MODEL,
        encoder: Any = None,
    ) -> None:
        self.terms = terms
        self.by_name = {t.term.casefold(): i for i, t in enumerate(terms)}
        self.oracle = oracle or {}
        texts = [t.index_text() for t in terms]
        self.bm25 = BM25Index(texts)
        self.dense = DenseIndex(texts, embedding_model, encoder=encoder) if dense else None

    def needed(self, state: TaskState) -> list[str] | None:
        question_id = (state.metadata or {}).get("question_id", state.sample_id)
        return self.oracle.get(str(question_id))

    def record(self, hits: list[Hit], state: TaskState, **extra: Any) -> dict[str, Any]:
        names = [self.terms[h.index].term for h in hits]
        record: dict[str, Any] = {
            **extra,
            "terms": names,
            "ranks": [h.rank for h in hits],
            "scores": [round(h.score, 6) for h in hits],
        }
        needed = self.needed(state)
        if needed is not None:
            chosen = {n.casefold() for n in names}
            found = {n: n.casefold() in chosen for n in needed}
            record["needed"] = needed
            record["needed_retrieved"] = found
            record["recall"] = sum(found.values()) / len(found)
        return record

    def selection(self, hits: list[Hit], state: TaskState, **extra: Any) -> Selection:
        return Selection(
            passages=[self.terms[h.index].passage() for h in hits],
            record=self.record(hits, state, **extra),
        )


async def _write_terms(state: TaskState) -> str:
    prompt = LLM_KB_PROMPT.format(max_terms=LLM_KB_MAX_TERMS, question=question_text(state))
    output = await get_model().generate([ChatMessageUser(content=prompt)])
    return output.completion.strip()


def merge_round_robin(rankings: list[list[Hit]], n: int) -> list[Hit]:
    """First hits of every ranking, then second hits, ..., without repeats; re-ranked 1..n."""
    merged: list[Hit] = []
    seen: set[int] = set()
    depth = max((len(r) for r in rankings), default=0)
    for level in range(depth):
        for ranking in rankings:
            if level < len(ranking) and ranking[level].index not in seen:
                seen.add(ranking[level].index)
                merged.append(Hit(ranking[level].index, len(merged) + 1, ranking[level].score))
                if len(merged) == n:
                    return merged
    return merged


def knowledge_solver(
    setting: Knowledge, base: KnowledgeBase, top_n: int, retriever: Retriever = "bm25"
) -> Solver:
    """The solver that places the setting's knowledge before the question."""

    def search(query: str, n: int) -> list[Hit]:
        if retriever == "dense":
            assert base.dense is not None, "retriever=dense needs a KnowledgeBase(dense=True)"
            return base.dense.search(query, n)
        return base.bm25.search(query, n)

    async def oracle(state: TaskState) -> Selection:
        needed = base.needed(state)
        if needed is None:
            return Selection([], {"setting": setting, "terms": [], "note": "no annotation"})
        found = [n for n in needed if n.casefold() in base.by_name]
        hits = [Hit(base.by_name[n.casefold()], r, 1.0) for r, n in enumerate(found, 1)]
        missing = [n for n in needed if n.casefold() not in base.by_name]
        extra = {"missing_from_bank": missing} if missing else {}
        return base.selection(hits, state, setting=setting, **extra)

    async def lexical(state: TaskState) -> Selection:
        query = question_text(state)
        return base.selection(base.bm25.search(query, top_n), state, setting=setting)

    async def dense(state: TaskState) -> Selection:
        assert base.dense is not None
        query = question_text(state)
        return base.selection(base.dense.search(query, top_n), state, setting=setting)

    async def llm_kb(state: TaskState) -> Selection:
        reply = await _write_terms(state)
        written = [name for name, _ in parse_written_terms(reply)]
        return Selection(
            [reply] if reply else [],
            {"setting": setting, "model_reply": reply, "terms": written},
        )

    async def reranked(state: TaskState) -> Selection:
        query = question_text(state)
        candidates = search(query, RERANK_POOL * top_n)
        result = await rerank(
            get_model(), query, [base.terms[h.index].passage() for h in candidates], top_n
        )
        hits = [
            Hit(candidates[i].index, rank, candidates[i].score)
            for rank, i in enumerate(result.order, 1)
        ]
        return base.selection(
            hits,
            state,
            setting=setting,
            retriever=retriever,
            candidates=[base.terms[h.index].term for h in candidates],
            model_reply=result.reply,
            chosen_by_model=result.chosen_by_model,
        )

    async def instructed(state: TaskState) -> Selection:
        reply = await _write_terms(state)
        written = parse_written_terms(reply)
        queries = [
            f"{name}: {definition}" if definition else name for name, definition in written
        ] or ([reply] if reply else [question_text(state)])
        rankings = [search(q, top_n) for q in queries]
        return base.selection(
            merge_round_robin(rankings, top_n),
            state,
            setting=setting,
            retriever=retriever,
            queries=queries,
            model_reply=reply,
        )

    selectors = {
        "oracle": oracle,
        "bm25": lexical,
        "dense": dense,
        "llm_kb": llm_kb,
        "rerank": reranked,
        "instructed": instructed,
    }
    return insert_passages(selectors[setting], KNOWLEDGE_TEMPLATE, metadata_key=METADATA_KEY)
