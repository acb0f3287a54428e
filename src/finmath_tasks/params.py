"""Validation of task parameters (``-T name=value``), one message format for every task.

Inspect passes ``-T`` values through YAML, so ``-T data_dir=2024`` arrives as an
int and ``-T flag=yes`` as a string: every typed parameter is checked here and
a wrong value stops the task with ``<task>: -T name=value ...`` and no
traceback (the error is an Inspect ``PrerequisiteError``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Literal, TypeVar, get_args, get_origin

from finmath_tasks.errors import UsageError

T = TypeVar("T")


class TaskParameterError(UsageError, ValueError):
    """A ``-T`` value a task cannot use; the message names the task and parameter."""


def _choices(options: Any) -> tuple[Any, ...]:
    if get_origin(options) is Literal:
        return get_args(options)
    if isinstance(options, Iterable) and not isinstance(options, str | bytes):
        return tuple(options)
    raise TypeError(f"choices must be a Literal type or an iterable, got {options!r}")


def choice(task: str, name: str, value: Any, options: Any) -> Any:
    """``value`` if it is one of ``options`` (a ``Literal[...]`` or an iterable)."""
    allowed = _choices(options)
    if isinstance(value, str | int | float | bool | type(None)) and value in allowed:
        # bools compare equal to 0/1: require the same type as the matching option
        for option in allowed:
            if type(option) is type(value) and option == value:
                return value
    raise TaskParameterError(
        f"{task}: -T {name}={value!r} is not one of {', '.join(str(a) for a in allowed)}"
    )


def boolean(task: str, name: str, value: Any) -> bool:
    """A true/false parameter (Inspect's YAML parsing turns ``true``/``false`` into bools)."""
    if isinstance(value, bool):
        return value
    raise TaskParameterError(f"{task}: -T {name}={value!r} must be true or false")


def optional_text(task: str, name: str, value: Any) -> str | None:
    """A string parameter that may be omitted (None or empty)."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    raise TaskParameterError(
        f"{task}: -T {name}={value!r} must be a string, not {type(value).__name__}"
        + (f" (quote it: -T {name}=\"'{value}'\")" if isinstance(value, int | float) else "")
    )


def optional_path(task: str, name: str, value: Any) -> str | None:
    """A path parameter; numbers are refused (``-T data_dir=2024`` is an int to Inspect)."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return optional_text(task, name, value)


def positive_number(task: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise TaskParameterError(f"{task}: -T {name}={value!r} must be a positive number")
    return float(value)


def integer_in_range(task: str, name: str, value: Any, low: int, high: int) -> int:
    """An integer in ``low..high`` (inclusive)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise TaskParameterError(
            f"{task}: -T {name}={value!r} must be an integer from {low} to {high}"
        )
    return value
