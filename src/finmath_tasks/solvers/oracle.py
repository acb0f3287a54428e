"""Oracle solver: answers with the sample's gold answer, without calling a model.

It validates everything around the model (dataset loading, prompt, answer
extraction, scoring, metrics): on a correct pipeline it scores 1.0 under every
comparison profile.
"""

from __future__ import annotations

from inspect_ai.model import ChatMessageAssistant, ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver

ORACLE_ANSWER_TEMPLATE = "Therefore, the answer is {answer}."


@solver
def oracle() -> Solver:
    """Reply with the target, stated the way the chain-of-thought prompt asks for it."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        answer = state.target.text.strip()
        if not answer:
            raise ValueError(
                f"sample {state.sample_id!r} has no gold answer, so the oracle solver cannot answer it"
            )
        content = ORACLE_ANSWER_TEMPLATE.format(answer=answer)
        state.output = ModelOutput.from_content(model="oracle", content=content)
        state.messages.append(ChatMessageAssistant(content=content, model="oracle"))
        return state

    return solve
