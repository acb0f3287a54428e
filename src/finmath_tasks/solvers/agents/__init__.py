"""Agent solvers of the financial-agents paper (analyst, critic, improved critic,
calculator) for any task whose samples carry ``metadata["question"]`` and
``metadata["context"]`` and a gold answer text as target.

Wiring into a task::

    from finmath_tasks.scorers.comparisons import rounding, tolerant
    from finmath_tasks.scorers.keyed import keyed_scorers, scoring
    from finmath_tasks.solvers.agents import (
        AGENT_KEYS, CALCULATOR_AGENTS, REVIEW_AGENTS, AgentName, agent_solver,
        agent_scoring, numeric_check,
    )

    CHECK = numeric_check({"rounding": rounding, "tolerant": tolerant})

    @scoring("my_task", ("rounding", "tolerant", *AGENT_KEYS))
    def my_task_scoring(solver: str) -> Scoring:  # module level: `inspect score` rebuilds it
        return agent_scoring(
            CHECK,
            ["rounding", "tolerant"],
            review=solver in REVIEW_AGENTS,
            calculator=solver in CALCULATOR_AGENTS,
        )

    Task(
        solver=agent_solver(name, oracle_check=CHECK),
        scorer=keyed_scorers("my_task", solver=name),
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
    AGENT_KEYS,
    AGENT_RESPONSE_KEY,
    AGENT_TRACE_KEY,
    FLIP_KEYS,
    UNSOURCED_KEY,
    AnswerCheck,
    Check,
    accuracy_by_gold_kind,
    agent_answer,
    agent_metrics,
    agent_scoring,
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
    "AGENT_KEYS",
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
    "agent_scoring",
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
