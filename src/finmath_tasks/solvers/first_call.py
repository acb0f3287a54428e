"""A task's solver chain run on one sample outside an eval, up to its first model call.

What a sample sends first (its system message, exemplars, retrieved passages, the
question) is built by the task's own solvers; running them with a ``generate`` that
stops at the first call gives those messages exactly as an eval sends them. The dry
run's cost counts (``cli.cost``) and the lm-evaluation-harness bridge (``lm_eval``) both
read a sample's first turn this way. The caller makes ``model`` the active model first
(``_inspect_private.init_active_model``), as an eval would.
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessage, ChatMessageUser, Model, ModelName
from inspect_ai.scorer import Target
from inspect_ai.solver import TaskState


class FirstCall(Exception):
    """Raised by the stopping generate: the messages of the first model call."""

    def __init__(self, messages: list[ChatMessage]) -> None:
        super().__init__(messages)
        self.messages = messages


def sample_state(sample: Sample, model: Model, sample_id: str | int | None = None) -> TaskState:
    """The state a sample starts from in an eval (first epoch)."""
    return TaskState(
        model=ModelName(model),
        sample_id=sample_id if sample_id is not None else (sample.id or 0),
        epoch=1,
        input=sample.input,
        messages=(
            [ChatMessageUser(content=sample.input)]
            if isinstance(sample.input, str)
            else list(sample.input)
        ),
        target=Target(sample.target),
        choices=sample.choices,
        metadata=dict(sample.metadata or {}),
    )


async def first_call(
    task: Task, sample: Sample, model: Model, sample_id: str | int | None = None
) -> tuple[list[ChatMessage], bool]:
    """The messages of the sample's first model call and True; the messages its solvers
    ended with and False when they made no call."""

    async def stop(state: TaskState, *args: Any, **kwargs: Any) -> TaskState:
        raise FirstCall(list(state.messages))

    state = sample_state(sample, model, sample_id)
    try:
        state = await task.solver(state, stop)
    except FirstCall as call:
        return call.messages, True
    return list(state.messages), False
