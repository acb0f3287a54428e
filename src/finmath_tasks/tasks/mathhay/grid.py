"""MathHay's experiment grids and report layout for ``finmath grid`` / ``finmath report``.

Two grids (``finmath grid mathhay [--grid depth]``): ``main``, the paper's main
table (the seven task types x lengths 32K/64K/128K, default placements), and
``depth``, the placement depth sweep of its heatmap figure (p1..p9 x lengths, one
task type: ``sssd`` unless ``-T task_type=`` says otherwise). One run per cell, so
each cell's interval is the task's own 95% interval (``accuracy_ci``).
"""

from __future__ import annotations

from finmath_tasks.cli.declare import Grid, Interval, Plot, Report, Table
from finmath_tasks.tasks.mathhay.dataset import TASK_TYPES
from finmath_tasks.tasks.mathhay.task import PAPER_LENGTHS, mathhay

LENGTHS = list(PAPER_LENGTHS)
DEPTHS = [f"p{n}" for n in range(1, 10)]
DEPTH_TASK_TYPE = "sssd"

GRIDS = {
    "main": Grid(
        task=mathhay,
        axes={"task_type": list(TASK_TYPES), "length": LENGTHS},
        description="task types x lengths, default placements (the paper's main table)",
    ),
    "depth": Grid(
        task=mathhay,
        axes={"task_type": [DEPTH_TASK_TYPE], "placement": DEPTHS, "length": LENGTHS},
        description="placement depth sweep p1..p9 x lengths (the paper's heatmap)",
    ),
}

METRIC = "finmath_tasks/accuracy_ci"
MAIN = {"placement": None}
DEPTH = {"placement": DEPTHS}

REPORT = Report(
    accuracy=f"{METRIC}_accuracy",
    interval=Interval(
        kind="bounds", level=0.95, low=f"{METRIC}_ci95_low", high=f"{METRIC}_ci95_high"
    ),
    hide=["data_dir", "max_prompt_tokens"],
    tables=[
        Table(
            title="MathHay accuracy (official verdict) by task type x length",
            score="mathhay",
            columns=["length"],
            rows=["task_type"],
            where=MAIN,
            caption="Exact match or the judge's equivalence (without a grader: exact match).",
        ),
        Table(
            title="MathHay exact match by task type x length",
            score="exact_match",
            columns=["length"],
            rows=["task_type"],
            where=MAIN,
        ),
        Table(
            title="Depth sweep: accuracy (official verdict) by placement x length",
            score="mathhay",
            columns=["length"],
            rows=["placement"],
            where=DEPTH,
        ),
    ],
    plots=[
        Plot(
            name="accuracy_by_length",
            kind="line",
            score="mathhay",
            x="length",
            title="MathHay accuracy by haystack length",
            where=MAIN,
        ),
        Plot(
            name="depth_x_length",
            kind="heatmap",
            score="mathhay",
            x="length",
            y="placement",
            title="MathHay accuracy by placement depth x length",
            where=DEPTH,
        ),
    ],
)
