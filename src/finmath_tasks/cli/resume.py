"""Whether a run of ``finmath grid`` is already done: a log in the directory whose identity
(:func:`finmath_tasks.identity.run_identity`) is the identity the run will have.

A run's identity before it starts (:func:`planned_identity`) is built by the same
:func:`finmath_tasks.identity.identity_of` from what the grid gives it: the built task
(its version, its data fingerprint, its samples after ``--limit``), the arguments, the
model and roles, the generation settings (the task's, then the grid's options) and the
epochs. A log of the same task and arguments with another data fingerprint, another
sample set, another generation setting or another version is not this run: the grid
runs it again instead of taking that log as done.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from inspect_ai import Task

from finmath_tasks.comparability import comparable
from finmath_tasks.identity import (
    EVAL_LIMITS,
    Identity,
    difference,
    identity_of,
    resolve_role,
    role_text,
    run_identity,
)

UNKNOWN_BEFORE = ("samples", "eval.epochs_reducer", *(f"eval.{n}" for n in EVAL_LIMITS))
"""Parts a planned run may not know: its samples when Inspect draws them at random
(``--sample-shuffle``), and limits a task sets for itself. Compared when known."""


def planned_identity(
    task_name: str,
    task: Task,
    args: Mapping[str, Any],
    model: str,
    options: Any,
    stratified: bool,
    roles: Mapping[str, Any] | None = None,
) -> Identity:
    """The identity the run of ``task`` (built with ``args``) on ``model`` will have under
    the grid's ``options`` (a ``GridOptions``); ``stratified``: the dataset is already
    narrowed to the chosen samples; ``roles``: the model roles as Inspect is given them
    (:func:`finmath_tasks.identity.resolve_role`: named as the log will name them, base
    URL and all), else the grid's ``--model-role`` values resolved here."""
    ids: list[Any] | None = [s.id for s in task.dataset]
    if options.limit is not None and not stratified:
        ids = None if options.sample_shuffle else (ids or [])[: options.limit]
    generation = task.config.model_dump(exclude_none=True)
    generation.update(options.generation())  # every generation option the grid was given
    return identity_of(
        task=task_name,
        version=task.version,
        args=dict(args),
        metadata=task.metadata,
        sample_ids=ids,
        epochs=int(options.epochs or (task.epochs if isinstance(task.epochs, int) else 1)),
        model=model,
        roles={role: role_text(m) for role, m in (roles or resolved_roles(options)).items()},
        generation=generation,
    )


def resolved_roles(options: Any) -> dict[str, Any]:
    """The grid's model roles as Inspect builds them (one instance per role)."""
    return {role: resolve_role(role, v) for role, v in (options.model_roles or {}).items()}


T = TypeVar("T")


def built_with_roles(roles: Mapping[str, Any], build: Callable[[], T]) -> T:
    """``build()`` with ``roles`` bound as the eval will bind them, as ``inspect eval``
    builds its tasks: a task refuses a role no solver or scorer of its run calls
    (:func:`finmath_tasks.params.refuse_unused_roles`), and never sees the roles an earlier
    eval of this process bound (a fresh context, discarded after the build)."""
    from finmath_tasks._inspect_private import init_model_roles

    def inside() -> T:
        init_model_roles(dict(roles))
        return build()

    return contextvars.copy_context().run(inside)


def is_this_run(planned: Identity, log: Any) -> bool:
    """Whether ``log`` (a header) is a log of the planned run: the same setting
    (:func:`finmath_tasks.comparability.comparable`, purpose ``same``), the parts a
    planned run may not know aside."""
    try:
        found = run_identity(log)
    except Exception:  # a header that cannot be read as a run
        return False
    return comparable(planned, found, "same", unknown=UNKNOWN_BEFORE).ok


def same_arguments(planned: Identity, task_name: str, args: Mapping[str, Any]) -> bool:
    """Whether ``planned`` is the run of ``args`` (defaults filled in, as the identity has
    them): how a plan's task is found among the runs built for a worker."""
    other = identity_of(
        task=task_name, version=None, args=dict(args), metadata=None, sample_ids=None,
        epochs=1, model="",
    )  # fmt: skip
    theirs = other.args()
    return all(theirs.get(k) == v for k, v in planned.args().items())


def planned_for(
    planned: Sequence[tuple[str, Identity]], task_name: str, model: str, args: Mapping[str, Any]
) -> Identity | None:
    """The planned identity of the run of ``args`` on ``model``, if it was built."""
    for planned_model, identity in planned:
        if planned_model == model and same_arguments(identity, task_name, args):
            return identity
    return None


def no_log_text(
    planned: Identity | None,
    task_name: str,
    model: str,
    args: Mapping[str, Any],
    logs: Sequence[tuple[str, Any]],
) -> str:
    """Why no log in the directory is the run's: the logs of its task, model and arguments
    and the parts of their identities that are not the planned run's."""
    near = [
        (location, header)
        for location, header in logs
        if (header.eval.task_registry_name or header.eval.task) == task_name
        and header.eval.model == model
        and dict(header.eval.task_args_passed or {}) == dict(args)
    ]
    if not near or planned is None:
        return "no log of this run in the log directory"
    location, header = sorted(near, key=lambda f: f[0])[-1]
    try:
        parts = difference(planned, run_identity(header))
    except Exception:  # a header that cannot be read as a run
        parts = []
    shown = "; ".join(
        f"{name}: {planned.get(name) or 'unset'} planned, "
        f"{run_identity(header).get(name) or 'unset'} in the log"
        for name in parts[:3]
    )
    return f"no log of this run: {location} has its task arguments but another identity" + (
        f" ({shown})" if shown else ""
    )
