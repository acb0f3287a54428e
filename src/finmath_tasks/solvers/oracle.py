"""Oracle solvers: answer with the sample's gold answer or gold program, without a model.

They validate everything around the model (loading, prompts, extraction,
sandbox, scoring, metrics): on a correct pipeline they score 1.0 under every
comparison.
"""

from __future__ import annotations

from inspect_ai.model import ChatMessageAssistant, ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver

ORACLE_ANSWER_TEMPLATE = "Therefore, the answer is {answer}."


def _answer(state: TaskState, content: str) -> TaskState:
    state.output = ModelOutput.from_content(model="oracle", content=content)
    state.messages.append(ChatMessageAssistant(content=content, model="oracle"))
    return state


@solver
def oracle(template: str = ORACLE_ANSWER_TEMPLATE) -> Solver:
    """Reply with the target, stated with ``template`` (``{answer}``)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        answer = state.target.text.strip()
        if not answer:
            raise ValueError(
                f"sample {state.sample_id!r} has no gold answer, so the oracle solver cannot answer it"
            )
        return _answer(state, template.format(answer=answer))

    return solve


@solver
def oracle_program(program_field: str, execute: Solver) -> Solver:
    """Reply with the gold program in ``metadata[program_field]`` (fenced), then run
    ``execute`` (the program-of-thought solver's execution step) on that reply."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        program = (state.metadata or {}).get(program_field) or ""
        if not program:
            raise ValueError(f"sample {state.sample_id!r} has no gold program ({program_field})")
        _answer(state, f"```python\n{program}\n```")
        return await execute(state, generate)

    return solve
