"""The runs of a report: one usable log each, and the cells (a value with its interval)
that tables and plots show. ``report`` (tables) and ``plots`` (PNGs) both build on
this module, which imports neither.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finmath_tasks.cli.declare import Report
from finmath_tasks.cli.samples import run_samples
from finmath_tasks.cli.stats import wilson
from finmath_tasks.comparability import comparable
from finmath_tasks.identity import NOT_IDENTITY, Identity, describe, differing


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
    identity: Identity | None = None
    """Everything the log records that can change its scores (:mod:`finmath_tasks.identity`)."""
    task_id: str = ""
    """Inspect's task id: logs with one task id are attempts of one run (resumed, retried)."""
    repeat: tuple[int, int] = (0, 0)
    """(i, k): the i-th of k runs with this identity (independent repeats); (0, 0) alone."""
    metadata: dict[str, Any] | None = None
    """The log's eval metadata (the data provenance), kept from the header read; None when
    not read (the header is then read where it is needed)."""
    setting: str = ""
    """The label without the repeat (what repeats of one identity share)."""

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

    for sample in run_samples(run):
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


def run_cell(run: Run, score: str, report: Report) -> Cell | None:
    """Accuracy of ``score`` in ``run`` with the task's interval (:func:`task_interval`),
    or None when the run lacks it."""
    metrics = run.scores.get(score)
    if metrics is None or report.accuracy not in metrics:
        return None
    p = metrics[report.accuracy]
    if not math.isfinite(p):
        return Cell(p)
    found = task_interval(run, score, report)
    if found is not None:
        return Cell(p, found.low, found.high)
    interval = report.interval
    if interval.kind == "bounds" and interval.low in metrics and interval.high in metrics:
        # samples that cannot be read: the interval the task logged
        low, high = metrics[interval.low], metrics[interval.high]
        if math.isfinite(low) and math.isfinite(high) and low < high:
            return Cell(p, low, high)
    # nor a logged interval: Wilson over the samples the score has a value for
    n = run.scored_by.get(score) or run.samples
    bounds = wilson(p, n, report.interval.level)
    if bounds is None:
        return Cell(p)
    return Cell(p, *bounds)


def group_cell(run: Run, score: str, group: str, report: Report) -> Cell | None:
    """Accuracy of one group (topic, section) with its interval over the group's
    questions (:func:`task_interval`)."""
    assert report.groups is not None
    if report.groups.from_samples:
        p = group_accuracy(run, report.groups.key).get(score, {}).get(group)
    else:
        p = run.scores.get(score, {}).get(report.groups.prefix + group)
    if p is None:
        return None
    if not math.isfinite(p):
        return Cell(p)
    found = task_interval(run, score, report, group)
    if found is not None:
        return Cell(p, found.low, found.high)
    n = group_counts(run, report.groups.key).get(score, {}).get(group, 0)
    bounds = wilson(p, n, report.interval.level) if n else None
    if bounds is None:
        return Cell(p)
    return Cell(p, *bounds)


def task_interval(run: Run, score: str, report: Report, group: str | None = None) -> Any:
    """The interval of ``score`` in ``run`` as the task declares it (its level, its
    clustering unit: :attr:`Report.cluster`), the one every table, comparison row and
    paired row shows (``cli.stats.accuracy``): over questions (with epochs, each
    question's mean over them), Wilson's score interval (clustered by document where
    questions share one, t with clusters - 1 degrees of freedom) where every question
    scores 0 or 1, else the t interval (a score interval where that one has no width).
    ``group``: over the questions of one group (not clustered). None when the samples
    cannot be read."""
    from finmath_tasks.cli import stats

    level = report.interval.level
    try:
        if group is None:
            return stats.accuracy(stats.per_sample(run, score, report.cluster), level)
        assert report.groups is not None
        return stats.group_accuracy(run, score, report.groups.key, group, level)
    except Exception:  # the samples cannot be read: no interval rather than a wrong one
        return None


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


NOT_IDENTITY_ARGS = tuple(n[4:] for n in NOT_IDENTITY if n.startswith("arg."))
"""Task arguments that cannot change a score (:data:`finmath_tasks.identity.NOT_IDENTITY`):
never a row of their own."""


def varying_args(runs: Sequence[Run], exclude: Iterable[str] = ()) -> list[str]:
    """Task arguments whose values differ between ``runs`` (in first-seen order), those
    that cannot change a score aside."""
    skip = {*exclude, *NOT_IDENTITY_ARGS}
    keys: list[str] = []
    for run in runs:
        for key in run.args:
            if key not in skip and key not in keys:
                keys.append(key)
    return [k for k in keys if len({repr(r.args.get(k)) for r in runs}) > 1]


def identity_key(run: Run) -> str:
    """The run's identity as a key (the log's path for a run read without one)."""
    return run.identity.key if run.identity is not None else run.path


# --- what tables and sections are made of -------------------------------------------------


@dataclass
class Rendered:
    """A table ready to print: header, rows of text, notes."""

    title: str
    header: list[str]
    rows: list[list[str]]
    caption: str = ""
    logs: dict[str, str] = field(default_factory=dict)
    """A run's label (as a header or cell shows it) -> its log file: ``report.html`` puts
    the file in the cell's tooltip (``title=``) and both reports list it in a legend under
    the table, so a cell names a run by what tells it apart, not by its file."""


@dataclass
class Section:
    title: str
    tables: list[Rendered] = field(default_factory=list)
    plots: list[tuple[str, str]] = field(default_factory=list)
    """(title, file name relative to the report)"""
    notes: list[str] = field(default_factory=list)


def latest_runs(runs: Sequence[Run]) -> list[Run]:
    """One run per identity, the latest of its repeats (in the given order): the runs a
    plot draws (the tables show every repeat and their mean)."""
    latest: dict[str, Run] = {}
    for run in runs:
        kept = latest.get(identity_key(run))
        if kept is None or run.created >= kept.created:
            latest[identity_key(run)] = run
    return [run for run in runs if latest[identity_key(run)] is run]


def label_runs(runs: Sequence[Run]) -> None:
    """Set each run's ``label``: what tells it apart from the runs of the same model and
    task arguments (every differing part of their identities: sample set, data, epochs,
    roles, generation settings, version...), ``repeat i/k`` among runs of one identity,
    and ``UNFINISHED``/``NOT WHOLE`` for a log that did not score every sample."""
    same: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        shown = repr(
            sorted((k, repr(v)) for k, v in run.args.items() if k not in NOT_IDENTITY_ARGS)
        )
        same.setdefault((run.model, shown), []).append(run)
    for members in same.values():
        _label_group(members)


def _label_group(runs: Sequence[Run]) -> None:
    identities = [r.identity for r in runs if r.identity is not None]
    names = [
        n for n in differing(identities)
        if n != "model" and not (n.startswith("arg.") and n[4:] not in NOT_IDENTITY_ARGS)
    ]  # fmt: skip
    repeats: dict[str, list[Run]] = {}
    for run in runs:
        repeats.setdefault(identity_key(run), []).append(run)
    for run in runs:
        parts = [describe(run.identity, names)] if run.identity is not None and names else []
        run.setting = " ".join(parts)
        group = sorted(repeats[identity_key(run)], key=lambda r: (r.created, r.path))
        if len(group) > 1:
            run.repeat = (group.index(run) + 1, len(group))
            parts.append(f"repeat {run.repeat[0]}/{run.repeat[1]}")
        if run.status != "success":
            parts.append(f"UNFINISHED ({run.status}, {run.samples}/{run.total})")
        elif run.errored:
            parts.append(f"NOT WHOLE ({run.errored}/{run.total} samples errored)")
        run.label = " ".join(parts)


def pairing(a: Run, b: Run, across_data: bool = False) -> tuple[bool, str]:
    """Whether two runs may be paired (:func:`finmath_tasks.comparability.comparable`,
    purpose ``paired``: one task, the same data; on different data only when
    ``across_data`` is asked for), and a note: why not, or what to say beside the pair."""
    if a.identity is None or b.identity is None:
        return False, "a log's identity cannot be read"
    verdict = comparable(a.identity, b.identity, "paired", across_data=across_data)
    return verdict.ok, verdict.reason


def overlap_note(
    a: Run, da: Any, b: Run, db: Any, n: int, names: tuple[str, str] = ("run a", "run b")
) -> str:
    """A note when the samples both scored are fewer than either run's samples; ``names``:
    how the table calls the two runs (their columns)."""
    na, nb = len(da.means()), len(db.means())
    if n >= na and n >= nb:
        return ""
    return f"on the {n} samples both scored: {n} of {names[0]}'s {na}, {n} of {names[1]}'s {nb}"


def run_labels(runs: Sequence[Run]) -> dict[str, str]:
    """Log name -> what tells each run apart from the others of ``runs`` (one task's): its
    model, the task arguments whose values differ between them (``variant=fresh
    variant_seed=1``), and its label (other identity parts such as ``epochs=2``, ``repeat
    i/k``, unfinished). Each label is unique: two runs that read the same (attempts of one
    run) get ``log i of k`` in the order they were made."""
    args = varying_args(runs)
    labels = {
        run.name: " ".join(
            p for p in [run.model, *(f"{a}={run.args.get(a)}" for a in args), run.label] if p
        )
        for run in runs
    }
    same: dict[str, list[Run]] = {}
    for run in runs:
        same.setdefault(labels[run.name], []).append(run)
    for label, members in same.items():
        if len(members) > 1:
            ordered = sorted(members, key=lambda r: (r.created, r.path))
            for i, run in enumerate(ordered, 1):
                labels[run.name] = f"{label} log {i} of {len(ordered)}"
    return labels


def run_setting(run: Run, args: Sequence[str]) -> str:
    """A run named by its distinguishing settings: the task arguments ``args`` and its label
    ("–" when nothing tells it apart: the model column names it; its log file is in the
    report's Logs table, never its name in a table)."""
    parts = [f"{a}={run.args.get(a)}" for a in args]
    return " ".join([*parts, run.label]).strip() or "–"
