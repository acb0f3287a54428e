"""What a FinQA solver factory gets from the task parameters (:class:`SolverConfig`).

It lives here, not in ``task.py``: ``inspect eval src/finmath_tasks/tasks/finqa/task.py``
loads the task file without registering it in ``sys.modules``, and a dataclass defined
there under ``from __future__ import annotations`` then fails while being built
(``dataclasses`` looks its module up in ``sys.modules``). This module is imported the
normal way.
"""

from __future__ import annotations

from dataclasses import dataclass

from finmath_tasks.solvers.agents import AnswerCheck
from finmath_tasks.tasks.finqa.prompts import Exemplar


@dataclass(frozen=True)
class SolverConfig:
    """What a solver factory gets from the task parameters."""

    retrieval: str
    top_k: int
    check: AnswerCheck
    """The gold-answer check (``critic_oracle``'s gate; the agent scorer's check)."""
    exemplars: tuple[Exemplar, ...] = ()
    """The few-shot exemplars (for :data:`FEW_SHOT_SOLVERS`; read from the train split)."""
