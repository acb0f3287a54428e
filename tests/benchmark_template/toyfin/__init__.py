"""toyfin: a template benchmark whose data is its own (package data only)."""

from finmath_tasks.tasks.toyfin.task import toyfin

__all__ = ["toyfin"]
