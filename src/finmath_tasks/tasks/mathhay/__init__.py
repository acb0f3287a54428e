"""MathHay: long-context mathematical reasoning over document haystacks."""

from finmath_tasks.tasks.mathhay.task import mathhay

__all__ = ["mathhay"]
