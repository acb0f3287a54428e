"""A solver that inserts selected passages into the user prompt.

The selection is the caller's (an async function of the sample's state: a
retriever, an oracle, a model call); this solver places the rendered passages
before (or after) the user prompt that an earlier solver rendered, and records
what was chosen in the sample's metadata under ``metadata_key``, so the log
shows the passages, their ranks and any retrieval figures next to the score.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from inspect_ai.solver import Generate, Solver, TaskState, solver

logger = logging.getLogger(__name__)


@dataclass
class Selection:
    """What a selector chose for one sample."""

    passages: list[str]
    """Rendered passages, in the order they go into the prompt."""
    record: dict[str, Any] = field(default_factory=dict)
    """Anything worth logging (ids, ranks, scores, queries, model replies)."""


Selector = Callable[[TaskState], Awaitable[Selection]]


def place_passages(
    prompt: str,
    passages: list[str],
    header: str,
    position: Literal["before", "after"] = "before",
    separator: str = "\n\n",
) -> str:
    """``prompt`` with ``header`` and the passages before (or after) it; unchanged when none."""
    if not passages:
        return prompt
    block = header + separator.join(passages)
    return f"{block}\n\n{prompt}" if position == "before" else f"{prompt}\n\n{block}"


@solver
def insert_passages(
    select: Selector,
    header: str,
    metadata_key: str = "retrieval",
    position: Literal["before", "after"] = "before",
    separator: str = "\n\n",
) -> Solver:
    """Insert the passages ``select`` chooses into the user prompt.

    A data problem in the selection of one sample (a ``ValueError``,
    ``KeyError``, ``IndexError`` or ``TypeError``: a bad record, an unreadable
    reply) leaves that sample's prompt without passages, records the error under
    ``metadata_key`` and logs a warning in the sample's transcript. Other errors
    (a model call that failed after Inspect's retries) propagate as they would
    from ``generate``, so Inspect's error handling (``fail_on_error``, retries of
    samples) applies; a missing optional dependency stops the eval.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        try:
            selection = await select(state)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            logger.warning("passage selection failed for sample %s: %s", state.sample_id, reason)
            state.metadata[metadata_key] = {"error": reason, "passages": 0}
            return state
        state.user_prompt.text = place_passages(
            state.user_prompt.text, selection.passages, header, position, separator
        )
        state.metadata[metadata_key] = {**selection.record, "passages": len(selection.passages)}
        return state

    return solve
