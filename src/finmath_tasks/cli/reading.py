"""The logs of a report: every readable log in a folder becomes a :class:`Run`; the
attempts of one run (logs with one Inspect task id: resumed, retried) collapse to the most
complete, and every other log is kept (runs of one identity are repeats, labelled by
``cli.runs.label_runs``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log_sample_summaries
from rich.console import Console
from rich.progress import Progress

from finmath_tasks.cli.compare import Comparison, PairedRow
from finmath_tasks.cli.runs import Run, label_runs
from finmath_tasks.cli.samples import (  # noqa: F401 (the report reads them from here)
    SAMPLES_KEY,
    DamagedLog,
    SampleRecord,
    log_samples,
    read_header,
    run_samples,
)
from finmath_tasks.cli.usage import usage_of
from finmath_tasks.cli.variants_report import GapRow
from finmath_tasks.comparability import comparable
from finmath_tasks.identity import run_identity


@dataclass
class Logs:
    runs: list[Run] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """One line per log left out, naming the file."""
    comparisons: list[Comparison] = field(default_factory=list)
    """Every run beside the published cells of its setting (filled by the report)."""
    paired: list[PairedRow] = field(default_factory=list)
    """Every two runs of one task compared on their common samples (filled by the report)."""
    gaps: list[GapRow] = field(default_factory=list)
    """Original runs against their fresh variants (filled by the report)."""
    not_shown: list[tuple[str, str]] = field(default_factory=list)
    """(log, why) for every log in no accuracy table: unreadable, superseded by a more
    complete attempt, or without the score its task's tables show (filled by the report)."""
    shown: dict[str, list[str]] = field(default_factory=dict)
    """Log path -> the accuracy tables it has a row in (filled by the report)."""


def _attempts(a: Run, b: Run) -> bool:
    """Whether two logs of one Inspect task id are attempts of one run
    (:func:`finmath_tasks.comparability.comparable`, purpose ``attempt``)."""
    if a.identity is None or b.identity is None:
        return True
    return comparable(a.identity, b.identity, "attempt", task_ids=(a.task_id, b.task_id)).ok


def _metrics(log: EvalLog) -> dict[str, dict[str, float]]:
    """Score name -> metric name -> value."""
    return {
        score.name: {name: float(m.value) for name, m in score.metrics.items()}
        for score in (log.results.scores if log.results else [])
    }


INSPECT_FILES = ("logs.json", "eval-set.json")
"""Inspect's own bookkeeping in a log folder (its index, an eval set's manifest): not logs."""


def log_files(log_dir: str) -> list[Any]:
    """Inspect's listing of ``log_dir``, plus (for a local folder) every other ``.eval`` or
    ``.json`` file in it, whatever its name (Inspect lists only its own names)."""
    infos: list[Any] = list(list_eval_logs(log_dir, recursive=True))
    folder = Path(log_dir.removeprefix("file://"))
    if "://" in log_dir.removeprefix("file://") or not folder.is_dir():
        return infos
    listed = {Path(_shown(i.name)).resolve() for i in infos}
    for path in sorted(folder.rglob("*")):
        if (
            path.is_file()
            and path.suffix in (".eval", ".json")
            and path.resolve() not in listed
            and path.name not in INSPECT_FILES
            and not any(part.startswith(".") for part in path.relative_to(folder).parts)
        ):
            infos.append(str(path))
    return infos


def read_logs(log_dir: str, console: Console | None = None) -> Logs:
    """Every run in ``log_dir`` (recursively), with a line for each file left out
    (unreadable, not a log, or a less complete attempt of the same run).

    Logs with one Inspect task id are attempts of one run (a resumed or retried eval
    keeps its task id): the most complete is kept. Logs with different task ids are
    different runs, kept all, even when their identities are equal (independent repeats).
    A log that is not ``success`` is kept, marked unfinished (``Run.status``), unless a
    more complete attempt of the same run exists.
    """
    console = console or Console(stderr=True)
    logs = Logs()
    infos = log_files(log_dir)
    if not infos:
        logs.problems.append(f"{log_dir}: no Inspect logs (*.eval, *.json) found")
        return logs
    kept: dict[str, Run] = {}
    with Progress(console=console, transient=True, disable=not console.is_terminal) as bar:
        job = bar.add_task(f"reading {len(infos)} logs", total=len(infos))
        for info in infos:
            bar.advance(job)
            location = info if isinstance(info, str) else info.name
            try:
                log = read_header(info)
            except Exception as e:  # a corrupt or truncated file, or one we cannot read
                reason = (
                    f"not a readable Inspect log, skipped ({type(e).__name__}: {_first_line(e)})"
                )
                logs.problems.append(f"{_shown(location)}: {reason}")
                logs.not_shown.append((_shown(location), reason))
                continue
            run = run_of(log, location)
            key = run.task_id or run.path
            previous = kept.get(key)
            if previous is not None and not _attempts(previous, run):
                # one task id, another identity (data edited in place): another run
                key = run.path
                previous = None
            if previous is not None:
                better, worse = sorted([previous, run], key=_completeness, reverse=True)
                reason = (
                    f"left out, an attempt of the same run as "
                    f"{better.name} (the same Inspect task id {run.task_id}: resumed or "
                    f"retried), which is more complete ({_completeness_text(better)} against "
                    f"{_completeness_text(worse)})"
                )
                logs.problems.append(f"{_shown(worse.path)}: {reason}")
                logs.not_shown.append((_shown(worse.path), reason))
                run = better
            kept[key] = run
    for run in kept.values():
        if run.status != "success":
            logs.problems.append(
                f"{run.name}: status {run.status}{_why(run.status)}, {run.samples}/{run.total} "
                "samples: shown marked unfinished"
            )
        elif run.errored:
            logs.problems.append(
                f"{run.name}: {run.errored} of {run.total} samples ended in an error (the run "
                "accepted them: --fail-on-error); not scored, out of every metric: shown "
                "marked not whole"
            )
    logs.runs = sorted(kept.values(), key=lambda r: (r.task, r.model, r.created))
    for task in dict.fromkeys(r.task for r in logs.runs):
        label_runs([r for r in logs.runs if r.task == task])
    return logs


def run_of(log: EvalLog, location: str) -> Run:
    """The run a log header describes."""
    results = log.results
    scored = 0
    if results is not None and results.scores:
        first = results.scores[0]
        scored = first.scored_samples if first.scored_samples is not None else 0
        if first.scored_samples is None:
            scored = results.completed_samples
        elif int(log.eval.config.epochs or 1) > 1:
            # Inspect counts the questions scored (epochs reduced); the total counts
            # sample-epochs: count these too (at most the sample-epochs completed)
            scored = min(scored * int(log.eval.config.epochs or 1), results.completed_samples)
    config = log.plan.config if log.plan else None
    generation = (
        {
            k: v
            for k, v in config.model_dump(exclude_none=True).items()
            if not isinstance(v, dict | list)
        }
        if config is not None
        else {}
    )
    run = Run(
        path=location,
        task=log.eval.task_registry_name or log.eval.task,
        model=log.eval.model,
        args={k: _hashable(v) for k, v in log.eval.task_args.items()},
        args_passed=dict(log.eval.task_args_passed or {}),
        samples=results.completed_samples if results else 0,
        created=log.eval.created,
        scores={},
        usage=usage_of(log),
        roles={
            str(role): str(getattr(config_, "model", config_))
            for role, config_ in (log.eval.model_roles or {}).items()
        },
        generation=generation,
        epochs=int(log.eval.config.epochs or 1),
        total=(results.total_samples if results else 0)
        or (log.eval.dataset.samples or 0) * int(log.eval.config.epochs or 1),
        scored=scored,
        scored_by={
            s.name: s.scored_samples
            for s in (results.scores if results else [])
            if s.scored_samples is not None
        },
        status=str(log.status),
        sample_ids=tuple(str(i) for i in (log.eval.dataset.sample_ids or ())),
        identity=run_identity(log),
        task_id=str(log.eval.task_id or ""),
        metadata=dict(log.eval.metadata or {}),
    )
    run.scores = _metrics(log)
    if results is None and log.status != "success":
        _count_held(run, location)
    return run


def _why(status: str) -> str:
    return " (the eval process was killed, or is still running)" if status == "started" else ""


def _count_held(run: Run, location: str) -> None:
    """An unfinished log without results (its process was killed, or is still running):
    count the samples it holds, as ``finmath export --partial`` reads them, rather than 0.
    Its metrics stay empty: the run is shown marked unfinished."""
    try:
        summaries = read_eval_log_sample_summaries(location)
    except Exception:  # nothing readable past the header: the counts stay 0
        return
    run.samples = len(summaries)
    main = [next(iter((s.scores or {}).values()), None) for s in summaries]
    run.scored = sum(1 for score in main if score is not None and _finite(score.value))


def _finite(value: Any) -> bool:
    if isinstance(value, dict):  # one scorer, several keys (older logs): the first key
        value = next(iter(value.values()), None)
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _completeness(run: Run) -> tuple[int, bool, str]:
    """More samples scored, then success, then the latest."""
    return (run.scored, run.status == "success", run.created)


def _completeness_text(run: Run) -> str:
    return f"{run.scored} scored, status {run.status}, created {run.created}"


def _hashable(value: Any) -> Any:
    """Task argument values as table keys: lists become tuples, mappings sorted tuples."""
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    return value


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def _shown(location: str) -> str:
    return location.removeprefix("file://")
