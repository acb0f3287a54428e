"""``finmath report``: the papers' tables (Markdown and HTML) and plots from a log directory.

Logs are read with Inspect's log API: headers only (``header_only=True``) for
the metrics, and the samples only of runs whose tables need per-group counts
(the interval of a per-topic accuracy). Each task's layout comes from its
benchmark's declaration (``declare.py``); a task without one gets a generic
table. A log that cannot be used (corrupt, still running, failed) is named on
one line and the report is built from the others.

Inspect's data frames (``inspect_ai.analysis``: ``evals_df``, ``samples_df``) are not
used here. They need pandas and pyarrow, which neither inspect-ai nor this package's
core requires and the tables do without; and they flatten what the report reads
whole. ``evals_df`` names the task without its package (``<name>``, where the
declarations are keyed by ``finmath_tasks/<name>``), spreads the metrics over
``score_<scorer>_<metric>`` columns that cannot be split back when a scorer's name has
an underscore, and has no column for the arguments the user passed, the generation
settings the task set (the plan's config), each scorer's scored samples or the model
usage the cost section reads. ``samples_df`` gives each score's value but not its
metadata, where a scorer records the group a sample counts in (``cli.runs``).
"""

from __future__ import annotations

import html
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log
from rich.console import Console
from rich.progress import Progress

from finmath_tasks.cli.compare import (
    CSV_COMPARISONS,
    CSV_PAIRED,
    Comparison,
    PairedRow,
    comparison_table,
    comparisons,
    paired_rows,
    paired_table,
    write_csv,
)
from finmath_tasks.cli.declare import (
    Column,
    Declaration,
    Report,
    Table,
    by_task_name,
    declarations,
    matches,
)
from finmath_tasks.cli.markup import md_code, md_text
from finmath_tasks.cli.overwrite import report_overwrites
from finmath_tasks.cli.prices import Price
from finmath_tasks.cli.provenance import data_section
from finmath_tasks.cli.published import ModelNames, load_published
from finmath_tasks.cli.runs import (
    Cell,
    Rendered,
    Run,
    Section,
    _order,
    group_cell,
    groups_of,
    label_runs,
    run_cell,
    varying_args,
)
from finmath_tasks.cli.usage import prices_for, usage_of, usage_section


@dataclass
class Logs:
    runs: list[Run] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """One line per log left out, naming the file."""
    comparisons: list[Comparison] = field(default_factory=list)
    """Every run beside the published cells of its setting (filled by the report)."""
    paired: list[PairedRow] = field(default_factory=list)
    """Every two runs of one task compared on their common samples (filled by the report)."""


LEGACY_PREFIX = "finmath_tasks/"
"""Metric names of logs written before the plain names (``finmath_tasks/``-prefixed)."""
LEGACY_NAMES: tuple[tuple[str, str], ...] = (
    ("finmath_tasks/accuracy_ci_", ""),
    ("finmath_tasks/accuracy_by_groups_", ""),
    ("finmath_tasks/accuracy_by_gold_kind_", "gold="),
    ("finmath_tasks/flag_counts_scored_", ""),
    ("finmath_tasks/flag_counts_", ""),
    ("finmath_tasks/by_flip_correct_to_wrong", "share_c_to_w"),
    ("finmath_tasks/by_flip_wrong_to_correct", "share_w_to_c"),
    ("finmath_tasks/total", "count"),
)
"""Old name (prefix) -> today's: ``finmath_tasks/accuracy_ci_ci95_low`` is ``ci95_low``."""
LEGACY_FLIP_SCORES = ("correct_to_wrong", "wrong_to_correct", "minor_change", "major_change")


def modern_name(name: str, score: str = "") -> str:
    """Today's name of a metric an older log wrote (unchanged when it is not an old name).

    A per-group accuracy named only by its group (``finmath_tasks/accuracy_by_s63``) keeps
    its name: the benchmark's ``Groups.legacy_prefix`` maps it (:func:`modern_groups`).
    """
    for old, new in LEGACY_NAMES:
        if name.startswith(old):
            return new + name[len(old) :]
    if name == "mean" and score in LEGACY_FLIP_SCORES:
        return "rate"
    return name


def _metrics(log: EvalLog) -> tuple[dict[str, dict[str, float]], bool]:
    """Score name -> metric name -> value, under today's names; whether any name was old."""
    out: dict[str, dict[str, float]] = {}
    legacy = False
    for score in log.results.scores if log.results else []:
        values = out.setdefault(score.name, {})
        for name, m in score.metrics.items():
            legacy = legacy or name.startswith(LEGACY_PREFIX)
            values[name] = float(m.value)
    if legacy:
        out = {
            score: {modern_name(name, score): value for name, value in metrics.items()}
            for score, metrics in out.items()
        }
    return out, legacy


def modern_groups(runs: Iterable[Run], report: Report) -> None:
    """Old logs' per-group accuracies under the declaration's group prefix
    (``Groups.legacy_prefix`` + group becomes ``Groups.prefix`` + group)."""
    groups = report.groups
    if groups is None or not groups.legacy_prefix:
        return
    for run in runs:
        if not run.legacy:
            continue
        for score, metrics in run.scores.items():
            run.scores[score] = {
                (
                    groups.prefix + name[len(groups.legacy_prefix) :]
                    if name.startswith(groups.legacy_prefix)
                    else name
                ): value
                for name, value in metrics.items()
            }


def legacy_note(runs: Sequence[Run]) -> str:
    """A line naming the logs written with an older version's metric names, or ''."""
    old = [r.name for r in runs if r.legacy]
    if not old:
        return ""
    return (
        f"{len(old)} log(s) come from an older version of finmath-tasks (metric names "
        f"'finmath_tasks/...', before the plain names): read under today's names: " + ", ".join(old)
    )


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
    """Every run in ``log_dir`` (recursively), one per experiment, with a line for each
    file left out (unreadable, not a log, or a less complete log of the same experiment).

    A log that is not ``success`` is kept, marked unfinished (``Run.status``), unless a
    more complete log of the same experiment exists.
    """
    console = console or Console(stderr=True)
    logs = Logs()
    infos = log_files(log_dir)
    if not infos:
        logs.problems.append(f"{log_dir}: no Inspect logs (*.eval, *.json) found")
        return logs
    kept: dict[tuple[Any, ...], Run] = {}
    with Progress(console=console, transient=True, disable=not console.is_terminal) as bar:
        job = bar.add_task(f"reading {len(infos)} logs", total=len(infos))
        for info in infos:
            bar.advance(job)
            location = info if isinstance(info, str) else info.name
            try:
                log = read_eval_log(info, header_only=True)
            except Exception as e:  # a corrupt or truncated file, or one we cannot read
                logs.problems.append(
                    f"{_shown(location)}: not a readable Inspect log, skipped "
                    f"({type(e).__name__}: {_first_line(e)})"
                )
                continue
            run = run_of(log, location)
            key = experiment_key(run)
            previous = kept.get(key)
            if previous is not None:
                better, worse = sorted([previous, run], key=_completeness, reverse=True)
                logs.problems.append(
                    f"{_shown(worse.path)}: left out, the same experiment as {better.name} "
                    f"(same task, arguments, model, roles, generation, epochs and samples), "
                    f"which is more complete ({_completeness_text(better)} against "
                    f"{_completeness_text(worse)})"
                )
                run = better
            kept[key] = run
    for run in kept.values():
        if run.status != "success":
            logs.problems.append(
                f"{run.name}: status {run.status}, {run.samples}/{run.total} samples: "
                "shown marked unfinished"
            )
        elif run.errored:
            logs.problems.append(
                f"{run.name}: {run.errored} of {run.total} samples ended in an error (the run "
                "accepted them: --fail-on-error); not scored, out of every metric: shown "
                "marked not whole"
            )
    logs.runs = sorted(kept.values(), key=lambda r: (r.task, r.model, r.created))
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
    )
    run.scores, run.legacy = _metrics(log)
    return run


def experiment_key(run: Run) -> tuple[Any, ...]:
    """Runs with the same key are one experiment: everything that changes the result is
    equal (task, task arguments, model, model roles, generation config, epochs, samples)."""
    return (
        run.task,
        run.model,
        repr(sorted(run.args.items())),
        repr(sorted(run.roles.items())),
        repr(sorted(run.generation.items())),
        run.epochs,
        run.sample_ids or run.total,
    )


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


def _label(values: Iterable[Any]) -> str:
    return " / ".join(str(v) for v in values)


def build_table(declaration: Declaration, table: Table, runs: Sequence[Run]) -> Rendered | None:
    """One declared table over the runs of its task, or None when no run fits it."""
    if table.values:
        return build_values_table(declaration, table, runs)
    report = declaration.report
    if table.groups is not None:
        report = replace(report, groups=table.groups)
    kept = [r for r in runs if matches(r.args, table.where) and score_present(r, table.score)]
    if not kept:
        return None
    by_groups = table.columns == "groups"
    column_args: list[str] = [] if by_groups else list(table.columns)
    row_args = list(table.rows)
    extra = varying_args(kept, exclude=[*column_args, *row_args, *table.where, *report.hide])
    row_args += extra

    labelled = any(r.label for r in kept)

    def row_key(run: Run) -> tuple[Any, ...]:
        return (run.model, *(run.args.get(a) for a in row_args), *([run.label] if labelled else []))

    row_keys = _order([row_key(r) for r in kept], [])
    if by_groups:
        columns: list[Any] = groups_of(kept, table.score, report)
        header_cols = [str(c) for c in columns]
    else:
        per_arg = [_order([r.args.get(a) for r in kept], declaration.order(a)) for a in column_args]
        present = {tuple(r.args.get(a) for a in column_args) for r in kept}
        columns = [combo for combo in _product(per_arg) if combo in present]
        header_cols = [_label(c) for c in columns] or [table.score]
    rows: list[list[str]] = []
    collisions = 0
    for key in row_keys:
        members = sorted(
            (r for r in kept if row_key(r) == key), key=lambda r: r.created, reverse=True
        )
        cells: list[str] = []
        for column in columns or [()]:
            found: list[Cell] = []
            for run in members:
                if by_groups:
                    got = group_cell(run, table.score, str(column), report)
                elif tuple(run.args.get(a) for a in column_args) == column:
                    got = run_cell(run, table.score, report)
                else:
                    got = None
                if got is not None:
                    found.append(got)
            collisions += len(found) > 1
            cells.append(found[0].text() if found else "–")
        rows.append([str(key[0]), *(str(v) for v in key[1:]), *cells])
    first = ["model", *row_args, *(["run"] if labelled else [])]
    if by_groups and report.groups:
        caption_groups = f"Columns: {report.groups.label}. "
    else:
        caption_groups = f"Columns: {' / '.join(column_args)}. " if column_args else ""
    caption = f"{table.caption} {caption_groups}{_interval_note(report, by_groups)}".strip()
    if collisions:
        caption += (
            f" {collisions} cell(s) had several logs differing only in "
            f"{', '.join(report.hide)}: the latest is shown."
        )
    return Rendered(table.title, [*first, *header_cols], rows, caption)


def value_text(value: float | None, column: Column) -> str:
    """A logged value as a values table shows it: x100 for a rate, a count as an integer."""
    if value is None or math.isnan(value):
        return "–"
    if column.percent:
        return f"{value * 100:.1f}"
    if value == int(value):
        return str(int(value))
    return f"{value:.4g}"


def build_values_table(
    declaration: Declaration, table: Table, runs: Sequence[Run]
) -> Rendered | None:
    """A table of logged values (no interval): a row per model and ``rows`` arguments."""
    report = declaration.report
    kept = [
        r
        for r in runs
        if matches(r.args, table.where) and any(score_present(r, c.score) for c in table.values)
    ]
    if not kept:
        return None
    row_args = list(table.rows)
    row_args += varying_args(kept, exclude=[*row_args, *table.where, *report.hide])

    labelled = any(r.label for r in kept)

    def row_key(run: Run) -> tuple[Any, ...]:
        return (run.model, *(run.args.get(a) for a in row_args), *([run.label] if labelled else []))

    models = list(dict.fromkeys(r.model for r in kept))
    orders = [declaration.order(a) for a in row_args] + ([[]] if labelled else [])
    keys = sorted(
        dict.fromkeys(row_key(r) for r in kept),
        key=lambda k: (
            models.index(k[0]),
            *(_rank(v, order) for v, order in zip(k[1:], orders, strict=True)),
        ),
    )
    rows: list[list[str]] = []
    collisions = 0
    for key in keys:
        members = sorted(
            (r for r in kept if row_key(r) == key), key=lambda r: r.created, reverse=True
        )
        collisions += len(members) > 1
        latest = members[0]
        rows.append(
            [
                str(key[0]),
                *(str(v) for v in key[1:]),
                *(
                    value_text(latest.scores.get(c.score, {}).get(c.metric), c)
                    for c in table.values
                ),
            ]
        )
    caption = f"{table.caption} Values as logged (no interval).".strip()
    if collisions:
        caption += (
            f" {collisions} row(s) had several logs differing only in "
            f"{', '.join(report.hide)}: the latest is shown."
        )
    return Rendered(
        table.title,
        ["model", *row_args, *(["run"] if labelled else []), *(c.header for c in table.values)],
        rows,
        caption,
    )


def _rank(value: Any, order: Sequence[Any]) -> tuple[int, str]:
    ranks = {str(v): i for i, v in enumerate(order)}
    return (ranks.get(str(value), len(ranks)), str(value))


def _product(per_arg: list[list[Any]]) -> list[tuple[Any, ...]]:
    combos: list[tuple[Any, ...]] = [()]
    for values in per_arg:
        combos = [(*c, v) for c in combos for v in values]
    return combos


def _interval_note(report: Report, groups: bool) -> str:
    level = round(report.interval.level * 100)
    if groups:
        how = "Wilson interval over the group's scored samples"
    else:
        how = "Wilson interval over the samples scored, Inspect's ci_wilson"
    return f"Accuracy in % with its {level}% confidence interval ({how})."


def score_present(run: Run, score: str) -> bool:
    return score in run.scores


def generic_table(task: str, runs: Sequence[Run]) -> Rendered:
    """Task arguments x every metric, for a task without a declared layout."""
    args = varying_args(runs)
    metric_names: list[tuple[str, str]] = []
    for run in runs:
        for score, metrics in run.scores.items():
            for name in metrics:
                if (score, name) not in metric_names:
                    metric_names.append((score, name))
    rows = [
        [
            run.model,
            *(str(run.args.get(a)) for a in args),
            *(_number(run.scores.get(score, {}).get(name)) for score, name in metric_names),
        ]
        for run in runs
    ]
    header = ["model", *args, *(f"{score} {name}" for score, name in metric_names)]
    return Rendered(f"{task} (generic table)", header, rows, "Metric values as logged.")


def _number(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "–"
    return f"{value:.4g}"


def runs_table(runs: Sequence[Run]) -> Rendered:
    rows = [
        [
            run.name,
            run.task,
            run.model,
            f"{run.scored}/{run.total}" if run.total else str(run.samples),
            (f"success, {run.errored} errored" if run.errored else run.status)
            if run.status == "success"
            else f"UNFINISHED ({run.status})",
            ", ".join(f"{k}={v}" for k, v in run.args_passed.items()),
            run.label,
        ]
        for run in runs
    ]
    return Rendered(
        "Logs",
        ["log", "task", "model", "scored/total", "status", "arguments passed", "run"],
        rows,
        "scored/total: samples with a value of the task's main score, of the samples "
        "(x epochs) the run was asked for; a sample that ended in an error is not scored.",
    )


# --- output -------------------------------------------------------------------------------


_md_escape = md_text


def markdown_table(table: Rendered) -> str:
    lines = [f"### {_md_escape(table.title)}", ""]
    if table.caption:
        lines += [_md_escape(table.caption), ""]
    lines.append("| " + " | ".join(_md_escape(h) for h in table.header) + " |")
    lines.append("|" + "|".join("---" for _ in table.header) + "|")
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines) + "\n"


def html_table(table: Rendered) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(h)}</th>" for h in table.header)
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in table.rows
    )
    caption = f"<p>{esc(table.caption)}</p>" if table.caption else ""
    return f"<h3>{esc(table.title)}</h3>{caption}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


HTML_STYLE = (
    "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1em}"
    "td,th{border:1px solid #bbb;padding:4px 8px;text-align:right}"
    "td:first-child,th:first-child{text-align:left}img{max-width:720px;display:block}"
)


def build_sections(
    logs: Logs,
    known: Mapping[str, Declaration],
    plot: Callable[[Declaration, Sequence[Run]], list[tuple[str, str]]] | None = None,
    names: ModelNames | None = None,
) -> tuple[list[Section], list[str]]:
    """One section per task found in the logs; lines about tasks without a layout."""
    sections: list[Section] = []
    lines: list[str] = []
    tasks = list(dict.fromkeys(r.task for r in logs.runs))
    for task in tasks:
        runs = [r for r in logs.runs if r.task == task]
        declaration = known.get(task)
        label_runs(runs, declaration.report.hide if declaration else ())
        if declaration is None:
            line = (
                f"{task}: no report layout is declared for this task "
                f"({len(runs)} log(s): {', '.join(r.name for r in runs)}); generic table"
            )
            lines.append(line)
            generic = Section(task, [generic_table(task, runs)], notes=[line])
            pairs = paired_rows(None, runs)
            logs.paired += pairs
            table_ = paired_table(pairs)
            if table_ is not None:
                generic.tables.append(table_)
            sections.append(generic)
            continue
        section = Section(task)
        if declaration.report.notes:
            section.notes.append(declaration.report.notes)
        modern_groups(runs, declaration.report)
        old = legacy_note(runs)
        if old:
            lines.append(f"{task}: {old}")
            section.notes.append(old)
        for table in declaration.report.tables:
            rendered = build_table(declaration, table, runs)
            if rendered is not None:
                section.tables.append(rendered)
        unmatched: list[str] = []
        compared = comparisons(declaration, runs, names or ModelNames(), unmatched)
        section.notes += unmatched
        lines += [f"{task}: {line}" for line in unmatched]
        logs.comparisons += compared
        beside = comparison_table(compared)
        if beside is not None:
            section.tables.append(beside)
        pairs = paired_rows(declaration, runs)
        logs.paired += pairs
        table_ = paired_table(pairs)
        if table_ is not None:
            section.tables.append(table_)
        if plot is not None:
            section.plots = plot(declaration, runs)
        sections.append(section)
    return sections, lines


def write_report(
    log_dir: str, out: Path, logs: Logs, sections: Sequence[Section], lines: Sequence[str]
) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    md = [f"# finmath report: {md_code(log_dir)}", ""]
    body = [f"<h1>finmath report: {html.escape(log_dir)}</h1>"]
    problems = [*logs.problems]
    if problems:
        md += ["Logs left out:", "", *(f"- {_md_escape(p)}" for p in problems), ""]
        body.append(
            "<p>Logs left out:</p><ul>"
            + "".join(f"<li>{html.escape(p)}</li>" for p in problems)
            + "</ul>"
        )
    for section in sections:
        md += [f"## {_md_escape(section.title)}", ""]
        body.append(f"<h2>{html.escape(section.title)}</h2>")
        for note in section.notes:
            md += [_md_escape(note), ""]
            body.append(f"<p>{html.escape(note)}</p>")
        for table in section.tables:
            md.append(markdown_table(table))
            body.append(html_table(table))
        for title, name in section.plots:
            md += [f"![{_md_escape(title)}]({name})", ""]
            body.append(f'<p><img src="{html.escape(name)}" alt="{html.escape(title)}"></p>')
    if logs.runs:
        listing = runs_table(logs.runs)
        md.append(markdown_table(listing))
        body.append(html_table(listing))
    md_path, html_path = out / "report.md", out / "report.html"
    write_csv(out / "comparisons.csv", CSV_COMPARISONS, logs.comparisons)
    write_csv(out / "paired.csv", CSV_PAIRED, logs.paired)
    md_path.write_text("\n".join(md), encoding="utf-8")
    html_path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>finmath report</title>"
        f"<style>{HTML_STYLE}</style></head><body>{''.join(body)}</body></html>",
        encoding="utf-8",
    )
    return md_path, html_path


def _say(line: str) -> None:
    """One unwrapped line on stderr (a terminal's width must not split a file name)."""
    print(line, file=sys.stderr, flush=True)


def _shown(location: str) -> str:
    return location.removeprefix("file://")


def report(
    log_dir: str,
    out: Path,
    plots: bool = True,
    console: Console | None = None,
    aliases: Sequence[str] = (),
    price: Price | None = None,
) -> int:
    """Write ``report.md``/``report.html`` (and PNGs) for ``log_dir``; 0, or 1 when nothing was usable."""
    console = console or Console(stderr=True)
    unwritable = report_overwrites(out, log_files(log_dir)) or _unwritable(out)
    if unwritable:
        _say(f"finmath: {unwritable}")
        return 2
    logs = read_logs(log_dir, console)
    for problem in logs.problems:
        _say(problem)
    broken: list[str] = []
    known = by_task_name(declarations(broken))
    for line in broken:
        _say(line)
    plotter = None
    if plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            _say("plots need matplotlib (pip install 'finmath-tasks[report]'): tables only")
        else:
            from finmath_tasks.cli.plots import plotter as make_plotter

            plotter = make_plotter(out)
    names = ModelNames()
    names.add(aliases)
    for line in alias_problems(aliases, logs.runs, known):
        _say(line)
    sections, lines = build_sections(logs, known, plotter, names)
    usage = usage_section(logs.runs, known, out if plotter else None, prices_for(price))
    sections += [usage] if usage else []
    data, warnings = data_section(logs.runs)
    sections += [data] if data else []
    for line in [*lines, *warnings]:
        _say(line)
    md_path, html_path = write_report(log_dir, out, logs, sections, lines)
    _say(f"wrote {md_path} and {html_path} ({len(logs.runs)} logs)")
    return 0 if logs.runs else 1


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def _unwritable(out: Path) -> str:
    """Why the report cannot be written to ``out`` (a file, a read-only folder), or ""."""
    if out.exists() and not out.is_dir():
        return f"--out {out} is a file, not a folder"
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"--out {out}: cannot create the folder ({e.strerror or type(e).__name__})"
    probe = out / ".finmath-write-check"
    try:
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as e:
        return f"--out {out}: cannot write there ({e.strerror or type(e).__name__})"
    return ""


def alias_problems(
    aliases: Sequence[str], runs: Sequence[Run], known: Mapping[str, Declaration]
) -> list[str]:
    """One line per ``--alias MODEL=NAME`` whose MODEL is no run's model or whose NAME is no
    paper's model among the tasks reported."""
    lines: list[str] = []
    benchmarks = {known[r.task].benchmark for r in runs if r.task in known}
    paper_models = {c.model for b in benchmarks for c in load_published(b)}
    for pair in aliases:
        mine, _, paper = (part.strip() for part in pair.partition("="))
        tails = {r.model for r in runs} | {r.model.rsplit("/", 1)[-1] for r in runs}
        if mine not in tails and mine.rsplit("/", 1)[-1] not in tails:
            lines.append(f"--alias {pair}: no log's model is {mine!r}")
        if paper not in paper_models:
            lines.append(
                f"--alias {pair}: no published cell of the reported tasks is for {paper!r} "
                "(`finmath published` lists the papers' model names)"
            )
    return lines
