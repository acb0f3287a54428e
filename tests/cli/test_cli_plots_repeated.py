"""``finmath report`` on a folder holding a run more than once: the plots show one run
per identity (the latest of its repeats; the tables show every repeat and their mean),
one series per run, one legend entry per model in
a scatter, distinct colours. Read back from the PNGs: the series the plot recorded from
its own axes (the ``finmath-series`` text chunk), and their colours in the pixels."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cli_logs import DEMO, cot_outputs
from inspect_ai import eval
from PIL import Image

from eval_helpers import scripted
from finmath_tasks.cli.declare import Plot, declarations
from finmath_tasks.cli.plots import SERIES_KEY, palette, plotter
from finmath_tasks.cli.report import build_table, read_logs
from finmath_tasks.cli.runs import Run, group_cell, groups_of, latest_runs, run_cell
from finmath_tasks.tasks.knowledgefmath import knowledgefmath

MODELS = ("mockllm/gpt-4o", "mockllm/beta", "mockllm/gamma")
SHOWN = sorted(MODELS)  # a report lists runs by model
ALL_RIGHT = [f"Therefore, the answer is {r['ground_truth']}." for r in DEMO]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Each model's CoT run with knowledge none and oracle; gpt-4o's plain run again with
    (a repeat of the same identity: another task id), all answers right;
    beta's plain run repeated as it was."""
    root = tmp_path_factory.mktemp("repeated")
    logs = str(root / "logs")

    def run(model: str, outputs: list[str], **args: Any) -> None:
        task = knowledgefmath(split="demo", solver="cot", **args)
        [log] = eval(task, model=scripted(outputs, model), display="none", log_dir=logs)
        assert log.status == "success", log.error

    for m, model in enumerate(MODELS):
        for shift, knowledge in enumerate(["none", "oracle"]):
            run(model, cot_outputs(m, shift), knowledge=knowledge)
    run(MODELS[0], ALL_RIGHT, knowledge="none")
    run(MODELS[1], cot_outputs(1, 0), knowledge="none")
    return root


def drawn(png: Path) -> dict[str, Any]:
    with Image.open(png) as image:
        data: dict[str, Any] = json.loads(image.text[SERIES_KEY])
    return data


def pixels_of(png: Path, colour: str) -> int:
    rgb = tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
    with Image.open(png) as image:
        counts = image.convert("RGB").getcolors(maxcolors=10_000_000) or []
    return sum(n for n, c in counts if c == rgb)


def report(folder: Path, plots: list[Plot] | None = None) -> tuple[Any, list[Run], Path]:
    declaration = declarations()["knowledgefmath"]
    if plots is not None:
        declaration = replace(declaration, report=replace(declaration.report, plots=plots))
    runs = read_logs(str(folder / "logs")).runs
    out = folder / f"report-{len(plots or [])}"
    plotter(out)(declaration, runs)
    return declaration, runs, out


@pytest.mark.slow
def test_the_topic_bars_are_the_tables_runs(folder: Path) -> None:
    declaration, runs, out = report(folder)
    png = out / "knowledgefmath_accuracy_by_topic.png"
    series = drawn(png)["series"]
    # one series per model: gpt-4o's two plain logs (two task ids, one setting) are repeats
    # of one identity: the plot draws the latest
    assert [s["label"] for s in series] == SHOWN
    assert [e["label"] for e in drawn(png)["legend"]] == SHOWN
    colours = [s["colour"] for s in series]
    assert len(set(colours)) == len(colours)
    assert all(pixels_of(png, c) > 100 for c in colours)  # each series is drawn in its colour
    plain = [r for r in runs if r.args.get("knowledge") == "none" and r.model == MODELS[0]]
    assert len(plain) == 2  # both logs were read; the plot keeps one
    [latest] = latest_runs(plain)
    assert latest.created == max(r.created for r in plain)  # the later log
    report_ = declaration.report
    groups = groups_of([latest], "financemath", report_)
    expected = [group_cell(latest, "financemath", g, report_) for g in groups]
    [gpt4o] = [s for s in series if s["label"] == MODELS[0]]
    assert gpt4o["y"] == pytest.approx([c.value * 100 for c in expected if c])
    assert set(gpt4o["y"]) == {100.0}  # the later log answered everything right
    # the table shows both repeats and their mean: the latest repeat's row is all 100
    [table] = [t for t in declaration.report.tables if t.title.startswith("Accuracy by topic")]
    rendered = build_table(declaration, table, runs)
    assert rendered is not None
    rows = [r for r in rendered.rows if r[0] == MODELS[0]]
    assert [r[2] for r in rows] == [
        "repeat 1/2",
        "repeat 2/2",
        "mean of 2 repeats (sd between repeats)",
    ]
    assert rows[1][1] == "cot" and all(c.startswith("100.0 ") for c in rows[1][3:] if c != "–")


@pytest.mark.slow
def test_a_scatter_has_one_legend_entry_and_colour_per_model(folder: Path) -> None:
    scatter = Plot(name="official_vs_tolerant", kind="scatter", score="financemath",
                   x="tolerant", title="official vs tolerant")  # fmt: skip
    declaration, runs, out = report(folder, [scatter])
    png = out / "knowledgefmath_official_vs_tolerant.png"
    data = drawn(png)
    legend = data["legend"]
    assert [e["label"] for e in legend] == SHOWN  # once each
    colours = {e["label"]: e["colour"] for e in legend}
    assert len(set(colours.values())) == len(MODELS)
    # a point per run the tables show: 2 per model (knowledge none and oracle)
    shown = latest_runs(runs)
    assert len(data["series"]) == len(shown) == 2 * len(MODELS)
    for point, run in zip(data["series"], shown, strict=True):
        assert point["colour"] == colours[run.model]
        x, y = (
            run_cell(run, "tolerant", declaration.report),
            run_cell(run, "financemath", declaration.report),
        )
        assert x is not None and y is not None
        assert point["x"] == pytest.approx([x.value * 100]) and point["y"] == pytest.approx(
            [y.value * 100]
        )
    assert all(pixels_of(png, c) > 20 for c in colours.values())


def test_the_palette_stays_distinct_beyond_ten_and_twenty() -> None:
    for n in (3, 10, 11, 20, 21, 40):
        colours = palette(n)
        assert len(colours) == n and len(set(colours)) == n


@pytest.mark.slow
def test_the_error_class_plot_draws_the_latest_repeat_of_each_identity(folder: Path) -> None:
    from finmath_tasks.cli.error_classes import error_class_sections

    runs = read_logs(str(folder / "logs")).runs
    out = folder / "report-classes"
    out.mkdir()
    [section] = error_class_sections(runs, [], [], out, plots=True)
    assert section.plots
    for _, name in section.plots:
        labels = [s["label"] for s in drawn(out / name)["series"]]
        # 3 models x 2 knowledge settings; gpt-4o's and beta's plain runs have 2 repeats
        assert len(labels) == len(latest_runs(runs)) == 2 * len(MODELS)
        assert sum("repeat 2/2" in label for label in labels) == 2
        assert not any("repeat 1/2" in label for label in labels)
    # the table keeps a column per log, both repeats included
    assert any("repeat 1/2" in cell for table in section.tables for cell in table.header)
