"""KnowledgeFMATH / FinanceMath: see ``task.py`` and this folder's README."""

from finmath_tasks.tasks.knowledgefmath.task import knowledgefmath

__all__ = ["knowledgefmath"]
