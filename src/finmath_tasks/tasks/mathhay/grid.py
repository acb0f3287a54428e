"""MathHay's experiment grids and report layout for ``finmath grid`` / ``finmath report``.

Grids (``finmath grid mathhay [--grid NAME]``), one run per cell, so each cell's
interval is the task's own 95% interval (Inspect's Wilson, clustered by document group:
``ci95_lower``, ``ci95_upper``):

``main``
    The paper's Table 3: release v1, the verified, unverified and
    verified+unverified ("Full") sets x 32K/64K/128K, every task type with the
    paper's placements (9 runs). The table's SSSD/MSSD/SSMD/MSMD columns are
    the ``category`` groups of each run, its Overall column the run's accuracy.
``o1``
    Table 3 for o1-mini and o1-preview: the same runs, with the reference's
    20000-token reserve at 128K (``reserve=20000``) instead of 2000.
``depth``
    Figure 4: single-document tasks (``sssd`` and ``mssd`` = 2ssd+3ssd) with
    the document at depths p1..p9 (10%..90%) x 32K/64K/128K, on v1's verified
    set (the figure does not name its set; see the README's audit).
"""

from __future__ import annotations

from finmath_tasks.cli.cost import Cost
from finmath_tasks.cli.declare import (
    ArgValue,
    Column,
    Grid,
    Groups,
    Interval,
    Plot,
    PublishedScore,
    Report,
    Strata,
    Table,
)
from finmath_tasks.scorers.metrics import document_of
from finmath_tasks.tasks.mathhay import cost
from finmath_tasks.tasks.mathhay.dataset import PAPER_SUBSETS, release_info
from finmath_tasks.tasks.mathhay.haystack import O1_LONG_LENGTH_RESERVE
from finmath_tasks.tasks.mathhay.scoring import OFFICIAL, PAPER_JUDGE
from finmath_tasks.tasks.mathhay.task import GENERATE_CONFIG, PAPER_LENGTHS, mathhay

LENGTHS = list(PAPER_LENGTHS)
SUBSETS = list(PAPER_SUBSETS)
DEPTHS = [f"p{n}" for n in range(1, 10)]
DEPTH_TASK_TYPES = ["sssd", "mssd"]
"""Figure 4's single-document tasks: SSSD and MSSD."""
PAPER_RELEASE = "v1"
DEPTH_SUBSET = "verified"


def _o1_run(subset: str, length: int) -> dict[str, ArgValue]:
    run: dict[str, ArgValue] = {"release": PAPER_RELEASE, "subset": subset, "length": length}
    if length == 128000:
        run["reserve"] = O1_LONG_LENGTH_RESERVE
    return run


GRIDS = {
    "main": Grid(
        task=mathhay,
        axes={"release": [PAPER_RELEASE], "subset": SUBSETS, "length": LENGTHS},
        description="Table 3: verified / unverified / full sets x lengths, paper placements",
    ),
    "o1": Grid(
        task=mathhay,
        runs=[_o1_run(subset, length) for subset in SUBSETS for length in LENGTHS],
        description="Table 3 for o1-mini / o1-preview (20000-token reserve at 128K)",
    ),
    "depth": Grid(
        task=mathhay,
        axes={
            "release": [PAPER_RELEASE],
            "subset": [DEPTH_SUBSET],
            "task_type": DEPTH_TASK_TYPES,
            "placement": DEPTHS,
            "length": LENGTHS,
        },
        description="Figure 4: sssd / mssd x placement depth p1..p9 x lengths",
    ),
}

RETIRED = {
    "order": "the samples always go in prefix order; Inspect's --sample-shuffle gives another",
    "in_flight": "the prefix order is spaced for 10 requests in flight (--max-connections 10); "
    "other concurrency only misses some cache reads",
}
"""Parameters of 3.1.0 that set only the order the samples are sent in (its logs hold them)."""

MAIN = {"placement": None, "subset": SUBSETS}
DEPTH = {"placement": DEPTHS}

PUBLISHED_SCORES = [
    PublishedScore(
        score=OFFICIAL,
        role="grader",
        role_model=PAPER_JUDGE,
        where={"judge": True},
        role_differs="the judge differs ({model}; the paper's: GPT-4o): an answer that is "
        "not an exact match is judged by another model than the paper's",
    ),
]
"""A judged run whose judge (the grader role, else the evaluated model) is not GPT-4o."""

REPORT = Report(
    accuracy="accuracy",
    published=PUBLISHED_SCORES,
    interval=Interval(kind="bounds", level=0.95, low="ci95_lower", high="ci95_upper"),
    groups=Groups(prefix="category=", key="category", label="category"),
    retired=RETIRED,
    resolve=lambda args: {
        "subset": args.get("subset") or release_info(str(args.get("release") or "v1")).subsets[0]
    },
    # the documents of a subtopic are gathered once and shared by its questions
    cluster=document_of,
    differs_noted={
        "judge": "scored by exact match only (judge={have}); the paper's numbers count an "
        "answer right by exact match OR its judge model's verdict, so this run's accuracy "
        "can only be lower",
    },
    generation=GENERATE_CONFIG.model_dump(exclude_none=True),
    tables=[
        Table(
            title="MathHay Table 3: accuracy (official verdict) by category",
            score="mathhay",
            columns="groups",
            rows=["subset", "length"],
            where=MAIN,
            caption="Exact match or the judge's equivalence (with judge=false: exact match).",
        ),
        Table(
            title="MathHay Table 3: overall accuracy (official verdict) by set x length",
            score="mathhay",
            columns=["length"],
            rows=["subset"],
            where=MAIN,
        ),
        Table(
            title="MathHay accuracy (official verdict) by task type",
            score="mathhay",
            columns="groups",
            rows=["subset", "length"],
            where=MAIN,
            groups=Groups(prefix="", key="task_type", label="task type", from_samples=True),
            caption="Computed from the log's samples (task type is not a metric of the run).",
        ),
        Table(
            title="MathHay exact match by set x length",
            score="exact_match",
            columns=["length"],
            rows=["subset"],
            where=MAIN,
        ),
        Table(
            title="MathHay judge and answer flags (samples; judge failures count as incorrect)",
            values=[
                Column("exact_match", "judge_unparseable", "judge reply unreadable"),
                Column("exact_match", "judge_error", "judge call failed"),
                Column("exact_match", "answer_unparseable", "answer unreadable"),
                Column("exact_match", "over_length", "over length"),
                Column("exact_match", "haystack_too_short", "length too short"),
            ],
            rows=["subset", "length", "task_type", "placement"],
        ),
        Table(
            title="Figure 4: accuracy (official verdict) by placement depth x length",
            score="mathhay",
            columns=["length"],
            rows=["task_type", "placement"],
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

COST = Cost(
    loads=cost.loads,
    max_tokens=cost.max_tokens,
    note=cost.note,
    prompts=cost.prompts,
    grader=cost.grader,
)
"""Dry-run counting: the haystack length as the prompt, no haystack built (see cost.py)."""


STRATA = Strata(
    key="task_type",
    label="task type",
    order=["sssd", "2ssd", "ss2d", "2s2d", "3ssd", "3s2d", "3s3d"],
)
"""``--limit N``: a question of each task type in turn, one of each of Table 3's
categories first (SSSD, MSSD, SSMD, MSMD), so ``--limit 2`` already has a single- and a
multi-document question, ``--limit 4`` every category and ``--limit 7`` every type."""
