"""The financial-agents paper's settings, pinned: a change to one of them
must be a deliberate change of this test and of the audit table in the README."""

from __future__ import annotations

import inspect
from pathlib import Path

from tatqa_fixtures import DOCUMENT, write_split

from agents_paper_published import TABLE1
from finmath_tasks.cli.agents_report import TABLE1_AGENTS
from finmath_tasks.tasks.finqa.grid import GRID as FINQA_GRID
from finmath_tasks.tasks.finqa.task import AGENT_SPLIT, PAPER_DEV_QUESTIONS, finqa
from finmath_tasks.tasks.finqa.task import GENERATE_CONFIG as FINQA_CONFIG
from finmath_tasks.tasks.tatqa.dataset import PAPER_DEV_NUMERICAL_QUESTIONS
from finmath_tasks.tasks.tatqa.grid import GRID as TATQA_GRID
from finmath_tasks.tasks.tatqa.task import GENERATE_CONFIG, tatqa


def test_the_papers_counts() -> None:
    # appendix B: 717 numerical TAT-QA dev questions, 883 FinQA dev questions
    assert PAPER_DEV_NUMERICAL_QUESTIONS == 717
    assert PAPER_DEV_QUESTIONS == 883


def test_greedy_decoding_as_the_paper_for_consistent_results() -> None:
    assert GENERATE_CONFIG.temperature == 0.0
    assert FINQA_CONFIG.temperature == 0.0


def test_tatqa_defaults_are_the_papers_dev_numerical_questions(tmp_path: Path) -> None:
    defaults = {
        name: p.default
        for name, p in inspect.signature(tatqa.__wrapped__).parameters.items()  # type: ignore[attr-defined]
    }
    assert defaults["split"] == "dev" and defaults["subset"] == "arithmetic"
    write_split(tmp_path, [DOCUMENT])
    task = tatqa(data_dir=str(tmp_path))
    assert task.metadata is not None
    assert (task.metadata["split"], task.metadata["subset"]) == ("dev", "arithmetic")
    assert task.config.temperature == 0.0


def test_finqa_defaults_to_test_for_every_solver_and_its_agent_runs_ask_for_dev() -> None:
    assert AGENT_SPLIT == "dev"
    assert inspect.signature(finqa.__wrapped__).parameters["split"].default == "test"  # type: ignore[attr-defined]
    agent_runs = [r for r in FINQA_GRID.arg_sets() if r["solver"] != "rag_cot"]
    assert agent_runs and all(r["split"] == AGENT_SPLIT for r in agent_runs)


def test_table_1_approaches_are_the_grids_runs_on_the_papers_split() -> None:
    assert set(TABLE1_AGENTS) == set(TABLE1.values())
    tatqa_runs = TATQA_GRID.arg_sets()
    finqa_runs = FINQA_GRID.arg_sets()
    for solver in TABLE1.values():
        assert {"split": "dev", "subset": "arithmetic", "solver": solver} in tatqa_runs
        assert {"split": "dev", "solver": solver} in finqa_runs
