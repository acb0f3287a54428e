"""Facts for the retrieval-augmented CoT prompt: BM25 over sentences and table rows, or the gold facts.

The retrieval units of a document are FinQA's own: each sentence of
pre_text + post_text (``text_i``) and each table row (``table_j``), the keys
``qa.gold_inds`` uses. A row is indexed linearised with its column headers
("net sales: 2017 8953 ; 2016 ..."), and shown in the prompt as a Markdown
table: the header row, then the chosen rows in table order. Chosen sentences
are listed in document order above it.

``bm25``: the question as the query, the ``top_k`` best units (sentences and
rows compete in one ranking). ``gold``: the units of ``gold_inds``. The
recall against ``gold_inds`` (the share of gold units retrieved) is recorded
for the ``retrieval_recall`` score value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from inspect_ai.solver import TaskState

from finmath_tasks.retrieval.passages import Selection
from finmath_tasks.tasks.finqa.dataset import table_markdown

Retrieval = Literal["bm25", "gold", "none"]

TEXT_HEADER = "Text:"
TABLE_HEADER = "Table:"


@dataclass(frozen=True)
class Unit:
    key: str
    """``text_i`` or ``table_j``."""
    text: str
    """What BM25 indexes."""


def linearise_row(header: Sequence[str], row: Sequence[str]) -> str:
    """A table row as text for the index: its name, then each column header with its cell."""
    if not row:
        return ""
    cells = [
        f"{h} {c}".strip()
        for h, c in zip(list(header[1:]) + [""] * len(row), row[1:], strict=False)
    ]
    return f"{row[0]}: " + " ; ".join(cells)


def units(metadata: Mapping[str, Any]) -> list[Unit]:
    sentences = list(metadata["pre_text"]) + list(metadata["post_text"])
    table = metadata["table"]
    header = table[0] if table else []
    out = [Unit(f"text_{i}", s) for i, s in enumerate(sentences)]
    for j, row in enumerate(table):
        out.append(Unit(f"table_{j}", " ; ".join(row) if j == 0 else linearise_row(header, row)))
    return out


def _order(key: str) -> tuple[int, int]:
    kind, _, n = key.partition("_")
    return (0 if kind == "text" else 1, int(n))


def render_facts(sentences: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The passages shown: the sentences (one per line), then the rows as a Markdown table."""
    passages = []
    if sentences:
        passages.append(TEXT_HEADER + "\n" + "\n".join(f"- {s.strip()}" for s in sentences))
    if rows:
        passages.append(TABLE_HEADER + "\n" + table_markdown(rows))
    return passages


def chosen_units(
    metadata: Mapping[str, Any], keys: Sequence[str]
) -> tuple[list[str], list[list[str]]]:
    """The sentences of ``keys`` in document order, and their rows under the table's header."""
    sentences = list(metadata["pre_text"]) + list(metadata["post_text"])
    table = metadata["table"]
    ordered = sorted(set(keys), key=_order)
    chosen_sentences = [sentences[int(k[5:])] for k in ordered if k.startswith("text_")]
    row_ids = [int(k[6:]) for k in ordered if k.startswith("table_")]
    rows = [table[0]] + [table[j] for j in row_ids if j != 0] if row_ids else []
    return chosen_sentences, rows


def facts_for(metadata: Mapping[str, Any], keys: Sequence[str]) -> list[str]:
    """The passages of the units ``keys``: sentences in document order, the table with its header."""
    return render_facts(*chosen_units(metadata, keys))


def recall(retrieved: Sequence[str], gold: Sequence[str]) -> float | None:
    """Share of the gold units retrieved; None when the sample has no gold units."""
    if not gold:
        return None
    return len(set(retrieved) & set(gold)) / len(set(gold))


def bm25_keys(metadata: Mapping[str, Any], k: int) -> tuple[list[str], list[float]]:
    from finmath_tasks.retrieval.bm25 import BM25Index

    pool = units(metadata)
    if not pool:
        return [], []
    hits = BM25Index([u.text for u in pool]).search(metadata["question"], k)
    return [pool[h.index].key for h in hits], [round(h.score, 4) for h in hits]


def selector(strategy: str, top_k: int) -> Callable[[TaskState], Selection]:
    """The ``insert_passages`` selector for ``strategy`` (bm25 or gold)."""

    def select(state: TaskState) -> Selection:
        metadata = state.metadata
        gold = sorted(metadata.get("gold_inds") or {}, key=_order)
        scores: list[float] = []
        if strategy == "gold":
            keys = list(gold)
        elif strategy == "bm25":
            keys, scores = bm25_keys(metadata, top_k)
        else:
            raise ValueError(f"unknown retrieval strategy {strategy!r}")
        record: dict[str, Any] = {
            "strategy": strategy,
            "retrieved": keys,
            "gold": gold,
            "recall": recall(keys, gold),
        }
        if strategy == "bm25":
            record.update(top_k=top_k, scores=scores)
        return Selection(facts_for(metadata, keys), record)

    return select
