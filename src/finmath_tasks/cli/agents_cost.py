"""Model calls per sample of each agent solver, and the tokens of their prompts, for
``finmath grid --dry-run`` (``finmath_tasks.cli.cost``).

Every agent call is its own prompt (``solvers/agents/solvers.py``, ``prompts.py``), so a sample's
input is the sum of its calls' prompts, each counted from its template with the
sample's document and question filled in and what the model wrote left out (the low
count), plus, for the high count, each model-written text it carries at the generation
limit and the calculator's checks at :data:`FOLLOW_UP_SLACK`:

- the analyst (cot, pot): its question; the critic: document, question, response;
  the revision: document, question, response, critique; the improved critic: document,
  question, previous answer; the comparison after an update: question, both replies;
  the calculator's extraction: its examples and the response; its final prompt: the
  response and the checks (:data:`AGENT_STEPS`);
- the fewest calls: the improved critic maintains, the calculator finds no equation,
  ``critic_oracle``'s first answer is right; the most: every optional call made.

No later prompt opens with the first turn (each opens with its own instruction, as the
paper's prompts do), and no opening shared by the samples' later prompts reaches a
provider's minimum cacheable length (the longest, the calculator's instructions and
examples, is about 410 tokens; the tests hold it under 1,024), so the prompt-cache
estimate counts the first turns only (``Cost(conversation=False)``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from finmath_tasks.cli.cost import (
    Cost,
    SampleLoad,
    built,
    count_tokens,
    message_tokens,
    render_first_turns,
)
from finmath_tasks.solvers.agents import prompts as P


class Call(NamedTuple):
    """One model call of an agent solver."""

    prompt: Callable[[str, str, str], str]
    """``(context, question, answer_instruction) -> prompt`` with the model's texts empty."""
    replies: int = 0
    """Model-written texts it carries (a response, a critique): each at most a reply."""
    checks: bool = False
    """It carries the calculator's checks (at most :data:`FOLLOW_UP_SLACK` tokens)."""
    optional: bool = False
    """Made only on some paths (not counted in the fewest calls)."""


def _analyst(template: str) -> Callable[[str, str, str], str]:
    return lambda c, q, i: P.fill(template, context=c, question=q, answer_instruction=i)


COT = Call(_analyst(P.ANALYST_COT))
POT = Call(_analyst(P.ANALYST_POT))
CRITIC = [
    Call(lambda c, q, i: P.critic_prompt(c, q, ""), replies=1),
    Call(lambda c, q, i: P.revision_prompt(c, q, "", "", i), replies=2),
]
IMPROVED_CRITIC = [
    Call(lambda c, q, i: P.improved_critic_prompt(c, q, "", i), replies=1),
    Call(lambda c, q, i: P.compare_prompt(q, "", "", i), replies=2, optional=True),
]
CALCULATOR = [
    Call(lambda c, q, i: P.extraction_prompt(""), replies=1),
    Call(lambda c, q, i: P.final_prompt("", "", i), replies=1, checks=True, optional=True),
]

AGENT_STEPS: dict[str, list[Call]] = {
    "cot": [COT],
    "pot": [POT],
    "critic": [COT, *CRITIC],
    "icritic": [COT, *IMPROVED_CRITIC],
    "calculator": [COT, *CALCULATOR],
    "critic_calculator": [COT, *CRITIC, *CALCULATOR],
    "icritic_calculator": [COT, *IMPROVED_CRITIC, *CALCULATOR],
    "critic_oracle": [COT, *(c._replace(optional=True) for c in CRITIC)],
}
"""Each agent's calls in order, as ``solvers.agent_solver`` makes them."""

AGENT_CALLS: dict[str, tuple[int, int]] = {
    name: (sum(not c.optional for c in calls), len(calls)) for name, calls in AGENT_STEPS.items()
}
"""Agent -> (fewest, most) calls of the evaluated model per sample."""

FOLLOW_UP_SLACK = 512
"""Tokens allowed for the calculator's checks in its final prompt (one line per equation)."""


def agent_calls(name: str) -> tuple[int, int]:
    """(fewest, most) calls of the evaluated model per sample of agent ``name``."""
    if name not in AGENT_CALLS:
        raise ValueError(f"no call bounds for agent {name!r}")
    return AGENT_CALLS[name]


def sample_inputs(sample: Any) -> tuple[str, str]:
    """A sample's document and question, as the solvers read them."""
    metadata = sample.metadata or {}
    input_text = sample.input if isinstance(sample.input, str) else ""
    return str(metadata.get("context", "")), str(metadata.get("question", input_text))


def first_prompt(name: str, sample: Any, instruction: str) -> str:
    """The analyst's first user turn of agent ``name`` for ``sample`` (as ``render_question``)."""
    context, question = sample_inputs(sample)
    return AGENT_STEPS[name][0].prompt(context, question, instruction)


def sample_load(
    name: str,
    sample: Any,
    instruction: str,
    max_tokens: int | None,
    count: Callable[[str], int] = count_tokens,
) -> SampleLoad:
    """One sample's calls and input tokens under agent ``name`` (see the module docstring).

    Without a generation limit the high count leaves the model's texts out (as the low)."""
    context, question = sample_inputs(sample)
    calls = AGENT_STEPS[name]
    sizes = [count(call.prompt(context, question, instruction)) for call in calls]
    low = sum(n for n, call in zip(sizes, calls, strict=True) if not call.optional)
    high = sum(
        n + call.replies * (max_tokens or 0) + (FOLLOW_UP_SLACK if call.checks else 0)
        for n, call in zip(sizes, calls, strict=True)
    )
    fewest, most = AGENT_CALLS[name]
    return SampleLoad(sizes[0], fewest, most, low, high)


def agent_cost(
    task: Callable[..., Any],
    instruction: str | Callable[[Mapping[str, Any]], str] = P.DEFAULT_ANSWER_INSTRUCTION,
    default: str = "cot",
) -> Cost:
    """The dry-run counting of a task whose ``solver`` argument names an agent (or another
    solver, whose prompts are rendered): every call's prompt from the templates
    (:func:`sample_load`), the calls per sample from :data:`AGENT_STEPS`."""

    def build(args: Mapping[str, Any]) -> Any:
        return built(task, args)

    def solver_of(args: Mapping[str, Any]) -> str:
        return str(args.get("solver", default))

    def text_of(args: Mapping[str, Any]) -> str:
        return instruction(args) if callable(instruction) else instruction

    def loads(args: Mapping[str, Any], max_tokens: int | None) -> list[SampleLoad]:
        name = solver_of(args)
        built_task = build(args)
        if name not in AGENT_STEPS:
            return [SampleLoad(message_tokens(m)) for m in render_first_turns(built_task)]
        text = text_of(args)
        return [sample_load(name, sample, text, max_tokens) for sample in built_task.dataset]

    def max_tokens(args: Mapping[str, Any]) -> int | None:
        limit: int | None = build(args).config.max_tokens
        return limit

    def note(args: Mapping[str, Any]) -> str:
        name = solver_of(args)
        if name not in AGENT_CALLS:
            return "prompts rendered"
        low, high = AGENT_CALLS[name]
        return "" if high == 1 else f"{name}: {low}-{high} calls per sample, a prompt each"

    return Cost(loads=loads, max_tokens=max_tokens, note=note, conversation=False)
