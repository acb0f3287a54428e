"""Refuse, per sample, a prompt longer than the model's context window.

``prompt_budget(max_tokens)`` counts the conversation's tokens with tiktoken
(``o200k_base`` by default) before generation. A prompt over the budget is not
sent and never silently truncated: the sample is marked completed without a
model call, and the reason is recorded in the sample's store under
``OVER_BUDGET_KEY`` for the scorer to report (the sample is then wrong or
unscored with that reason, as the task decides). The eval goes on.

``max_tokens="auto"`` takes the budget from the context length Inspect knows
for the evaluated model (``inspect_ai.model.get_model_info``); for a model it
does not know, nothing is checked (the provider's own limit then applies).
Counts are o200k_base tokens, exact for models using that encoding and an
approximation for others.
"""

from __future__ import annotations

from typing import Literal

from inspect_ai.solver import Generate, Solver, TaskState, solver

OVER_BUDGET_KEY = "prompt_over_budget"
PROMPT_TOKENS_KEY = "prompt_tokens"


def count_tokens(text: str, encoding: str = "o200k_base") -> int:
    from finmath_tasks.tiktoken_offline import get_encoding

    return len(get_encoding(encoding).encode(text, disallowed_special=()))


def conversation_text(state: TaskState) -> str:
    return "\n".join(message.text for message in state.messages)


def known_context_length(model: str) -> int | None:
    """The context length Inspect's model database gives ``model``, or None."""
    from inspect_ai.model import get_model_info

    try:
        info = get_model_info(model)
    except Exception:  # an unknown or unconfigured provider: no known limit
        return None
    return info.context_length if info is not None else None


@solver
def prompt_budget(
    max_tokens: int | Literal["auto"] | None = "auto", encoding: str = "o200k_base"
) -> Solver:
    """Record the prompt's token count; stop the sample when it exceeds the budget."""
    known: dict[str, int | None] = {}

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        tokens = count_tokens(conversation_text(state), encoding)
        state.store.set(PROMPT_TOKENS_KEY, tokens)
        budget: int | None
        origin = "the context budget"
        if max_tokens == "auto":
            model = str(state.model)
            if model not in known:
                known[model] = known_context_length(model)
            budget = known[model]
            origin = f"the context length of {model}"
        else:
            budget = max_tokens
        if budget is not None and tokens > budget:
            state.store.set(
                OVER_BUDGET_KEY,
                f"prompt of {tokens} tokens ({encoding}) exceeds {origin} of {budget} tokens; "
                "not sent to the model",
            )
            state.completed = True
        return state

    return solve
