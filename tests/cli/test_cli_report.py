"""``finmath report`` on real logs of both tasks and two scripted models."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from PIL import Image

from cli.report_check import check_table, parse_markdown
from finmath_tasks.cli.declare import declarations
from finmath_tasks.cli.main import main

README = Path(__file__).resolve().parents[2] / "README.md"
SCRIPTED = {"knowledgefmath", "sara"}
"""The benchmarks of the ``scripted_logs`` fixture."""


@pytest.fixture(scope="module")
def report_dir(
    scripted_logs: tuple[Path, list[EvalLog]], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    log_dir, _ = scripted_logs
    out = tmp_path_factory.mktemp("report")
    assert main(["report", str(log_dir), "--out", str(out)]) == 0
    return out


@pytest.mark.slow
def test_every_number_in_the_tables_matches_the_logs(
    scripted_logs: tuple[Path, list[EvalLog]], report_dir: Path
) -> None:
    _, header_logs = scripted_logs
    logs = [read_eval_log(log.location) for log in header_logs]  # with samples (group counts)
    tables = parse_markdown((report_dir / "report.md").read_text())
    checked = 0
    seen = set()
    for declaration in declarations().values():
        if declaration.benchmark not in SCRIPTED:
            continue  # test_cli_report_grids.py checks the others
        for table in declaration.report.tables:
            assert table.title in tables, f"table {table.title!r} is missing"
            header, rows = tables[table.title]
            models = {row[0] for row in rows}
            assert models == {"mockllm/alpha", "mockllm/beta"}, table.title
            checked += check_table(declaration, table, header, rows, logs)
            seen.add(declaration.benchmark)
    assert seen == SCRIPTED
    assert checked > 150


@pytest.mark.slow
def test_tables_are_shaped_like_the_papers(report_dir: Path) -> None:
    tables = parse_markdown((report_dir / "report.md").read_text())
    header, rows = tables["Accuracy by solver (official FinanceMath comparison)"]
    assert header == ["model", "cot", "pot"]  # one row per model; the sandbox is hidden
    assert [r[0] for r in rows] == ["mockllm/alpha", "mockllm/beta"]
    header, rows = tables["Entailment accuracy: retrieval x prompting (90% CI)"]
    assert header == [
        "model",
        "none / zero_shot",
        "mentioned_only / cot",
        "all_statutes / few_shot",
    ]  # the grid's order, not alphabetical
    header, _ = tables["PoT execution rate"]
    assert header == ["model", "none"]
    header, _ = tables["Accuracy by topic (official comparison, no knowledge)"]
    assert header[:2] == ["model", "solver"] and "Accounting" in header


def test_html_has_the_same_tables_and_the_plots(report_dir: Path) -> None:
    html = (report_dir / "report.html").read_text()
    md = (report_dir / "report.md").read_text()
    # 7 + the paired differences of each task (knowledgefmath, sara) + usage per run, total + data
    tables = parse_markdown(md)
    assert html.count("<table>") == len(tables)
    main = [t for t in tables if "error class" not in t and "error cause" not in t]
    assert len(main) == 12, main
    # the error classes: per task and score one table, per pair the transitions
    assert any(t.endswith("error classes of financemath") for t in tables)
    assert any("error class transitions of financemath" in t for t in tables)
    # the causes beside them, for each benchmark whose scorer gives causes
    assert any(t.endswith("error causes of financemath") for t in tables)
    assert any("error cause transitions of financemath" in t for t in tables)
    sara = [t for t in tables if t.startswith("finmath_tasks/sara: error cause")]
    assert any(t.endswith("error causes of entailment") for t in sara), sara
    # in Mavi et al.'s categories (a wrong verdict with the cited statutes retrieved)
    assert "logical errors" in md
    # Wilson intervals: 7/15 and 2/6 (the Wald interval of 2/6 would start at 0.0)
    for cell in ["46.7 [24.8, 69.9]", "33.3 [9.7, 70.0]"]:
        assert cell in md and cell in html
    for png in report_dir.glob("*.png"):
        assert f'src="{png.name}"' in html and f"({png.name})" in md


PLOTS = {
    "knowledgefmath_accuracy_by_topic.png",
    "knowledgefmath_execution_rate_vs_accuracy.png",
    "knowledgefmath_accuracy_by_knowledge.png",
    "sara_retrieval_x_prompting.png",
}


def test_plots_read_back(report_dir: Path) -> None:
    names = {p.name for p in report_dir.glob("*.png")}
    assert {n for n in names if "_error_classes_" not in n} == PLOTS
    # and a plot of the runs' error classes per task and classified score
    assert {
        "knowledgefmath_error_classes_financemath.png",
        "sara_error_classes_entailment.png",
    } <= names
    for name in sorted(names):
        with Image.open(report_dir / name) as image:
            assert image.format == "PNG"
            width, height = image.size
            assert width >= 400 and height >= 300, name
            colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
            assert colours is not None and len(colours) > 20, name  # not one flat colour
            # something is drawn: the most common colour (background) is not everything
            most = max(count for count, _ in colours)
            assert most < 0.97 * width * height, name


def test_readme_shows_one_plot_of_each_kind() -> None:
    text = README.read_text()
    docs = README.parent / "docs"
    for kind_file in [
        "report_accuracy_by_topic.png",
        "report_execution_rate_vs_accuracy.png",
        "report_line.png",
        "report_heatmap.png",
    ]:
        assert f"docs/{kind_file}" in text, kind_file
        with Image.open(docs / kind_file) as image:
            assert image.size[0] >= 300
            colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
            assert colours is not None and len(colours) > 20


@pytest.mark.slow
def test_problem_logs_are_named_and_the_rest_is_reported(
    scripted_logs: tuple[Path, list[EvalLog]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    log_dir, logs = scripted_logs
    mixed = tmp_path / "mixed"
    shutil.copytree(log_dir, mixed)
    # a corrupt log
    (mixed / "2026-01-01T00-00-00-00-00_broken_AAAAAAAAAAAAAAAAAAAAAA.eval").write_bytes(
        b"not a zip file"
    )
    # a still-running log, and a log of a task nobody declared
    running = read_eval_log(logs[0].location)
    running.status = "started"
    running.results = None
    write_eval_log(
        running, str(mixed / "2026-01-01T00-00-01-00-00_running_BBBBBBBBBBBBBBBBBBBBBB.eval")
    )
    stranger = read_eval_log(logs[3].location)
    stranger.eval.task = "other_pkg/stranger"
    stranger.eval.task_registry_name = "other_pkg/stranger"
    write_eval_log(
        stranger, str(mixed / "2026-01-01T00-00-02-00-00_stranger_CCCCCCCCCCCCCCCCCCCCCC.eval")
    )

    out = tmp_path / "out"
    assert main(["report", str(mixed), "--out", str(out), "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert "broken_AAAAAAAAAAAAAAAAAAAAAA.eval: not a readable Inspect log, skipped" in err
    # a running attempt of a finished run (one task id): the finished log is the more complete
    assert (
        f"running_BBBBBBBBBBBBBBBBBBBBBB.eval: left out, an attempt of the same run as "
        f"{Path(logs[0].location).name}"
    ) in err
    assert "other_pkg/stranger: no report layout is declared for this task" in err
    assert "stranger_CCCCCCCCCCCCCCCCCCCCCC.eval" in err
    md = (out / "report.md").read_text()
    tables = parse_markdown(md)
    assert "other_pkg/stranger (generic table)" in tables
    header, rows = tables["other_pkg/stranger (generic table)"]
    assert "entailment accuracy" in header
    [row] = rows
    assert row[0] == stranger.eval.model
    assert stranger.results is not None
    logged = {
        f"{s.name} {name}": f"{m.value:.4g}"
        for s in stranger.results.scores
        for name, m in s.metrics.items()
    }
    assert {h: c for h, c in zip(header, row, strict=True) if h in logged} == logged
    # the declared tables are all still there, built from the good logs
    assert "Entailment accuracy: retrieval x prompting (90% CI)" in tables
    assert "broken_AAAAAAAAAAAAAAAAAAAAAA.eval" in md


def test_empty_directory_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", str(empty), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert f"{empty}: no Inspect logs (*.eval, *.json) found" in err
    assert "Traceback" not in err


def test_a_progress_bar_while_reading(scripted_logs: tuple[Path, list[EvalLog]]) -> None:
    import io

    from rich.console import Console

    from finmath_tasks.cli.report import read_logs

    log_dir, logs = scripted_logs
    screen = io.StringIO()
    found = read_logs(str(log_dir), Console(file=screen, force_terminal=True, width=100))
    assert len(found.runs) == len(logs) and not found.problems
    assert f"reading {len(logs)} logs" in screen.getvalue()


def test_list_valued_arguments_do_not_break_tables(
    scripted_logs: tuple[Path, list[EvalLog]], tmp_path: Path
) -> None:
    _, logs = scripted_logs
    odd = tmp_path / "odd"
    odd.mkdir()
    log = read_eval_log(logs[3].location)  # sara, mentioned_only / cot
    log.eval.task_args = {**log.eval.task_args, "prompting": ["cot", "few_shot"]}
    write_eval_log(log, str(odd / "2026-01-01T00-00-00-00-00_sara_DDDDDDDDDDDDDDDDDDDDDD.eval"))
    assert main(["report", str(odd), "--out", str(tmp_path / "out")]) == 0
    tables = parse_markdown((tmp_path / "out" / "report.md").read_text())
    header, _ = tables["Entailment accuracy: retrieval x prompting (90% CI)"]
    assert header == ["model", "mentioned_only / ('cot', 'few_shot')"]
