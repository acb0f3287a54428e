"""What a grid's runs need from this machine, checked before anything runs.

A benchmark's ``NEEDS`` (see :mod:`finmath_tasks.cli.declare`) lists, per run, an isolated
sandbox, an optional extra or a model role. :func:`missing` says which runs cannot run
here and why; ``finmath grid --dry-run`` names them and a real grid skips them, runs the
others and ends with a non-zero status. A task that still stops for a missing
prerequisite when it is built (:class:`finmath_tasks.errors.Unavailable`) is skipped the
same way (:func:`unavailable_reason`).
"""

from __future__ import annotations

import importlib.util
import inspect
import shutil
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from finmath_tasks.cli.declare import Declaration, Extra, Need, Role, Sandbox
from finmath_tasks.errors import Unavailable


def task_defaults(task: Callable[..., Any]) -> dict[str, Any]:
    """The task function's parameter defaults."""
    return {
        name: p.default
        for name, p in inspect.signature(task).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def _docker() -> tuple[bool, str]:
    from finmath_tasks.sandbox.docker import docker_available

    return docker_available()


def _bwrap() -> tuple[bool, str]:
    from finmath_tasks.sandbox.bwrap import bwrap_available

    return bwrap_available()


def sandbox_problem(sandbox: str | None) -> str | None:
    """Why ``sandbox`` (Inspect's ``--sandbox`` value, None: the task's default, the first
    isolated sandbox that works) cannot run here, or None."""
    kind = None if sandbox is None else sandbox.partition(":")[0]
    if kind == "finmath_docker":
        ok, reason = _docker()
        return None if ok else f"--sandbox finmath_docker: {reason}"
    if kind == "finmath_bwrap":
        ok, reason = _bwrap()
        return None if ok else f"--sandbox finmath_bwrap: {reason}"
    if kind == "docker":
        if shutil.which("docker") is None:
            return f"--sandbox {sandbox}: the docker command is not installed"
        return None
    if kind is not None:  # local, or another registered sandbox: Inspect checks it
        return None
    docker_ok, docker_reason = _docker()
    if docker_ok:
        return None
    bwrap_ok, bwrap_reason = _bwrap()
    if bwrap_ok:
        return None
    return (
        f"no isolated sandbox for its programs (docker: {docker_reason}; bwrap: "
        f"{bwrap_reason}); install Docker or bubblewrap (or choose one with --sandbox)"
    )


def need_problem(
    need: Need,
    args: Mapping[str, Any],
    roles: Mapping[str, str],
    sandboxes: dict[str | None, str | None] | None = None,
    sandbox: str | None = None,
) -> str | None:
    """Why ``need`` is not met for a run with task arguments ``args`` and Inspect's
    ``--sandbox`` value ``sandbox``, or None (``sandboxes``: the answers for sandboxes
    already checked, kept for the next)."""
    if isinstance(need, Sandbox):
        known = {} if sandboxes is None else sandboxes
        if sandbox not in known:
            known[sandbox] = sandbox_problem(sandbox)
        return known[sandbox]
    if isinstance(need, Extra):
        if importlib.util.find_spec(need.module) is None:
            return (
                f"the {need.name!r} extra is not installed (no module {need.module}): "
                f"pip install -e '.[{need.name}]' in the checkout (or with the git URL you installed from)"
            )
        return None
    if isinstance(need, Role):
        if need.name in roles:
            return None
        why = f" ({need.why})" if need.why else ""
        return f"needs --model-role {need.name}=MODEL{why}"
    raise TypeError(f"not a need: {need!r}")


def missing(
    declaration: Declaration,
    runs: Sequence[Mapping[str, Any]],
    roles: Mapping[str, str],
    sandbox: str | None = None,
) -> dict[int, str]:
    """Index of each run that cannot run here -> the reason (its missing needs);
    ``sandbox``: Inspect's ``--sandbox`` value for the grid (None: the tasks' default)."""
    if declaration.needs is None:
        return {}
    defaults = task_defaults(declaration.grid.task)
    problems: dict[int, str] = {}
    sandboxes: dict[str | None, str | None] = {}
    for i, args in enumerate(runs):
        full = {**defaults, **args}
        reasons = [
            r
            for need in declaration.needs(full)
            if (r := need_problem(need, full, roles, sandboxes, sandbox))
        ]
        if reasons:
            problems[i] = "; ".join(dict.fromkeys(reasons))
    return problems


def unavailable_reason(error: BaseException) -> str | None:
    """The one-line reason when ``error`` says a prerequisite is missing, else None."""
    if isinstance(error, Unavailable):
        return " ".join(str(error).split())
    return None
