"""What a grid cost after it ran: the usage section of ``finmath report``.

Read from the logs' headers only (no sample is read): ``stats.model_usage``
(tokens per model), ``stats.role_usage`` (tokens per model role, e.g. the
``grader``), ``eval.model_roles`` (which model each role was) and
``stats.started_at``/``completed_at`` (wall time). The evaluated model's row is
its model usage less the usage of the roles bound to the same model, so the
judge or grader is never counted as the evaluated model.

Tokens as Inspect normalises them: ``input`` excludes cache reads and writes,
``output`` includes reasoning tokens (shown apart as well, not added). Cost at
the prices of :mod:`finmath_tasks.cli.prices`: input and cache writes at the
input price, cache reads at the cached-input price, output at the output price
(providers that charge cache writes more, e.g. Anthropic's 1.25x, cost a little
more than shown). Inspect's log header records tokens, not the number of model
calls, so calls are not shown.

Beside the cache reads Inspect recorded for the evaluated model stands the dry run's
estimate for the same run (:func:`cache_estimate`: the run's task arguments, sample
limit and concurrency, the model's cache rule), so what was predicted and what was
earned can be compared; "–" where no rule is known or the prompts cannot be rebuilt
(e.g. the data is not on this machine).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finmath_tasks.cli.markup import file_name
from finmath_tasks.cli.prices import Price, load_overrides, price_for
from finmath_tasks.cli.runs import (
    Rendered,
    Run,
    Section,
    identity_key,
    run_cell,
    run_labels,
    varying_args,
)

if TYPE_CHECKING:
    from finmath_tasks.cli.declare import Declaration

EVALUATED = "evaluated"
"""The role name of the evaluated model in the table."""
OTHER = "other"
"""Usage of a model that is neither the evaluated model nor bound to a role."""
FIELDS = (
    "input_tokens",
    "input_tokens_cache_read",
    "input_tokens_cache_write",
    "output_tokens",
    "reasoning_tokens",
)
CALLS_NOTE = (
    "Model calls: not shown, Inspect's log header records tokens per model and role, not calls."
)


@dataclass
class Tokens:
    """Token counts of one model in one role."""

    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    reasoning: int = 0

    @classmethod
    def of(cls, usage: Any) -> Tokens:
        values = [int(getattr(usage, f, None) or 0) for f in FIELDS]
        return cls(*values)

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(
            self.input + other.input,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.output + other.output,
            self.reasoning + other.reasoning,
        )

    def __sub__(self, other: Tokens) -> Tokens:
        return Tokens(
            max(0, self.input - other.input),
            max(0, self.cache_read - other.cache_read),
            max(0, self.cache_write - other.cache_write),
            max(0, self.output - other.output),
            max(0, self.reasoning - other.reasoning),
        )

    def cost(self, price: Price) -> float:
        return (
            (self.input + self.cache_write) * price.input
            + self.cache_read * price.cache_read
            + self.output * price.output
        ) / 1e6


@dataclass
class Usage:
    """One log's usage: (model, role) -> tokens, and its wall time."""

    tokens: dict[tuple[str, str], Tokens] = field(default_factory=dict)
    seconds: float | None = None
    limit: int | None = None
    """The run's sample limit (its first N samples), None: all."""
    in_flight: int | None = None
    """The run's --max-samples or --max-connections, when given."""


def _seconds(started: str, completed: str) -> float | None:
    if not started or not completed:
        return None
    try:
        return (datetime.fromisoformat(completed) - datetime.fromisoformat(started)).total_seconds()
    except ValueError:
        return None


def usage_of(log: Any) -> Usage:
    """The usage in a log header (``read_eval_log(..., header_only=True)``)."""
    stats = log.stats
    evaluated = str(log.eval.model)
    roles = {
        str(role): str(getattr(config, "model", config))
        for role, config in (log.eval.model_roles or {}).items()
    }
    tokens: dict[tuple[str, str], Tokens] = {}
    bound: dict[str, Tokens] = {}
    for role, usage in (stats.role_usage or {}).items():
        model = roles.get(role, "?")
        counted = Tokens.of(usage)
        tokens[(model, role)] = counted
        bound[model] = bound.get(model, Tokens()) + counted
    for model, usage in (stats.model_usage or {}).items():
        rest = Tokens.of(usage) - bound.get(model, Tokens())
        if rest == Tokens() and model in bound:
            continue
        tokens[(model, EVALUATED if model == evaluated else OTHER)] = rest
    config = log.eval.config
    limit = config.limit if isinstance(config.limit, int) else None
    connections = getattr(log.plan.config, "max_connections", None) if log.plan else None
    in_flight = config.max_samples or connections
    return Usage(tokens, _seconds(stats.started_at, stats.completed_at), limit, in_flight)


_ESTIMATES: dict[tuple[str, str, int | None, int, str], int | None] = {}
"""Estimates already made in this process (the same run of several models, or a report
read twice)."""


def cache_estimate(run: Run, declaration: Declaration | None) -> int | None:
    """The dry run's estimate of the evaluated model's cache reads for this run, or None
    (no rule known for the model, no declaration, or the prompts cannot be rebuilt)."""
    from finmath_tasks.cli.compare import task_defaults
    from finmath_tasks.cli.cost import declared_cost, run_cost
    from finmath_tasks.prefix_cache import IN_FLIGHT, WINDOW, rule_for

    usage: Usage | None = getattr(run, "usage", None)
    rule = rule_for(run.model)
    if usage is None or rule is None or declaration is None:
        return None
    defaults = task_defaults(declaration)
    # a parameter an older version had (in its logs) is not passed to today's task, and a
    # None it recorded is read as the report reads it (``Report.resolve``)
    args = {
        k: v
        for k, v in run.args.items()
        if k in defaults and (v is not None or k in run.args_passed)
    }
    if declaration.report.resolve is not None:
        resolved = declaration.report.resolve({**defaults, **run.args})
        args.update({k: v for k, v in resolved.items() if run.args.get(k) is None})
    in_flight = usage.in_flight or IN_FLIGHT
    key = (declaration.benchmark, repr(sorted(args.items())), usage.limit, in_flight, rule.name)
    if key not in _ESTIMATES:
        try:
            counted = run_cost(
                declaration, declared_cost(declaration), args, usage.limit, None, [rule],
                WINDOW, in_flight,
            )  # fmt: skip
            served = counted.served.get(rule.name)
            _ESTIMATES[key] = served.read[0] if served is not None else None
        except Exception:  # an estimate we cannot make is shown as missing
            _ESTIMATES[key] = None
    return _ESTIMATES[key]


# --- tables ----------------------------------------------------------------------------------


def _n(value: int) -> str:
    return f"{value:,}"


def _money(value: float | None) -> str:
    return "–" if value is None else f"${value:.4g}" if value < 1 else f"${value:,.2f}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{rest:02d}" if hours else f"{minutes}:{rest:02d}"


PriceOf = Callable[[str], tuple[Price | None, str]]


def prices_for(price: Price | None = None) -> PriceOf:
    """``price`` for every model (``--price``), else the table with ``$FINMATH_PRICES``
    read once; raises :class:`~finmath_tasks.cli.prices.PriceError` on a bad file."""
    if price is not None:
        return lambda model: (price, "--price")
    overrides = load_overrides()
    cache: dict[str, tuple[Price | None, str]] = {}

    def lookup(model: str) -> tuple[Price | None, str]:
        if model not in cache:
            cache[model] = price_for(model, overrides)
        return cache[model]

    return lookup


def _cost(tokens: Tokens, model: str, prices: PriceOf) -> float | None:
    price, _ = prices(model)
    return None if price is None else tokens.cost(price)


def run_cost(run: Run, prices: PriceOf = price_for) -> float | None:
    """Dollars of one run over every model and role; None when a model has no price."""
    usage: Usage | None = getattr(run, "usage", None)
    if usage is None or not usage.tokens:
        return None
    total = 0.0
    for (model, _), tokens in usage.tokens.items():
        cost = _cost(tokens, model, prices)
        if cost is None:
            return None
        total += cost
    return total


HEADER = [
    "run",
    "task",
    "model",
    "role",
    "input",
    "cache read",
    "cache read estimate",
    "cache write",
    "output",
    "reasoning",
    "wall time",
    "cost",
]


def _row(
    first: list[str], tokens: Tokens, seconds: str, cost: float | None, estimate: str = ""
) -> list[str]:
    return [
        *first,
        _n(tokens.input),
        _n(tokens.cache_read),
        estimate,
        _n(tokens.cache_write),
        _n(tokens.output),
        _n(tokens.reasoning),
        seconds,
        _money(cost),
    ]


def usage_tables(
    runs: Sequence[Run],
    prices: PriceOf = price_for,
    known: Mapping[str, Declaration] | None = None,
) -> list[Rendered]:
    """A row per run, model and role; then the totals per model and role."""

    rows: list[list[str]] = []
    totals: dict[tuple[str, str], Tokens] = {}
    estimates: dict[str, int | None] = {}
    """Per evaluated model: the summed estimate (None once a run has none)."""
    seconds = 0.0
    timed = 0
    labels: dict[str, str] = {}
    for task in dict.fromkeys(r.task for r in runs):
        labels.update(run_labels([r for r in runs if r.task == task]))
    groups: dict[str, list[Run]] = {}
    for run in runs:  # a setting's repeats have one row per model and role, summed
        if getattr(run, "usage", None) is not None:
            groups.setdefault(identity_key(run), []).append(run)
    legend: dict[str, str] = {}
    for group in groups.values():
        first = min(group, key=lambda r: (r.created, r.path))
        label = labels[first.name]
        if len(group) > 1:
            one = f"repeat {first.repeat[0]}/{first.repeat[1]}"
            pooled = f"{len(group)} repeats, summed"
            label = label.replace(one, pooled) if one in label else f"{label} {pooled}"
        legend[label] = first.name
        tokens_of: dict[tuple[str, str], Tokens] = {}
        estimate_of: dict[str, int | None] = {}
        group_seconds: float | None = None
        for run in group:
            usage: Usage = run.usage
            if usage.seconds is not None:
                seconds += usage.seconds
                timed += 1
                group_seconds = (group_seconds or 0.0) + usage.seconds
            for (model, role), tokens in usage.tokens.items():
                totals[(model, role)] = totals.get((model, role), Tokens()) + tokens
                tokens_of[(model, role)] = tokens_of.get((model, role), Tokens()) + tokens
                if role == EVALUATED:
                    value = cache_estimate(run, (known or {}).get(run.task))
                    before = estimates.get(model, 0)
                    estimates[model] = None if value is None or before is None else before + value
                    mine = estimate_of.get(model, 0)
                    estimate_of[model] = None if value is None or mine is None else mine + value
        if not tokens_of:
            empty = [label, first.task, first.model, "–", "0", "0", "–", "0", "0", "0"]
            rows.append([*empty, _duration(group_seconds), "–"])
        for i, ((model, role), tokens) in enumerate(sorted(tokens_of.items(), key=_role_order)):
            shown = _duration(group_seconds) if i == 0 else ""
            estimate = ""
            if role == EVALUATED:
                value = estimate_of.get(model)
                estimate = "–" if value is None else _n(value)
            cost = _cost(tokens, model, prices)
            rows.append(_row([label, first.task, model, role], tokens, shown, cost, estimate))
    notes = []
    for model in sorted({m for m, _ in totals}):
        price, source = prices(model)
        notes.append(
            f"{model}: "
            + (f"${price.input:g}/M in, ${price.output:g}/M out ({source})" if price else source)
        )
    caption = (
        "Tokens from the logs' headers; the wall time is each log's start to completion. "
        "Cache read: the prompt tokens the provider served from its prompt cache, as "
        "Inspect recorded them; its estimate: the dry run's count for the same run "
        "(first turns, the model's cache rule; – where none). "
        + CALLS_NOTE
        + " Prices per million tokens: "
        + "; ".join(notes)
        + "."
    )
    per_run = Rendered(
        "Usage and cost per run",
        HEADER,
        rows,
        caption,
        logs=legend,
    )
    total_rows: list[list[str]] = []
    grand = Tokens()
    grand_cost: float | None = 0.0
    for (model, role), tokens in sorted(totals.items(), key=_role_order):
        cost = _cost(tokens, model, prices)
        grand = grand + tokens
        grand_cost = None if cost is None or grand_cost is None else grand_cost + cost
        estimate = ""
        if role == EVALUATED:
            summed = estimates.get(model)
            estimate = "–" if summed is None else _n(summed)
        total_rows.append(_row([model, role], tokens, "", cost, estimate))
    total_rows.append(_row(["all", ""], grand, f"{_duration(seconds)} ({timed} logs)", grand_cost))
    totals_table = Rendered(
        "Usage and cost in total", ["model", "role", *HEADER[4:]], total_rows,
        "The wall time is the sum over logs (runs in parallel overlap).",
    )  # fmt: skip
    return [per_run, totals_table]


def _role_order(item: tuple[tuple[str, str], Tokens]) -> tuple[int, str, str]:
    (model, role), _ = item
    return (0 if role == EVALUATED else 1, role, model)


# --- the cost-vs-accuracy scatter -----------------------------------------------------------


def main_score(declaration: Declaration) -> str | None:
    """The score a benchmark's report leads with (its first accuracy table's)."""
    for table in declaration.report.tables:
        if table.score:
            return table.score
    for plot in declaration.report.plots:
        if plot.score:
            return plot.score
    return None


def plot_cost_accuracy(
    declaration: Declaration, runs: Sequence[Run], path: Path, prices: PriceOf = price_for
) -> bool:
    """Accuracy of the benchmark's main score against each run's cost (log x axis)."""
    from finmath_tasks.cli.plots import _pyplot, _series_label

    score = main_score(declaration)
    if score is None:
        return False
    points = []
    for run in runs:
        cell = run_cell(run, score, declaration.report)
        cost = run_cost(run, prices)
        if cell is not None and cost is not None and cost > 0 and not math.isnan(cell.value):
            points.append((run, cost, cell))
    if not points:
        return False
    extra = varying_args(
        [p[0] for p in points],
    )
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    for run, cost, cell in points:
        low = cell.value - cell.low if cell.low is not None else 0.0
        high = cell.high - cell.value if cell.high is not None else 0.0
        ax.errorbar(
            [cost],
            [cell.value * 100],
            yerr=[[low * 100], [high * 100]],
            fmt="o",
            capsize=3,
            label=_series_label(run, extra),
        )
    ax.set_xscale("log")
    ax.set_xlabel("cost of the run ($, every model and role)")
    ax.set_ylabel(f"{score} accuracy (%)")
    ax.set_ylim(0, 105)
    if len(points) <= 20:
        ax.legend(fontsize=7)
    ax.set_title(f"{declaration.benchmark}: cost vs accuracy")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def usage_section(
    runs: Sequence[Run],
    known: Mapping[str, Declaration],
    out: Path | None,
    prices: PriceOf = price_for,
) -> Section | None:
    """The report's usage section: the tables, and (with ``out``) a scatter per benchmark."""

    if not runs:
        return None
    section = Section("Usage and cost", usage_tables(runs, prices, known))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        for task in dict.fromkeys(r.task for r in runs):
            declaration = known.get(task)
            if declaration is None:
                continue
            name = file_name(declaration.benchmark, "cost_vs_accuracy")
            mine = [r for r in runs if r.task == task]
            if plot_cost_accuracy(declaration, mine, out / name, prices):
                section.plots.append((f"{declaration.benchmark}: cost vs accuracy", name))
    return section
