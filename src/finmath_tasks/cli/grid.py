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
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from inspect_ai import Task, eval_set, task_with
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.util import SandboxEnvironmentSpec

from finmath_tasks._inspect_private import (
    EVAL_SET_SELECTION_VERSION,
    INSPECT_EVAL_SET_CAPTURE,
    INSPECT_EVAL_SET_SELECTION,
    PrerequisiteError,
    file,
    filesystem,
    task_args_hash,
)
from finmath_tasks.cli.declare import Declaration, matches
from finmath_tasks.cli.inspect_options import InspectOptions, read_cached
from finmath_tasks.cli.prerequisites import missing, unavailable_reason
from finmath_tasks.cli.resume import (
    built_with_roles,
    is_this_run,
    no_log_text,
    planned_for,
    planned_identity,
    resolved_roles,
)
from finmath_tasks.cli.selection import narrow
from finmath_tasks.identity import Identity

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
    model_roles: dict[str, Any] = field(default_factory=dict)
    """``--model-role`` values as parsed: a model name, a role config mapping or a list."""
    limit: int | None = None
    """Inspect's ``--limit`` (read by Inspect's parser), which the grid spreads over the
    benchmark's strata (see ``selection``)."""
    eval_set_id: str | None = None
    grid: str | None = None
    """Which of the benchmark's named grids (None: its default grid)."""
    epochs: int | None = None
    """Inspect's ``--epochs`` count (the runs' identities name it)."""
    sample_shuffle: bool | int | None = None
    """Inspect's ``sample_shuffle``: with ``limit``, N samples at random (a seed or True)."""
    selection: str = "stratified"
    """How ``limit`` chooses samples: ``stratified`` over the benchmark's ``STRATA``
    (where it declares some), or ``first`` (Inspect's: the first N)."""
    sandbox: str | None = None
    """Inspect's ``--sandbox`` (``finmath_bwrap``, ``docker:/abs/compose.yaml``, ``local``)
    for the runs whose task runs programs; None: each such task's default."""
    inspect_args: list[str] = field(default_factory=list)
    """Every other option of ``inspect eval-set`` as typed (``--batch``,
    ``--reasoning-effort high``, ``--max-samples 4``, ...): read by Inspect's own parser
    (``cli/inspect_options.py``) for every run, by the grid and by each worker of a plan."""
    variant_seeds: list[int] = field(default_factory=list)
    """``--variant-seeds``: each run as published and once per seed on the fresh variant
    (``variant=fresh``, ``variant_seed=N``), for the memorisation gap."""

    def inspect(self) -> InspectOptions:
        """``inspect_args`` as ``inspect eval-set`` reads them."""
        return read_cached(self.inspect_args)

    def generation(self) -> dict[str, Any]:
        """The generation settings the grid's Inspect options set (``GenerateConfig``)."""
        return self.inspect().generation()

    @property
    def max_samples(self) -> int | None:
        value = self.inspect().kwargs.get("max_samples")
        return int(value) if value is not None else None


class GridError(Exception):
    """A grid that cannot start: the message is one line naming the run or option."""


REPLACED_ARGS = {
    "sandbox": "the sandbox is Inspect's option: --sandbox finmath_docker, finmath_bwrap, "
    "docker:$(finmath sandbox compose-path) or local",
}
"""Former task arguments -> what replaces them (named when a user still passes one)."""


def sandbox_spec(value: str) -> SandboxEnvironmentSpec:
    """Inspect's ``--sandbox TYPE[:CONFIG]`` as a spec; a config file relative to the
    current directory is made absolute (Inspect would read it beside the task's module)."""
    kind, _, config = value.partition(":")
    if config and not config.startswith("{") and not os.path.isabs(config):
        config = os.path.abspath(config)
    return SandboxEnvironmentSpec(kind, config or None)


def grid_runs(declaration: Declaration, options: GridOptions) -> list[dict[str, Any]]:
    """The task argument sets of the grid, filtered by ``--only``, with ``-T`` applied."""
    runs: list[dict[str, Any]] = []
    for args in declaration.named(options.grid).arg_sets():
        if not matches(args, options.only):
            continue
        merged = {**args, **options.task_args}
        for run in [merged] + [
            {**merged, "variant": "fresh", "variant_seed": seed} for seed in options.variant_seeds
        ]:
            if run not in runs:
                runs.append(run)
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
    if options.variant_seeds:
        if "variant_seed" not in parameters:
            return f"--variant-seeds: {declaration.task_name} has no fresh variants"
        if any(seed < 1 for seed in options.variant_seeds):
            return "--variant-seeds: seeds are 1 or more (0 is the published questions)"
    for flag, names in (("-T", options.task_args), ("--only", options.only)):
        unknown = sorted(set(names) - parameters)
        replaced = [name for name in unknown if name in REPLACED_ARGS]
        if replaced:
            return (
                f"{flag} {replaced[0]}: not a task parameter any more; {REPLACED_ARGS[replaced[0]]}"
            )
        if unknown:
            retired = declaration.report.retired
            instead = "".join(f"; {k}: {retired[k]}" for k in unknown if k in retired)
            return (
                f"{flag} {', '.join(unknown)}: not a parameter of {declaration.task_name} "
                f"(parameters: {', '.join(sorted(parameters))}){instead}"
            )
    if not grid_runs(declaration, options):
        wanted = " ".join(f"{k}={v}" for k, v in options.only.items())
        which = f"{declaration.benchmark} {options.grid}" if options.grid else declaration.benchmark
        return f"no run of the {which} grid has {wanted} (see finmath list)"
    return None


def dry_run_lines(
    declaration: Declaration, options: GridOptions, skipped: Mapping[int, str] | None = None
) -> list[str]:
    """What the grid would run; ``skipped``: index -> why a run cannot run here (named
    first: a real grid skips them and ends with a non-zero status)."""
    runs = grid_runs(declaration, options)
    skipped = skipped or {}
    which = f" (grid {options.grid})" if options.grid else ""
    lines = [f"cannot run here, a real grid skips {line}" for line in skip_lines(skipped, runs)]
    lines.append(
        f"{declaration.task_name}{which}: {len(runs)} runs x {len(options.models)} model(s) "
        f"= {len(runs) * len(options.models)} tasks -> {options.log_dir}"
        + (f" ({len(skipped)} run(s) skipped here)" if skipped else "")
    )
    for i, args in enumerate(runs, 1):
        shown = " ".join(f"-T {k}={v}" for k, v in args.items())
        mark = "  [skipped: cannot run here]" if i - 1 in skipped else ""
        lines.append(f"  {i:3d}. {shown}{mark}")
    lines.append("  models: " + ", ".join(options.models))
    if options.sandbox is not None:
        lines.append(f"  sandbox (runs that execute programs): {options.sandbox}")
    if options.model_roles:
        lines.append(
            "  model roles: " + ", ".join(f"{k}={v}" for k, v in options.model_roles.items())
        )
    if options.limit is not None:
        how = (
            f", stratified by {declaration.strata.label} (the cost below counts each run's "
            f"first {options.limit}, not the same samples)"
            if stratified_limit(declaration, options) and declaration.strata
            else ", shuffled"
            if options.sample_shuffle is not None
            else ", the first"
        )
        lines.append(f"  limit: {options.limit} samples per task{how}")
    generation = [
        f"{name.replace('_', '-')} {_shown(value)}" for name, value in options.generation().items()
    ]
    if options.epochs is not None:
        generation.append(f"epochs {options.epochs}")
    if generation:
        lines.append("  generation: " + ", ".join(generation))
    if options.inspect_args:
        lines.append("  Inspect options: " + " ".join(options.inspect_args))
    return lines


def _shown(value: Any) -> str:
    """A generation setting as the dry run prints it (a config object by its fields)."""
    if hasattr(value, "model_dump"):
        return str(value.model_dump(exclude_none=True))
    return str(value)


def _args_text(args: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in args.items())


def run_name(i: int, args: Mapping[str, Any]) -> str:
    """How lines name run ``i`` (0-based) of a grid: its number and task arguments."""
    shown = " ".join(f"-T {k}={v}" for k, v in args.items())
    return f"run {i + 1} ({shown})" if shown else f"run {i + 1}"


def skip_lines(skipped: Mapping[int, str], runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per reason: the run (its arguments when it is the only one) or the runs'
    numbers (1-based), then the reason."""
    by_reason: dict[str, list[int]] = {}
    for i, reason in sorted(skipped.items()):
        by_reason.setdefault(reason, []).append(i)
    return [
        f"{run_name(found[0], runs[found[0]])}: {reason}"
        if len(found) == 1
        else f"runs {', '.join(str(i + 1) for i in found)}: {reason}"
        for reason, found in by_reason.items()
    ]


def stratified_limit(declaration: Declaration, options: GridOptions) -> bool:
    """Whether ``--limit`` is applied by the benchmark's strata (not by Inspect)."""
    return (
        options.limit is not None
        and options.selection == "stratified"
        and options.sample_shuffle is None
        and declaration.strata is not None
    )


@dataclass
class Built:
    """The grid's tasks, built: the runs they are and the runs skipped (with the reason)."""

    runs: list[dict[str, Any]]
    """Every run of the grid (after ``--only`` and ``-T``), in order."""
    tasks: list[Task] = field(default_factory=list)
    built: list[int] = field(default_factory=list)
    """Index (in ``runs``) of each task."""
    skipped: dict[int, str] = field(default_factory=dict)
    """Index -> why the run cannot run here."""
    planned: list[tuple[int, str, Identity]] = field(default_factory=list)
    """(run index, model, the identity its log will have) of every run built."""
    notes: list[str] = field(default_factory=list)
    roles: dict[str, Any] = field(default_factory=dict)
    """The model roles as Inspect is given them (resolved once: the eval set runs with
    them and the planned identities name them, so the plan and the logs agree)."""


def build(declaration: Declaration, options: GridOptions) -> Built:
    """Build every run's task, skipping those that cannot run here.

    Raises :class:`GridError` (one line naming the run) when a task refuses its arguments
    or data: that is the user's to fix, and running the other runs would hide it.
    """
    runs = grid_runs(declaration, options)
    out = Built(runs=runs, skipped=missing(declaration, runs, options.model_roles, options.sandbox))
    try:
        out.roles = resolved_roles(options)
    except (PrerequisiteError, ValueError, TypeError) as e:
        raise GridError(f"--model-role: {plain(e)}") from e
    partial: dict[tuple[int, int], list[int]] = {}
    for i, args in enumerate(runs):
        if i in out.skipped:
            continue
        try:
            task = built_with_roles(out.roles, lambda: declaration.grid.task(**args))  # noqa: B023
        except (PrerequisiteError, ValueError, TypeError, LookupError, OSError) as e:
            reason = unavailable_reason(e)
            if reason is not None:
                out.skipped[i] = reason
                continue
            raise GridError(f"{run_name(i, args)}: {plain(e)}") from e
        if options.sandbox is not None and task.sandbox is not None:
            # only the tasks that run programs: a task without a sandbox keeps none
            task = task_with(task, sandbox=sandbox_spec(options.sandbox))
        if stratified_limit(declaration, options):
            assert declaration.strata is not None and options.limit is not None
            record = narrow(task, declaration.strata, options.limit)
            covered, every = len(record["strata"]), record["strata_in_dataset"]
            if covered < every:
                partial.setdefault((covered, every), []).append(i + 1)
        out.tasks.append(task)
        out.built.append(i)
        for model in options.models:
            identity = planned_identity(
                declaration.task_name, task, args, model, options,
                stratified_limit(declaration, options), out.roles,
            )  # fmt: skip
            out.planned.append((i, model, identity))
    label = declaration.strata.label if declaration.strata else ""
    for (covered, every), numbers in partial.items():
        which = "run" if len(numbers) == 1 else "runs"
        out.notes.append(
            f"--limit {options.limit} covers {covered} of the {every} strata ({label}) of "
            f"{which} {', '.join(map(str, numbers))}; --limit {every} covers them all"
        )
    return out


def plain(error: BaseException) -> str:
    """An error's message on one line, without Inspect's console markup."""
    text = " ".join(str(error).split())
    for tag in ("[bold]", "[/bold]", "ERROR: "):
        text = text.replace(tag, "")
    if isinstance(error, PrerequisiteError):
        return text
    return f"{type(error).__name__}: {text}"


def _eval_set(
    declaration: Declaration,
    options: GridOptions,
    display: str | None,
    built: Built | None = None,
) -> tuple[bool, Any, Built]:
    built = built or build(declaration, options)
    if not built.tasks:
        return False, [], built
    inspect = options.inspect()
    kwargs = inspect.passed_on()  # every other option of inspect eval-set, as it read them
    epochs = inspect.kwargs.get("epochs")
    if options.epochs is not None:  # Inspect's Epochs (its reducers) where it read --epochs
        kwargs["epochs"] = (
            epochs if getattr(epochs, "epochs", None) == options.epochs else options.epochs
        )
    if options.sample_shuffle is not None:
        kwargs["sample_shuffle"] = options.sample_shuffle
    if display is not None:
        kwargs["display"] = display
    success, logs = eval_set(
        tasks=built.tasks,
        model=options.models,
        log_dir=options.log_dir,
        limit=None if stratified_limit(declaration, options) else options.limit,
        model_roles=dict(built.roles) or None,
        eval_set_id=options.eval_set_id,
        **kwargs,
    )
    return success, logs, built


@dataclass
class Outcome:
    """How a grid ended: the exit status and the lines to print, the last a summary."""

    status: int
    lines: list[str]


INTERRUPTED = 130
"""Exit status of an interrupted grid (as a shell reports a command ended by SIGINT)."""


def run_grid(declaration: Declaration, options: GridOptions, display: str | None = None) -> Outcome:
    """Run (or resume) the whole grid in this process and say how each task ended.

    The status is 0 only when every run of the grid ran here and every task succeeded;
    the lines name each skipped, failed, interrupted or unstarted task. Raises
    :class:`GridError` (one line) when the grid cannot start.
    """
    interrupted = False
    built: Built | None = None
    try:
        _, _, built = _eval_set(declaration, options, display)
    except KeyboardInterrupt:
        interrupted = True
    except GridError:
        raise
    except (PrerequisiteError, ValueError, OSError) as e:
        raise GridError(plain(e)) from e
    if built is None:  # interrupted while the tasks were being built
        built = Built(runs=grid_runs(declaration, options))
        built.built = list(range(len(built.runs)))
    return outcome(declaration, options, built, interrupted)


def outcome(
    declaration: Declaration, options: GridOptions, built: Built, interrupted: bool = False
) -> Outcome:
    """Read the log directory: how did each of the grid's tasks end?"""
    logs = _grid_logs(options.log_dir)
    lines = list(built.notes)
    lines += [f"skipped {line}" for line in skip_lines(built.skipped, built.runs)]
    total = len(built.runs) * len(options.models)
    done = failed = unfinished = 0
    planned = {(i, model): identity for i, model, identity in built.planned}
    for i in built.built:
        args = built.runs[i]
        for model in options.models:
            identity = planned.get((i, model))
            found = [
                (location, header)
                for location, header in logs
                if (header.eval.task_registry_name or header.eval.task) == declaration.task_name
                and header.eval.model == model
                and (
                    is_this_run(identity, header)
                    if identity is not None
                    else dict(header.eval.task_args_passed or {}) == dict(args)
                )
            ]
            if any(h.status == "success" and all_scored(h) for _, h in found):
                done += 1
                continue
            if not found and interrupted:
                unfinished += 1
                lines.append(f"not run: {run_name(i, args)} x {model}: no log (interrupted)")
                continue
            if not found:  # the eval set ended, yet no log is this run's: say what is there
                failed += 1
                lines.append(
                    f"failed: {run_name(i, args)} x {model}: "
                    + no_log_text(identity, declaration.task_name, model, args, logs)
                )
                continue
            location, header = sorted(found, key=lambda f: f[0])[-1]
            if header.status in ("error", "success"):  # success: samples errored, unscored
                failed += 1
                what = "failed"
            else:
                unfinished += 1
                what = "interrupted"
            lines.append(
                f"{what}: {run_name(i, args)} x {model}: status {header.status}, "
                f"{_samples_text(header)}; log {location}"
            )
    parts = [f"{done} of {total} tasks succeeded"]
    skipped = len(built.skipped) * len(options.models)
    for count, word in ((skipped, "skipped"), (failed, "failed"), (unfinished, "interrupted")):
        if count:
            parts.append(f"{count} {word}")
    if done == total:
        lines.append(
            f"{parts[0]}; logs in {options.log_dir} (report: finmath report {options.log_dir})"
        )
        return Outcome(0, lines)
    tail = (
        " (skipped runs cannot run here: see above)"
        if not failed and not unfinished
        else " (run the same command again to resume)"
    )
    lines.append(f"grid incomplete: {', '.join(parts)}; logs in {options.log_dir}{tail}")
    return Outcome(INTERRUPTED if interrupted or unfinished else 1, lines)


def _grid_logs(log_dir: str) -> list[tuple[str, Any]]:
    """(location, header) of every readable log in ``log_dir`` (not its subfolders)."""
    if not filesystem(log_dir).exists(log_dir):
        return []
    found: list[tuple[str, Any]] = []
    for info in list_eval_logs(log_dir, recursive=False):
        try:
            found.append((info.name, read_eval_log(info, header_only=True)))
        except Exception:
            continue
    return found


def _samples_text(header: Any) -> str:
    planned = header.eval.dataset.samples or 0
    epochs = header.eval.config.epochs or 1
    completed = header.results.completed_samples if header.results else 0
    return f"{completed} of {planned * epochs} samples"


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


def capture(declaration: Declaration, options: GridOptions, built: Built) -> dict[str, Any]:
    """Inspect's capture manifest of the grid's eval set (nothing runs, the log dir is untouched)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "manifest.json")
        with _environ(INSPECT_EVAL_SET_CAPTURE, path):
            try:
                _eval_set(declaration, options, "none", built)
            except SystemExit as e:  # capture mode exits after writing the manifest
                if e.code not in (0, None):
                    raise
        with open(path, encoding="utf-8") as f:
            manifest: dict[str, Any] = json.load(f)
    return manifest


def write_plan(
    declaration: Declaration,
    options: GridOptions,
    path: str,
    stream: Callable[[str], None] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Enumerate the grid's tasks and write the plan (options + Inspect's manifest) to
    ``path`` (or hand its text to ``stream``: a pipe or device the caller writes); the lines
    name the runs left out because they cannot run here."""
    built = build(declaration, options)
    skipped = [f"skipped {line}" for line in skip_lines(built.skipped, built.runs)]
    if not built.tasks:
        raise GridError("no run of the grid can run here: " + "; ".join(skipped))
    if options.eval_set_id is None:
        options.eval_set_id = f"finmath-{declaration.benchmark}-{uuid.uuid4().hex[:12]}"
    plan = {
        "finmath_plan": PLAN_VERSION,
        "options": asdict(options),
        "manifest": capture(declaration, options, built),
    }
    if stream is not None:
        stream(json.dumps(plan, indent=2) + "\n")
    else:
        with file(path, "w") as f:
            f.write(json.dumps(plan, indent=2))
    return plan, [*built.notes, *skipped]


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


def all_scored(header: Any) -> bool:
    """Whether a log's header says every sample it planned completed with its scores."""
    results = header.results
    return results is not None and results.completed_samples >= results.total_samples


@dataclass
class FoundLog:
    """A log already in the grid's directory (header only)."""

    location: str
    status: str
    eval_set_id: str | None
    header: Any = None
    """The log's header (its identity decides whether it is a log of a planned run)."""
    scored: bool = True
    """Every sample of the log has its scores (a log whose samples errored, kept by a
    run that does not fail on errors, can be ``success`` without them)."""


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
        found.setdefault(key, []).append(
            FoundLog(info.name, log.status, log.eval.eval_set_id, log, all_scored(log))
        )
    return found


def declaration_name(task: Mapping[str, Any]) -> str:
    """The registry name of a plan's task (``finmath_tasks/<name>``)."""
    return str(task.get("registry_name") or task["name"])


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
    plan: Mapping[str, Any],
    index: int,
    count: int,
    log_dir: str,
    planned: Sequence[tuple[str, Identity]] = (),
) -> tuple[dict[str, Any] | None, list[str]]:
    """The selection document of worker ``index`` and lines saying what it skips or resumes.

    A task is already complete when a successful log of it is in the directory and (for
    the runs in ``planned``: model, the identity its log will have) that log's identity
    is the run's: a log of the same arguments on other data, samples or generation
    settings is not this run.

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
        identity = planned_for(planned, declaration_name(task), task["model"], task["args"])
        if identity is not None:
            previous = [log for log in previous if is_this_run(identity, log.header)]
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


def run_worker(
    declaration: Declaration,
    plan: Mapping[str, Any],
    index: int,
    count: int,
    display: str | None = None,
) -> tuple[bool, list[str]]:
    """Run shard ``index`` of ``count`` of a plan; (success, lines to print)."""
    options = GridOptions(**plan["options"])
    shard(plan["manifest"]["tasks"], index, count)  # a bad index is said before any build
    built = build(declaration, options)
    planned = [(model, identity) for _, model, identity in built.planned]
    selection, lines = selection_for(plan, index, count, options.log_dir, planned)
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
            try:
                success, _, built = _eval_set(declaration, options, display, built)
            except KeyboardInterrupt:
                success, built = False, Built(runs=[])
    lines += built.notes
    lines += [f"skipped {line}" for line in skip_lines(built.skipped, built.runs)]
    lines += _remove_superseded(plan, index, count, options.log_dir)
    # Inspect reports an interrupted eval set as a success: the logs tell
    unfinished = _unfinished(plan, chosen, options.log_dir, planned)
    lines += unfinished
    done = len(chosen) - len(unfinished)
    lines.append(f"worker {index} of {count}: {done} of {len(chosen)} task(s) succeeded")
    return bool(success) and not unfinished, lines


def _unfinished(
    plan: Mapping[str, Any],
    chosen: set[str],
    log_dir: str,
    planned: Sequence[tuple[str, Identity]] = (),
) -> list[str]:
    """A line for each chosen task of the plan without a successful log in ``log_dir``
    (of the run's identity, for the runs in ``planned``)."""
    logs = existing_logs(log_dir)
    lines: list[str] = []
    for task in plan["manifest"]["tasks"]:
        if task["identifier"] not in chosen:
            continue
        key = (task.get("registry_name") or task["name"], task["model"], task["args_hash"])
        found = logs.get(key, [])
        identity = planned_for(planned, declaration_name(task), task["model"], task["args"])
        if identity is not None:
            found = [log for log in found if is_this_run(identity, log.header)]
        statuses = sorted(
            {log.status if log.scored else f"{log.status} without scores" for log in found}
        )
        if "success" not in statuses:
            state = ", ".join(statuses) if statuses else "no log"
            lines.append(
                f"not finished: {task['name']} {task['model']} {_args_text(task['args'])}: {state}"
            )
    return lines


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
