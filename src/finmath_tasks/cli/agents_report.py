"""The agents paper's tables for ``finmath report``, shared by the benchmarks that run the agents.

A benchmark's ``grid.py`` adds :func:`agent_tables` to its ``REPORT`` (with
:data:`GOLD_KIND_GROUPS` as its ``groups``): Table 1 (accuracy per agent
configuration under each comparison), the ``critic_oracle`` setting apart (it reads
the gold answer), flip statistics (counts as logged), the change analysis of the
flips (the paper's Table 3: per flip direction, the count and the share of minor and
major changes) and accuracy by integer vs float gold answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from finmath_tasks.cli.declare import Column, Groups, Table
from finmath_tasks.solvers.agents.scoring import FLIP_KEYS, FLIP_SHARE_LABELS, GOLD_PREFIX
from finmath_tasks.solvers.agents.solvers import AGENT_NAMES, GOLD_LABEL_AGENTS

TABLE1_AGENTS: tuple[str, ...] = tuple(a for a in AGENT_NAMES if a not in GOLD_LABEL_AGENTS)
"""The agents paper's Table 1 configurations (no gold labels while solving)."""

GOLD_KIND_GROUPS = Groups(prefix=GOLD_PREFIX, key="gold_kind", label="gold answer kind")
"""Accuracy by the kind of gold answer (integer, float, text), from the agent scorer."""

FLIP_LABELS = {
    "correct_to_wrong": "correct→wrong",
    "wrong_to_correct": "wrong→correct",
    "minor_change": "minor change",
    "major_change": "major change",
}
COUNT = "count"
CHANGE_NOTE = (
    "A minor change keeps the steps the model wrote exactly the same (after "
    "normalising spacing, case, punctuation and number formatting; the restated "
    "answer aside) and changes only the answer; a major change changes the steps. "
    "Shares are over the flips whose two stages both recorded their steps."
)
GOLD_NOTE = (
    "critic_oracle USES GOLD LABELS (the critic runs only when the first answer is wrong "
    "by the gold answer): not comparable with the configurations of Table 1."
)


def agent_tables(
    name: str, keys: Sequence[str], where: dict[str, str] | None = None
) -> list[Table]:
    """The agents paper's tables for a task whose agent scorer logs ``keys`` (first: the paper's).

    ``name``: the benchmark's name as the titles show it (titles are unique in a report).
    """
    base = dict(where or {})
    table1 = {**base, "solver": list(TABLE1_AGENTS)}
    gold = {**base, "solver": list(GOLD_LABEL_AGENTS)}
    every = {**base, "solver": [*TABLE1_AGENTS, *GOLD_LABEL_AGENTS]}
    tables = [
        Table(
            title=f"{name} agent configurations: {key} accuracy (Table 1)",
            score=key,
            columns=["solver"],
            where=table1,
        )
        for key in keys
    ]
    tables += [
        Table(
            title=f"{name} critic_oracle, USES GOLD LABELS: {key} accuracy",
            score=key,
            columns=["solver"],
            where=gold,
            caption=GOLD_NOTE,
        )
        for key in keys
    ]
    tables.append(
        Table(
            title=f"{name} agent configurations: flips from the first to the final answer",
            values=[
                Column("first_answer", "accuracy", f"first answer right % ({keys[0]})", True),
                *(Column(k, COUNT, FLIP_LABELS[k]) for k in FLIP_KEYS),
            ],
            rows=["solver"],
            where=every,
            caption=(
                f"Counts of samples (right/wrong under {keys[0]}); minor and major changes "
                f"are counted for flipped samples only: {CHANGE_NOTE} {GOLD_NOTE}"
            ),
        )
    )
    tables.append(
        Table(
            title=f"{name} change analysis of the flips (Table 3)",
            values=[
                column
                for flip, short in (("correct_to_wrong", "CW"), ("wrong_to_correct", "WC"))
                for column in (
                    Column(flip, COUNT, f"{short} flips"),
                    Column("minor_change", FLIP_SHARE_LABELS[flip], f"{short} minor %", True),
                    Column("major_change", FLIP_SHARE_LABELS[flip], f"{short} major %", True),
                )
            ],
            rows=["solver"],
            where=every,
            caption=(
                f"Per flip direction (CW: right first, wrong at the end under {keys[0]}; WC: "
                f"the reverse): the number of flips and the share of them with a minor or "
                f"major change. {CHANGE_NOTE} {GOLD_NOTE}"
            ),
        )
    )
    tables += [
        Table(
            title=f"{name} agent configurations: {key} accuracy by integer vs float gold answer",
            score=key,
            columns="groups",
            rows=["solver"],
            where=table1,
        )
        for key in keys
    ]
    return tables
