"""PNG plots of ``finmath report`` (matplotlib, Agg backend): the kinds a declaration may ask for.

A plot shows one run per identity (:func:`~finmath_tasks.cli.runs.latest_runs`: of
repeats, the latest; the tables show every repeat and their mean): one series per run,
distinct colours, one legend entry per model in a scatter (its points coloured by model).
Each PNG carries what it drew (legend entries, series with their colours and values) in
a text chunk, ``finmath-series`` (JSON), read from the axes after drawing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from finmath_tasks.cli.declare import Declaration, Plot, matches
from finmath_tasks.cli.markup import file_name
from finmath_tasks.cli.runs import (
    Run,
    _order,
    group_cell,
    groups_of,
    latest_runs,
    run_cell,
    varying_args,
)

DPI = 100
SERIES_KEY = "finmath-series"
"""The PNG text chunk describing what a plot drew (JSON)."""


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _series_label(run: Run, extra: Sequence[str]) -> str:
    return " / ".join([run.model, *(f"{a}={run.args.get(a)}" for a in extra)])


def palette(n: int) -> list[str]:
    """``n`` distinct colours (hex): tab10, tab20 beyond 10, evenly spaced hues beyond 20."""
    import matplotlib
    from matplotlib.colors import hsv_to_rgb, to_hex

    if n <= 20:
        cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
        return [str(to_hex(cmap(i))) for i in range(n)]
    hues = [hsv_to_rgb((i / n, 0.75, 0.85)) for i in range(n)]
    return [str(to_hex((float(r), float(g), float(b)))) for r, g, b in hues]


def _errors(values: list[tuple[float, float | None, float | None]]) -> list[list[float]]:
    below = [p - lo if lo is not None else 0.0 for p, lo, _ in values]
    above = [hi - p if hi is not None else 0.0 for p, _, hi in values]
    return [below, above]


def plot_groups(declaration: Declaration, plot: Plot, runs: Sequence[Run], path: Path) -> bool:
    report = declaration.report
    groups = groups_of(runs, plot.score, report)
    if not groups:
        return False
    extra = varying_args(runs, exclude=[*plot.where])
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(groups) + 2), 4.5), dpi=DPI)
    width = 0.8 / len(runs)
    colours = palette(len(runs))
    for i, run in enumerate(runs):
        cells = [group_cell(run, plot.score, g, report) for g in groups]
        values = [(c.value, c.low, c.high) if c else (math.nan, None, None) for c in cells]
        xs = [j + (i - (len(runs) - 1) / 2) * width for j in range(len(groups))]
        ax.bar(
            xs,
            [v[0] * 100 for v in values],
            width,
            yerr=[[e * 100 for e in side] for side in _errors(values)],
            capsize=3,
            color=colours[i],
            label=_series_label(run, extra),
        )
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(f"{plot.score} accuracy (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=8)
    return _save(fig, ax, plot, path)


def plot_scatter(declaration: Declaration, plot: Plot, runs: Sequence[Run], path: Path) -> bool:
    report = declaration.report
    points = [
        (run, run_cell(run, plot.x, report), run_cell(run, plot.score, report)) for run in runs
    ]
    points = [(r, x, y) for r, x, y in points if x is not None and y is not None]
    if not points:
        return False
    extra = varying_args([p[0] for p in points], exclude=[*plot.where])
    models = list(dict.fromkeys(run.model for run, _, _ in points))
    colour = dict(zip(models, palette(len(models)), strict=True))
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 5), dpi=DPI)
    labelled: set[str] = set()
    for run, x, y in points:
        assert x is not None and y is not None
        ax.errorbar(
            x.value * 100,
            y.value * 100,
            xerr=[[e * 100] for e in _side(x)],
            yerr=[[e * 100] for e in _side(y)],
            fmt="o",
            capsize=3,
            color=colour[run.model],
            # one legend entry per model; a point's other arguments are written beside it
            label=run.model if run.model not in labelled else "_nolegend_",
        )
        labelled.add(run.model)
        if extra:
            ax.annotate(
                ", ".join(f"{a}={run.args.get(a)}" for a in extra),
                (x.value * 100, y.value * 100),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize=7,
                color=colour[run.model],
            )
    ax.set_xlabel(f"{plot.x} (%)")
    ax.set_ylabel(f"{plot.score} accuracy (%)")
    ax.set_xlim(-5, 105)
    ax.set_ylim(-5, 105)
    ax.legend(fontsize=8)
    return _save(fig, ax, plot, path)


def _side(cell: Any) -> list[float]:
    return [
        cell.value - cell.low if cell.low is not None else 0.0,
        cell.high - cell.value if cell.high is not None else 0.0,
    ]


def plot_line(declaration: Declaration, plot: Plot, runs: Sequence[Run], path: Path) -> bool:
    report = declaration.report
    xs = _order([r.args.get(plot.x) for r in runs], declaration.order(plot.x))
    if not xs:
        return False
    extra = varying_args(runs, exclude=[plot.x, *plot.where])
    series: dict[str, dict[str, Any]] = {}
    for run in runs:
        cell = run_cell(run, plot.score, report)
        if cell is not None:
            series.setdefault(_series_label(run, extra), {})[str(run.args.get(plot.x))] = cell
    if not series:
        return False
    numeric = all(isinstance(x, int | float) and not isinstance(x, bool) for x in xs)
    positions = [float(x) for x in xs] if numeric else list(range(len(xs)))
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(xs) + 2), 4.5), dpi=DPI)
    for (label, cells), line_colour in zip(series.items(), palette(len(series)), strict=True):
        pts = [
            (pos, cells[str(x)]) for pos, x in zip(positions, xs, strict=True) if str(x) in cells
        ]
        ax.errorbar(
            [p for p, _ in pts],
            [c.value * 100 for _, c in pts],
            yerr=[[_side(c)[k] * 100 for _, c in pts] for k in (0, 1)],
            marker="o",
            capsize=3,
            color=line_colour,
            label=label,
        )
    if not numeric:
        ax.set_xticks(positions)
        ax.set_xticklabels([str(x) for x in xs], rotation=20, ha="right")
    ax.set_xlabel(plot.x)
    ax.set_ylabel(f"{plot.score} accuracy (%)")
    ax.set_ylim(-5, 105)
    ax.legend(fontsize=8)
    return _save(fig, ax, plot, path)


def plot_heatmap(declaration: Declaration, plot: Plot, runs: Sequence[Run], path: Path) -> bool:
    report = declaration.report
    xs = _order([r.args.get(plot.x) for r in runs], declaration.order(plot.x))
    ys = _order([r.args.get(plot.y) for r in runs], declaration.order(plot.y))
    extra = varying_args(runs, exclude=[plot.x, plot.y, *plot.where])
    panels: dict[str, list[list[float]]] = {}
    for run in runs:
        cell = run_cell(run, plot.score, report)
        if cell is None:
            continue
        grid = panels.setdefault(_series_label(run, extra), [[math.nan] * len(xs) for _ in ys])
        grid[ys.index(run.args.get(plot.y))][xs.index(run.args.get(plot.x))] = cell.value * 100
    if not panels:
        return False
    plt = _pyplot()
    fig, axs = plt.subplots(
        1,
        len(panels),
        figsize=(max(4.0, 1.3 * len(xs) + 2) * len(panels), 1.0 * len(ys) + 2.5),
        dpi=DPI,
        squeeze=False,
    )
    image = None
    fig.subplots_adjust(wspace=0.45, bottom=0.25)
    for k, (ax, (label, grid)) in enumerate(zip(axs[0], panels.items(), strict=True)):
        image = ax.imshow(grid, vmin=0, vmax=100, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([str(x) for x in xs], rotation=30, ha="right", fontsize=8)
        ax.set_yticks(range(len(ys)))
        ax.set_yticklabels([str(y) for y in ys], fontsize=8)
        ax.set_xlabel(plot.x)
        if k == 0:
            ax.set_ylabel(plot.y)
        ax.set_title(label, fontsize=9)
        for i, row in enumerate(grid):
            for j, value in enumerate(row):
                if not math.isnan(value):
                    colour = "black" if value > 60 else "white"  # readable on viridis
                    ax.text(j, i, f"{value:.0f}", ha="center", va="center", color=colour)
    fig.colorbar(image, ax=list(axs[0]), label=f"{plot.score} accuracy (%)")
    fig.suptitle(plot.title or plot.name)
    drawn = {"panels": [{"label": label, "values": grid} for label, grid in panels.items()]}
    fig.savefig(path, metadata={SERIES_KEY: json.dumps(drawn)})
    plt.close(fig)
    return True


def _colour(artist: Any) -> str:
    """A legend handle's or container's colour (bars: the fill; points and lines: the line)."""
    from matplotlib.colors import to_hex

    if hasattr(artist, "patches"):
        return str(to_hex(tuple(artist.patches[0].get_facecolor())))
    line = artist.lines[0] if hasattr(artist, "lines") else artist
    return str(to_hex(line.get_color()))


def drawn_series(ax: Any) -> dict[str, Any]:
    """What ``ax`` shows, read from its artists: the legend's entries (label, colour) and
    every series (label, colour, the values drawn; bars: heights, points: x and y)."""
    handles, labels = ax.get_legend_handles_labels()
    legend = [
        {"label": label, "colour": _colour(h)} for h, label in zip(handles, labels, strict=True)
    ]
    series: list[dict[str, Any]] = []
    for container in ax.containers:
        if not hasattr(container, "patches") and container.lines[0] is None:
            continue  # a bar's error bars: drawn with their bar
        entry = {"label": container.get_label(), "colour": _colour(container)}
        if hasattr(container, "patches"):  # bars
            entry["y"] = [float(p.get_height()) for p in container.patches]
        else:  # points or a line with error bars
            line = container.lines[0]
            entry["x"] = [float(v) for v in line.get_xdata()]
            entry["y"] = [float(v) for v in line.get_ydata()]
        series.append(entry)
    return {"legend": legend, "series": series}


def _save(fig: Any, ax: Any, plot: Plot, path: Path) -> bool:
    ax.set_title(plot.title or plot.name)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, metadata={SERIES_KEY: json.dumps(drawn_series(ax))})
    _pyplot().close(fig)
    return True


KINDS: dict[str, Callable[[Declaration, Plot, Sequence[Run], Path], bool]] = {
    "groups": plot_groups,
    "scatter": plot_scatter,
    "line": plot_line,
    "heatmap": plot_heatmap,
}


def plotter(out: Path) -> Callable[[Declaration, Sequence[Run]], list[tuple[str, str]]]:
    """A function drawing a declaration's plots into ``out``: (title, file name) per PNG."""

    def draw(declaration: Declaration, runs: Sequence[Run]) -> list[tuple[str, str]]:
        out.mkdir(parents=True, exist_ok=True)
        made: list[tuple[str, str]] = []
        for plot in declaration.report.plots:
            kept = [r for r in runs if matches(r.args, plot.where) and plot.score in r.scores]
            kept = latest_runs(kept)  # one run per identity
            if not kept:
                continue
            name = file_name(declaration.benchmark, plot.name)
            if KINDS[plot.kind](declaration, plot, kept, out / name):
                made.append((plot.title or plot.name, name))
        return made

    return draw
