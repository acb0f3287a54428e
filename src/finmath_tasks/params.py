"""Validation of task parameters (``-T name=value``), one message format for every task.

Inspect passes ``-T`` values through YAML, so ``-T data_dir=2024`` arrives as an
int and ``-T flag=yes`` as a string: every typed parameter is checked here and
a wrong value stops the task with ``<task>: -T name=value ...`` and no
traceback (the error is an Inspect ``PrerequisiteError``).

A value that the chosen settings would not read is refused the same way
(:func:`refuse_unused`): each task declares, per parameter that some settings ignore,
where it applies (:class:`Applies`, built with :func:`only`); Inspect itself only warns
about names that are no parameter at all. A parameter left at its default is never
refused.
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
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


def positive_integer(task: str, name: str, value: Any) -> int:
    """A whole number above zero; a fraction (``0.5``), infinity or NaN is refused rather
    than rounded (``int(0.5)`` is 0, ``int(inf)`` raises)."""
    number = value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise TaskParameterError(f"{task}: -T {name}={value!r} must be a whole number above 0")
    return number


def integer_in_range(task: str, name: str, value: Any, low: int, high: int) -> int:
    """An integer in ``low..high`` (inclusive)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise TaskParameterError(
            f"{task}: -T {name}={value!r} must be an integer from {low} to {high}"
        )
    return value


# ---- settings that do nothing --------------------------------------------------------------


@dataclass(frozen=True)
class Applies:
    """Where a parameter has an effect: under any one of ``settings``, each a set of other
    parameters and the values under which the parameter is read (:func:`only`).

    A task declares one per parameter that some of its settings ignore, and
    :func:`refuse_unused` refuses a value set where it would change nothing."""

    settings: tuple[tuple[tuple[str, tuple[Any, ...]], ...], ...]

    def __or__(self, other: Applies) -> Applies:
        return Applies(self.settings + other.settings)

    def holds(self, values: Mapping[str, Any]) -> bool:
        return any(
            all(_among(values[name], allowed) for name, allowed in setting)
            for setting in self.settings
        )

    def names(self) -> list[str]:
        """The parameters it depends on."""
        return list(dict.fromkeys(name for setting in self.settings for name, _ in setting))

    def describe(self) -> str:
        """``solver=rag_cot or oracle with retrieval=bm25``, ``data_dir unset``; alternatives
        joined by ``, or``."""
        return ", or ".join(
            " with ".join(
                f"{name} unset"
                if allowed == (None,)
                else f"{name}={' or '.join(_shown(v) for v in allowed)}"
                for name, allowed in setting
            )
            for setting in self.settings
        )


def only(**when: Any) -> Applies:
    """The parameter is read when every named parameter has one of its values (a value, or a
    tuple/list/set of values): ``only(solver=("rag_cot", "oracle"), retrieval="bm25")``."""
    setting = tuple(
        (name, tuple(v) if isinstance(v, tuple | list | set | frozenset) else (v,))
        for name, v in when.items()
    )
    return Applies((setting,))


def _among(value: Any, allowed: tuple[Any, ...]) -> bool:
    """``value`` (or, for a list such as ``-T length=32000,128000``, one of its items) is
    one of ``allowed``."""
    items = value if isinstance(value, list | tuple) else [value]
    return any(item in allowed for item in items)


def _shown(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(_shown(v) for v in value)
    return "unset" if value is None else str(value)


def defaults(function: Callable[..., Any]) -> dict[str, Any]:
    """A task function's parameter defaults (through Inspect's ``@task`` wrapper)."""
    return {
        name: p.default
        for name, p in inspect.signature(function).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def refuse_unused(
    task: str,
    function: Callable[..., Any],
    values: Mapping[str, Any],
    applies: Mapping[str, Applies],
) -> None:
    """Refuse a parameter set (to other than its default) where the chosen settings do not
    read it: the run would be the run without it. ``values``: the task's arguments (after
    their own checks); ``applies``: parameter -> where it has an effect."""
    default = defaults(function)
    for name, rule in applies.items():
        value = values[name]
        if _same(value, default.get(name)) or rule.holds(values):
            continue
        here = ", ".join(f"{other}={_shown(values[other])}" for other in rule.names())
        raise TaskParameterError(
            f"{task}: -T {name}={value!r} applies only to {rule.describe()} (here {here}): "
            "it would change nothing; leave it out or choose a setting that reads it"
        )


def _same(value: Any, default: Any) -> bool:
    """``value`` is the default (a one-item list of it too: ``-T length=32000``)."""
    if value is default:
        return True
    if isinstance(value, list | tuple) and not isinstance(default, list | tuple):
        return len(value) == 1 and _same(value[0], default)
    return type(value) is type(default) and bool(value == default)


def refuse_unused_roles(task: str, values: Mapping[str, Any], roles: Mapping[str, Applies]) -> None:
    """Refuse a model role (``--model-role NAME=MODEL``) that no solver or scorer of the run
    calls: the run would be the run without it. ``roles``: each role the task may call ->
    where it is called (as :func:`refuse_unused`'s ``applies``); a role not named there
    is never called. Inspect binds the eval's roles before it builds the tasks
    (``inspect eval``, ``eval()`` with a task name); a task object built before the eval
    sees none, and is not checked."""
    from inspect_ai.model import model_roles

    for role in model_roles():
        rule = roles.get(role)
        if rule is not None and rule.holds(values):
            continue
        if rule is None:
            where = "no solver or scorer of this task calls it"
        else:
            here = ", ".join(f"{other}={_shown(values[other])}" for other in rule.names())
            where = f"it is called only with {rule.describe()} (here {here})"
        raise TaskParameterError(
            f"{task}: --model-role {role}: {where}; it would change nothing: leave it out "
            "or choose a setting that calls it"
        )
