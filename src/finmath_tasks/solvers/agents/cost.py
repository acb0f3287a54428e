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

from finmath_tasks.cli.cost import (
    Cost,
    SampleLoad,
    built,
    conversation_bounds,
    count_tokens,
    message_tokens,
    render_first_turns,
)
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


def first_prompt(name: str, sample: Any, instruction: str) -> str:
    """The analyst's first user turn of agent ``name`` for ``sample`` (as ``render_question``)."""
    metadata = sample.metadata or {}
    input_text = sample.input if isinstance(sample.input, str) else ""
    return P.fill(
        P.ANALYST_POT if name == "pot" else P.ANALYST_COT,
        context=str(metadata.get("context", "")),
        question=str(metadata.get("question", input_text)),
        answer_instruction=instruction,
    )


def agent_cost(
    task: Callable[..., Any],
    instruction: str | Callable[[Mapping[str, Any]], str] = P.DEFAULT_ANSWER_INSTRUCTION,
    default: str = "cot",
) -> Cost:
    """The dry-run counting of a task whose ``solver`` argument names an agent (or another
    solver, whose prompts are rendered): the analyst's first turn from the templates, the
    calls per sample from :data:`AGENT_CALLS`, the later turns bounded by
    :func:`follow_up_tokens` and the generation limit."""

    def build(args: Mapping[str, Any]) -> Any:
        return built(task, args)

    def solver_of(args: Mapping[str, Any]) -> str:
        return str(args.get("solver", default))

    def text_of(args: Mapping[str, Any]) -> str:
        return instruction(args) if callable(instruction) else instruction

    def loads(args: Mapping[str, Any], max_tokens: int | None) -> list[SampleLoad]:
        name = solver_of(args)
        built_task = build(args)
        if name not in AGENT_CALLS:
            return [SampleLoad(message_tokens(m)) for m in render_first_turns(built_task)]
        calls = AGENT_CALLS[name]
        text = text_of(args)
        follow_up = follow_up_tokens(count_tokens, text) if calls[1] > 1 else 0
        return [
            conversation_bounds(
                count_tokens(first_prompt(name, sample, text)), calls, max_tokens, follow_up
            )
            for sample in built_task.dataset
        ]

    def max_tokens(args: Mapping[str, Any]) -> int | None:
        limit: int | None = build(args).config.max_tokens
        return limit

    def note(args: Mapping[str, Any]) -> str:
        name = solver_of(args)
        if name not in AGENT_CALLS:
            return "prompts rendered"
        low, high = AGENT_CALLS[name]
        return "" if high == 1 else f"{name}: {low}-{high} calls per sample"

    return Cost(loads=loads, max_tokens=max_tokens, note=note)
