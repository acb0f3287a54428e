"""Reading report.md back, and the numbers each cell must have, computed from the logs."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from inspect_ai.log import EvalLog

from finmath_tasks.cli.declare import Declaration, Table, matches
from finmath_tasks.cli.stats import wilson

Z = {0.9: 1.6448536269514722, 0.95: 1.959963984540054}
CELL = re.compile(r"^(?P<p>-?\d+\.\d) \[(?P<lo>-?\d+\.\d), (?P<hi>-?\d+\.\d)\]$")


def parse_markdown(text: str) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Title (### heading) -> (header, rows) of every Markdown table."""
    tables: dict[str, tuple[list[str], list[list[str]]]] = {}
    title = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("### "):
            title = line[4:]
        elif line.startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header = _cells(line)
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("| "):
                rows.append(_cells(lines[i]))
                i += 1
            tables[title] = (header, rows)
            continue
        i += 1
    return tables


def _cells(line: str) -> list[str]:
    return [c.strip().replace("\\|", "|") for c in line.strip().strip("|").split(" | ")]


def metric_values(log: EvalLog, score: str) -> dict[str, float]:
    assert log.results is not None
    [found] = [s for s in log.results.scores if s.name == score]
    return {name: float(m.value) for name, m in found.metrics.items()}


def group_n(log: EvalLog, score: str, key: str, group: str) -> int:
    """Samples of ``group`` whose score value has a number for ``score`` (from the samples).

    The group is the score's metadata ``key`` when it has one, else the sample's.
    """
    return len(group_values(log, score, key, group))


def group_values(log: EvalLog, score: str, key: str, group: str) -> list[float]:
    """The numbers for ``score`` of the samples of ``group``: a dict value's entry (older
    logs) or the value of the scorer named ``score`` (one scorer per key)."""
    values: list[float] = []
    for sample in log.samples or []:
        for name, s in (sample.scores or {}).items():
            own = s.metadata or {}
            if str(own[key] if key in own else (sample.metadata or {}).get(key)) != group:
                continue
            value = s.value
            if isinstance(value, dict):
                number = value.get(score)
            else:
                number = value if name == score else None
            if isinstance(number, int | float) and not math.isnan(float(number)):
                values.append(float(number))
    return values


def pct(value: float) -> str:
    return f"{value * 100:.1f}"


def expected_cell(declaration: Declaration, table: Table, log: EvalLog, group: str | None) -> str:
    report = declaration.report
    values = metric_values(log, table.score)
    level = report.interval.level
    if group is not None:
        groups = table.groups or report.groups
        assert groups is not None
        n = group_n(log, table.score, groups.key, group)
        if groups.from_samples:
            p = sum(group_values(log, table.score, groups.key, group)) / n
        else:
            p = values[groups.prefix + group]
    else:
        p = values[report.accuracy]
        assert log.results is not None
        [score] = [s for s in log.results.scores if s.name == table.score]
        n = score.scored_samples or log.results.completed_samples
    # Inspect's Wilson interval over the scored samples
    bounds = wilson(p, n, level)
    assert bounds is not None
    lo, hi = bounds
    return f"{pct(p)} [{pct(lo)}, {pct(hi)}]"


def expected_value(value: float, percent: bool) -> str:
    if percent:
        return pct(value)
    return str(int(value)) if value == int(value) else f"{value:.4g}"


def check_values_table(
    table: Table, header: list[str], rows: list[list[str]], task_logs: list[EvalLog]
) -> int:
    """Every value of a table of logged values (counts, rates) against its log's metric."""
    label_cols = len(header) - len(table.values)
    assert header[label_cols:] == [c.header for c in table.values], table.title
    checked = 0
    for row in rows:
        labels = dict(zip(header[1:label_cols], row[1:label_cols], strict=True))
        [log] = [
            log
            for log in task_logs
            if log.eval.model == row[0]
            and all(str(log.eval.task_args.get(k)) == v for k, v in labels.items())
        ]
        for column, text in zip(table.values, row[label_cols:], strict=True):
            value = metric_values(log, column.score).get(column.metric)
            if value is None:  # not logged (e.g. a share of flips in a run without any)
                assert text == "–", (table.title, row, column)
            else:
                assert text == expected_value(value, column.percent), (table.title, row, column)
            checked += 1
    scores = {c.score for c in table.values}
    selected = [
        log
        for log in task_logs
        if log.results is not None and scores & {s.name for s in log.results.scores}
    ]
    assert len(rows) == len(selected), table.title  # one row per log the table selects
    return checked


def check_table(
    declaration: Declaration,
    table: Table,
    header: list[str],
    rows: list[list[str]],
    logs: list[EvalLog],
) -> int:
    """Assert every cell of a rendered table; return how many numbers were checked."""
    task_logs = [
        log
        for log in logs
        if log.eval.task_registry_name == declaration.task_name
        and matches(log.eval.task_args, table.where)
    ]
    if table.values:
        return check_values_table(table, header, rows, task_logs)
    by_groups = table.columns == "groups"
    # the label columns are "model", the declared row args, and any added varying args
    label_cols = header.index("model") + 1
    while label_cols < len(header) and header[label_cols] in task_logs[0].eval.task_args:
        label_cols += 1
    checked = 0
    for row in rows:
        labels = dict(zip(header[1:label_cols], row[1:label_cols], strict=True))
        for column, text in zip(header[label_cols:], row[label_cols:], strict=True):
            wanted: dict[str, Any] = dict(labels)
            if not by_groups:
                wanted.update(dict(zip(table.columns, column.split(" / "), strict=True)))
            candidates = [
                log
                for log in task_logs
                if log.eval.model == row[0]
                and all(str(log.eval.task_args.get(k)) == v for k, v in wanted.items())
                and any(s.name == table.score for s in (log.results.scores if log.results else []))
            ]
            if by_groups:
                groups = table.groups or declaration.report.groups
                assert groups is not None
                if groups.from_samples:
                    candidates = [
                        log for log in candidates if group_n(log, table.score, groups.key, column)
                    ]
                else:
                    candidates = [
                        log
                        for log in candidates
                        if groups.prefix + column in metric_values(log, table.score)
                    ]
            if text == "–":
                assert not candidates, (table.title, row, column)
                continue
            assert len(candidates) == 1, (table.title, row, column, len(candidates))
            assert CELL.match(text), text
            expected = expected_cell(
                declaration, table, candidates[0], column if by_groups else None
            )
            assert text == expected, (table.title, row[0], labels, column, text, expected)
            checked += 3
    return checked


def tables_without_logs_listing(
    tables: Mapping[str, tuple[list[str], list[list[str]]]],
) -> dict[str, tuple[list[str], list[list[str]]]]:
    return {k: v for k, v in tables.items() if k != "Logs"}
