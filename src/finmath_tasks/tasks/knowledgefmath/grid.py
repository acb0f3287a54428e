"""KnowledgeFMATH's experiment grid and report layout for ``finmath grid`` / ``finmath report``.

The paper (Zhao et al., ACL 2024) evaluates zero-shot CoT and PoT on the test
split (Table 4: accuracy by topic and average) and CoT under the knowledge
settings of section 5 on the development split (Table 5). ``table4`` and
``table5`` declare those cells' settings (``published.tsv``); ``knowledge`` is
our wider sweep. It gives no confidence intervals: ours are Wilson's score interval
(Inspect's ``ci_wilson``, 95%) over the questions scored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from finmath_tasks.cli.cost import Cost
from finmath_tasks.cli.declare import (
    ArgValue,
    Extra,
    Grid,
    Groups,
    Interval,
    Need,
    Plot,
    PublishedScore,
    Report,
    Sandbox,
    Strata,
    Table,
)
from finmath_tasks.tasks.knowledgefmath import cost
from finmath_tasks.tasks.knowledgefmath.knowledge import Knowledge
from finmath_tasks.tasks.knowledgefmath.scoring import OFFICIAL
from finmath_tasks.tasks.knowledgefmath.task import CODE_SOLVERS, GENERATE_CONFIG, knowledgefmath

PAPER_COT = {"solver": "cot", "extractor": "model"}
"""The paper's CoT: the reference extracts the final number with an LLM (the ``grader`` role)."""

TABLE5_RETRIEVAL: list[dict[str, ArgValue]] = [
    {"knowledge": setting, "top_n": n, **({"retriever": retriever} if setting != retriever else {})}
    for retriever, n in (("bm25", 3), ("dense", 3), ("dense", 5))
    for setting in (retriever, "rerank", "instructed")
]
TABLE5_RUNS: list[dict[str, ArgValue]] = [
    {"knowledge": "none"},
    {"knowledge": "llm_kb"},
    *TABLE5_RETRIEVAL,
    {"knowledge": "oracle"},
]
"""Table 5's rows, in its order: BM25 n=3, the dense retriever n=3 and n=5 (each vanilla,
re-ranked by the model, instructed by the model), and oracle."""

GRIDS = {
    "knowledge": Grid(
        task=knowledgefmath,
        axes={"solver": ["cot", "pot"], "knowledge": list(get_args(Knowledge))},
        description="ours beyond the paper: CoT and PoT x every knowledge setting (none first)",
    ),
    "table4": Grid(
        task=knowledgefmath,
        runs=[{"split": "test", **PAPER_COT}, {"split": "test", "solver": "pot"}],
        description="Table 4: zero-shot CoT and PoT on the test split (answers withheld: "
        "generated and logged; the paper's numbers come from the leaderboard)",
    ),
    "table5": Grid(
        task=knowledgefmath,
        runs=[{"split": "validation", **PAPER_COT, **run} for run in TABLE5_RUNS],
        description="Table 5: CoT under the knowledge settings on the development "
        "(validation) split",
    ),
}

PLAIN = {"knowledge": "none"}

PAPER_SCORE = "knowledgefmath2023"
"""The score of the KnowledgeFMATH paper's own scoring (Tables 4 and 5: the reference's
January 2024 release); the leaderboard cells compare with ``financemath``."""
EXTRACTOR_DIFFERS = (
    "extractor={have} here, {wanted} in the published setting (the published CoT answers "
    "were extracted by a model: gpt-4o-mini for the leaderboard, gpt-3.5-turbo-1106 for the "
    "paper); on the leaderboard's recorded validation CoT outputs our rules give the "
    "recorded verdict on 7,862 of 8,000 (98.3 %, 40 models; mean accuracy 18.1 % against "
    "18.7 %: benchmarks/rules_agreement.py)"
)
"""The note of a run whose extractor is not the cell's (the default run's rules), beside
the leaderboard's cells: the agreement it cites was measured under ``financemath``."""
EXTRACTOR_DIFFERS_2023 = (
    "extractor={have} here, {wanted} in the published setting (the paper's CoT answers were "
    "extracted by gpt-3.5-turbo-1106); how often our rules agree with that extractor under "
    "the paper's 2023 scoring was not measured"
)
"""The same note beside the paper's cells (``knowledgefmath2023``): no agreement figure,
as none was measured with that scoring."""
PUBLISHED_SCORES = [
    PublishedScore(
        score=PAPER_SCORE,
        missing=f"this log has no {PAPER_SCORE} score (the paper's January 2024 scoring; "
        f"logs of earlier versions of the task lack it): not compared, {OFFICIAL} is "
        "another metric",
        role="grader",
        role_model="gpt-3.5-turbo-1106",
        where={"solver": "cot", "extractor": "model"},
        role_differs="the extractor differs ({model}; the paper's: gpt-3.5-turbo-1106): "
        "the number is close to Table 4's scoring, not the same",
        differs_noted={"extractor": EXTRACTOR_DIFFERS_2023},
    ),
    PublishedScore(
        score=OFFICIAL,
        role="grader",
        role_model="gpt-4o-mini",
        where={"solver": "cot", "extractor": "model"},
        role_differs="the extractor differs ({model}; the leaderboard's: gpt-4o-mini)",
    ),
    PublishedScore(
        score="execution_rate",
        missing="this run has no execution_rate score (CoT: only with extractor=model; the "
        "leaderboard's CoT execution rate is the share of extractor replies that do not say "
        '"none")',
    ),
]
REPORT = Report(
    accuracy="accuracy",
    published=PUBLISHED_SCORES,
    interval=Interval(kind="wilson", level=0.95),
    groups=Groups(prefix="topic=", key="topic", label="topic"),
    not_compared=["profile"],
    differs_noted={
        "extractor": EXTRACTOR_DIFFERS,
        "extractor_messages": "the extraction was sent as extractor_messages={have} "
        "(the reference's: {wanted})",
    },
    generation=GENERATE_CONFIG.model_dump(exclude_none=True),
    tables=[
        Table(
            title="Accuracy by solver (official FinanceMath comparison)",
            score=OFFICIAL,
            columns=["solver"],
            where=PLAIN,
        ),
        Table(
            title="Accuracy by topic (official comparison, no knowledge)",
            score=OFFICIAL,
            columns="groups",
            rows=["solver"],
            where=PLAIN,
        ),
        Table(
            title="PoT execution rate",
            score="execution_rate",
            columns=["knowledge"],
            where={"solver": "pot"},
            caption="Share of programs that ran to the end without an exception "
            "(the reference's definition; ours, a returned number: strict_execution_rate).",
        ),
        Table(
            title="Knowledge settings (official comparison)",
            score=OFFICIAL,
            columns=["knowledge"],
            rows=["solver"],
        ),
    ],
    plots=[
        Plot(
            name="accuracy_by_topic",
            kind="groups",
            score=OFFICIAL,
            title="Accuracy by topic (CoT, no knowledge)",
            where={**PLAIN, "solver": "cot"},
        ),
        Plot(
            name="execution_rate_vs_accuracy",
            kind="scatter",
            score=OFFICIAL,
            x="execution_rate",
            title="PoT: execution rate vs accuracy",
            where={"solver": "pot"},
        ),
        Plot(
            name="accuracy_by_knowledge",
            kind="line",
            score=OFFICIAL,
            x="knowledge",
            title="Accuracy by knowledge setting (CoT)",
            where={"solver": "cot"},
        ),
    ],
)

COST = Cost(
    loads=cost.loads,
    max_tokens=cost.max_tokens,
    note=cost.note,
    conversation=False,
    grader=cost.grader,
)
"""Dry-run counting from the records and the templates (see cost.py)."""


def run_needs(args: Mapping[str, Any]) -> list[Need]:
    """PoT runs model-written programs (an isolated sandbox); the dense retriever
    embeds with sentence-transformers (the ``dense`` extra)."""
    needs: list[Need] = []
    if args["solver"] in CODE_SOLVERS:
        needs.append(Sandbox())
    if args["knowledge"] != "none" and "dense" in (args["knowledge"], args["retriever"]):
        needs.append(Extra("dense", "sentence_transformers"))
    return needs


NEEDS = run_needs


STRATA = Strata(key="topic", label="topic")
"""``--limit N``: one question of each finance topic (Accounting, Corporate Finance, ...)
in turn, as Table 4 reports accuracy by topic."""
