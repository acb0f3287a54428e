"""The documents stage: one document per atomic query, from a local collection.

``--documents DIR``: every ``.txt``, ``.md``/``.markdown``, ``.html``/``.htm``
file (its visible text) and every ``.jsonl`` file (one document per line, its
``text`` field) under DIR. Each atomic query takes its top BM25 document (the
package's :class:`~finmath_tasks.retrieval.bm25.BM25Index`) as the reference
takes the top search result; a query that shares no term with any document
finds nothing. Files that are empty, binary (not UTF-8, or holding NUL bytes)
or larger than ``--max-document-mb`` are skipped with their reason (in the
report), never read whole into memory.

Writes ``collected_documents.json`` in the reference's schema: for each topic
and subtopic, each query ``{"decomposable_query", "atomic_queries",
"documents": [pieces or "", one per atomic query]}`` where a result is the list
of its text pieces (one piece: the document), plus ``sources`` (the file and
line of each result). The reference's web search (``--search tavily``) is in
:mod:`finmath_tasks.tasks.mathhay.build.search` and writes the same file.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from finmath_tasks.tasks.mathhay.build.layout import BuildError, Layout, write_json

TEXT_SUFFIXES = {".txt", ".md", ".markdown"}
HTML_SUFFIXES = {".html", ".htm"}
JSONL_SUFFIXES = {".jsonl"}
DEFAULT_MAX_DOCUMENT_MB = 10.0


class _Text(HTMLParser):
    SKIP = frozenset({"script", "style", "noscript", "head"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.depth = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in self.SKIP:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP and self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if not self.depth and data.strip():
            self.parts.append(data.strip())


def html_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    parser.close()
    return "\n".join(parser.parts)


@dataclass
class Collection:
    texts: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    skipped_files: list[str] = field(default_factory=list)

    def skip(self, path: Path | str, reason: str) -> None:
        self.skipped[reason] += 1
        self.skipped_files.append(f"{path}: {reason}")


def _decode(data: bytes) -> str | None:
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def read_collection(folder: Path, max_mb: float = DEFAULT_MAX_DOCUMENT_MB) -> Collection:
    """The documents of a folder (sorted by path); errors name the folder."""
    if not folder.is_dir():
        raise BuildError(f"--documents {folder}: no such directory")
    limit = int(max_mb * 1024 * 1024)
    out = Collection()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        suffix = path.suffix.lower()
        if suffix not in TEXT_SUFFIXES | HTML_SUFFIXES | JSONL_SUFFIXES:
            out.skip(path, "not a text, Markdown, HTML or JSON-lines file")
            continue
        size = path.stat().st_size
        if size > limit:
            out.skip(path, f"larger than --max-document-mb {max_mb:g}")
            continue
        text = _decode(path.read_bytes())
        if text is None:
            out.skip(path, "binary (not UTF-8 text)")
            continue
        if suffix in JSONL_SUFFIXES:
            for n, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    out.skip(f"{path}:{n}", "line is not JSON")
                    continue
                doc = obj.get("text") if isinstance(obj, dict) else None
                if not isinstance(doc, str) or not doc.strip():
                    out.skip(f"{path}:{n}", "no 'text' field")
                    continue
                out.texts.append(doc)
                out.sources.append(f"{path.relative_to(folder)}:{n}")
            continue
        if suffix in HTML_SUFFIXES:
            text = html_text(text)
        if not text.strip():
            out.skip(path, "empty")
            continue
        out.texts.append(text)
        out.sources.append(str(path.relative_to(folder)))
    if not out.texts:
        detail = "; ".join(out.skipped_files[:5]) or "the folder is empty"
        raise BuildError(f"--documents {folder}: no readable document ({detail})")
    return out


def collect(
    queries: dict[str, Any], find: Callable[[str], tuple[list[str] | None, str | None]]
) -> tuple[dict[str, Any], int, int, int]:
    """``collected_documents.json`` from ``subtopics_and_queries.json``: each query with
    ``documents`` (per atomic query, the text pieces ``find`` returns, or ``""``) and
    ``sources``; also the counts of atomic queries, of those with a document, and of
    queries. ``find`` is the documents stage's source (a local collection, a search)."""
    out: dict[str, Any] = {}
    atomic_count = found = query_count = 0
    for topic, subtopics in queries.items():
        out[topic] = []
        for sub in subtopics:
            qs = []
            for q in sub["Queries"]:
                docs: list[Any] = []
                sources: list[str | None] = []
                for atomic in q["atomic_queries"]:
                    pieces, source = find(str(atomic))
                    atomic_count += 1
                    if pieces:
                        found += 1
                        docs.append(list(pieces))
                        sources.append(source)
                    else:
                        docs.append("")
                        sources.append(None)
                query_count += 1
                qs.append({**q, "documents": docs, "sources": sources})
            out[topic].append({"subtopic": sub["subtopic"], "Queries": qs})
    return out, atomic_count, found, query_count


@dataclass
class CollectResult:
    queries: int = 0
    atomic: int = 0
    found: int = 0
    collection: Collection | None = None


def run_documents(
    layout: Layout,
    queries: dict[str, Any],
    folder: Path,
    *,
    max_mb: float = DEFAULT_MAX_DOCUMENT_MB,
    overwrite: bool = False,
) -> CollectResult:
    from finmath_tasks.retrieval.bm25 import BM25Index

    layout.check_writable(layout.collected, overwrite)
    collection = read_collection(folder, max_mb)
    index = BM25Index(collection.texts)
    result = CollectResult(collection=collection)

    def find(atomic: str) -> tuple[list[str] | None, str | None]:
        hits = index.search(atomic, 1)
        hit = hits[0] if hits else None
        if hit is None or hit.score <= 0:
            return None, None
        return [collection.texts[hit.index]], collection.sources[hit.index]

    out, result.atomic, result.found, result.queries = collect(queries, find)
    write_json(layout.collected, out)
    return result
