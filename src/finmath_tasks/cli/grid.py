"""``finmath grid``: a benchmark's declared grid as one Inspect eval set.

On one machine, ``run_grid`` calls ``inspect_ai.eval_set``: an interrupted grid
continues where it stopped and never recomputes finished samples (eval-set
retry reuses the completed samples of an unfinished log).

On many machines, Inspect's runner protocol (``inspect_ai/_eval/eval_set_manifest.py``
and ``eval_set_selection.py``): ``write_plan`` runs the same eval-set definition
with ``INSPECT_EVAL_SET_CAPTURE`` to enumerate its tasks (tasks x models) into a
plan file, and ``run_worker`` runs shard ``index`` of ``count`` (every
``count``-th task of the plan) with ``INSPECT_EVAL_SET_SELECTION``, so several
workers write into one log directory (local or ``s3://``). A worker skips a
task whose log in the directory already succeeded and resumes one that did not.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from inspect_ai import Task, eval_set
from inspect_ai.log import list_eval_logs, read_eval_log

from finmath_tasks._inspect_private import (
    EVAL_SET_SELECTION_VERSION,
    INSPECT_EVAL_SET_CAPTURE,
    INSPECT_EVAL_SET_SELECTION,
    file,
    filesystem,
    task_args_hash,
)
from finmath_tasks.cli.declare import Declaration, matches

PLAN_VERSION = 1
WORKER_INDEX_ENV = "JOB_COMPLETION_INDEX"
"""Kubernetes Indexed Jobs give each pod its index here."""


@dataclass
class GridOptions:
    """Everything that defines the eval set (a plan records it, so workers rebuild the same set)."""

    benchmark: str
    models: list[str]
    log_dir: str
    task_args: dict[str, Any] = field(default_factory=dict)
    only: dict[str, Any] = field(default_factory=dict)
    model_roles: dict[str, str] = field(default_factory=dict)
    limit: int | None = None
    max_samples: int | None = None
    retry_attempts: int | None = None
    max_tokens: int | None = None
    eval_set_id: str | None = None
    grid: str | None = None
    """Which of the benchmark's named grids (None: its default grid)."""


def grid_runs(declaration: Declaration, options: GridOptions) -> list[dict[str, Any]]:
    """The task argument sets of the grid, filtered by ``--only``, with ``-T`` applied."""
    runs: list[dict[str, Any]] = []
    for args in declaration.named(options.grid).arg_sets():
        if not matches(args, options.only):
            continue
        merged = {**args, **options.task_args}
        if merged not in runs:
            runs.append(merged)
    return runs


def check_options(declaration: Declaration, options: GridOptions) -> str | None:
    """A message when ``-T``/``--only`` name no parameter of the task or select no run."""
    import inspect

    if options.grid is not None and options.grid not in declaration.grids:
        return (
            f"--grid {options.grid}: {declaration.benchmark} has no such grid "
            f"(grids: {', '.join(declaration.grids)})"
        )
    parameters = set(inspect.signature(declaration.grid.task).parameters)
    for flag, names in (("-T", options.task_args), ("--only", options.only)):
        unknown = sorted(set(names) - parameters)
        if unknown:
            return (
                f"{flag} {', '.join(unknown)}: not a parameter of {declaration.task_name} "
                f"(parameters: {', '.join(sorted(parameters))})"
            )
    if not grid_runs(declaration, options):
        wanted = " ".join(f"{k}={v}" for k, v in options.only.items())
        which = f"{declaration.benchmark} {options.grid}" if options.grid else declaration.benchmark
        return f"no run of the {which} grid has {wanted} (see finmath list)"
    return None


def dry_run_lines(declaration: Declaration, options: GridOptions) -> list[str]:
    runs = grid_runs(declaration, options)
    which = f" (grid {options.grid})" if options.grid else ""
    lines = [
        f"{declaration.task_name}{which}: {len(runs)} runs x {len(options.models)} model(s) "
        f"= {len(runs) * len(options.models)} tasks -> {options.log_dir}"
    ]
    for i, args in enumerate(runs, 1):
        shown = " ".join(f"-T {k}={v}" for k, v in args.items())
        lines.append(f"  {i:3d}. {shown}")
    lines.append("  models: " + ", ".join(options.models))
    if options.model_roles:
        lines.append(
            "  model roles: " + ", ".join(f"{k}={v}" for k, v in options.model_roles.items())
        )
    if options.limit is not None:
        lines.append(f"  limit: {options.limit} samples per task")
    return lines


def _tasks(declaration: Declaration, options: GridOptions) -> list[Task]:
    return [declaration.grid.task(**args) for args in grid_runs(declaration, options)]


def _eval_set(
    declaration: Declaration, options: GridOptions, display: str | None
) -> tuple[bool, Any]:
    kwargs: dict[str, Any] = {}
    if options.retry_attempts is not None:
        kwargs["retry_attempts"] = options.retry_attempts
    if options.max_samples is not None:
        kwargs["max_samples"] = options.max_samples
    if options.max_tokens is not None:
        kwargs["max_tokens"] = options.max_tokens
    if display is not None:
        kwargs["display"] = display
    return eval_set(
        tasks=_tasks(declaration, options),
        model=options.models,
        log_dir=options.log_dir,
        limit=options.limit,
        model_roles=dict(options.model_roles) or None,
        eval_set_id=options.eval_set_id,
        **kwargs,
    )


def run_grid(
    declaration: Declaration, options: GridOptions, display: str | None = None
) -> tuple[bool, str]:
    """Run (or resume) the whole grid in this process: (every task succeeded, a summary line)."""
    success, logs = _eval_set(declaration, options, display)
    done = sum(1 for log in logs if log.status == "success")
    line = f"{done} of {len(logs)} tasks succeeded; logs in {options.log_dir}" + (
        f" (report: finmath report {options.log_dir})"
        if success
        else " (run the same command again to resume)"
    )
    return bool(success), line


@contextmanager
def _environ(name: str, value: str) -> Iterator[None]:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def capture(declaration: Declaration, options: GridOptions) -> dict[str, Any]:
    """Inspect's capture manifest of the grid's eval set (nothing runs, the log dir is untouched)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "manifest.json")
        with _environ(INSPECT_EVAL_SET_CAPTURE, path):
            try:
                _eval_set(declaration, options, "none")
            except SystemExit as e:  # capture mode exits after writing the manifest
                if e.code not in (0, None):
                    raise
        with open(path, encoding="utf-8") as f:
            manifest: dict[str, Any] = json.load(f)
    return manifest


def write_plan(declaration: Declaration, options: GridOptions, path: str) -> dict[str, Any]:
    """Enumerate the grid's tasks and write the plan (options + Inspect's manifest) to ``path``."""
    if options.eval_set_id is None:
        options.eval_set_id = f"finmath-{declaration.benchmark}-{uuid.uuid4().hex[:12]}"
    plan = {
        "finmath_plan": PLAN_VERSION,
        "options": asdict(options),
        "manifest": capture(declaration, options),
    }
    with file(path, "w") as f:
        f.write(json.dumps(plan, indent=2))
    return plan


def read_plan(path: str) -> dict[str, Any]:
    with file(path, "r") as f:
        plan: dict[str, Any] = json.loads(f.read())
    if not isinstance(plan, dict) or plan.get("finmath_plan") != PLAN_VERSION:
        raise ValueError(f"{path}: not a finmath grid plan (version {PLAN_VERSION})")
    try:
        GridOptions(**plan["options"])
        tasks = plan["manifest"]["tasks"]
    except (KeyError, TypeError) as e:
        raise ValueError(f"{path}: an incomplete finmath grid plan ({e})") from e
    if not isinstance(tasks, list):
        raise ValueError(f"{path}: an incomplete finmath grid plan (no task list)")
    return plan


def shard(tasks: Sequence[Mapping[str, Any]], index: int, count: int) -> list[Mapping[str, Any]]:
    """Tasks of worker ``index`` of ``count``: every ``count``-th, in plan order."""
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"worker index {index} is not in 0..{count - 1}")
    ordered = sorted(tasks, key=lambda t: int(t.get("sequence", 0)))
    return list(ordered[index::count])


@dataclass
class FoundLog:
    """A log already in the grid's directory (header only)."""

    location: str
    status: str
    eval_set_id: str | None


def existing_logs(log_dir: str) -> dict[tuple[str, str, str], list[FoundLog]]:
    """(registry name, model, args hash) -> the logs of that task in ``log_dir``."""
    found: dict[tuple[str, str, str], list[FoundLog]] = {}
    if not filesystem(log_dir).exists(log_dir):
        return found
    for info in list_eval_logs(log_dir, recursive=False):
        try:
            log = read_eval_log(info, header_only=True)
        except Exception:
            continue
        key = (
            log.eval.task_registry_name or log.eval.task,
            log.eval.model,
            task_args_hash(dict(log.eval.task_args_passed or {})),
        )
        found.setdefault(key, []).append(FoundLog(info.name, log.status, log.eval.eval_set_id))
    return found


RESUMABLE = ("error", "cancelled", "started")
"""Statuses of a log a worker resumes; "started" is a worker killed mid-run (a lost pod)."""


def foreign_logs(plan: Mapping[str, Any], logs: Mapping[Any, list[FoundLog]]) -> str | None:
    """A message when the directory holds logs of another eval set than the plan's."""
    mine = plan["options"]["eval_set_id"] or plan["manifest"].get("eval_set_id")
    others: dict[str, int] = {}
    for found in logs.values():
        for log in found:
            if log.eval_set_id and log.eval_set_id != mine:
                others[log.eval_set_id] = others.get(log.eval_set_id, 0) + 1
    if not others:
        return None
    named = ", ".join(f"{n} of eval set {k}" for k, n in sorted(others.items()))
    return (
        f"the log directory {plan['options']['log_dir']} holds logs of another grid ({named}) "
        f"but the plan is for eval set {mine}: use the plan that wrote them, or another "
        "--log-dir"
    )


def selection_for(
    plan: Mapping[str, Any], index: int, count: int, log_dir: str
) -> tuple[dict[str, Any] | None, list[str]]:
    """The selection document of worker ``index`` and lines saying what it skips or resumes.

    Raises ``ValueError`` when the directory holds another grid's logs.
    """
    manifest = plan["manifest"]
    mine = shard(manifest["tasks"], index, count)
    logs = existing_logs(log_dir)
    problem = foreign_logs(plan, logs)
    if problem:
        raise ValueError(problem)
    entries: list[dict[str, Any]] = []
    lines: list[str] = []
    for task in mine:
        key = (task.get("registry_name") or task["name"], task["model"], task["args_hash"])
        previous = logs.get(key, [])
        if any(log.status == "success" for log in previous):
            lines.append(f"{task['name']} ({task['model']}): already complete, skipped")
            continue
        entry: dict[str, Any] = {"identifier": task["identifier"]}
        if task.get("registry_name"):
            entry["registry_name"] = task["registry_name"]
            entry["args_hash"] = task["args_hash"]
        resumable = [log.location for log in previous if log.status in RESUMABLE]
        if resumable:
            entry["resume"] = sorted(resumable)[-1]
            lines.append(f"{task['name']} ({task['model']}): resuming {entry['resume']}")
        entries.append(entry)
    if not entries:
        return None, lines
    selection = {
        "version": EVAL_SET_SELECTION_VERSION,
        "eval_set_id": plan["options"]["eval_set_id"] or manifest.get("eval_set_id") or "",
        "tasks": entries,
    }
    return selection, lines


def _args_text(args: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in args.items())


def run_worker(
    declaration: Declaration,
    plan: Mapping[str, Any],
    index: int,
    count: int,
    display: str | None = None,
) -> tuple[bool, list[str]]:
    """Run shard ``index`` of ``count`` of a plan; (success, lines to print)."""
    options = GridOptions(**plan["options"])
    selection, lines = selection_for(plan, index, count, options.log_dir)
    if selection is None:
        lines.append(f"worker {index} of {count}: nothing to run")
        return True, lines
    chosen = {t["identifier"] for t in selection["tasks"]}
    names = "; ".join(
        f"{t['name']} {t['model']} {_args_text(t['args'])}"
        for t in plan["manifest"]["tasks"]
        if t["identifier"] in chosen
    )
    lines.append(f"worker {index} of {count}: {len(chosen)} task(s): {names}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "selection.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(selection, f)
        with _environ(INSPECT_EVAL_SET_SELECTION, path):
            success, _ = _eval_set(declaration, options, display)
    lines += _remove_superseded(plan, index, count, options.log_dir)
    return bool(success), lines


def _remove_superseded(plan: Mapping[str, Any], index: int, count: int, log_dir: str) -> list[str]:
    """Delete this shard's failed or interrupted logs whose task now has a successful log.

    The successful log holds every sample of the one it resumed, so the directory is left as
    one run of the grid would leave it (a report names nothing as still running).
    """
    logs = existing_logs(log_dir)
    fs = filesystem(log_dir)
    lines: list[str] = []
    for task in shard(plan["manifest"]["tasks"], index, count):
        key = (task.get("registry_name") or task["name"], task["model"], task["args_hash"])
        found = logs.get(key, [])
        if not any(log.status == "success" for log in found):
            continue
        for log in found:
            if log.status in RESUMABLE:
                fs.rm(log.location)
                lines.append(f"{task['name']} ({task['model']}): removed superseded {log.location}")
    return lines
