"""The runs of a report: one usable log each, and the cells (a value with its interval)
that tables and plots show. ``report`` (tables) and ``plots`` (PNGs) both build on
this module, which imports neither.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.log import read_eval_log_samples
from inspect_ai.scorer import SampleScore, Score, ci_wilson

from finmath_tasks.cli.declare import Report


@dataclass
class Run:
    """One usable log: a task, its arguments and model, and its metrics."""

    path: str
    task: str
    model: str
    args: dict[str, Any]
    args_passed: dict[str, Any]
    samples: int
    created: str
    scores: dict[str, dict[str, float]]
    group_totals: dict[str, dict[str, dict[str, tuple[float, int]]]] = field(default_factory=dict)
    """Per group key: score -> group -> (sum, count) read from the samples (a cache)."""
    usage: Any = None
    """The log's token usage and wall time (a ``cli.usage.Usage``), when read."""
    roles: dict[str, str] = field(default_factory=dict)
    """Model role (``grader``) -> the model that played it, as the log records them."""
    generation: dict[str, Any] = field(default_factory=dict)
    """The generation settings the run set (temperature, top_p, max_tokens...), from the log."""
    epochs: int = 1
    total: int = 0
    """Samples the run was asked to evaluate (x epochs); ``samples`` is how many completed."""
    scored_by: dict[str, int] = field(default_factory=dict)
    """Score -> the samples it has a value for (Inspect's ``scored_samples``)."""
    scored: int = 0
    """Samples with a finite value of the task's main score (read from the samples)."""
    status: str = "success"
    """The log's status: a run that is not ``success`` is marked unfinished in every table."""
    sample_ids: tuple[str, ...] = ()
    """The ids of the samples the run evaluated (part of what makes an experiment)."""
    per_sample: dict[str, Any] = field(default_factory=dict)
    """Score -> its values per sample, read from the log when needed (a cache)."""
    label: str = ""
    """The settings that tell this run apart from the other runs of its task (set by the report)."""

    @property
    def name(self) -> str:
        return Path(self.path).name

    @property
    def errored(self) -> int:
        """Samples of a ``success`` run that ended in an error (accepted by the user's
        ``--fail-on-error``/``--no-fail-on-error``): not scored, out of every metric."""
        return max(self.total - self.samples, 0) if self.status == "success" else 0


def _finite(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    ) or isinstance(value, bool)


def group_counts(run: Run, key: str) -> dict[str, dict[str, int]]:
    """Score name -> group -> number of samples with a value for it.

    The group is the score's metadata ``key`` when it has one, else the sample's.
    """
    return {
        score: {group: n for group, (_, n) in groups.items()}
        for score, groups in group_totals(run, key).items()
    }


def group_accuracy(run: Run, key: str) -> dict[str, dict[str, float]]:
    """Score name -> group -> accuracy over the samples with a value for it, from the
    log's samples: the breakdowns a task keeps out of its metrics (e.g. a task type, a
    length, a placement) are read here."""
    return {
        score: {group: total / n for group, (total, n) in groups.items() if n}
        for score, groups in group_totals(run, key).items()
    }


def group_totals(run: Run, key: str) -> dict[str, dict[str, tuple[float, int]]]:
    """Score name -> group -> (sum of values, number of samples with a value), read once
    per run and key from the log's samples."""
    cached = run.group_totals.get(key)
    if cached is not None:
        return cached
    totals: dict[str, dict[str, tuple[float, int]]] = {}
    for sample in read_eval_log_samples(run.path, all_samples_required=False):
        for scorer, score in (sample.scores or {}).items():
            own = score.metadata or {}
            group = str(own[key] if key in own else (sample.metadata or {}).get(key))
            value = score.value
            # a dict value: one score per key (older logs, multi-key scorers); a scalar:
            # the scorer is the score (one scorer per key)
            pairs: Iterable[tuple[str, Any]] = (
                value.items() if isinstance(value, dict) else [(scorer, value)]
            )
            for name, v in pairs:
                if _finite(v):
                    per = totals.setdefault(name, {})
                    total, n = per.get(group, (0.0, 0))
                    per[group] = (total + float(v), n + 1)
    run.group_totals[key] = totals
    return totals


@dataclass(frozen=True)
class Cell:
    value: float
    low: float | None = None
    high: float | None = None

    def text(self) -> str:
        if math.isnan(self.value):
            return "–"
        if self.low is None or self.high is None:
            return f"{self.value * 100:.1f}"
        return f"{self.value * 100:.1f} [{self.low * 100:.1f}, {self.high * 100:.1f}]"


def wilson(p: float, n: int, level: float) -> tuple[float, float] | None:
    """Inspect's Wilson interval (``ci_wilson``) of a proportion ``p`` over ``n`` 0/1
    samples: never of zero width at 0/n or n/n, unlike p ± z x stderr."""
    if n <= 0 or not 0.0 <= p <= 1.0:
        return None
    k = round(p * n)
    scores = [SampleScore(score=Score(value=1.0 if i < k else 0.0), sample_id=i) for i in range(n)]
    bounds = ci_wilson(level)(scores)  # type: ignore[arg-type]
    assert isinstance(bounds, dict)
    # rounding may put a bound a hair past the proportion itself (0/n: 3e-17)
    return min(float(bounds["lower"]), k / n), max(float(bounds["upper"]), k / n)


def run_cell(run: Run, score: str, report: Report) -> Cell | None:
    """Accuracy of ``score`` in ``run`` with its interval, or None when the run lacks it."""
    metrics = run.scores.get(score)
    if metrics is None or report.accuracy not in metrics:
        return None
    p = metrics[report.accuracy]
    # Wilson over the samples the score has a value for (the task's own interval may be
    # of zero width at 0/n or n/n)
    n = run.scored_by.get(score) or run.samples
    bounds = wilson(p, n, report.interval.level) if math.isfinite(p) else None
    if bounds is None:
        return Cell(p)
    return Cell(p, *bounds)


def group_cell(run: Run, score: str, group: str, report: Report) -> Cell | None:
    """Accuracy of one group (topic, section) with its Wilson interval over the group's samples."""
    assert report.groups is not None
    if report.groups.from_samples:
        p = group_accuracy(run, report.groups.key).get(score, {}).get(group)
    else:
        p = run.scores.get(score, {}).get(report.groups.prefix + group)
    if p is None:
        return None
    n = group_counts(run, report.groups.key).get(score, {}).get(group, 0)
    bounds = wilson(p, n, report.interval.level) if n else None
    if bounds is None:
        return Cell(p)
    return Cell(p, *bounds)


def groups_of(runs: Iterable[Run], score: str, report: Report) -> list[str]:
    if report.groups is None:
        return []
    if report.groups.from_samples:
        key = report.groups.key
        return sorted({g for run in runs for g in group_accuracy(run, key).get(score, {})})
    prefix = report.groups.prefix
    names = {
        metric[len(prefix) :]
        for run in runs
        for metric in run.scores.get(score, {})
        if metric.startswith(prefix)
    }
    return sorted(names)


def _order(values: Iterable[Any], preferred: Sequence[Any]) -> list[Any]:
    distinct = list(dict.fromkeys(values))
    rank = {str(v): i for i, v in enumerate(preferred)}
    return sorted(distinct, key=lambda v: (rank.get(str(v), len(rank)), str(v)))


def varying_args(runs: Sequence[Run], exclude: Iterable[str] = ()) -> list[str]:
    """Task arguments whose values differ between ``runs`` (in first-seen order)."""
    skip = set(exclude)
    keys: list[str] = []
    for run in runs:
        for key in run.args:
            if key not in skip and key not in keys:
                keys.append(key)
    return [k for k in keys if len({repr(r.args.get(k)) for r in runs}) > 1]


# --- what tables and sections are made of -------------------------------------------------


@dataclass
class Rendered:
    """A table ready to print: header, rows of text, notes."""

    title: str
    header: list[str]
    rows: list[list[str]]
    caption: str = ""


@dataclass
class Section:
    title: str
    tables: list[Rendered] = field(default_factory=list)
    plots: list[tuple[str, str]] = field(default_factory=list)
    """(title, file name relative to the report)"""
    notes: list[str] = field(default_factory=list)


def latest_runs(runs: Sequence[Run], hide: Iterable[str] = ()) -> list[Run]:
    """The runs a table shows: of runs with the same task, model and arguments (those in
    ``hide`` aside), the latest; in the given order."""
    hidden = set(hide)

    def key(run: Run) -> tuple[str, str, str]:
        shown = sorted((k, v) for k, v in run.args.items() if k not in hidden)
        return (run.task, run.model, repr(shown))

    latest: dict[tuple[str, str, str], Run] = {}
    for run in runs:
        kept = latest.get(key(run))
        if kept is None or run.created >= kept.created:
            latest[key(run)] = run
    return [run for run in runs if latest[key(run)] is run]


def label_runs(runs: Sequence[Run], hide: Iterable[str] = ()) -> None:
    """Set each run's ``label``: among runs of the same model and task arguments (those in
    ``hide`` aside), the settings that tell them apart (model roles, generation settings,
    epochs, sample count); ``UNFINISHED`` for a log that is not ``success``."""
    hidden = set(hide)
    same: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        shown = repr(sorted((k, v) for k, v in run.args.items() if k not in hidden))
        same.setdefault((run.model, shown), []).append(run)
    for members in same.values():
        _label_group(members)


def _label_group(runs: Sequence[Run]) -> None:
    def differing(values: Callable[[Run], dict[str, Any]]) -> list[str]:
        keys = list(dict.fromkeys(k for r in runs for k in values(r)))
        return [k for k in keys if len({repr(values(r).get(k)) for r in runs}) > 1]

    roles = differing(lambda r: r.roles)
    generation = differing(lambda r: r.generation)
    epochs = len({r.epochs for r in runs}) > 1
    sizes = len({r.total // max(r.epochs, 1) for r in runs}) > 1
    ids = not sizes and len({r.sample_ids for r in runs}) > 1
    for run in runs:
        parts = [f"{k}={run.roles.get(k, '-')}" for k in roles]
        parts += [f"{k}={run.generation.get(k, '-')}" for k in generation]
        if epochs:
            parts.append(f"epochs={run.epochs}")
        if sizes:
            parts.append(f"samples={run.total // max(run.epochs, 1)}")
        if ids:
            parts.append(f"samples from {run.sample_ids[0] if run.sample_ids else '?'}")
        if run.status != "success":
            parts.append(f"UNFINISHED ({run.status}, {run.samples}/{run.total})")
        elif run.errored:
            parts.append(f"NOT WHOLE ({run.errored}/{run.total} samples errored)")
        run.label = " ".join(parts)


def run_setting(run: Run, args: Sequence[str]) -> str:
    """A run named by its distinguishing settings: the task arguments ``args`` and its label."""
    parts = [f"{a}={run.args.get(a)}" for a in args]
    return " ".join([*parts, run.label]).strip() or run.name
