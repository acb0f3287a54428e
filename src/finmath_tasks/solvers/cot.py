"""Chain of thought: the paper's system prompt, the sample's user prompt, one generation.

Built from Inspect's own pieces, so that solvers placed before it (retrieval
that inserts passages, a benchmark's prompt renderer) keep their work:
``system_message`` inserts the system prompt in front of the conversation and
``generate`` continues the conversation as it stands.
"""

from __future__ import annotations

from inspect_ai.solver import Solver, chain, generate, solver, system_message


@solver
def cot(system_prompt: str, prompt: Solver | None = None) -> Solver:
    """Chain of thought with ``system_prompt``; ``prompt`` renders the user turn first.

    ``system_prompt`` goes through Inspect's template formatting with the
    sample's metadata: placeholders it does not know (``{final answer}``) stay
    as written.
    """
    steps = [system_message(system_prompt)]
    if prompt is not None:
        steps.append(prompt)
    steps.append(generate())
    return chain(steps)
