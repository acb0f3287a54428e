"""SARA's experiment grid and report layout for ``finmath grid`` / ``finmath report``.

Mavi et al. compare prompting modes (Table 4; Table 1's "+ Ret" rows are its CoT
column) and statute retrieval strategies (Table 3) with 90% confidence intervals
(normal approximation); the task logs Inspect's 90% Wilson interval (``ci90_lower``,
``ci90_upper``, clustered by case), which the report shows. The grid runs retrieval x
prompting on the entailment cases of the test split: every reproducible cell of
``published.tsv`` (mentioned_only x the three modes) is one of its runs. The
unreadable replies (counted as wrong) are metrics of each run's log,
``unreadable`` beside the accuracy.
"""

from __future__ import annotations

from finmath_tasks.cli.cost import Cost
from finmath_tasks.cli.declare import Grid, Groups, Interval, Plot, Report, Strata, Table
from finmath_tasks.scorers.metrics import document_of
from finmath_tasks.tasks.sara import cost
from finmath_tasks.tasks.sara.scoring import CI_LEVEL
from finmath_tasks.tasks.sara.task import sara

GRID = Grid(
    task=sara,
    axes={
        "retrieval": ["none", "mentioned_only", "entire_section", "references", "all_statutes"],
        "prompting": ["zero_shot", "few_shot", "cot"],
    },
    description="statute retrieval strategies x prompting modes (entailment, test split)",
)

REPORT = Report(
    accuracy="accuracy",
    cluster=document_of,
    interval=Interval(kind="bounds", level=CI_LEVEL, low="ci90_lower", high="ci90_upper"),
    groups=Groups(prefix="section=", key="section", label="section"),
    tables=[
        Table(
            title="Entailment accuracy: retrieval x prompting (90% CI)",
            score="entailment",
            columns=["retrieval", "prompting"],
        ),
        Table(
            title="Entailment accuracy by statute section (90% CI)",
            score="entailment",
            columns="groups",
            rows=["retrieval", "prompting"],
        ),
    ],
    plots=[
        Plot(
            name="retrieval_x_prompting",
            kind="heatmap",
            score="entailment",
            x="retrieval",
            y="prompting",
            title="SARA entailment accuracy",
        ),
    ],
)

COST = Cost(loads=cost.loads, max_tokens=cost.max_tokens)
"""Dry-run counting from the cases and templates (see cost.py); the task sets no
generation limit, so give ``--max-tokens`` for an output bound."""


STRATA = Strata(key="section", label="statute section")
"""``--limit N``: a case of each statute section in turn (the report's per-section
accuracies), not the first N cases of one section."""
