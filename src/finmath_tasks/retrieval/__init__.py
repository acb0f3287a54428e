"""Retrieval shared by benchmarks: lexical (BM25) and dense indexes over a list of
passages, LLM re-ranking of candidates, and a solver that inserts the chosen
passages into the user prompt.

Heavy or optional dependencies (``rank-bm25``, ``sentence-transformers``) are
imported when an index is built, never at import time, so the package registry
stays cheap.
"""

from finmath_tasks.retrieval.base import Hit, RetrievalUnavailable, tokenize

__all__ = ["Hit", "RetrievalUnavailable", "tokenize"]
