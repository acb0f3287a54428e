"""TAT-QA with the financial-agents solvers (Tan et al.)."""

from finmath_tasks.tasks.tatqa.task import tatqa

__all__ = ["tatqa"]
