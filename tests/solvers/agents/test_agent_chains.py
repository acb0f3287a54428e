"""Each agent solver is the chain of steps the financial-agents paper describes: the
analyst's question (``render_question``), its answer, then the named agents' steps in order
(``critic_step``, ``improved_critic_step``, ``calculator_step``; ``oracle_gate`` around the
critic for ``critic_oracle``; ``record_program_answer`` after the program for ``pot``).
The steps run end to end in tests/solvers/agents/test_agent_solvers.py; this pins which
ones make each chain (a step left out or reordered changes the paper's setting)."""

from __future__ import annotations

from typing import Any

import pytest
from inspect_ai.util import registry_info

from finmath_tasks.solvers.agents.solvers import agent_solver

CHAINS = {
    "cot": ["render_question", "answer_and_record"],
    "pot": ["render_question", "generate", "execute_program", "record_program_answer"],
    "critic": ["render_question", "answer_and_record", "critic_step"],
    "icritic": ["render_question", "answer_and_record", "improved_critic_step"],
    "calculator": ["render_question", "answer_and_record", "calculator_step"],
    "critic_calculator": [
        "render_question", "answer_and_record", "critic_step", "calculator_step",
    ],
    "icritic_calculator": [
        "render_question", "answer_and_record", "improved_critic_step", "calculator_step",
    ],
    "critic_oracle": ["render_question", "answer_and_record", "oracle_gate"],
}  # fmt: skip


def step_names(solver: Any) -> list[str]:
    return [registry_info(step).name.split("/")[-1] for step in solver]


@pytest.mark.parametrize("name", list(CHAINS))
def test_each_agent_is_its_chain_of_steps(name: str) -> None:
    solver = agent_solver(name, oracle_check=(lambda *a: True) if name == "critic_oracle" else None)
    assert step_names(solver) == CHAINS[name]


def test_knowledgefmath_oracle_pot_runs_the_gold_program_through_oracle_program() -> None:
    """``solver=oracle_pot`` is the prompt, then ``oracle_program`` (the gold program sent
    to the sandbox as the model's), no model call; its run: tests of the PoT oracle."""
    from finmath_tasks.tasks.knowledgefmath import knowledgefmath

    names = step_names(knowledgefmath(split="demo", solver="oracle_pot").solver)
    assert "oracle_program" in names and "generate" not in names, names
