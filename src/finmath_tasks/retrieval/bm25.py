"""BM25 (Okapi) over a list of passages, with ``rank-bm25``'s scoring and a fast query path.

``rank-bm25`` (the ``retrieval`` extra) computes the statistics (idf with its
epsilon floor, document lengths, k1, b); its own ``get_scores`` loops over every
passage for every query token in Python. The index here folds the
query-independent part of the formula into one sparse passage x term matrix
once, so a query costs one sparse matrix-vector product; the scores are the
same as ``BM25Okapi.get_scores`` (a test checks it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from finmath_tasks.retrieval.base import Hit, RetrievalUnavailable, tokenize, top_hits

INSTALL_HINT = (
    "BM25 retrieval needs the rank-bm25 package, a dependency of finmath-tasks that is "
    "missing here: pip install rank-bm25"
)


def _bm25_okapi() -> Any:
    try:
        from rank_bm25 import BM25Okapi
    except ImportError as exc:
        raise RetrievalUnavailable(INSTALL_HINT) from exc
    return BM25Okapi


class BM25Index:
    """Okapi BM25 over ``passages``; build once, query many times."""

    def __init__(
        self,
        passages: Sequence[str],
        tokenizer: Callable[[str], list[str]] = tokenize,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
    ) -> None:
        import numpy as np
        from scipy.sparse import csr_matrix

        if not passages:
            raise ValueError("BM25Index needs at least one passage")
        self.tokenizer = tokenizer
        corpus = [tokenizer(text) for text in passages]
        # rank-bm25 divides by zero on an all-empty corpus; one placeholder token avoids it
        corpus = [tokens or [""] for tokens in corpus]
        self.okapi = _bm25_okapi()(corpus, k1=k1, b=b, epsilon=epsilon)
        self.size = len(corpus)
        self.vocabulary: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        weights: list[float] = []
        okapi = self.okapi
        for row, (frequencies, length) in enumerate(
            zip(okapi.doc_freqs, okapi.doc_len, strict=True)
        ):
            norm = okapi.k1 * (1 - okapi.b + okapi.b * length / okapi.avgdl)
            for term, tf in frequencies.items():
                idf = okapi.idf.get(term) or 0.0
                col = self.vocabulary.setdefault(term, len(self.vocabulary))
                rows.append(row)
                cols.append(col)
                weights.append(idf * tf * (okapi.k1 + 1) / (tf + norm))
        self.matrix = csr_matrix(
            (np.array(weights), (np.array(rows), np.array(cols))),
            shape=(self.size, max(len(self.vocabulary), 1)),
        )

    def scores(self, query: str) -> Any:
        """BM25 score of every passage for ``query`` (a numpy array, passage order)."""
        import numpy as np

        counts = Counter(self.tokenizer(query))
        vector = np.zeros(self.matrix.shape[1])
        for term, count in counts.items():
            col = self.vocabulary.get(term)
            if col is not None:
                vector[col] = count
        return self.matrix @ vector

    def search(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best passages for ``query``, best first."""
        return top_hits(self.scores(query), k)

    def naive_scores(self, query: str) -> Any:
        """``rank-bm25``'s own scoring (a loop over the passages per query token)."""
        return self.okapi.get_scores(self.tokenizer(query))
