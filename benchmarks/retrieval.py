"""Knowledge retrieval for knowledgefmath: recall against the oracle annotations, and BM25 latency.

On the 200 FinanceMath validation questions of
``$FINMATH_DATA_DIR/financemath/validation.json`` (default ``../shared/data``
beside the repository), with the packaged knowledge bank (or ``--bank``) and the
packaged oracle annotations (1 to 3 needed terms per question):

* recall@k for ``bm25`` and ``dense`` (k = 3 and 5): the share of a question's
  needed terms found in its top k, averaged over the questions; beside it the
  hit rate (questions with at least one needed term in the top k). The query is
  the question with its tables, as in ``-T knowledge=bm25|dense``.
* BM25 top-5 latency per query after the index is built, measured side by side
  in one run: our index (one sparse matrix-vector product per query) and the
  naive loop (``rank_bm25.BM25Okapi.get_scores``, which walks every passage of
  the bank for every query token, then a sort). Both rank the same passages; the
  script checks that before timing. Median and p95 over the 200 queries,
  ``--repeats`` passes, and the ratio of the medians.

Dense retrieval needs ``pip install 'finmath-tasks[dense]'``; without it the
dense rows say so. ``--embedding-model`` takes a Hub id or a local directory.

    python benchmarks/retrieval.py [--data-dir DIR] [--bank FILE] [--repeats N]
        [--embedding-model MODEL]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from finmath_tasks.retrieval import RetrievalUnavailable
from finmath_tasks.retrieval.base import top_hits
from finmath_tasks.retrieval.dense import DEFAULT_EMBEDDING_MODEL, DenseIndex
from finmath_tasks.tasks.knowledgefmath.dataset import load_dataset
from finmath_tasks.tasks.knowledgefmath.knowledge import (
    KnowledgeBase,
    load_bank,
    load_oracle,
    question_text,
)

REPO = Path(__file__).resolve().parents[1]


def recall_at(rankings: list[list[str]], needed: list[list[str]], k: int) -> tuple[float, float]:
    """(mean recall@k, hit rate@k) over the questions."""
    recalls, hits = [], []
    for ranked, need in zip(rankings, needed, strict=True):
        top = {t.casefold() for t in ranked[:k]}
        found = sum(n.casefold() in top for n in need)
        recalls.append(found / len(need))
        hits.append(1.0 if found else 0.0)
    return statistics.fmean(recalls), statistics.fmean(hits)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def time_queries(search: Any, queries: list[str], repeats: int) -> list[float]:
    """Per-query latencies in ms (the best of ``repeats`` passes for each query)."""
    best = [float("inf")] * len(queries)
    for _ in range(repeats):
        for i, query in enumerate(queries):
            start = time.perf_counter()
            search(query)
            best[i] = min(best[i], (time.perf_counter() - start) * 1000)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("FINMATH_DATA_DIR"))
    parser.add_argument("--bank", default=None, help="a knowledge bank JSON (default: packaged)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--embedding-model", default=DEFAULT_EMBEDDING_MODEL)
    args = parser.parse_args()
    data_dir = Path(args.data_dir) if args.data_dir else REPO.parent / "shared" / "data"
    if not data_dir.is_dir():
        print(f"no benchmark data at {data_dir}: set FINMATH_DATA_DIR or --data-dir")
        return 2

    samples = list(load_dataset("validation", data_dir=str(data_dir)))
    oracle = load_oracle()
    terms = load_bank(args.bank)

    class _State:  # question_text reads only metadata and input_text
        def __init__(self, sample: Any) -> None:
            self.metadata = sample.metadata
            self.input_text = sample.input

    queries = [question_text(_State(s)) for s in samples]  # type: ignore[arg-type]
    needed = [oracle[str(s.id)] for s in samples]
    print(
        f"{len(samples)} validation questions, bank of {len(terms)} terms, "
        f"{sum(map(len, needed))} annotated needed terms"
    )

    start = time.perf_counter()
    base = KnowledgeBase(terms, oracle)
    build_ms = (time.perf_counter() - start) * 1000
    rankings: dict[str, list[list[str]] | None] = {}
    rankings["bm25"] = [[terms[h.index].term for h in base.bm25.search(q, 5)] for q in queries]
    try:
        start = time.perf_counter()
        dense = DenseIndex([t.index_text() for t in terms], args.embedding_model)
        dense_build = (time.perf_counter() - start) * 1000
        rankings["dense"] = [[terms[h.index].term for h in dense.search(q, 5)] for q in queries]
        dense_note = (
            f"model {args.embedding_model}; bank embeddings "
            f"{'read from the cache' if dense.cached else 'computed and cached'} "
            f"in {dense_build:.0f} ms"
        )
    except RetrievalUnavailable as exc:
        rankings["dense"] = None
        dense_note = f"unavailable: {exc}"

    print("\nrecall against the oracle annotations (mean recall / hit rate)")
    print(f"{'retriever':<10} {'recall@3':>9} {'hit@3':>7} {'recall@5':>9} {'hit@5':>7}")
    for name, ranked in rankings.items():
        if ranked is None:
            print(f"{name:<10} {dense_note}")
            continue
        r3, h3 = recall_at(ranked, needed, 3)
        r5, h5 = recall_at(ranked, needed, 5)
        print(f"{name:<10} {r3:>9.3f} {h3:>7.3f} {r5:>9.3f} {h5:>7.3f}")
    if rankings["dense"] is not None:
        print(f"dense: {dense_note}")

    index = base.bm25
    for query in queries:  # same ranking both ways before timing
        ours = [h.index for h in index.search(query, 5)]
        naive = [h.index for h in top_hits(index.naive_scores(query), 5)]
        if ours != naive:
            print(f"rankings differ for query {query[:60]!r}: {ours} vs {naive}")
            return 1

    def naive_search(query: str) -> Any:
        return top_hits(index.naive_scores(query), 5)

    def our_search(query: str) -> Any:
        return index.search(query, 5)

    # interleave the two so that drift on a shared machine hits both alike
    ours_ms: list[float] = []
    naive_ms: list[float] = []
    for _ in range(args.repeats):
        ours_ms.append(statistics.median(time_queries(our_search, queries, 1)))
        naive_ms.append(statistics.median(time_queries(naive_search, queries, 1)))
    ours_all = time_queries(our_search, queries, args.repeats)
    naive_all = time_queries(naive_search, queries, args.repeats)
    print(
        f"\nBM25 top-5 latency per query ({len(queries)} queries, best of {args.repeats} passes; "
        f"index built once in {build_ms:.1f} ms)"
    )
    print(f"{'method':<28} {'median ms':>10} {'p95 ms':>8}")
    print(
        f"{'index (sparse matvec)':<28} {statistics.median(ours_all):>10.3f} {percentile(ours_all, 0.95):>8.3f}"
    )
    print(
        f"{'naive loop (rank_bm25)':<28} {statistics.median(naive_all):>10.3f} {percentile(naive_all, 0.95):>8.3f}"
    )
    ratio = statistics.median(naive_all) / statistics.median(ours_all)
    print(f"naive / index median ratio: {ratio:.1f}x")
    print(
        "per-pass medians (index, naive): "
        + ", ".join(f"{a:.3f}/{b:.3f}" for a, b in zip(ours_ms, naive_ms, strict=True))
    )
    target = statistics.median(ours_all) < 2.0
    print(f"target (index median under 2 ms): {'met' if target else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
