"""Which model grades: the one rule of every scorer that asks a model for its verdict.

A scorer that asks a model (an equivalence judge, an answer extractor) asks
Inspect's ``grader`` role when the eval binds one (``--model-role
grader=openai/gpt-4o``), else the evaluated model itself: Inspect's own rule
(``get_model(role="grader")``, as its ``model_graded_*`` scorers use it). A
missing role never switches a task to another metric; the verdict is the same
verdict, asked of another model. So that a log never hides it:

- the fallback is warned about once per run and model (:meth:`GraderRole.resolve`),
  naming the model that grades its own answers and the grader the paper used;
- every graded score records :meth:`Grader.metadata`: ``grader_model`` (the
  model asked) and ``grader_source`` (:data:`FROM_ROLE` or :data:`FROM_EVALUATED`).

Each scorer builds its :class:`GraderRole` when its task is built, so "once per
run" is once per built task and evaluated model.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.model import Model, get_model, model_roles

logger = logging.getLogger(__name__)

GRADER_ROLE = "grader"
FROM_ROLE = "grader role"
FROM_EVALUATED = "evaluated model (no grader role)"


@dataclass(frozen=True)
class Grader:
    """The model a scorer asks, and whether it came from the ``grader`` role."""

    model: Model
    name: str
    from_role: bool

    def metadata(self) -> dict[str, Any]:
        """What every graded score records about its grader."""
        return {"grader_model": self.name, "grader_source": self.source}

    @property
    def source(self) -> str:
        return FROM_ROLE if self.from_role else FROM_EVALUATED


def fallback_warning(model: str, paper_grader: str) -> str:
    """The one-line warning of a run without a ``grader`` role."""
    paper = f"; the paper's grader was {paper_grader}" if paper_grader else ""
    return (
        f"no {GRADER_ROLE} role: {model} grades its own answers{paper}; "
        f"bind one with --model-role {GRADER_ROLE}=<model>"
    )


@dataclass
class GraderRole:
    """One scorer's grader: the ``grader`` role when bound, else the evaluated model.

    ``paper_grader``: the model the benchmark's paper graded with (named in the warning).
    """

    paper_grader: str = ""
    _warned: set[str] = field(default_factory=set, repr=False)

    def resolve(self) -> Grader:
        """The model to ask now (inside a running sample); warns once per evaluated model
        when there is no ``grader`` role."""
        # without the role, the evaluated model (said explicitly: get_model()'s own fallback)
        model = get_model(role=GRADER_ROLE, default=get_model())
        name = str(model)
        bound = GRADER_ROLE in model_roles()
        if not bound and name not in self._warned:
            self._warned.add(name)
            logger.warning(fallback_warning(name, self.paper_grader))
        return Grader(model, name, bound)
