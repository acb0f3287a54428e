"""FinQA: the ``finqa`` task."""

from finmath_tasks.tasks.finqa.task import finqa

__all__ = ["finqa"]
