"""KnowledgeFMATH's experiment grid and report layout for ``finmath grid`` / ``finmath report``.

The paper (Zhao et al., ACL 2024) evaluates zero-shot CoT and PoT (tables 3-4:
accuracy, by topic, and PoT execution rate) and the knowledge-augmentation
settings of section 5. It gives no confidence intervals: ours are
accuracy ± 1.96 x Inspect's stderr (95%).
"""

from __future__ import annotations

from typing import get_args

from finmath_tasks.cli.cost import Cost
from finmath_tasks.cli.declare import Grid, Groups, Interval, Plot, Report, Table
from finmath_tasks.tasks.knowledgefmath import cost
from finmath_tasks.tasks.knowledgefmath.knowledge import Knowledge
from finmath_tasks.tasks.knowledgefmath.scoring import OFFICIAL
from finmath_tasks.tasks.knowledgefmath.task import knowledgefmath

GRID = Grid(
    task=knowledgefmath,
    axes={"solver": ["cot", "pot"], "knowledge": list(get_args(Knowledge))},
    description="zero-shot CoT and PoT x the paper's knowledge settings (none first)",
)

PLAIN = {"knowledge": "none"}

REPORT = Report(
    accuracy="accuracy",
    interval=Interval(kind="stderr", level=0.95, stderr="stderr"),
    groups=Groups(prefix="grouped_", key="topic", label="topic"),
    hide=["sandbox", "data_dir", "knowledge_bank", "embedding_model"],
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
            caption="Share of programs that ran and returned a number.",
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

COST = Cost(loads=cost.loads, max_tokens=cost.max_tokens, note=cost.note)
"""Dry-run counting from the records and the templates (see cost.py)."""
