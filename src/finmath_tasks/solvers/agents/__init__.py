"""Agent solvers of the financial-agents paper (analyst, critic, improved critic,
calculator) for any task whose samples carry ``metadata["question"]`` and
``metadata["context"]`` and a gold answer text as target.

Wiring into a task::

    from finmath_tasks.scorers.comparisons import rounding, tolerant
    from finmath_tasks.solvers.agents import (
        CALCULATOR_AGENTS, REVIEW_AGENTS, AgentName, agent_solver, agent_scorers,
        numeric_check,
    )

    check = numeric_check({"rounding": rounding, "tolerant": tolerant})
    Task(
        solver=agent_solver(name, oracle_check=check),
        scorer=agent_scorers(
            check,
            ["rounding", "tolerant"],
            review=name in REVIEW_AGENTS,
            calculator=name in CALCULATOR_AGENTS,
        ),
        sandbox=default_sandbox() if name in PROGRAM_AGENTS else None,
    )
"""

from finmath_tasks.solvers.agents.answers import Answer, ParsedReply, parse_reply
from finmath_tasks.solvers.agents.calculator import (
    CalculationError,
    EquationSource,
    check_equations,
    equation_sources,
    evaluate,
    safe_evaluate,
)
from finmath_tasks.solvers.agents.prompts import DEFAULT_ANSWER_INSTRUCTION
from finmath_tasks.solvers.agents.scoring import (
    AGENT_ANSWERS_KEY,
    AGENT_RESPONSE_KEY,
    AGENT_TRACE_KEY,
    FLIP_KEYS,
    UNSOURCED_KEY,
    AnswerCheck,
    Check,
    accuracy_by_gold_kind,
    agent_answer,
    agent_metrics,
    agent_scorers,
    by_flip,
    change_kind,
    count_rate,
    gold_kind,
    normalise_steps,
    numeric_check,
    total,
    unsourced,
)
from finmath_tasks.solvers.agents.solvers import (
    AGENT_NAMES,
    CALCULATOR_AGENTS,
    GOLD_LABEL_AGENTS,
    PROGRAM_AGENTS,
    REVIEW_AGENTS,
    AgentName,
    agent_solver,
)

__all__ = [
    "AGENT_ANSWERS_KEY",
    "AGENT_NAMES",
    "AGENT_RESPONSE_KEY",
    "AGENT_TRACE_KEY",
    "CALCULATOR_AGENTS",
    "DEFAULT_ANSWER_INSTRUCTION",
    "FLIP_KEYS",
    "GOLD_LABEL_AGENTS",
    "PROGRAM_AGENTS",
    "REVIEW_AGENTS",
    "UNSOURCED_KEY",
    "AgentName",
    "Answer",
    "AnswerCheck",
    "CalculationError",
    "Check",
    "EquationSource",
    "ParsedReply",
    "accuracy_by_gold_kind",
    "agent_answer",
    "agent_metrics",
    "agent_scorers",
    "agent_solver",
    "by_flip",
    "change_kind",
    "check_equations",
    "count_rate",
    "equation_sources",
    "evaluate",
    "gold_kind",
    "normalise_steps",
    "numeric_check",
    "parse_reply",
    "safe_evaluate",
    "total",
    "unsourced",
]
