"""``finmath grid knowledgefmath --dry-run`` with ``-T extractor=model``: the answer
extractor's calls on the grader role (1 per sample, up to 4 while it answers None: once
more for financemath, up to 3 times for knowledgefmath2023) are counted and bound what a
scripted run's usage table records."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import eval

from eval_helpers import scripted
from finmath_tasks.cli.cost import cost_lines, declared_cost, run_cost
from finmath_tasks.cli.declare import declarations
from finmath_tasks.cli.prices import Price
from finmath_tasks.cli.report import read_logs
from finmath_tasks.cli.usage import prices_for, usage_tables
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.knowledgefmath.scoring import ANSWER_EXTRACTION

GRADER = "mockllm/grader"
ARGS = {"split": "demo", "solver": "cot", "extractor": "model"}


def test_the_extractor_bound_holds_a_scripted_runs_usage(tmp_path: Path) -> None:
    declaration = declarations()["knowledgefmath"]
    dry = run_cost(declaration, declared_cost(declaration), ARGS, 2, None, grader_role=True)
    assert dry.samples == 2 and dry.grader is not None
    assert dry.grader.calls == (2, 8)  # once per sample, 4 times while it answers None
    first, again = ANSWER_EXTRACTION.max_tokens, ANSWER_EXTRACTION.retry_max_tokens
    assert again is not None and dry.grader.output_high == 2 * (first + 3 * again)
    # sample 1: "None" on all 4 asks (no answer); sample 2: 42 on the first
    replies = ["None", "None", "none.", "NONE", "42"]
    [log] = eval(
        knowledgefmath(**ARGS), model=scripted(["Therefore, the answer is 42."] * 2, "mockllm/gpt-4o"),
        model_roles={"grader": scripted(replies, GRADER)}, limit=2, max_samples=1,
        display="none", log_dir=str(tmp_path / "logs"),
    )  # fmt: skip
    assert log.status == "success" and log.samples is not None
    grader_calls = [
        e for s in log.samples for e in s.events if e.event == "model" and e.role == "grader"
    ]
    assert len(grader_calls) == 5 and dry.grader.calls[0] <= 5 <= dry.grader.calls[1]
    [per_run, _] = usage_tables(read_logs(str(tmp_path / "logs")).runs, prices_for(Price(1, 1)))
    [row] = [r for r in per_run.rows if r[3] == "grader"]
    assert row[2] == GRADER
    measured_input = int(row[4].replace(",", ""))
    measured_output = int(row[8].replace(",", ""))
    assert dry.grader.input[0] <= measured_input <= dry.grader.input[1]
    assert 0 < measured_output <= dry.grader.output_high


def test_only_model_extraction_of_a_text_answer_is_counted() -> None:
    declaration = declarations()["knowledgefmath"]
    cost = declared_cost(declaration)
    assert cost is not None
    for args in ({"split": "demo", "solver": "cot"}, {**ARGS, "solver": "pot"}):
        assert run_cost(declaration, cost, args, 2, None, grader_role=True).grader is None
    # without a grader role the evaluated model extracts: counted at its own price
    lines = cost_lines(declaration, [ARGS], ["openai/gpt-4o"], limit=2)
    [line] = [x for x in lines if "extractor on the grader role" in x]
    assert "openai/gpt-4o (no grader role): 2-8 calls" in line and "$" in line
