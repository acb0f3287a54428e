"""TAT-QA's experiment grid and report layout for ``finmath grid`` / ``finmath report``.

The agents paper (Tan et al.) runs its Table 1 configurations on TAT-QA dev's
numerical questions (``split=dev subset=arithmetic``: 717), scored with
its ``rounding`` comparison (beside our ``tolerant``), with flip statistics and
int vs float gold answers. ``critic_oracle`` is run as well and reported apart:
it uses gold labels. The paper gives no intervals: ours are Wilson's score
interval (Inspect's ``ci_wilson``, 95%) over the questions scored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from finmath_tasks.cli.agents_cost import agent_cost
from finmath_tasks.cli.agents_report import GOLD_KIND_GROUPS, TABLE1_AGENTS, agent_tables
from finmath_tasks.cli.declare import Grid, Interval, Need, Report, Sandbox, Strata
from finmath_tasks.scorers.metrics import document_of
from finmath_tasks.solvers.agents.solvers import GOLD_LABEL_AGENTS, PROGRAM_AGENTS
from finmath_tasks.tasks.tatqa.task import (
    ALL_INSTRUCTION,
    ARITHMETIC_INSTRUCTION,
    GENERATE_CONFIG,
    tatqa,
)

GRID = Grid(
    task=tatqa,
    axes={
        "split": ["dev"],
        "subset": ["arithmetic"],
        "solver": [*TABLE1_AGENTS, *GOLD_LABEL_AGENTS],
    },
    description=(
        "the agents paper's Table 1 configurations and critic_oracle (uses gold labels), "
        "dev split, arithmetic subset (the paper's 717 numerical questions)"
    ),
)

REPORT = Report(
    accuracy="accuracy",
    interval=Interval(kind="wilson", level=0.95),
    groups=GOLD_KIND_GROUPS,
    not_compared=["profile"],
    generation=GENERATE_CONFIG.model_dump(exclude_none=True),
    cluster=document_of,
    tables=agent_tables("TAT-QA", ["rounding", "tolerant"], where={"subset": "arithmetic"}),
    notes="critic_oracle uses gold labels and is reported apart.",
)

COST = agent_cost(
    tatqa,
    lambda args: ARITHMETIC_INSTRUCTION if args.get("subset") == "arithmetic" else ALL_INSTRUCTION,
)
"""Dry-run counting: every agent call's own prompt from the templates (the document and the
question filled in, the model's texts bounded by the generation limit), the calls per
sample from the agent's steps; other solvers' prompts rendered."""


def run_needs(args: Mapping[str, Any]) -> list[Need]:
    """PoT runs model-written programs: an isolated sandbox."""
    return [Sandbox()] if args["solver"] in PROGRAM_AGENTS else []


NEEDS = run_needs


STRATA = Strata(key="answer_from", label="answer source: table, text, table-text")
"""``--limit N``: questions answered from the table, the text and both, in turn (the
TAT-QA paper's breakdown by answer source)."""
