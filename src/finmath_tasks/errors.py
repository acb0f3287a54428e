"""The one base of the errors a user must act on (a bad -T value, unusable data)."""

from __future__ import annotations

from finmath_tasks._inspect_private import PrerequisiteError


class UsageError(PrerequisiteError):
    """An Inspect ``PrerequisiteError``: ``inspect eval`` prints the message alone,
    without a traceback in front of it; ``str()`` is the message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.args = (message,)

    def __str__(self) -> str:
        return str(self.message)


class Unavailable(UsageError):
    """Something this machine lacks (an isolated sandbox, an optional extra): the run that
    needs it cannot happen here, other runs can (``finmath grid`` skips it and says why)."""
