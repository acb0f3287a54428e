"""A solver that inserts retrieved passages into the user prompt.

Retrieval itself is the caller's: ``retrieve(state)`` returns the passages for
the sample (a string, a list of strings, or None for none). The solver puts
them into the LAST user message (the question being asked; earlier user turns
may be few-shot exemplars) through ``template``, whose ``{passages}`` and
``{prompt}`` placeholders receive the joined passages and the message's
current text. With no passages the message is left as it is.

What was inserted is recorded in the sample's store under ``STORE_KEY``
(number of passages and characters), so a log shows what the model saw.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from inspect_ai.model import ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver

STORE_KEY = "retrieved_passages"

DEFAULT_TEMPLATE = "{passages}\n\n{prompt}"

Passages = str | Sequence[str] | None


def last_user_message(state: TaskState) -> ChatMessageUser:
    for message in reversed(state.messages):
        if isinstance(message, ChatMessageUser):
            return message
    raise ValueError("the conversation has no user message to insert passages into")


def render_passages(template: str, prompt: str, passages: Passages, separator: str = "\n\n") -> str:
    """``template`` filled with the joined ``passages`` and ``prompt`` (``prompt`` alone if none)."""
    if passages is None:
        return prompt
    items = [passages] if isinstance(passages, str) else list(passages)
    items = [p for p in items if p.strip()]
    if not items:
        return prompt
    return template.replace("{passages}", separator.join(items)).replace("{prompt}", prompt)


@solver
def insert_passages(
    retrieve: Callable[[TaskState], Passages],
    template: str = DEFAULT_TEMPLATE,
    separator: str = "\n\n",
) -> Solver:
    """Insert ``retrieve(state)`` into the last user message through ``template``."""
    if "{prompt}" not in template or "{passages}" not in template:
        raise ValueError("template must contain both {passages} and {prompt}")

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        passages = retrieve(state)
        message = last_user_message(state)
        message.content = render_passages(template, message.text, passages, separator)
        items = [] if passages is None else [passages] if isinstance(passages, str) else passages
        state.store.set(
            STORE_KEY,
            {"count": len(items), "chars": sum(len(p) for p in items)},
        )
        return state

    return solve
