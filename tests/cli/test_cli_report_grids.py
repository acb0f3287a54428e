"""``finmath report`` on real logs of the FinQA, TAT-QA and MathHay grids (scripted models).

Every number of every declared table, the flip counts included, is checked against the
logs' own metrics; MathHay's line plot and depth heatmap are read back.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai.log import EvalLog, read_eval_log
from PIL import Image

from cli.report_check import check_table, parse_markdown
from cli.test_cli_report import SCRIPTED
from finmath_tasks.cli.declare import declarations
from finmath_tasks.cli.main import main

GRID_BENCHMARKS = {"finqa": "agent_logs", "tatqa": "agent_logs", "mathhay": "mathhay_logs"}


def test_every_declaration_has_a_report_test() -> None:
    assert set(declarations()) == SCRIPTED | set(GRID_BENCHMARKS)


@pytest.fixture(scope="module")
def reports(
    agent_logs: tuple[Path, list[EvalLog]],
    mathhay_logs: tuple[Path, list[EvalLog]],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[Path, list[EvalLog]]]:
    """Fixture name -> (report directory, logs read with their samples)."""
    out: dict[str, tuple[Path, list[EvalLog]]] = {}
    for name, (log_dir, logs) in (("agent_logs", agent_logs), ("mathhay_logs", mathhay_logs)):
        report = tmp_path_factory.mktemp(name)
        assert main(["report", str(log_dir), "--out", str(report)]) == 0
        out[name] = (report, [read_eval_log(log.location) for log in logs])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("benchmark", sorted(GRID_BENCHMARKS))
def test_every_number_in_the_tables_matches_the_logs(
    reports: dict[str, tuple[Path, list[EvalLog]]], benchmark: str
) -> None:
    report_dir, logs = reports[GRID_BENCHMARKS[benchmark]]
    declaration = declarations()[benchmark]
    tables = parse_markdown((report_dir / "report.md").read_text())
    checked = 0
    for table in declaration.report.tables:
        assert table.title in tables, f"table {table.title!r} is missing"
        header, rows = tables[table.title]
        assert {row[0] for row in rows} == {"mockllm/alpha", "mockllm/beta"}, table.title
        checked += check_table(declaration, table, header, rows, logs)
    assert checked >= {"finqa": 150, "tatqa": 40, "mathhay": 48}[benchmark], checked


def test_titles_are_unique_in_a_report() -> None:
    titles = [t.title for d in declarations().values() for t in d.report.tables]
    assert len(titles) == len(set(titles))


def test_agent_tables_are_shaped_like_the_paper(
    reports: dict[str, tuple[Path, list[EvalLog]]],
) -> None:
    report_dir, _ = reports["agent_logs"]
    md = (report_dir / "report.md").read_text()
    tables = parse_markdown(md)
    header, rows = tables["Execution accuracy by retrieval (rag_cot, official FinQA)"]
    assert header == ["model", "none", "bm25", "gold"]  # the grid's order
    header, _ = tables["FinQA agent configurations: rounding accuracy (Table 1)"]
    assert header == ["model", "cot", "critic"]  # critic_oracle is apart
    header, _ = tables["FinQA critic_oracle, USES GOLD LABELS: rounding accuracy"]
    assert header == ["model", "critic_oracle"]
    header, rows = tables["FinQA agent configurations: flips from the first to the final answer"]
    assert header == [
        "model",
        "solver",
        "first answer right % (rounding)",
        "correct→wrong",
        "wrong→correct",
        "minor change",
        "major change",
    ]
    # the scripted flips (grid_logs.FINQA_CRITIC): minor/major for flips only
    assert ["mockllm/alpha", "critic", "50.0", "1", "2", "2", "1"] in rows
    assert ["mockllm/beta", "critic", "75.0", "1", "0", "1", "0"] in rows
    header, rows = tables["FinQA change analysis of the flips (Table 3)"]
    assert header == [
        "model",
        "solver",
        "CW flips",
        "CW minor %",
        "CW major %",
        "WC flips",
        "WC minor %",
        "WC major %",
    ]
    assert ["mockllm/alpha", "critic", "1", "100.0", "0.0", "2", "50.0", "50.0"] in rows
    assert ["mockllm/beta", "critic", "1", "100.0", "0.0", "0", "–", "–"] in rows
    header, _ = tables[
        "FinQA agent configurations: rounding accuracy by integer vs float gold answer"
    ]
    assert header == ["model", "solver", "float", "integer", "text"]


def test_mathhay_tables_and_plots(reports: dict[str, tuple[Path, list[EvalLog]]]) -> None:
    report_dir, _ = reports["mathhay_logs"]
    tables = parse_markdown((report_dir / "report.md").read_text())
    header, rows = tables["MathHay Table 3: overall accuracy (official verdict) by set x length"]
    assert header == ["model", "subset", "400", "800"]
    assert [r[:2] for r in rows] == [["mockllm/alpha", "verified"], ["mockllm/beta", "verified"]]
    header, rows = tables["MathHay Table 3: accuracy (official verdict) by category"]
    assert header == ["model", "subset", "length", "SSSD"]
    header, rows = tables["Figure 4: accuracy (official verdict) by placement depth x length"]
    assert header == ["model", "task_type", "placement", "400", "800"]
    assert [r[2] for r in rows] == ["p1", "p9", "p1", "p9"]
    header, rows = tables[
        "MathHay judge and answer flags (samples; judge failures count as incorrect)"
    ]
    assert header[-2:] == ["over length", "length too short"]
    for name in ("mathhay_accuracy_by_length.png", "mathhay_depth_x_length.png"):
        with Image.open(report_dir / name) as image:
            assert image.format == "PNG"
            width, height = image.size
            assert width >= 400 and height >= 300, name
            colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
            assert colours is not None and len(colours) > 20, name
            assert max(count for count, _ in colours) < 0.97 * width * height, name
