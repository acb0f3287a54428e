"""The filter stage: the reference's document checks, then the pool.

A text piece passes when it has more than ``min_numbers`` distinct numbers,
at least ``min_sentences`` sentences, ``min_words`` words and ``min_entities``
distinct named entities (the reference's defaults: 10, 5, 100, 5). What counts:

- a number: digits with optional thousands groups (``1,234``) and decimals, as
  whole words; bare 4-digit numbers (years) are not numbers, and no match starts
  at a date written ``d/m/yy(yy)`` or ``yyyy-mm-dd`` (``/``, ``-`` or ``.``),
  though the date's later parts still count (``12/05/2024`` gives ``05``: the
  reference's pattern behaves so; ours gives the same matches on every document
  of the released pool). The reference's
  pattern also allows a trailing ``%`` but ends in a word boundary, so the ``%``
  is part of the match only when a word character follows it (``5%x``); before
  a space ``5.5%`` counts as ``5.5``. We keep the pattern as it behaves;
- a sentence: a non-blank piece between ``.``, ``!`` or ``?``;
- a word: a run of word characters;
- an entity: a distinct entity text of spaCy's ``en_core_web_sm`` (spaCy from the
  ``mathhay-build`` extra, the model from spaCy: ``python -m spacy download
  en_core_web_sm``; with ``--min-entities 0`` spaCy is not needed).

Of each atomic query's result, the first piece that passes is kept. Writes
``filtered_documents.json`` (the reference's schema: each query with
``filtered_documents``, the kept texts) and the pool ``documents.json``:
``[{"Document_ID": "Doc_<i>", "Document"}]`` in that order. A query's kept
texts that are identical (one local document found by two atomic queries) are
kept once; otherwise the pool is the kept texts as they are.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from finmath_tasks.tasks.mathhay.build.layout import DOC_PREFIX, BuildError, Layout, write_json

MIN_NUMBERS = 10
MIN_SENTENCES = 5
MIN_WORDS = 100
MIN_ENTITIES = 5
SPACY_MODEL = "en_core_web_sm"
"""spaCy's own package of the pipeline, as spaCy publishes it (3.8.0 for spaCy 3.8)."""
INSTALL_HINT = (
    "the filter counts named entities with spaCy's en_core_web_sm: in the checkout, "
    "pip install -e '.[mathhay-build]' and python -m spacy download en_core_web_sm, "
    "or pass --min-entities 0 to skip that check"
)

_DATE_AHEAD = r"(?!\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b|\d{4}[/.-]\d{1,2}[/.-]\d{1,2}\b)"
_NUMBER = re.compile(r"\b" + _DATE_AHEAD + r"(?!\b\d{4}\b)\d+(?:,\d{3})*(?:\.\d+)?%?\b")
_SENTENCE_END = re.compile(r"[.!?]")
_WORD = re.compile(r"\b\w+\b")


def distinct_numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(text))


def sentence_count(text: str) -> int:
    return sum(1 for s in _SENTENCE_END.split(text) if s.strip())


def word_count(text: str) -> int:
    return len(_WORD.findall(text))


@dataclass(frozen=True)
class Thresholds:
    min_numbers: int = MIN_NUMBERS
    min_sentences: int = MIN_SENTENCES
    min_words: int = MIN_WORDS
    min_entities: int = MIN_ENTITIES


class EntityCounter:
    """Distinct named entities of a text with spaCy (loaded once, on first use)."""

    def __init__(self) -> None:
        self._nlp: Any = None

    def load(self) -> None:
        if self._nlp is None:
            try:
                import spacy
            except ImportError as e:
                raise BuildError(f"filter: {INSTALL_HINT} (ImportError: {e})") from e
            try:
                self._nlp = spacy.load(SPACY_MODEL)
            except (ImportError, OSError) as e:
                raise BuildError(f"filter: {INSTALL_HINT} ({SPACY_MODEL}: {e})") from e

    def __call__(self, text: str) -> int:
        self.load()
        return len({ent.text for ent in self._nlp(text).ents})


def failed_check(text: str, t: Thresholds, entities: EntityCounter | None) -> str | None:
    """The first check ``text`` fails (the reference's order), or None when it passes."""
    if len(distinct_numbers(text)) <= t.min_numbers:
        return f"{t.min_numbers} or fewer distinct numbers"
    if sentence_count(text) < t.min_sentences:
        return f"fewer than {t.min_sentences} sentences"
    if word_count(text) < t.min_words:
        return f"fewer than {t.min_words} words"
    if t.min_entities > 0 and (entities is None or entities(text) < t.min_entities):
        return f"fewer than {t.min_entities} named entities"
    return None


@dataclass
class FilterResult:
    results: int = 0
    kept: int = 0
    pool: int = 0
    dropped: Counter[str] = field(default_factory=Counter)


def run_filter(
    layout: Layout, collected: dict[str, Any], thresholds: Thresholds, *, overwrite: bool = False
) -> FilterResult:
    for path in (layout.filtered, layout.pool):
        layout.check_writable(path, overwrite)
    entities = EntityCounter() if thresholds.min_entities > 0 else None
    if entities is not None:
        entities.load()  # a missing spaCy stops here, before any work
    result = FilterResult()
    filtered: dict[str, Any] = {}
    pool: list[dict[str, str]] = []
    for topic, subtopics in collected.items():
        subs = []
        for sub in subtopics:
            qs = []
            for q in sub.get("Queries", []):
                kept: list[str] = []
                for found in q.get("documents", []):
                    if not found:
                        result.dropped["no search result"] += 1
                        continue
                    pieces = [found] if isinstance(found, str) else found
                    result.results += 1
                    reasons: list[str] = []
                    for piece in pieces:
                        if (
                            isinstance(piece, str)
                            and (why := failed_check(piece, thresholds, entities)) is None
                        ):
                            if piece not in kept:
                                kept.append(piece)
                            else:
                                result.dropped["same document as another atomic query's"] += 1
                            break
                        reasons.append(why or "" if isinstance(piece, str) else "not text")
                    else:
                        result.dropped[reasons[0] if reasons else "no text"] += 1
                if kept:
                    result.kept += len(kept)
                    qs.append(
                        {
                            "decomposable_query": q["decomposable_query"],
                            "atomic_queries": q["atomic_queries"],
                            "filtered_documents": kept,
                        }
                    )
                    for text in kept:
                        pool.append({"Document_ID": f"{DOC_PREFIX}{len(pool)}", "Document": text})
            if qs:
                subs.append({"subtopic": sub["subtopic"], "Queries": qs})
        if subs:
            filtered[topic] = subs
    if not pool:
        raise BuildError(
            f"filter: no document passed ({dict(result.dropped)}); lower the thresholds "
            "(--min-numbers, --min-sentences, --min-words, --min-entities) or add documents"
        )
    result.pool = len(pool)
    write_json(layout.filtered, filtered)
    write_json(layout.pool, pool)
    return result
