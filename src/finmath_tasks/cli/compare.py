"""The report's comparisons: each run beside the published cells of its whole setting
(``comparisons.csv``), and any two runs of one task on the same samples, paired
(``paired.csv``). Values are fractions in [0, 1] in the CSVs, percentages in the tables.
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from statistics import stdev
from typing import Any

from finmath_tasks.cli.declare import Declaration, PublishedScore, Report, matches
from finmath_tasks.cli.provenance import Upstreamness, run_data, upstreamness
from finmath_tasks.cli.published import (
    GENERATION,
    Match,
    ModelNames,
    Published,
    group_metric_candidates,
    load_published,
    matching_cells,
)
from finmath_tasks.cli.runs import (
    NOT_IDENTITY_ARGS,
    Rendered,
    Run,
    identity_key,
    overlap_note,
    pairing,
    run_labels,
    run_setting,
    task_interval,
    varying_args,
)
from finmath_tasks.cli.stats import (
    Accuracy,
    PerSample,
    epoch_spread,
    paired,
    per_sample,
    wilson,
)

SMALL = 0.5
"""A run over fewer than this share of the published questions is marked small."""


def task_defaults(declaration: Declaration) -> dict[str, Any]:
    """The default value of each parameter of the benchmark's task function."""
    import inspect as pyinspect

    try:
        parameters = pyinspect.signature(declaration.grid.task).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in parameters if p.default is not pyinspect.Parameter.empty}


def compared_args(declaration: Declaration, defaults: Mapping[str, Any]) -> list[str]:
    """The task arguments that change what is evaluated (all but those that cannot change a
    score, ``NOT_IDENTITY_ARGS``, and ``not_compared``)."""
    skip = {*NOT_IDENTITY_ARGS, *declaration.report.not_compared}
    return [k for k in defaults if k not in skip]


@dataclass
class Comparison:
    """One run beside one published cell (a row of ``comparisons.csv``)."""

    log: str
    task: str
    model: str
    paper_model: str
    source: str
    table: str
    metric: str
    published: float | None
    n_published: int | None
    ours: float | None
    n: int | None
    ci_low: float | None
    ci_high: float | None
    difference: float | None
    note: str
    run: str = ""
    """The run's distinguishing settings (report.md only)."""
    setting: str = ""
    unit: str = "%"
    printed: str = ""
    """The published value as the source prints it."""


CSV_COMPARISONS = [f.name for f in fields(Comparison)][:15]


def _measured(run: Run, cell: Published, report: Report) -> tuple[float, Any] | None:
    """The run's logged value for a published cell and the metric's name, or None."""
    metrics = run.scores.get(cell.score)
    if metrics is None:
        return None
    prefixes = [report.groups.prefix] if report.groups else []
    names = [n for n in group_metric_candidates(cell, prefixes) if n in metrics]
    if not names and cell.group is not None:
        # a grouped metric whose name ends in "key=value" (e.g. a package-prefixed one)
        tail = f"{cell.group[0]}={cell.group[1]}"
        names = [n for n in metrics if n.endswith(("_" + tail, "/" + tail))]
    for name in names[:1]:
        return metrics[name], None
    return None


def _role_note(
    run: Run, about: PublishedScore, defaults: Mapping[str, Any], cell: Published
) -> str:
    """``about.role_differs`` when the run's model in ``about.role`` is not the one the
    cell states (its ``grader`` column, else ``about.role_model``); said as the evaluated
    model grading its own answers when the run gave no model that role."""
    if not about.role or not about.role_differs:
        return ""
    # the cell's own statement first (none: no model graded it); else the score's
    wanted = cell.grader.get(about.role) if cell.grader is not None else about.role_model
    if not wanted or not matches({**defaults, **run.args}, about.where):
        return ""
    own = run.roles.get(about.role)
    model = own or run.model
    if ModelNames(aliases={}).paper_names(model, [wanted]) == [wanted]:
        return ""
    note = about.role_differs.replace("{model}", model)
    if own is None:
        note = (
            f"graded by the evaluated model itself (no --model-role {about.role}=...: "
            f"{model} read its own answers); " + note
        )
    return note


def _questions(run: Run) -> int:
    """The questions a run scored (its sample-epochs over its epochs)."""
    return (run.scored or run.samples) // max(run.epochs, 1)


def _accuracy_of(
    run: Run, cell: Published, declaration: Declaration, value: float
) -> tuple[int | None, tuple[float, float] | None, str]:
    """n (questions), the interval and a note for a rate the run logged for ``cell``: the
    task's interval, as its tables show it (:func:`finmath_tasks.cli.runs.task_interval`)."""
    report = declaration.report
    if cell.group is None and _metric_is_accuracy(cell, report):
        found: Accuracy | None = task_interval(run, cell.score, report)
        if found is not None:
            return found.n, (found.low, found.high), _how(found)
        n = _questions(run)
        return n, wilson(value, n, report.interval.level), ""
    if cell.group is not None and report.groups is not None:
        found = task_interval(run, cell.score, report, str(cell.group[1]))
        if found is not None:
            return found.n, (found.low, found.high), _how(found)
        return None, None, ""
    return _questions(run) or None, None, "no interval for this metric"


def _how(found: Accuracy) -> str:
    parts = [f"clustered by {found.clusters} documents"] if found.clusters else []
    if not found.binary:
        parts.append("t interval over questions (fractional: means over epochs)")
    return "; ".join(parts)


def _metric_is_accuracy(cell: Published, report: Report) -> bool:
    return cell.metric == report.accuracy


def comparisons(
    declaration: Declaration,
    runs: Sequence[Run],
    names: ModelNames,
    unmatched: list[str] | None = None,
) -> list[Comparison]:
    """Every run beside the published cells of its whole setting; ``unmatched`` gets a line
    for each run of a paper's model that meets no cell."""
    unmatched = [] if unmatched is None else unmatched
    cells = load_published(declaration.benchmark)
    if not cells:
        return []
    report = declaration.report
    defaults = task_defaults(declaration)
    compared = compared_args(declaration, defaults)
    about = {p.score: p for p in report.published}
    shown_args = varying_args(runs)
    paper_models = [c.model for c in cells]

    def noted(cell: Published) -> Mapping[str, str]:
        own = about[cell.score].differs_noted if cell.score in about else {}
        return {**report.differs_noted, **own}

    out: list[Comparison] = []
    # a setting's repeats meet the same cells: matched once per model and whole setting
    matched: dict[str, list[Match]] = {}
    for run in runs:
        data = published_data(run, declaration.benchmark)
        if data.equal is False:
            if names.paper_names(run.model, paper_models):
                unmatched.append(
                    f"{run.name} ({run_setting(run, shown_args) if shown_args else run.model}): "
                    f"not the published data (the data read {data.text}): meets no published "
                    "cell"
                )
            continue
        args = dict(run.args)
        if report.resolve is not None:
            args.update(report.resolve({**defaults, **run.args}))
        generation = {k: run.generation.get(k) for k in GENERATION if k in run.generation}
        key = repr((run.model, sorted(args.items(), key=repr), generation, run.epochs))
        if key not in matched:
            matched[key] = matching_cells(
                cells,
                run.model,
                args,
                names,
                defaults,
                compared=compared,
                noted=noted,
                generation=generation,
                default_generation=report.generation,
                epochs=run.epochs,
            )
        matches_ = matched[key]
        if not matches_ and names.paper_names(run.model, paper_models):
            unmatched.append(
                f"{run.name} ({run_setting(run, shown_args) if shown_args else run.model}): "
                f"the papers publish {run.model} under other settings only: no cell of this "
                "run's setting (task arguments, generation settings), not compared"
            )
        for match in matches_:
            out.append(_comparison(run, match.cell, declaration, about, defaults, shown_args,
                                   [match.split_differs, *match.differs]))  # fmt: skip
    return out


def _comparison(
    run: Run,
    cell: Published,
    declaration: Declaration,
    about: Mapping[str, PublishedScore],
    defaults: Mapping[str, Any],
    shown_args: Sequence[str],
    notes: list[str],
) -> Comparison:
    extra = about.get(cell.score)
    paper_value = cell.fraction
    ours = n = low = high = difference = None
    if run.status != "success":
        notes.insert(0, f"UNFINISHED run ({run.status}, {run.samples}/{run.total} samples)")
    if cell.score not in run.scores:
        # never another metric in its place: say why there is no comparison
        notes.append(
            extra.missing
            if extra is not None and extra.missing
            else f"this log has no {cell.score} score: not compared"
        )
    else:
        measured = _measured(run, cell, declaration.report)
        if measured is None:
            notes.append(f"this log has no {cell.score} {cell.metric}: not compared")
        elif not math.isfinite(measured[0]):
            notes.append("unscored in this log")
        else:
            ours = measured[0]
            if paper_value is None:  # a count: compared as is
                difference = ours - cell.value
                n = _questions(run) or None
            else:
                difference = ours - paper_value
                n, bounds, note = _accuracy_of(run, cell, declaration, ours)
                if bounds is not None:
                    low, high = bounds
                notes.append(note)
        if extra is not None:
            notes.append(_role_note(run, extra, defaults, cell))
    if n is not None and cell.n is not None and n < SMALL * cell.n:
        notes.append(f"small run: {n} of the {cell.n} questions published")
    elif n is not None and cell.n is not None and n != cell.n:
        notes.append(f"{n} questions here, {cell.n} published")
    if run.scored and run.total and run.scored < run.total:
        notes.append(f"{run.scored}/{run.total} samples scored")
    notes.append(cell.note)
    label = cell.metric + (f" [{cell.group_text()}]" if cell.group else "")
    return Comparison(
        log=run.name,
        task=run.task,
        model=run.model,
        paper_model=cell.model,
        source=cell.source,
        table=f"{cell.paper}, {cell.table}",
        metric=f"{cell.score} {label}",
        published=paper_value if paper_value is not None else cell.value,
        n_published=cell.n,
        ours=ours,
        n=n,
        ci_low=low,
        ci_high=high,
        difference=difference,
        note="; ".join(dict.fromkeys(x for x in notes if x)),
        run=run_setting(run, shown_args),
        setting=cell.setting_text(),
        unit=cell.unit,
        printed=cell.printed,
    )


def published_data(run: Run, benchmark: str) -> Upstreamness:
    """Whether the run read the authors' pinned files (the data the cells were computed
    on), from its log's provenance; unknown when the log cannot be read."""
    try:
        return upstreamness(run_data(run).provenance, benchmark)
    except Exception:
        return Upstreamness(None, "the log's header cannot be read")


def _pct(value: float | None, unit: str) -> str:
    if value is None:
        return "–"
    return f"{value * 100:.1f}" if unit != "count" else f"{value:.4g}"


def comparison_table(rows: Sequence[Comparison]) -> Rendered | None:
    if not rows:
        return None
    body = []
    for c in rows:
        measured = _pct(c.ours, c.unit)
        if c.ci_low is not None and c.ci_high is not None:
            measured += f" [{c.ci_low * 100:.1f}, {c.ci_high * 100:.1f}]"
        inside = ""
        if c.ci_low is not None and c.ci_high is not None and c.published is not None:
            inside = "yes" if c.ci_low - 1e-12 <= c.published <= c.ci_high + 1e-12 else "no"
        diff = "–" if c.difference is None else (
            f"{c.difference * 100:+.1f}" if c.unit != "count" else f"{c.difference:+.4g}"
        )  # fmt: skip
        body.append(
            [
                c.model,
                c.run,
                f"{c.paper_model} ({c.table})",
                c.setting,
                c.metric,
                c.printed or _pct(c.published, c.unit),
                "–" if c.n_published is None else str(c.n_published),
                measured,
                "–" if c.n is None else str(c.n),
                diff,
                inside,
                c.note,
            ]
        )
    header = ["model", "run", "published for", "setting", "metric", "published", "n published",
              "measured", "n", "difference (points)", "published inside the interval", "note"]  # fmt: skip
    caption = (
        "Each run beside the published cells of its whole setting: the task arguments that "
        "change what is evaluated (task defaults fill what a log lacks), the generation "
        "settings the source states (another value meets no cell; a setting it leaves "
        "unstated is noted where the run's differs from the task's default), the grader "
        "and the epochs; a run on data other than the authors' pinned files meets no cell. "
        "A stated part that differs is named in the note, any other difference meets no "
        "cell (`finmath published` lists the cells; `--alias MODEL=NAME` maps a model to a "
        "paper's name). Measured in % with its Wilson "
        "interval over questions (Inspect's ci_wilson, clustered by document where questions "
        "share one; with epochs a question's score is its mean over them, and a fractional "
        "score gets Inspect's t interval, ci); "
        "the difference is measured minus published. A split note means the numbers are "
        "not over the same questions."
    )
    return Rendered("Published results beside yours", header, body, caption)


def published_table(
    declaration: Declaration, runs: Sequence[Run], names: ModelNames
) -> Rendered | None:
    """The published cells that the runs reproduce, beside the measured values."""
    return comparison_table(comparisons(declaration, runs, names))


# --- paired comparisons ------------------------------------------------------------------


@dataclass
class PairedRow:
    """Two runs of one task compared on the samples both scored (a row of ``paired.csv``)."""

    task: str
    metric: str
    log_a: str
    log_b: str
    n: int
    a: float
    b: float
    difference: float
    stderr: float
    ci_low: float
    ci_high: float
    p_mcnemar: float | None
    run_a: str = ""
    run_b: str = ""
    note: str = ""


CSV_PAIRED = [*[f.name for f in fields(PairedRow)][:12], "run_a", "run_b", "note"]
"""``run_a``, ``run_b``: what tells each run apart (model, settings, variant, seed, repeat),
as the table names them; the note says when the runs read different data or share fewer
samples than each ran."""


def official_scores(declaration: Declaration | None, runs: Sequence[Run]) -> list[str]:
    """The scores a task's tables show (its official metrics), in order; every score the
    runs share for a task without a declaration."""
    if declaration is not None:
        names = [t.score for t in declaration.report.tables if t.score]
        names += [p.score for p in declaration.report.published]
        if names:
            return list(dict.fromkeys(names))
    common = set.intersection(*(set(r.scores) for r in runs)) if runs else set()
    return sorted(common)


def repeat_groups(runs: Sequence[Run]) -> list[list[Run]]:
    """The runs grouped by identity (:func:`identity_key`), in the order of the runs: one
    group per setting, its repeats (equal identities, different Inspect task ids) together,
    the first created first."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(identity_key(run), []).append(run)
    return [sorted(g, key=lambda r: (r.created, r.path)) for g in groups.values()]


def pooled(group: Sequence[Run], score: str, report: Report) -> PerSample:
    """The values of ``score`` of a setting's repeats pooled: each question keeps every
    repeat's values (each repeat's epochs), so its score is its mean over the repeats, as
    over epochs; a single run's values as they are."""
    if len(group) == 1:
        return per_sample(group[0], score, report.cluster)
    values: dict[str, list[float]] = {}
    clusters: dict[str, str] = {}
    for run in group:
        data = per_sample(run, score, report.cluster)
        for sid, got in data.values.items():
            values.setdefault(sid, []).extend(got)
            clusters.setdefault(sid, data.clusters.get(sid, ""))
    return PerSample(values, clusters)


def repeats_note(side: str, group: Sequence[Run], score: str) -> str:
    """What a pooled side is: k repeats, each question's mean over them, and the spread of
    the repeats' accuracies (sample sd, as the tables' repeats row)."""
    accuracies = [v for r in group if (v := r.scores.get(score, {}).get("accuracy")) is not None]
    spread = ""
    if len(accuracies) > 1:
        spread = f"; accuracy varies by {stdev(accuracies) * 100:.1f} points (sd) between repeats"
    return (
        f"{side}: {len(group)} repeats pooled, each question's mean over them "
        f"({side.split()[-1]}'s log: the first repeat){spread}"
    )


def paired_rows(
    declaration: Declaration | None, runs: Sequence[Run], across_data: bool = False
) -> list[PairedRow]:
    """Every two comparable settings of one task (:func:`pairing`) that scored common
    samples, for each official score; runs on different data only with ``across_data``.

    A setting's repeats are pooled, not paired with each other: its side of a pair gives
    each question its mean over the repeats (the question is the unit, as with epochs),
    so the rows grow with the number of settings, not of logs; the spread between repeats
    is in the tables' repeats row and in the pair's note."""
    report = declaration.report if declaration is not None else Report()
    level = report.interval.level
    labels = run_labels(runs)
    out: list[PairedRow] = []
    for score in official_scores(declaration, runs):
        # pairs in the order of the runs' settings (not of their logs' times)
        having = sorted(
            (r for r in runs if score in r.scores),
            key=lambda r: (r.model, repr(sorted(r.args.items())), r.label, r.created),
        )
        for ga, gb in itertools.combinations(repeat_groups(having), 2):
            a, b = ga[0], gb[0]
            comparable, data_note = pairing(a, b, across_data)
            if not comparable:
                continue
            da, db = pooled(ga, score, report), pooled(gb, score, report)
            found = paired(da, db, level)
            if found is None:
                continue
            notes = [data_note, overlap_note(a, da, b, db, found.n)]
            for side, run, data, group in (("run a", a, da, ga), ("run b", b, db, gb)):
                spread = epoch_spread(data) if len(group) == 1 else None
                if len(group) > 1:
                    notes.append(repeats_note(side, group, score))
                elif spread is not None:
                    notes.append(
                        f"{side}: {run.epochs} epochs, per-sample means; accuracy "
                        f"varies by {spread * 100:.1f} points (sd) between epochs"
                    )
                if run.status != "success":
                    notes.append(f"{side}: UNFINISHED ({run.status})")
            if found.clusters:
                notes.append(
                    f"stderr clustered by {found.clusters} documents, t with "
                    f"{found.clusters - 1} degrees of freedom"
                )
            if found.interval == "tango":
                notes.append(
                    "no question differs: Tango's score interval"
                    if found.difference == 0 and found.stderr == 0
                    else "every question that differs moves the same way (stderr 0): "
                    "Tango's score interval"
                )
            out.append(
                PairedRow(
                    task=a.task,
                    metric=f"{score} accuracy",
                    log_a=a.name,
                    log_b=b.name,
                    n=found.n,
                    a=found.a,
                    b=found.b,
                    difference=found.difference,
                    stderr=found.stderr,
                    ci_low=found.low,
                    ci_high=found.high,
                    p_mcnemar=found.p_mcnemar,
                    run_a=_pooled_label(labels[a.name], a, ga),
                    run_b=_pooled_label(labels[b.name], b, gb),
                    note="; ".join(n for n in notes if n),
                )
            )
    return out


def _pooled_label(label: str, run: Run, group: Sequence[Run]) -> str:
    """A side's run column: the run's label, or for pooled repeats their setting and k."""
    if len(group) == 1:
        return label
    one = f"repeat {run.repeat[0]}/{run.repeat[1]}"
    pooled_ = f"{len(group)} repeats pooled"
    return label.replace(one, pooled_) if one in label else f"{label} {pooled_}"


def paired_table(rows: Sequence[PairedRow]) -> Rendered | None:
    if not rows:
        return None
    body = [
        [
            r.metric,
            r.run_a,
            r.run_b,
            str(r.n),
            f"{r.a * 100:.1f}",
            f"{r.b * 100:.1f}",
            f"{r.difference * 100:+.1f}",
            f"{r.stderr * 100:.1f}",
            f"[{r.ci_low * 100:+.1f}, {r.ci_high * 100:+.1f}]",
            "–" if r.p_mcnemar is None else f"{r.p_mcnemar:.3g}",
            r.note,
        ]
        for r in rows
    ]
    header = ["metric", "run a", "run b", "n (both scored)", "a", "b", "a - b (points)",
              "stderr", "95% interval", "McNemar exact p", "note"]  # fmt: skip
    caption = (
        "Two runs of this task on the samples both scored: the difference of their "
        "accuracies (a sample's mean over epochs) with its paired standard error (Inspect's "
        "stderr over the per-sample differences, clustered by document where the task "
        "clusters) and its interval: normal, or t with clusters - 1 degrees of freedom when "
        "clustered (as the accuracy intervals); when the standard error is zero (no "
        "question differs, or all that differ move the same way), Tango's score "
        "interval for paired proportions (never of zero width). McNemar's exact test on the "
        "samples where exactly one run is right (0/1 scores only). An interval that "
        "contains 0 (or p >= 0.05) does not show that the two settings differ."
    )
    logs = {label: log for r in rows for label, log in ((r.run_a, r.log_a), (r.run_b, r.log_b))}
    return Rendered(
        f"Paired differences between {rows[0].task} runs", header, body, caption, logs=logs
    )


# --- CSV ----------------------------------------------------------------------------------


def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return value


def write_csv(
    path: Path, columns: Sequence[str], rows: Sequence[Any], header: Sequence[str] = ()
) -> None:
    """``rows``' attributes ``columns`` as a CSV, under ``header`` (default: the columns)."""
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header or columns)
        for row in rows:
            writer.writerow([_csv_value(getattr(row, c)) for c in columns])
