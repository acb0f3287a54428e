"""SARA statutory reasoning with structure-aware statute retrieval."""

from finmath_tasks.tasks.sara.task import sara

__all__ = ["sara"]
