from __future__ import annotations

import sys

import numpy as np
import pytest

from finmath_tasks.retrieval import RetrievalUnavailable, tokenize
from finmath_tasks.retrieval.base import top_hits
from finmath_tasks.retrieval.bm25 import BM25Index

PASSAGES = [
    "Net present value: the sum of discounted cash flows of a project.",
    "Internal rate of return: the discount rate at which net present value is zero.",
    "Current ratio: current assets divided by current liabilities.",
    "Quick ratio: cash, marketable securities and receivables over current liabilities.",
    "Duration: the weighted average time to a bond's cash flows.",
    "",  # an empty passage is allowed and scores zero
]


def test_tokenize() -> None:
    assert tokenize("Price/Earnings (P/E) of 12.5x") == [
        "price",
        "earnings",
        "p",
        "e",
        "of",
        "12",
        "5x",
    ]


@pytest.mark.parametrize(
    "query",
    [
        "net present value of the cash flows",
        "current current liabilities ratio",  # repeated query tokens count twice, as in rank-bm25
        "words the bank never saw",
        "",
    ],
)
def test_scores_equal_rank_bm25(query: str) -> None:
    from rank_bm25 import BM25Okapi

    index = BM25Index(PASSAGES)
    reference = BM25Okapi([tokenize(p) or [""] for p in PASSAGES]).get_scores(tokenize(query))
    np.testing.assert_allclose(index.scores(query), reference, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(index.naive_scores(query), reference, rtol=1e-12, atol=1e-12)


def test_search_ranks_best_first() -> None:
    index = BM25Index(PASSAGES)
    hits = index.search("current liabilities ratio", 2)
    assert [h.index for h in hits] == [2, 3]
    assert [h.rank for h in hits] == [1, 2]
    assert hits[0].score > hits[1].score > 0
    assert len(index.search("ratio", 50)) == len(PASSAGES)


def test_top_hits_keeps_index_order_for_ties() -> None:
    hits = top_hits(np.array([1.0, 3.0, 3.0, 0.5, 3.0]), 3)
    assert [(h.index, h.rank) for h in hits] == [(1, 1), (2, 2), (4, 3)]
    assert top_hits(np.array([1.0]), 0) == []


def test_empty_index_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one passage"):
        BM25Index([])


def test_missing_rank_bm25_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rank_bm25", None)
    with pytest.raises(RetrievalUnavailable, match=r"rank-bm25 package.*: pip install rank-bm25$"):
        BM25Index(PASSAGES)
