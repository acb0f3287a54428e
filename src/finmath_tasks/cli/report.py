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

import csv
import html
import math
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console

from finmath_tasks.cli.compare import (
    CSV_COMPARISONS,
    CSV_PAIRED,
    comparison_table,
    comparisons,
    official_scores,
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
from finmath_tasks.cli.error_classes import error_class_sections
from finmath_tasks.cli.markup import md_code, md_text
from finmath_tasks.cli.overwrite import mark_report_folder, report_overwrites
from finmath_tasks.cli.prices import Price
from finmath_tasks.cli.provenance import data_section
from finmath_tasks.cli.published import ModelNames, load_published
from finmath_tasks.cli.reading import (
    DamagedLog,
    Logs,
    log_files,
    read_logs,
)
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
from finmath_tasks.cli.usage import prices_for, usage_section
from finmath_tasks.cli.variants_report import CSV_GAP, gap_section


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
    extra = varying_args(kept, exclude=[*column_args, *row_args, *table.where])
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
        header_cols = [_label(c) for c in columns] if column_args else [table.score]
    rows: list[list[str]] = []
    collisions = 0
    values: dict[tuple[Any, ...], list[float]] = {}
    by_key: dict[tuple[Any, ...], list[Run]] = {}
    for run in kept:  # once: a row per key, not a pass over every run per row
        by_key.setdefault(row_key(run), []).append(run)
    for key in row_keys:
        members = sorted(by_key.get(key, []), key=lambda r: r.created, reverse=True)
        cells: list[str] = []
        for c, column in enumerate(columns or [()]):
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
            if found and members[0].repeat[1] > 1 and math.isfinite(found[0].value):
                values.setdefault((*key[:-1], members[0].setting, c), []).append(found[0].value)
        rows.append([str(key[0]), *(str(v) for v in key[1:]), *cells])
        last = members[0].repeat
        if last[1] > 1 and last[0] == last[1]:
            rows.append(_repeats_row(key, members[0].setting, len(columns or [()]), values))
    first = ["model", *row_args, *(["run"] if labelled else [])]
    if by_groups and report.groups:
        caption_groups = f"Columns: {report.groups.label}. "
    else:
        caption_groups = f"Columns: {' / '.join(column_args)}. " if column_args else ""
    caption = f"{table.caption} {caption_groups}{_interval_note(report, by_groups)}".strip()
    if collisions:
        caption += f" {collisions} cell(s) had several logs of one run: the latest is shown."
    if any(r.repeat[1] > 1 for r in kept):
        caption += (
            " Runs of one identity (every recorded setting equal, different Inspect task "
            "ids) are repeats: each is shown, then their mean and the sample standard "
            "deviation between repeats."
        )
    return Rendered(table.title, [*first, *header_cols], rows, caption)


def _repeats_row(
    key: tuple[Any, ...],
    setting: str,
    columns: int,
    values: Mapping[tuple[Any, ...], list[float]],
) -> list[str]:
    """The row after the last of k repeats: each column's mean over the repeats and the
    sample standard deviation between them."""
    cells = []
    k = 0
    for c in range(columns):
        found = values.get((*key[:-1], setting, c), [])
        k = max(k, len(found))
        cells.append(_mean_text(found))
    label = " ".join(x for x in [setting, f"mean of {k} repeats (sd between repeats)"] if x)
    return [str(key[0]), *(str(v) for v in key[1:-1]), label, *cells]


def _mean_text(found: Sequence[float]) -> str:
    if not found:
        return "–"
    mean = sum(found) / len(found)
    if len(found) < 2:
        return f"{mean * 100:.1f}"
    sd = math.sqrt(sum((v - mean) ** 2 for v in found) / (len(found) - 1))
    return f"{mean * 100:.1f} (sd {sd * 100:.1f})"


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
    kept = [
        r
        for r in runs
        if matches(r.args, table.where) and any(score_present(r, c.score) for c in table.values)
    ]
    if not kept:
        return None
    row_args = list(table.rows)
    row_args += varying_args(kept, exclude=[*row_args, *table.where])

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
    by_key: dict[tuple[Any, ...], list[Run]] = {}
    by_identity: dict[Any, list[Run]] = {}
    for run in kept:  # once: a row per key, not a pass over every run per row
        by_key.setdefault(row_key(run), []).append(run)
        by_identity.setdefault(run.identity, []).append(run)
    for key in keys:
        members = sorted(by_key.get(key, []), key=lambda r: r.created, reverse=True)
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
        i, k = latest.repeat
        if k > 1 and i == k:
            repeats = by_identity.get(latest.identity, [])
            label = f"{latest.setting} mean of {k} repeats (sd between repeats)".strip()
            rows.append(
                [
                    str(key[0]),
                    *(str(v) for v in key[1:-1]),
                    label,
                    *(_values_mean(repeats, c) for c in table.values),
                ]
            )
    caption = f"{table.caption} Values as logged (no interval).".strip()
    if collisions:
        caption += f" {collisions} row(s) had several logs of one run: the latest is shown."
    if any(r.repeat[1] > 1 for r in kept):
        caption += " Repeats of one identity: each, then their mean and standard deviation."
    return Rendered(
        table.title,
        ["model", *row_args, *(["run"] if labelled else []), *(c.header for c in table.values)],
        rows,
        caption,
    )


def _values_mean(repeats: Sequence[Run], column: Column) -> str:
    """The mean of a logged value over repeats and the sample sd between them."""
    found = [r.scores.get(column.score, {}).get(column.metric) for r in repeats]
    mean, sd = _mean_sd([v for v in found if v is not None and math.isfinite(v)])
    text = value_text(mean, column)
    if mean is None or sd is None:
        return text
    return f"{text} (sd {sd * 100:.1f})" if column.percent else f"{text} (sd {sd:.4g})"


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
        how = "Wilson's score interval over the group's questions, Inspect's ci_wilson"
    else:
        how = "Wilson's score interval over the questions scored, Inspect's ci_wilson"
        if report.cluster is not None:
            how += (
                ", clustered by the task's document where questions share one (t with "
                "clusters - 1 degrees of freedom)"
            )
    return (
        f"Accuracy in % with its {level}% confidence interval ({how}; the same interval "
        "as the comparison rows; with epochs, over questions, each question's score its "
        "mean over epochs: Inspect's t interval, ci, where such means are fractional)."
    )


def score_present(run: Run, score: str) -> bool:
    return score in run.scores


def generic_table(task: str, runs: Sequence[Run]) -> Rendered:
    """Task arguments x every metric, for a task without a declared layout: a row per run
    (with its run label where runs differ by more than their arguments: repeats, other
    settings or data) and, after the last of k repeats of one identity, their mean and the
    sample standard deviation between them, as the declared tables give."""
    args = varying_args(runs)
    metric_names: list[tuple[str, str]] = []
    for run in runs:
        for score, metrics in run.scores.items():
            for name in metrics:
                if (score, name) not in metric_names:
                    metric_names.append((score, name))
    labelled = any(r.label for r in runs)
    by_identity: dict[Any, list[Run]] = {}
    for run in runs:
        by_identity.setdefault(run.identity, []).append(run)
    ordered = sorted(
        runs,
        key=lambda r: (r.model, repr([str(r.args.get(a)) for a in args]), r.setting, r.repeat),
    )
    rows: list[list[str]] = []
    for run in ordered:
        first = [run.model, *(str(run.args.get(a)) for a in args)]
        rows.append(
            [
                *first,
                *([run.label] if labelled else []),
                *(_number(run.scores.get(score, {}).get(name)) for score, name in metric_names),
            ]
        )
        i, k = run.repeat
        if labelled and k > 1 and i == k:
            repeats = by_identity.get(run.identity, [])
            label = f"{run.setting} mean of {k} repeats (sd between repeats)".strip()
            rows.append([*first, label, *(_generic_mean(repeats, s, n) for s, n in metric_names)])
    header = [
        "model",
        *args,
        *(["run"] if labelled else []),
        *(f"{score} {name}" for score, name in metric_names),
    ]
    caption = "Metric values as logged."
    if any(r.repeat[1] > 1 for r in runs):
        caption += " Repeats of one identity: each, then their mean and standard deviation."
    return Rendered(f"{task} (generic table)", header, rows, caption)


def _generic_mean(repeats: Sequence[Run], score: str, name: str) -> str:
    """A logged metric's mean over repeats and the sample sd between them."""
    found = [r.scores.get(score, {}).get(name) for r in repeats]
    mean, sd = _mean_sd([v for v in found if v is not None and math.isfinite(v)])
    return _number(mean) if sd is None else f"{_number(mean)} (sd {sd:.4g})"


def _mean_sd(found: Sequence[float]) -> tuple[float | None, float | None]:
    """The mean of ``found`` (None: empty) and the sample sd (None: fewer than two)."""
    if not found:
        return None, None
    mean = sum(found) / len(found)
    if len(found) < 2:
        return mean, None
    return mean, math.sqrt(sum((v - mean) ** 2 for v in found) / (len(found) - 1))


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
        "The legend of the report: each log file and its run (the other tables name a run "
        "by its model and the settings in its run column). scored/total: samples with a "
        "value of the task's main score, of the samples (x epochs) the run was asked for; "
        "a sample that ended in an error is not scored.",
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
    if table.logs:
        legend = "; ".join(f"{_md_escape(k)}: {md_code(v)}" for k, v in table.logs.items())
        lines += ["", f"Log files: {legend}"]
    return "\n".join(lines) + "\n"


def _legend_html(logs: Mapping[str, str]) -> str:
    esc = html.escape
    items = "".join(f"<li>{esc(k)}: <code>{esc(v)}</code></li>" for k, v in logs.items())
    return f"<details class='legend'><summary>log files</summary><ul>{items}</ul></details>"


def html_table(table: Rendered) -> str:
    esc = html.escape

    def cell(tag: str, text: str) -> str:
        log = table.logs.get(text)
        title = f' title="{esc(log)}"' if log else ""
        long = ' class="long"' if any(len(w) > LONG_WORD for w in text.split()) else ""
        return f"<{tag}{title}{long}>{esc(text)}</{tag}>"

    head = "".join(cell("th", h) for h in table.header)
    body = "".join("<tr>" + "".join(cell("td", c) for c in row) + "</tr>" for row in table.rows)
    caption = f"<p>{esc(table.caption)}</p>" if table.caption else ""
    legend = _legend_html(table.logs) if table.logs else ""
    return (
        f"<h3>{esc(table.title)}</h3>{caption}<table><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table>{legend}"
    )


LONG_WORD = 24
"""A cell with a word longer than this (a path, a fingerprint, a log file's name) may be
broken inside any word (class ``long``)."""

HTML_STYLE = (
    "body{font-family:sans-serif;margin:2em;overflow-wrap:anywhere}"
    "table{border-collapse:collapse;margin-bottom:1em;max-width:100%}"
    "td,th{border:1px solid #bbb;padding:4px 8px;text-align:right;overflow-wrap:break-word}"
    "td.long,th.long{overflow-wrap:anywhere}"
    "td:first-child,th:first-child{text-align:left}img{max-width:100%;display:block}"
    "details.legend{margin:-0.5em 0 1em;font-size:90%}"
)
"""A table never runs off the page: it is at most as wide as the page, its cells wrap
between words, and a cell with a word too long for a column (a path, a fingerprint) wraps
inside it too, so the browser narrows wide tables to fit rather than scrolling sideways;
short words (numbers, names of settings) are never cut."""


OUTSIDE_TITLE = "Runs outside the paper's tables"


def shown_runs(table: Table, runs: Sequence[Run]) -> list[Run]:
    """The runs an accuracy table has a row for (none for a table of logged values)."""
    if table.values:
        return []
    return [r for r in runs if matches(r.args, table.where) and score_present(r, table.score)]


def outside_tables(
    declaration: Declaration, runs: Sequence[Run], shown: Mapping[str, Sequence[str]]
) -> tuple[Rendered | None, list[tuple[str, str]]]:
    """The runs no declared accuracy table shows (an argument value outside a table's
    list: a placement, a set, a setting the papers did not run), in one accuracy table of
    their own with every setting that tells them apart; and (log, why) for each run that
    has no score the task's tables show."""
    left = [r for r in runs if r.path not in shown]
    scores = [t.score for t in declaration.report.tables if t.score and not t.values]
    if not left or not scores:
        return None, [(r.name, f"{declaration.task_name}: no accuracy table") for r in left]
    score = scores[0]
    having = [r for r in left if score_present(r, score)]
    not_shown = [
        (
            r.name,
            f"{r.task}: the log has no {score} score (the score the task's tables show; "
            f"its scores: {', '.join(r.scores) or 'none'})",
        )
        for r in left
        if not score_present(r, score)
    ]
    if not having:
        return None, not_shown
    table = Table(
        title=OUTSIDE_TITLE,
        score=score,
        rows=varying_args(runs),
        caption=(
            "Runs of settings that none of the tables above selects (a task argument "
            "value outside a table's list), each with every setting that tells it apart."
        ),
    )
    return build_table(declaration, table, having), not_shown


def build_sections(
    logs: Logs,
    known: Mapping[str, Declaration],
    plot: Callable[[Declaration, Sequence[Run]], list[tuple[str, str]]] | None = None,
    names: ModelNames | None = None,
    across_data: bool = False,
) -> tuple[list[Section], list[str]]:
    """One section per task found in the logs; lines about tasks without a layout."""
    sections: list[Section] = []
    lines: list[str] = []
    tasks = list(dict.fromkeys(r.task for r in logs.runs))
    for task in tasks:
        runs = [r for r in logs.runs if r.task == task]
        declaration = known.get(task)
        if declaration is None:
            line = (
                f"{task}: no report layout is declared for this task "
                f"({len(runs)} log(s): {', '.join(r.name for r in runs)}); generic table"
            )
            lines.append(line)
            generic = Section(task, [generic_table(task, runs)], notes=[line])
            for run in runs:
                logs.shown.setdefault(run.path, []).append(generic.tables[0].title)
            pairs = paired_rows(None, runs, across_data)
            logs.paired += pairs
            table_ = paired_table(pairs)
            if table_ is not None:
                generic.tables.append(table_)
            sections.append(generic)
            continue
        section = Section(task)
        if declaration.report.notes:
            section.notes.append(declaration.report.notes)
        for table in declaration.report.tables:
            rendered = build_table(declaration, table, runs)
            if rendered is not None:
                section.tables.append(rendered)
                for run in shown_runs(table, runs):
                    logs.shown.setdefault(run.path, []).append(rendered.title)
        others, not_shown = outside_tables(declaration, runs, logs.shown)
        if others is not None:
            section.tables.append(others)
            for run in runs:
                if run.path not in logs.shown and run.name not in dict(not_shown):
                    logs.shown.setdefault(run.path, []).append(others.title)
        logs.not_shown += not_shown
        unmatched: list[str] = []
        compared = comparisons(declaration, runs, names or ModelNames(), unmatched)
        section.notes += unmatched
        lines += [f"{task}: {line}" for line in unmatched]
        logs.comparisons += compared
        beside = comparison_table(compared)
        if beside is not None:
            section.tables.append(beside)
        pairs = paired_rows(declaration, runs, across_data)
        logs.paired += pairs
        table_ = paired_table(pairs)
        if table_ is not None:
            section.tables.append(table_)
        gaps, gap_table, gap_notes = gap_section(declaration, runs)
        logs.gaps += gaps
        if gap_table is not None:
            section.tables.append(gap_table)
        section.notes += gap_notes
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
    not_shown = [f"{name}: {why}" for name, why in logs.not_shown]
    problems = [p for p in logs.problems if p not in not_shown]
    for title, lines_ in ((NOT_SHOWN_TITLE, not_shown), ("Logs shown with a note:", problems)):
        if not lines_:
            continue
        md += [title, "", *(f"- {_md_escape(p)}" for p in lines_), ""]
        body.append(
            f"<p>{html.escape(title)}</p><ul>"
            + "".join(f"<li>{html.escape(p)}</li>" for p in lines_)
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
    write_csv(out / "gap.csv", CSV_GAP, logs.gaps)
    write_runs_csv(out / "runs.csv", logs)
    md_path.write_text("\n".join(md), encoding="utf-8")
    html_path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>finmath report</title>"
        f"<style>{HTML_STYLE}</style></head><body>{''.join(body)}</body></html>",
        encoding="utf-8",
    )
    return md_path, html_path


NOT_SHOWN_TITLE = "Not shown in any accuracy table (each log with the reason):"
CSV_RUNS = ["log", "task", "model", "shown_in", "not_shown"]
"""``runs.csv``: every log the report read, with the accuracy tables it has a row in
(``; ``-separated) or why it is in none."""


def write_runs_csv(path: Path, logs: Logs) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_RUNS)
        for run in logs.runs:
            why = "; ".join(w for name, w in logs.not_shown if name == run.name)
            tables = "; ".join(dict.fromkeys(logs.shown.get(run.path, [])))
            writer.writerow([run.name, run.task, run.model, tables, why])
        read = {run.name for run in logs.runs}
        for name, why in logs.not_shown:
            if name not in read:
                writer.writerow([name, "", "", "", why])


def _say(line: str) -> None:
    """One unwrapped line on stderr (a terminal's width must not split a file name)."""
    print(line, file=sys.stderr, flush=True)


def report(
    log_dir: str,
    out: Path,
    plots: bool = True,
    console: Console | None = None,
    aliases: Sequence[str] = (),
    price: Price | None = None,
    pair_across_data: bool = False,
    overwrite: bool = False,
) -> int:
    """Write ``report.md``/``report.html`` (and PNGs) for ``log_dir``; 0, or 1 when nothing was usable."""
    console = console or Console(stderr=True)
    unwritable = report_overwrites(out, log_files(log_dir), overwrite) or _unwritable(out)
    if unwritable:
        _say(f"finmath: {unwritable}")
        return 2
    mark_report_folder(out)
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
            _say("plots need matplotlib (pip install matplotlib, or the report extra): tables only")
        else:
            from finmath_tasks.cli.plots import plotter as make_plotter

            plotter = make_plotter(out)
    names = ModelNames()
    names.add(aliases)
    for line in alias_problems(aliases, logs.runs, known):
        _say(line)
    left_out = list(logs.not_shown)
    while True:
        try:
            sections, lines, warnings = all_sections(
                logs, known, plotter, names, pair_across_data, out, price
            )
            break
        except DamagedLog as damaged:  # its samples do not read: built again without it
            _say(str(damaged))
            leave_out(logs, damaged, left_out)
    for line in [*lines, *warnings]:
        _say(line)
    md_path, html_path = write_report(log_dir, out, logs, sections, lines)
    _say(f"wrote {md_path} and {html_path} ({len(logs.runs)} logs)")
    return 0 if logs.runs else 1


def all_sections(
    logs: Logs,
    known: Mapping[str, Declaration],
    plotter: Callable[[Declaration, Sequence[Run]], list[tuple[str, str]]] | None,
    names: ModelNames,
    pair_across_data: bool,
    out: Path,
    price: Price | None,
) -> tuple[list[Section], list[str], list[str]]:
    """Every section of the report, the lines about tasks without a layout, and the data
    section's warnings. Raises :class:`DamagedLog` for a log whose samples do not read."""
    sections, lines = build_sections(logs, known, plotter, names, pair_across_data)
    # why the wrong answers are wrong, per run and per pair the sections above made
    official = {
        task: official_scores(known.get(task), [r for r in logs.runs if r.task == task])
        for task in dict.fromkeys(r.task for r in logs.runs)
    }
    sections += error_class_sections(
        logs.runs, logs.paired, logs.gaps, out, plotter is not None, official
    )
    usage = usage_section(logs.runs, known, out if plotter else None, prices_for(price))
    sections += [usage] if usage else []
    data, warnings = data_section(logs.runs)
    sections += [data] if data else []
    return sections, lines, warnings


def leave_out(logs: Logs, damaged: DamagedLog, left_out: list[tuple[str, str]]) -> None:
    """Take a damaged log out of ``logs`` and list it with the reason; clear what the
    sections had filled in, for building them again over the others (each run's samples
    already read stay cached on it)."""
    gone = [r for r in logs.runs if r.path == damaged.path]
    logs.runs = [r for r in logs.runs if r.path != damaged.path]
    name = gone[0].name if gone else Path(damaged.path).name
    left_out.append((name, damaged.reason))
    logs.not_shown = list(left_out)
    logs.paired, logs.comparisons, logs.gaps, logs.shown = [], [], [], {}
    for task in dict.fromkeys(r.task for r in gone):
        same = [r for r in logs.runs if r.task == task]
        for run in same:
            run.repeat = (0, 0)
        label_runs(same)


def _unwritable(out: Path) -> str:
    """Why the report cannot be written to ``out`` (a file, a read-only folder), or ""."""
    if out.exists() and not out.is_dir():
        return f"--out {out} is a file, not a folder"
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"--out {out}: cannot create the folder ({e.strerror or type(e).__name__})"
    try:
        with tempfile.NamedTemporaryFile(dir=out, prefix=".finmath-write-check-"):
            pass
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
