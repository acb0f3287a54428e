"""`finmath report`: a run meets only the published cells of its whole setting, every
experiment is kept, every accuracy carries n and an honest interval, and two runs on the
same samples are compared paired (checked against a hand computation)."""

from __future__ import annotations

import csv
import math
import re
import statistics
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessage, ModelOutput, get_model
from inspect_ai.scorer import match

from eval_helpers import scripted
from finmath_tasks.cli.compare import (
    CSV_COMPARISONS,
    CSV_PAIRED,
    compared_args,
    comparisons,
    task_defaults,
    wilson,
)
from finmath_tasks.cli.declare import declarations
from finmath_tasks.cli.main import main
from finmath_tasks.cli.published import (
    ModelNames,
    Published,
    benchmarks_with_published,
    load_published,
)
from finmath_tasks.cli.runs import Run
from finmath_tasks.cli.stats import mcnemar_exact
from finmath_tasks.tasks.knowledgefmath import knowledgefmath

KFM = "finmath_tasks/knowledgefmath"


def _run(task: str, model: str, args: dict[str, Any], **more: Any) -> Run:
    scores = {name: {"accuracy": 0.5} for name in more.pop("scores", ["financemath"])}
    return Run("x.eval", task, model, args, args, 10, "2026-01-01", scores,
               total=10, scored=10, **more)  # fmt: skip


def _met(benchmark: str, run: Run, alias: str, unmatched: list[str] | None = None) -> list[Any]:
    names = ModelNames()
    names.add([f"{run.model}={alias}"])
    return comparisons(declarations()[benchmark], [run], names, unmatched)


# --- three KnowledgeFMATH runs, one per knowledge setting ---------------------------------


@pytest.mark.parametrize("knowledge", ["none", "bm25", "oracle"])
def test_three_knowledgefmath_runs_meet_exactly_the_cells_of_their_setting(knowledge: str) -> None:
    args = {"split": "validation", "solver": "cot", "extractor": "model", "knowledge": knowledge}
    run = _run(KFM, "mockllm/model", args, scores=["financemath", "knowledgefmath2023"])
    unmatched: list[str] = []
    gpt4 = _met("knowledgefmath", run, "GPT4-turbo", unmatched)
    if knowledge == "none":
        # the leaderboard's plain CoT cells (gpt-4-turbo), with the extractor noted
        assert {c.table for c in gpt4} == {
            "yale-nlp/FinanceMath@bdddc58 outputs/results/validation_cot_results.json, "
            "Leaderboard validation CoT"
        }
        official = [c for c in gpt4 if c.metric.startswith("financemath")]
        assert len(official) == 8  # overall and 7 topics
        assert all("the extractor differs (mockllm/model" in c.note for c in official)
        assert not unmatched
    else:
        # no cell of a retrieval setting for this model: none, and the report says so
        assert gpt4 == []
        [line] = unmatched
        assert "no cell of this run's setting" in line
    gpt35 = _met("knowledgefmath", run, "GPT-3.5-1106")
    table5 = [c for c in gpt35 if c.table.endswith("Table 5")]
    assert len(table5) == 1
    assert f"knowledge={knowledge}" in table5[0].setting.split()
    # Table 4 is the paper's test-set CoT without retrieval: only the knowledge=none run
    table4 = [c for c in gpt35 if c.table.endswith("Table 4")]
    assert bool(table4) is (knowledge == "none")


def test_the_default_run_meets_the_leaderboard_cot_cells_with_the_extractor_named() -> None:
    run = _run(KFM, "mockllm/model", {"split": "validation"})
    found = _met("knowledgefmath", run, "GPT4-turbo")
    assert found and all(c.table.endswith("Leaderboard validation CoT") for c in found)
    assert all("extractor=rules here, model in the published setting" in c.note for c in found)
    assert all("recorded verdict on 7,862 of 8,000" in c.note for c in found)


def _filled(cell: Published, keys: list[str], defaults: dict[str, Any]) -> dict[str, str]:
    setting = dict(cell.setting or {})
    return {k: str(setting.get(k, defaults.get(k))).lower() for k in keys if k != "split"}


@pytest.mark.slow
@pytest.mark.parametrize("benchmark", benchmarks_with_published())
def test_a_run_of_each_published_setting_meets_exactly_the_cells_of_that_setting(
    benchmark: str,
) -> None:
    """For every (model, setting) a benchmark publishes: a run with exactly that setting
    (the paper's generation settings set) meets that setting's cells and no other's."""
    declaration = declarations()[benchmark]
    defaults = task_defaults(declaration)
    keys = compared_args(declaration, defaults)
    cells = [c for c in load_published(benchmark) if c.setting is not None]
    settings = {(c.model, c.setting_text()): c for c in cells}
    assert settings
    for (model, _), cell in settings.items():
        assert cell.setting is not None
        generation = cell.generation or {}
        run = _run(f"finmath_tasks/{benchmark}", "mockllm/x", dict(cell.setting),
                   generation=dict(generation), scores=[c.score for c in cells])  # fmt: skip
        names = ModelNames(aliases={"mockllm/x": model})
        met = comparisons(declaration, [run], names)
        wanted = _filled(cell, keys, defaults)
        same = [c for c in cells if c.model == model and c.setting_text() == cell.setting_text()]
        assert {(c.table, c.metric) for c in met} >= {
            (f"{c.paper}, {c.table}", f"{c.score} {c.metric}" + (f" [{c.group_text()}]"
                                                                  if c.group else ""))
            for c in same
        }, (benchmark, model, cell.setting_text())  # fmt: skip
        by_key = {(f"{c.paper}, {c.table}", c.setting_text()): c for c in cells}
        for row in met:
            other = by_key[(row.table, row.setting)]
            assert _filled(other, keys, defaults) == wanted, (cell.setting_text(), row.setting)


def test_another_temperature_than_the_papers_meets_no_cell_and_epochs_are_noted() -> None:
    args = {"split": "validation", "solver": "cot", "extractor": "model", "knowledge": "oracle"}
    stated = {"temperature": 1.0, "top_p": 1.0, "max_tokens": 512}
    same = _run(KFM, "mockllm/m", args, generation=stated, scores=["knowledgefmath2023"])
    [cell] = _met("knowledgefmath", same, "GPT-3.5-1106")
    assert "the source sets" not in cell.note
    colder = _run(KFM, "mockllm/m", args, generation={**stated, "temperature": 0.0},
                  scores=["knowledgefmath2023"])  # fmt: skip
    assert _met("knowledgefmath", colder, "GPT-3.5-1106") == []
    three = _run(KFM, "mockllm/m", args, generation=stated, epochs=3, scores=["knowledgefmath2023"])
    [cell] = _met("knowledgefmath", three, "GPT-3.5-1106")
    assert "mean over 3 epochs" in cell.note


def test_mathhay_without_its_judge_says_so_beside_the_judged_cells() -> None:
    args = {"release": "v1", "subset": "verified", "length": 32000, "judge": False}
    run = _run("finmath_tasks/mathhay", "mockllm/m", args, generation={"temperature": 0},
               scores=["mathhay"])  # fmt: skip
    found = _met("mathhay", run, "GPT-4o")
    assert found and all("scored by exact match only (judge=False)" in c.note for c in found)
    assert all("the judge differs" not in c.note for c in found)  # no judge asked


@pytest.mark.parametrize(
    ("roles", "judge"),
    [({}, "mockllm/m"), ({"grader": "openai/gpt-4o-mini"}, "openai/gpt-4o-mini"),
     ({"grader": "openai/gpt-4o-2024-08-06"}, None)],
)  # fmt: skip
def test_mathhay_judged_by_another_model_than_gpt4o_says_so(
    roles: dict[str, str], judge: str | None
) -> None:
    """Without a grader role the evaluated model judges: the note names it, as it names
    any judge that is not the paper's GPT-4o."""
    args = {"release": "v1", "subset": "verified", "length": 32000}
    run = _run("finmath_tasks/mathhay", "mockllm/m", args, generation={"temperature": 0},
               scores=["mathhay"], roles=roles)  # fmt: skip
    found = _met("mathhay", run, "GPT-4o")
    assert found and all("exact match only" not in c.note for c in found)
    differs = f"the judge differs ({judge}; the paper's: GPT-4o)"
    assert all((differs in c.note) == (judge is not None) for c in found)
    assert all(("the judge differs" in c.note) == (judge is not None) for c in found)


def test_the_flip_analysis_table_is_compared_with_the_tasks_flip_shares() -> None:
    args = {"split": "dev", "subset": "arithmetic", "solver": "critic"}
    run = _run("finmath_tasks/tatqa", "mockllm/m", args, scores=[])
    run.scores = {
        "minor_change": {"share_c_to_w": 0.5, "share_w_to_c": 0.75},
        "major_change": {"share_c_to_w": 0.5, "share_w_to_c": 0.25},
    }
    found = [c for c in _met("tatqa", run, "GPT4-turbo") if c.table.endswith("Table 3")]
    by_metric = {c.metric: c for c in found}
    assert set(by_metric) == {
        "minor_change share_c_to_w", "major_change share_c_to_w",
        "minor_change share_w_to_c", "major_change share_w_to_c",
    }  # fmt: skip
    # GPT4-turbo, critic, TAT-QA: 44.4 % of its correct-to-wrong flips were minor
    cell = by_metric["minor_change share_c_to_w"]
    assert cell.published == pytest.approx(0.444) and cell.ours == 0.5
    assert cell.difference == pytest.approx(0.5 - 0.444)


def test_a_default_mathhay_run_meets_the_cells_of_its_release_s_first_subset() -> None:
    run = _run("finmath_tasks/mathhay", "mockllm/m", {}, generation={"temperature": 0},
               scores=["mathhay"])  # fmt: skip
    found = _met("mathhay", run, "GPT-4o")
    assert found and {c.setting for c in found} == {
        "release=v1 subset=verified+unverified length=32000"
    }


# --- intervals at the boundary ------------------------------------------------------------


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 10), (10, 10), (2, 2), (1, 2)])
def test_no_interval_of_0_of_n_or_n_of_n_has_zero_width(k: int, n: int) -> None:
    bounds = wilson(k / n, n, 0.95)
    assert bounds is not None
    low, high = bounds
    assert 0.0 <= low <= k / n <= high <= 1.0 and high - low > 0.1


# --- real runs: experiments kept, CSVs, paired differences ------------------------------------

ANSWER = re.compile(r"the answer is (\S+?)\.(?:\s|$)")


def _kfm_models(grader: str) -> tuple[Any, Any]:
    """A solver right on two questions in three of the demo split, an extractor reading its
    final number."""

    def solve(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        import json
        from importlib.resources import files

        demo = json.loads(
            files("finmath_tasks.tasks.knowledgefmath").joinpath("data/demo.json").read_text()
        )
        text = "\n".join(m.text for m in messages)
        i, record = max(
            ((i, r) for i, r in enumerate(demo) if r["question"] in text),
            key=lambda p: len(p[1]["question"]),
        )
        gold = float(record["ground_truth"])
        answer = gold if i % 3 else gold * 3 + 7
        return ModelOutput.from_content("mockllm/gpt-4o", f"So the answer is {answer!r}.")

    def extract(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        found = ANSWER.findall("\n".join(m.text for m in messages))
        return ModelOutput.from_content(grader, found[-1] if found else "None")

    return (
        get_model("mockllm/gpt-4o", custom_outputs=solve),
        get_model(grader, custom_outputs=extract),
    )


@pytest.fixture(scope="module")
def four_experiments(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four knowledgefmath demo runs differing only in grader, temperature or epochs."""
    root = tmp_path_factory.mktemp("experiments")
    logs = root / "logs"

    def run(grader: str, **kwargs: Any) -> None:
        solver, extractor = _kfm_models(grader)
        [log] = eval(
            knowledgefmath(split="demo", solver="cot", extractor="model"),
            model=solver, model_roles={"grader": extractor}, log_dir=str(logs),
            display="none", **kwargs,
        )  # fmt: skip
        assert log.status == "success", log.error

    run("mockllm/gpt-4o-mini")
    run("mockllm/gpt-3.5-turbo-1106")
    run("mockllm/gpt-4o-mini", temperature=0.5)
    run("mockllm/gpt-4o-mini", epochs=2)
    out = root / "report"
    assert main(["report", str(logs), "--out", str(out), "--no-plots"]) == 0
    return out


@pytest.mark.slow
def test_logs_differing_only_in_grader_temperature_or_epochs_all_appear(
    four_experiments: Path,
) -> None:
    md = (four_experiments / "report.md").read_text()
    for label in ("grader=mockllm/gpt-3.5-turbo-1106", "grader=mockllm/gpt-4o-mini",
                  "temperature=0.5", "epochs=2"):  # fmt: skip
        assert label in md, label
    with (four_experiments / "comparisons.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == CSV_COMPARISONS
    # the run at temperature 0.5 meets no cell: the paper and the leaderboard state 1.0;
    # the report says so beside the table
    assert len({r["log"] for r in rows}) == 3
    assert "under other settings only" in md
    for row in rows:
        assert row["n_published"], row
        if row["ours"] and "[" not in row["metric"]:
            assert row["n"] == "15", row  # the demo split's questions (epochs averaged)
        elif row["ours"]:
            assert 0 < int(row["n"]) < 15, row  # a topic's questions
        for key in ("published", "ours", "ci_low", "ci_high"):
            if row[key]:
                assert 0.0 <= float(row[key]) <= 1.0, row
        assert re.search(r"published on (validation|test), run on demo", row["note"]), row
    assert any("mean over 2 epochs" in r["note"] for r in rows)
    with (four_experiments / "paired.csv").open() as f:
        paired = list(csv.DictReader(f))
    assert list(paired[0]) == CSV_PAIRED
    # every two of the four runs, on the 15 demo questions, for each official score
    assert {(r["log_a"], r["log_b"]) for r in paired} and all(r["n"] == "15" for r in paired)
    assert len({frozenset((r["log_a"], r["log_b"])) for r in paired}) == 6


def test_paired_difference_stderr_and_mcnemar_match_a_hand_computation(tmp_path: Path) -> None:
    """Two runs on the same 20 samples with known verdicts."""
    targets = [str(i % 7) for i in range(20)]
    right_a = {i for i in range(20) if i % 4 != 0}  # 15 right
    right_b = {i for i in range(20) if i % 2 == 0 or i in (1, 3)}  # 12 right
    task = Task(
        dataset=[Sample(id=str(i), input=f"q{i}", target=t) for i, t in enumerate(targets)],
        scorer=match(),
        name="paired_demo",
    )
    logs = tmp_path / "logs"
    for name, right in (("mockllm/a", right_a), ("mockllm/b", right_b)):
        answers = [t if i in right else "x" for i, t in enumerate(targets)]
        [log] = eval(task, model=scripted(answers, name), log_dir=str(logs), display="none",
                     max_samples=1)  # fmt: skip
        assert log.status == "success"
    out = tmp_path / "out"
    assert main(["report", str(logs), "--out", str(out), "--no-plots"]) == 0
    with (out / "paired.csv").open() as f:
        [row] = list(csv.DictReader(f))
    a = [1.0 if i in right_a else 0.0 for i in range(20)]
    b = [1.0 if i in right_b else 0.0 for i in range(20)]
    # the pair's order is the runs' order (task, model): a is mockllm/a
    assert float(row["a"]) == pytest.approx(0.75) and float(row["b"]) == pytest.approx(0.6)
    d = [x - y for x, y in zip(a, b, strict=True)]
    difference = statistics.mean(d)
    stderr = statistics.stdev(d) / math.sqrt(len(d))
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x == 1 and y == 0)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if x == 0 and y == 1)
    m = only_a + only_b
    p = min(1.0, 2 * sum(math.comb(m, i) for i in range(min(only_a, only_b) + 1)) / 2**m)
    assert row["n"] == "20"
    assert float(row["difference"]) == pytest.approx(difference, abs=1e-5)
    assert float(row["stderr"]) == pytest.approx(stderr, abs=1e-5)
    assert float(row["ci_low"]) == pytest.approx(difference - 1.959964 * stderr, abs=1e-5)
    assert float(row["ci_high"]) == pytest.approx(difference + 1.959964 * stderr, abs=1e-5)
    assert float(row["p_mcnemar"]) == pytest.approx(p, rel=1e-5)
    assert (only_a, only_b) == (8, 5) and p == pytest.approx(mcnemar_exact(8, 5))


@pytest.mark.parametrize(
    ("solver", "split", "table"),
    [("critic", "dev", "Table 1"), ("rag_cot", "test", "Table 2")],
)
def test_an_old_finqa_log_without_a_split_is_read_with_the_split_it_ran(
    solver: str, split: str, table: str
) -> None:
    """FinQA logs of 1.1.0 to 3.0.0 record split=None (the agent solvers then read dev,
    rag_cot test); today's default is test for every solver. Such a log meets the cells
    of the split it ran, with no split note, as a log that records the split does."""
    scores = ["rounding", "execution_accuracy", "tolerant"]
    old = _run("finmath_tasks/finqa", "mockllm/m", {"split": None, "solver": solver},
               scores=scores)  # fmt: skip
    new = _run("finmath_tasks/finqa", "mockllm/m", {"split": split, "solver": solver},
               scores=scores)  # fmt: skip
    alias = "GPT4-turbo" if solver == "critic" else "GPT-3"
    found = _met("finqa", old, alias)
    assert found and any(c.table.endswith(table) for c in found)
    assert not any("published on" in c.note for c in found)
    assert [(c.table, c.metric, c.note) for c in found] == [
        (c.table, c.metric, c.note) for c in _met("finqa", new, alias)
    ]
    if solver == "critic":  # today a critic run without -T split reads test: noted
        today = _met("finqa", _run("finmath_tasks/finqa", "mockllm/m",
                                   {"split": "test", "solver": solver}, scores=scores), alias)  # fmt: skip
        assert today and all("published on dev, run on test" in c.note for c in today)
