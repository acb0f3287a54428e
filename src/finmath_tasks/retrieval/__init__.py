"""Retrieval shared by benchmarks (BM25, dense, LLM re-ranking, a solver that inserts
passages). Empty until the first retrieval-augmented benchmark fills it."""
