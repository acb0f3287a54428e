"""The one solver that puts selected passages into the prompt: ``insert_passages``.

The selection is the caller's: ``select(state)`` (plain or async) returns a
:class:`Selection` (passages plus anything worth logging: ids, ranks, scores,
queries, model replies), or just the passages (a string, a list of strings, or
None for none). The solver renders them into the LAST user message (the
question being asked; earlier user turns may be few-shot exemplars) through
``template``, whose ``{passages}`` and ``{prompt}`` placeholders receive the
joined passages and the message's current text; with no passages the message is
left as it is. What was chosen is recorded in the sample's metadata under
``metadata_key``, so the log shows it next to the score.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.model import ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver

logger = logging.getLogger(__name__)

DEFAULT_TEMPLATE = "{passages}\n\n{prompt}"
_PLACEHOLDER = re.compile(r"\{(passages|prompt)\}")

Passages = str | Sequence[str] | None


@dataclass
class Selection:
    """What a selector chose for one sample."""

    passages: list[str]
    """Rendered passages, in the order they go into the prompt."""
    record: dict[str, Any] = field(default_factory=dict)
    """Anything worth logging (ids, ranks, scores, queries, model replies)."""


Selector = Callable[[TaskState], "Selection | Passages | Awaitable[Selection | Passages]"]


def as_selection(chosen: Selection | Passages) -> Selection:
    if isinstance(chosen, Selection):
        return chosen
    if chosen is None:
        return Selection([])
    items = [chosen] if isinstance(chosen, str) else list(chosen)
    return Selection([p for p in items if p.strip()])


def last_user_message(state: TaskState) -> ChatMessageUser:
    for message in reversed(state.messages):
        if isinstance(message, ChatMessageUser):
            return message
    raise ValueError("the conversation has no user message to insert passages into")


def render_passages(template: str, prompt: str, passages: Passages, separator: str = "\n\n") -> str:
    """``template`` filled with the joined ``passages`` and ``prompt`` (``prompt`` alone if none).

    One pass over the template: text inside a passage or the prompt that looks
    like a placeholder is left as it is.
    """
    items = as_selection(passages).passages
    if not items:
        return prompt
    values = {"passages": separator.join(items), "prompt": prompt}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


@solver
def insert_passages(
    select: Selector,
    template: str = DEFAULT_TEMPLATE,
    metadata_key: str = "retrieval",
    separator: str = "\n\n",
) -> Solver:
    """Insert the passages ``select`` chooses into the last user message through ``template``.

    A data problem in the selection of one sample (a ``ValueError``,
    ``KeyError``, ``IndexError`` or ``TypeError``: a bad record, an unreadable
    reply) leaves that sample's prompt without passages, records the error under
    ``metadata_key`` and logs a warning in the sample's transcript. Other errors
    (a model call that failed after Inspect's retries) propagate as they would
    from ``generate``, so Inspect's error handling (``fail_on_error``, retries of
    samples) applies; a missing optional dependency stops the eval.
    """
    if "{prompt}" not in template or "{passages}" not in template:
        raise ValueError("template must contain both {passages} and {prompt}")

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        try:
            chosen = select(state)
            if inspect.isawaitable(chosen):
                chosen = await chosen
            selection = as_selection(chosen)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            logger.warning("passage selection failed for sample %s: %s", state.sample_id, reason)
            state.metadata[metadata_key] = {"error": reason, "passages": 0}
            return state
        message = last_user_message(state)
        message.content = render_passages(template, message.text, selection.passages, separator)
        state.metadata[metadata_key] = {
            **selection.record,
            "passages": len(selection.passages),
            "chars": sum(len(p) for p in selection.passages),
        }
        return state

    return solve
