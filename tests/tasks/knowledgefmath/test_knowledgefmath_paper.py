"""The paper's settings, pinned: a later change cannot drift silently.

Values from knowledgefmath.txt (Zhao et al., ACL 2024): appendix B.1
(generation), section 5.1 and Table 5 (knowledge settings), section 2.3
(splits); the reference code's PoT timeout.
"""

from __future__ import annotations

from typing import get_args

from finmath_tasks.sandbox.client import DEFAULT_TIMEOUT
from finmath_tasks.tasks.knowledgefmath.grid import GRIDS
from finmath_tasks.tasks.knowledgefmath.knowledge import RERANK_POOL, Knowledge, Retriever
from finmath_tasks.tasks.knowledgefmath.task import GENERATE_CONFIG, knowledgefmath


def test_generation_follows_appendix_b1() -> None:
    assert (GENERATE_CONFIG.temperature, GENERATE_CONFIG.top_p) == (1.0, 1.0)
    assert GENERATE_CONFIG.max_tokens == 512


def test_pot_programs_get_the_reference_three_seconds() -> None:
    assert DEFAULT_TIMEOUT == 3.0


def test_knowledge_settings_of_section_5() -> None:
    # oracle, LLM as knowledge base, retrieval (sparse and dense), re-ranker, instructed
    assert set(get_args(Knowledge)) == {
        "none", "oracle", "llm_kb", "bm25", "dense", "rerank", "instructed"
    }  # fmt: skip
    assert RERANK_POOL == 3  # "top-3n candidates", the model selects top-n
    assert set(get_args(Retriever)) == {"bm25", "dense"}  # both retrievers under Table 5
    task = knowledgefmath(split="demo", knowledge="bm25")
    assert task.metadata is not None and task.metadata["top_n"] == 3  # Table 5's n = 3


def test_table5_grid_is_the_papers_rows() -> None:
    runs = GRIDS["table5"].arg_sets()
    assert len(runs) == 12
    assert all(r["split"] == "validation" and r["solver"] == "cot" for r in runs)
    assert all(r["extractor"] == "model" for r in runs)  # the reference's LLM extraction
    retrieval = [r for r in runs if "top_n" in r]
    # BM25 n=3, dense n=3, dense n=5; each vanilla, re-ranked, instructed
    assert sorted((r.get("retriever", r["knowledge"]), r["top_n"]) for r in retrieval) == sorted(
        [("bm25", 3)] * 3 + [("dense", 3)] * 3 + [("dense", 5)] * 3
    )
    assert [r["knowledge"] for r in runs if "top_n" not in r] == ["none", "llm_kb", "oracle"]


def test_table4_grid_is_the_test_split_with_cot_and_pot() -> None:
    runs = GRIDS["table4"].arg_sets()
    assert runs == [
        {"split": "test", "solver": "cot", "extractor": "model"},
        {"split": "test", "solver": "pot"},
    ]
