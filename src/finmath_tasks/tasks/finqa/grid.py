"""FinQA's experiment grid and report layout for ``finmath grid`` / ``finmath report``.

Two papers: the retrieval-augmented CoT paper (Mavi et al., NLLP 2023) compares
retrieval settings for ``rag_cot`` (none, bm25, gold; scored with FinQA's official
execution and program accuracy); the agents paper (Tan et al.) compares the agent
configurations of its Table 1 on FinQA dev, its split (``rounding`` beside our
``tolerant``), with flip
statistics and int vs float gold answers. ``critic_oracle`` is run as well and
reported apart: it uses gold labels. The ``oracle`` solver (a pipeline check) is
not part of the grid. Neither paper gives intervals: ours are Wilson's score
interval (Inspect's ``ci_wilson``, 95%) over the questions scored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from finmath_tasks.cli.agents_cost import agent_cost
from finmath_tasks.cli.agents_report import GOLD_KIND_GROUPS, TABLE1_AGENTS, agent_tables
from finmath_tasks.cli.declare import Column, Grid, Interval, Need, Report, Sandbox, Strata, Table
from finmath_tasks.scorers.metrics import document_of
from finmath_tasks.solvers.agents.solvers import AGENT_NAMES, GOLD_LABEL_AGENTS, PROGRAM_AGENTS
from finmath_tasks.tasks.finqa.task import (
    AGENT_SPLIT,
    ANSWER_INSTRUCTION,
    DEFAULT_SPLIT,
    GENERATE_CONFIG,
    finqa,
)

RETRIEVALS = ["none", "bm25", "gold"]

GRID = Grid(
    task=finqa,
    axes={"split": [DEFAULT_SPLIT], "solver": ["rag_cot"], "retrieval": RETRIEVALS},
    runs=[{"split": AGENT_SPLIT, "solver": s} for s in [*TABLE1_AGENTS, *GOLD_LABEL_AGENTS]],
    description=(
        "rag_cot x retrieval none/bm25/gold (retrieval paper), then the agents paper's "
        "Table 1 configurations and critic_oracle (uses gold labels)"
    ),
)

RAG = {"solver": "rag_cot"}


def resolve_split(args: Mapping[str, Any]) -> dict[str, Any]:
    """The split a run evaluated. Task versions 1.1.0 to 3.0.0 had no fixed default (their
    logs record ``split=None``): the agent solvers read dev, rag_cot and oracle test."""
    split = args.get("split")
    if split is None:
        split = AGENT_SPLIT if args.get("solver") in AGENT_NAMES else DEFAULT_SPLIT
    return {"split": split}


REPORT = Report(
    accuracy="accuracy",
    interval=Interval(kind="wilson", level=0.95),
    groups=GOLD_KIND_GROUPS,
    not_compared=["profile"],
    generation=GENERATE_CONFIG.model_dump(exclude_none=True),
    resolve=resolve_split,
    # a question's id is <company>/<year>/page_<n>.pdf-<k>: questions on one annual report
    # share its text
    cluster=document_of,
    tables=[
        Table(
            title="Execution accuracy by retrieval (rag_cot, official FinQA)",
            score="execution_accuracy",
            columns=["retrieval"],
            where=RAG,
        ),
        Table(
            title="Program accuracy by retrieval (rag_cot, official FinQA)",
            score="program_accuracy",
            columns=["retrieval"],
            where=RAG,
        ),
        Table(
            title="Answer accuracy by retrieval (rag_cot, tolerant)",
            score="tolerant",
            columns=["retrieval"],
            where=RAG,
        ),
        Table(
            title="Retrieval recall of the gold facts (rag_cot)",
            values=[Column("retrieval_recall", "mean", "recall of gold_inds %", percent=True)],
            rows=["retrieval"],
            where={**RAG, "retrieval": ["bm25", "gold"]},
            caption="Mean share of a question's gold_inds among the facts shown.",
        ),
        *agent_tables("FinQA", ["rounding", "tolerant"]),
    ],
    notes=(
        "Agent configurations read the whole document; their retrieval argument is unused. "
        "critic_oracle uses gold labels and is reported apart."
    ),
)

COST = agent_cost(finqa, ANSWER_INSTRUCTION, default="rag_cot")
"""Dry-run counting: every agent call's own prompt from the templates (the document and the
question filled in, the model's texts bounded by the generation limit), the calls per
sample from the agent's steps; other solvers' prompts rendered."""


def run_needs(args: Mapping[str, Any]) -> list[Need]:
    """PoT runs model-written programs: an isolated sandbox."""
    return [Sandbox()] if args["solver"] in PROGRAM_AGENTS else []


NEEDS = run_needs


def evidence(metadata: Mapping[str, Any]) -> str:
    """Where a question's gold facts are (``gold_inds``): table, text or table+text."""
    gold = metadata.get("gold_inds")
    kinds = sorted({str(k).split("_")[0] for k in gold}) if isinstance(gold, dict) else []
    return "+".join(kinds) or "none"


STRATA = Strata(key="evidence", label="evidence source: table, text, both", of=evidence)
"""``--limit N``: questions answered from the table, from the text and from both (the
FinQA paper's own breakdown), in turn."""
