"""Zero-shot chain-of-thought: a fixed system prompt, the sample's prompt, one generation.

The benchmark's ``record_to_sample`` renders the paper's user prompt into the
sample input, so this solver only adds the system prompt and generates; the
log then shows exactly what the model saw.
"""

from __future__ import annotations

from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver


@solver
def cot(system_prompt: str) -> Solver:
    """Chain-of-thought with ``system_prompt`` (used verbatim: no template formatting)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.messages = [
            ChatMessageSystem(content=system_prompt),
            ChatMessageUser(content=state.user_prompt.text),
        ]
        return await generate(state)

    return solve
