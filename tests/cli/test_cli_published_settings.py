"""A published cell states its whole setting as data (generation settings, grader, data,
n), and a run meets it only where every stated part is the run's: another temperature
than a source states meets none of its cells; a setting the source leaves unstated is
noted where the run's differs from the task's default; a run on data other than the
authors' pinned files meets no cell; and the smaller rules of each benchmark's cells."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from inspect_ai.log import read_eval_log

from eval_helpers import scripted
from finmath_tasks.cli.compare import comparisons
from finmath_tasks.cli.declare import declarations
from finmath_tasks.cli.provenance import data_section, upstream_blobs, upstreamness
from finmath_tasks.cli.published import (
    ModelNames,
    Published,
    benchmarks_with_published,
    load_published,
)
from finmath_tasks.cli.reading import run_of
from finmath_tasks.cli.runs import Run

BENCHMARKS = benchmarks_with_published()
"""Every benchmark that declares published numbers (the sources read for stated settings)."""


def _run(task: str, model: str, args: dict[str, Any], **more: Any) -> Run:
    scores = {name: {"accuracy": 0.5} for name in more.pop("scores", [])}
    scored = more.pop("scored", 10)
    return Run("x.eval", task, model, args, args, scored, "2026-01-01", scores,
               total=scored, scored=scored, **more)  # fmt: skip


def _met(benchmark: str, run: Run, alias: str, unmatched: list[str] | None = None) -> list[Any]:
    names = ModelNames()
    names.add([f"{run.model}={alias}"])
    return comparisons(declarations()[benchmark], [run], names, unmatched)


def _stated_sources() -> list[tuple[str, str, Published]]:
    """(benchmark, source, a reproducible cell of it) for every source stating a temperature."""
    found: dict[tuple[str, str], Published] = {}
    for benchmark in BENCHMARKS:
        for cell in load_published(benchmark):
            if cell.setting is not None and "temperature" in (cell.generation or {}):
                found.setdefault((benchmark, cell.paper), cell)
    return [(b, p, c) for (b, p), c in found.items()]


SOURCES = _stated_sources()


def test_every_source_that_states_its_generation_settings_is_tested() -> None:
    papers = {(b, p.split("/", 1)[0]) for b, p, _ in SOURCES}
    assert {
        ("knowledgefmath", "knowledgefmath.txt"),  # appendix B.1
        ("knowledgefmath", "yale-nlp"),  # the leaderboard: run_llm.py at bdddc58
        ("finqa", "financial-agents.txt"),
        ("tatqa", "financial-agents.txt"),
        ("mathhay", "mathhay.txt"),
    } <= papers
    stated = {p: dict(c.generation or {}) for _, p, c in SOURCES}
    assert stated["knowledgefmath.txt"] == {
        "temperature": "1.0", "top_p": "1.0", "max_tokens": "512"
    }  # fmt: skip
    leaderboard = [g for p, g in stated.items() if p.startswith("yale-nlp/FinanceMath@bdddc58")]
    assert leaderboard and all(
        g == {"temperature": "1.0", "top_p": "1.0", "max_tokens": "512"} for g in leaderboard
    )
    assert stated["financial-agents.txt"] == {"temperature": "0"}
    assert stated["mathhay.txt"] == {"temperature": "0"}


@pytest.mark.parametrize(
    ("benchmark", "paper", "cell"), SOURCES, ids=[f"{b}-{p}" for b, p, _ in SOURCES]
)
def test_a_run_at_another_temperature_meets_none_of_a_sources_cells(
    benchmark: str, paper: str, cell: Published
) -> None:
    assert cell.setting is not None and cell.generation is not None
    scores = sorted({c.score for c in load_published(benchmark)})
    stated = {k: float(v) for k, v in cell.generation.items()}
    task = f"finmath_tasks/{benchmark}"
    at = _run(task, "mockllm/x", dict(cell.setting), generation=stated, scores=scores)
    met = [c for c in _met(benchmark, at, cell.model) if c.table.startswith(f"{paper}, ")]
    assert met, (paper, cell.setting_text())
    assert not any("left it to the provider" in c.note for c in met)
    other = {**stated, "temperature": stated["temperature"] + 0.5}
    off = _run(task, "mockllm/x", dict(cell.setting), generation=other, scores=scores)
    unmatched: list[str] = []
    assert [c for c in _met(benchmark, off, cell.model, unmatched)
            if c.table.startswith(f"{paper}, ")] == []  # fmt: skip
    # every source of these models states the temperature: no cell at all, and said so
    assert _met(benchmark, off, cell.model) == []
    assert unmatched and "under other settings only" in unmatched[0]


def test_a_setting_the_source_leaves_unstated_is_noted_where_it_differs_from_the_default() -> None:
    args = {"split": "test", "kind": "entailment", "retrieval": "mentioned_only",
            "prompting": "cot"}  # fmt: skip
    # SARA's paper states no generation settings; the task sets none (the provider's)
    hot = _run("finmath_tasks/sara", "mockllm/x", args, generation={"temperature": 0.7},
               scores=["entailment"])  # fmt: skip
    [cell] = _met("sara", hot, "GPT-3")[:1]
    assert (
        "temperature=0.7 (the task's default: the provider's): a setting the source does "
        "not state" in cell.note
    )
    plain = _run("finmath_tasks/sara", "mockllm/x", args, scores=["entailment"])
    assert all("does not state" not in c.note for c in _met("sara", plain, "GPT-3"))
    # MathHay's paper states the temperature only: another max_tokens than the task's is noted
    args = {"release": "v1", "subset": "verified", "length": 32000}
    longer = _run("finmath_tasks/mathhay", "mockllm/x", args,
                  generation={"temperature": 0, "max_tokens": 4096}, scores=["mathhay"])  # fmt: skip
    found = _met("mathhay", longer, "GPT-4o")
    assert found and all("max_tokens=4096 (the task's default: 1024)" in c.note for c in found)
    default = _run("finmath_tasks/mathhay", "mockllm/x", args,
                   generation={"temperature": 0, "max_tokens": 1024}, scores=["mathhay"])  # fmt: skip
    assert all("does not state" not in c.note for c in _met("mathhay", default, "GPT-4o"))


@pytest.mark.parametrize(("benchmark", "args", "n"), [
    ("tatqa", {"split": "dev", "subset": "arithmetic", "solver": "cot"}, 717),
    ("finqa", {"split": "dev", "solver": "cot"}, 883),
])  # fmt: skip
def test_a_small_run_beside_the_agents_papers_cells_is_noted(
    benchmark: str, args: dict[str, str], n: int
) -> None:
    run = _run(f"finmath_tasks/{benchmark}", "mockllm/x", args, generation={"temperature": 0},
               scores=["rounding"], scored=6)  # fmt: skip
    found = [c for c in _met(benchmark, run, "llama3-70B") if c.table.endswith("Table 1")]
    assert found and all(c.n_published == n for c in found)
    assert all(f"small run: 6 of the {n} questions published" in c.note for c in found)


def test_a_chat_model_does_not_meet_the_base_models_sara_row() -> None:
    known = [c.model for c in load_published("sara")]
    names = ModelNames()
    assert names.paper_names("together/meta-llama/Llama-2-70b-chat-hf", known) == []
    assert names.paper_names("vllm/meta-llama/Llama-2-70b-hf", known) == ["LLaMA2-70B"]
    assert names.paper_names("vllm/meta-llama/Llama-2-13b-chat-hf", known) == ["LLaMA2-13B_chat"]
    args = {"split": "test", "kind": "entailment", "retrieval": "mentioned_only",
            "prompting": "cot"}  # fmt: skip
    chat = _run("finmath_tasks/sara", "together/meta-llama/Llama-2-70b-chat-hf", args,
                scores=["entailment"])  # fmt: skip
    assert comparisons(declarations()["sara"], [chat], ModelNames()) == []


def test_a_run_graded_by_the_evaluated_model_itself_is_noted_as_such() -> None:
    args = {"release": "v1", "subset": "verified", "length": 32000}
    own = _run("finmath_tasks/mathhay", "mockllm/m", args, generation={"temperature": 0},
               scores=["mathhay"])  # fmt: skip
    found = _met("mathhay", own, "GPT-4o")
    assert found and all("graded by the evaluated model itself" in c.note for c in found)
    other = _run("finmath_tasks/mathhay", "mockllm/m", args, generation={"temperature": 0},
                 scores=["mathhay"], roles={"grader": "openai/gpt-4o-mini"})  # fmt: skip
    found = _met("mathhay", other, "GPT-4o")
    assert found and all("the judge differs (openai/gpt-4o-mini" in c.note for c in found)
    assert all("itself" not in c.note for c in found)


def test_the_rules_agreement_measured_for_financemath_is_not_said_beside_2023_cells() -> None:
    generation = {"temperature": 1.0, "top_p": 1.0, "max_tokens": 512}
    run = _run("finmath_tasks/knowledgefmath", "mockllm/m", {"split": "validation"},
               generation=generation, scores=["financemath", "knowledgefmath2023"])  # fmt: skip
    leaderboard = _met("knowledgefmath", run, "GPT4-turbo")
    assert leaderboard and all("7,862 of 8,000" in c.note for c in leaderboard)
    paper = [c for c in _met("knowledgefmath", run, "GPT-3.5-1106") if "Table 5" in c.table]
    assert paper and all("7,862" not in c.note for c in paper)
    assert all("extractor=rules here" in c.note and "was not measured" in c.note for c in paper)


# --- the data a run read: the authors' pinned files or not ----------------------------------


def test_upstreamness_compares_the_files_blob_ids_with_the_pins() -> None:
    pinned = upstream_blobs("knowledgefmath")
    blob = "2c6027405c2fb3009d5d43ba14cc3eb45952fc61"
    assert pinned["validation.json"] == {blob}
    local = {"source": "local", "files": {"validation.json": blob}}
    assert upstreamness(local, "knowledgefmath").equal is True
    changed = {"source": "local", "files": {"validation.json": "0" * 40}}
    found = upstreamness(changed, "knowledgefmath")
    assert found.equal is False and found.differing == ("validation.json",)
    assert "DIFFERS" in found.text
    assert upstreamness(None, "knowledgefmath").equal is None
    assert upstreamness({"source": "hub", "files": {}}, "knowledgefmath").equal is None
    assert upstreamness({"source": "github"}, "knowledgefmath").equal is True
    # a name pinned in two folders (MathHay's v1 and its 2024 window) takes either's blob
    mathhay = upstream_blobs("mathhay")["full_haystack_question_sssd.json"]
    assert len(mathhay) == 2
    for one in mathhay:
        files = {"v1/full_haystack_question_sssd.json": one}
        assert upstreamness({"source": "local", "files": files}, "mathhay").equal is True


@pytest.mark.realdata
def test_the_shared_copies_of_the_authors_files_equal_their_pins(data_dir: Path) -> None:
    from finmath_tasks.loading import file_blob_id

    for benchmark, files in (
        ("knowledgefmath", ["financemath/validation.json", "financemath/test.json"]),
        ("tatqa", ["tatqa/tatqa_dataset_dev.json"]),
        ("mathhay", ["mathhay/v1/verified_haystack_question_sssd.json"]),
    ):
        blobs = {name: file_blob_id(data_dir / name) for name in files}
        found = upstreamness({"source": "local", "files": blobs}, benchmark)
        assert found.equal is True, (benchmark, found.text)


def _kfm_log(tmp_path: Path, data: Path, name: str) -> Run:
    from finmath_tasks.tasks.knowledgefmath import knowledgefmath

    logs = tmp_path / name
    [log] = eval(knowledgefmath(split="validation", data_dir=str(data)), limit=2,
                 model=scripted(["So the answer is 1."] * 2, "mockllm/gpt-4o"),
                 log_dir=str(logs), display="none")  # fmt: skip
    assert log.status == "success", log.error
    [path] = logs.glob("*.eval")
    return run_of(read_eval_log(str(path), header_only=True), str(path))


@pytest.mark.realdata
def test_a_run_on_changed_data_meets_no_cell_and_the_data_section_says_so(
    tmp_path: Path, data_dir: Path
) -> None:
    authors = tmp_path / "authors"
    authors.mkdir()
    shutil.copy(data_dir / "financemath" / "validation.json", authors / "validation.json")
    changed = tmp_path / "changed"
    changed.mkdir()
    records = json.loads((authors / "validation.json").read_text(encoding="utf-8"))
    records[0]["ground_truth"] = 12345.0
    (changed / "validation.json").write_text(json.dumps(records), encoding="utf-8")
    same, other = _kfm_log(tmp_path, authors, "same"), _kfm_log(tmp_path, changed, "other")
    names = ModelNames()
    names.add(["mockllm/gpt-4o=gpt-4o"])
    declaration = declarations()["knowledgefmath"]
    unmatched: list[str] = []
    assert comparisons(declaration, [same], names, unmatched) and not unmatched
    assert comparisons(declaration, [other], names, unmatched) == []
    [line] = unmatched
    assert "not the published data" in line and "validation.json" in line
    section, _ = data_section([same, other])
    assert section is not None
    [table] = section.tables
    assert table.header[-1] == "the authors' files?"
    assert table.rows[0][-1] == "the authors' data"
    assert table.rows[1][-1].startswith("other data (1 file not the authors': validation.json")
