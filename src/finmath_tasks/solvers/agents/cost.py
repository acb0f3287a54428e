"""Model calls per sample of each agent solver, and the longest user turn it adds, for
``finmath grid --dry-run`` (``finmath_tasks.cli.cost``).

Calls, from the steps in ``solvers.py``: the analyst answers once; the critic step
adds two (critique, revision); the improved critic one (maintain) or two (update:
the analyst compares); the calculator one (no equation in the reply: the answer
stands) or two; ``critic_oracle`` runs the critic step only when the first answer
is wrong by the gold answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from finmath_tasks.cli.cost import Cost, count_tokens
from finmath_tasks.solvers.agents import prompts as P

AGENT_CALLS: dict[str, tuple[int, int]] = {
    "cot": (1, 1),
    "pot": (1, 1),
    "critic": (3, 3),
    "icritic": (2, 3),
    "calculator": (2, 3),
    "critic_calculator": (4, 5),
    "icritic_calculator": (3, 5),
    "critic_oracle": (1, 3),
}
"""Agent -> (fewest, most) calls of the evaluated model per sample."""

FOLLOW_UPS = (
    P.CRITIC,
    P.CRITIC_REVISION,
    P.IMPROVED_CRITIC,
    P.IMPROVED_CRITIC_COMPARE,
    P.CALCULATOR_EXTRACT,
    P.CALCULATOR_FINAL,
)
"""The templates of the user turns after the first (filled with an answer instruction,
two answers or the calculator's checks: a few hundred tokens more at most in practice)."""

FOLLOW_UP_SLACK = 512
"""Tokens allowed for what fills a follow-up template (answers, equation checks)."""


def agent_calls(name: str) -> tuple[int, int]:
    """(fewest, most) calls of the evaluated model per sample of agent ``name``."""
    if name not in AGENT_CALLS:
        raise ValueError(f"no call bounds for agent {name!r}")
    return AGENT_CALLS[name]


def follow_up_tokens(
    count: Callable[[str], int], instruction: str = P.DEFAULT_ANSWER_INSTRUCTION
) -> int:
    """Upper bound of one follow-up user turn's tokens: the longest template with the
    answer instruction, plus :data:`FOLLOW_UP_SLACK`; ``count`` counts a text's tokens."""
    longest = max(int(count(t)) for t in FOLLOW_UPS)
    return longest + int(count(instruction)) + FOLLOW_UP_SLACK


def agent_cost(
    instruction: str | Callable[[Mapping[str, Any]], str] = P.DEFAULT_ANSWER_INSTRUCTION,
    default: str = "cot",
) -> Cost:
    """The dry-run counting of a task whose ``solver`` argument names an agent: prompts
    rendered, calls from :data:`AGENT_CALLS` (one for a solver that is no agent)."""

    def solver_of(args: Mapping[str, Any]) -> str:
        return str(args.get("solver", default))

    def calls(args: Mapping[str, Any]) -> tuple[int, int]:
        return AGENT_CALLS.get(solver_of(args), (1, 1))

    def follow_up(args: Mapping[str, Any]) -> int:
        if calls(args)[1] == 1:
            return 0
        text = instruction(args) if callable(instruction) else instruction
        return follow_up_tokens(count_tokens, text)

    def note(args: Mapping[str, Any]) -> str:
        low, high = calls(args)
        return "" if high == 1 else f"{solver_of(args)}: {low}-{high} calls per sample"

    return Cost(calls=calls, follow_up=follow_up, note=note)
