"""Refuse, per sample, a prompt longer than the model's context window.

``prompt_budget(max_tokens)`` counts the conversation's tokens with tiktoken
(``o200k_base`` by default) before generation. A prompt over the budget is not
sent and never silently truncated: the sample is marked completed without a
model call, and the reason is recorded in the sample's store under
``OVER_BUDGET_KEY`` for the scorer to report (the sample is then wrong or
unscored with that reason, as the task decides). The eval goes on.
"""

from __future__ import annotations

from inspect_ai.solver import Generate, Solver, TaskState, solver

OVER_BUDGET_KEY = "prompt_over_budget"
PROMPT_TOKENS_KEY = "prompt_tokens"


def count_tokens(text: str, encoding: str = "o200k_base") -> int:
    import tiktoken

    return len(tiktoken.get_encoding(encoding).encode(text, disallowed_special=()))


def conversation_text(state: TaskState) -> str:
    return "\n".join(message.text for message in state.messages)


@solver
def prompt_budget(max_tokens: int | None, encoding: str = "o200k_base") -> Solver:
    """Record the prompt's token count; stop the sample when it exceeds ``max_tokens``."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        tokens = count_tokens(conversation_text(state), encoding)
        state.store.set(PROMPT_TOKENS_KEY, tokens)
        if max_tokens is not None and tokens > max_tokens:
            state.store.set(
                OVER_BUDGET_KEY,
                f"prompt of {tokens} tokens ({encoding}) exceeds the context budget of "
                f"{max_tokens} tokens; not sent to the model",
            )
            state.completed = True
        return state

    return solve
