"""``finmath grid mathhay --dry-run``: the judge's calls on the grader role are counted
(0 up to one per sample), and bound what a scripted run's usage table records; the
reconstructed pool's warning comes once per file, and only for a pool that lacks entries."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from mathhay_fixtures import RELEASE, write_release

from eval_helpers import scripted
from finmath_tasks.cli.cost import cost_lines, declared_cost, run_cost
from finmath_tasks.cli.declare import declarations
from finmath_tasks.cli.prices import Price
from finmath_tasks.cli.report import read_logs
from finmath_tasks.cli.usage import EVALUATED, prices_for, usage_tables
from finmath_tasks.scorers.judge import JUDGE_MAX_TOKENS
from finmath_tasks.tasks.mathhay.dataset import load_pool
from finmath_tasks.tasks.mathhay.task import in_files_order, mathhay

GRADER = "mockllm/grader"


def fenced(answer: Any) -> str:
    body = json.dumps({"reasoning": "120 - 80 = 40 million dollars", "answer": answer})
    return f"My work.\n```json\n{body}\n```"


def count(text: str) -> int:
    return int(text.replace(",", ""))


def test_the_judge_bound_holds_a_scripted_runs_usage(tmp_path: Path) -> None:
    write_release(tmp_path)
    args = {"data_dir": str(tmp_path), "release": RELEASE, "subset": "full",
            "task_type": "sssd", "length": 1200}  # fmt: skip
    declaration = declarations()["mathhay"]
    dry = run_cost(declaration, declared_cost(declaration), args, None, None, grader_role=True)
    assert dry.samples == 2 and dry.grader is not None
    assert dry.grader.calls == (0, 2)  # 0 up to one per sample
    assert dry.grader.output_high == 2 * JUDGE_MAX_TOKENS
    # sample 1 answers its gold (40) exactly: no judge; sample 2 (gold 100) does not
    [log] = eval(
        in_files_order(mathhay(**args)),
        model=scripted([fenced(40), fenced(99)], "mockllm/gpt-4o"),
        model_roles={"grader": scripted(['{"reasoning": "differ", "output": "No"}'], GRADER)},
        max_samples=1, display="none", log_dir=str(tmp_path / "logs"),
    )  # fmt: skip
    assert log.status == "success" and log.samples is not None
    judged = [s for s in log.samples if s.scores["mathhay"].metadata["judge"] == "no"]
    assert len(judged) == 1  # one call, within 0..2
    [per_run, _] = usage_tables(read_logs(str(tmp_path / "logs")).runs, prices_for(Price(1, 1)))
    [grader_row] = [r for r in per_run.rows if r[3] == "grader"]
    assert grader_row[2] == GRADER
    measured_input, measured_output = count(grader_row[4]), count(grader_row[8])
    assert 0 < measured_input <= dry.grader.input[1]
    # the one call's prompt is at least its part without the model's reply
    [one] = declared_cost(declaration).grader(args, 1024, True).loads[1:2]  # type: ignore[union-attr]
    assert one.input_high - 1024 - 2 <= measured_input <= one.input_high
    assert 0 < measured_output <= dry.grader.output_high
    assert [r for r in per_run.rows if r[3] == EVALUATED]  # the evaluated model apart


def test_the_dry_run_prints_the_judge_line_at_the_graders_price(tmp_path: Path) -> None:
    write_release(tmp_path)
    # the fixture's task types (task_type=all would need all seven files)
    args = {"data_dir": str(tmp_path), "release": RELEASE, "subset": "full", "length": 1200,
            "task_type": ["sssd", "ss2d"]}  # fmt: skip
    declaration = declarations()["mathhay"]
    lines = cost_lines(declaration, [args], ["openai/gpt-4o-mini"], grader="openai/gpt-4o")
    [judge] = [x for x in lines if "judge on the grader role" in x]
    assert "openai/gpt-4o: 0-3 calls" in judge and "asked when the exact match fails" in judge
    assert "judge calls not counted" not in "\n".join(lines)
    [total] = [x for x in lines if x.startswith("  grader total")]
    assert "openai/gpt-4o, built-in gpt-4o" in total and "0-3 calls" in total
    # without a grader role the evaluated model judges: the same calls, at its price
    lines = cost_lines(declaration, [args], ["openai/gpt-4o-mini"])
    [judge] = [x for x in lines if "judge on the grader role" in x]
    assert "openai/gpt-4o-mini (no grader role): 0-3 calls" in judge
    # -T judge=false: the verdict asks no model
    lines = cost_lines(declaration, [{**args, "judge": False}], ["openai/gpt-4o-mini"])
    assert not [x for x in lines if "grader" in x]


def write_reconstructed(folder: Path, size: int, present: list[int]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "documents_reconstructed.json").write_text(json.dumps({
        "pool_size_inferred": size,
        "documents": [{"index": i, "Document": f"doc {i}"} for i in present],
    }))  # fmt: skip


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "reconstructed pool" in r.getMessage()]


def test_an_incomplete_pool_is_warned_about_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    write_reconstructed(tmp_path / "a", 5, [0, 2, 4])
    write_reconstructed(tmp_path / "b", 4, [0, 1, 2, 3])  # complete: nothing to say
    for _ in range(3):  # a grid reads the pool once per run
        assert load_pool(tmp_path / "a")[3] == 2
        assert load_pool(tmp_path / "b")[3] == 0
    [message] = warnings(caplog)
    assert "2 of 5 entries are missing" in message and str(tmp_path / "a") in message


def test_the_order_parameters_of_3_1_0_are_refused_naming_what_replaces_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from finmath_tasks.cli.main import main

    base = ["grid", "mathhay", "--model", "mockllm/a", "--dry-run"]
    assert main([*base, "-T", "in_flight=1"]) == 2
    err = capsys.readouterr().err
    assert "-T in_flight: not a parameter of finmath_tasks/mathhay" in err
    assert "in_flight: the prefix order is spaced for 10 requests in flight" in err
    assert main([*base, "--only", "order=dataset"]) == 2
    err = capsys.readouterr().err
    assert "order: the samples always go in prefix order; Inspect's --sample-shuffle" in err
