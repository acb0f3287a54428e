"""The settings the papers state, as the ``published*.tsv`` files carry them
(``generation``, ``grader``, ``data``, ``n``), checked against the papers' text (skipped
without ../shared/docs/papers) where the paper states them."""

from __future__ import annotations

import re

import pytest

from finmath_tasks.cli.published import Published, load_published
from paper_text import paper_path


def _text(name: str) -> str:
    path = paper_path(name)
    if path is None:
        pytest.skip(f"the paper {name} is not here: place the papers at ../shared/docs/papers")
    return " ".join(path.read_text(encoding="utf-8").split())


def _cells(benchmark: str, paper: str) -> list[Published]:
    cells = [c for c in load_published(benchmark) if c.paper == paper and c.setting is not None]
    assert cells
    return cells


def test_knowledgefmath_states_temperature_top_p_and_length_for_all_experiments() -> None:
    text = _text("knowledgefmath.txt")
    found = re.search(
        r"For all the experiments, we set temperature as ([\d.]+), Top P as ([\d.]+), "
        r"and maximum output length as (\d+)",
        text,
    )
    assert found is not None
    temperature, top_p, length = found.groups()
    for cell in _cells("knowledgefmath", "knowledgefmath.txt"):
        assert cell.generation == {
            "temperature": temperature, "top_p": top_p, "max_tokens": length
        }, cell.location  # fmt: skip
        # CoT answers were read by the 2023 release's extractor; programs were run
        solver = (cell.setting or {}).get("solver")
        expected = {"grader": "gpt-3.5-turbo-1106"} if solver == "cot" else {}
        assert cell.grader == expected, cell.location


@pytest.mark.parametrize(("benchmark", "name"), [("tatqa", "TATQA"), ("finqa", "FinQA")])
def test_the_agents_paper_states_its_question_counts_and_its_temperature(
    benchmark: str, name: str
) -> None:
    text = _text("financial-agents.txt")
    # the appendix's paragraph on the dataset: "<name> <authors> (2021): ..."
    found = re.search(rf"{name} (?:Zhu|Chen) et al\. \(2021\):", text)
    assert found is not None
    count = re.search(r"a total of (\d+) questions", text[found.start() :])
    assert count is not None
    n = int(count.group(1))
    assert n == {"tatqa": 717, "finqa": 883}[benchmark]
    # the temperature's digit is lost in the extraction; "consistent results" means 0
    assert re.search(r"with temperature set to\s+so that we can achieve consistent", text)
    for cell in _cells(benchmark, "financial-agents.txt"):
        assert cell.generation == {"temperature": "0"} and cell.grader == {}, cell.location
        assert (cell.data or {}).get("size") == str(n), cell.location
        if cell.table in ("Table 1", "Table 2") and cell.group is None:
            assert cell.n == n, cell.location  # every accuracy of Tables 1 and 2


def test_mathhay_states_temperature_zero_and_judges_with_gpt4o() -> None:
    text = _text("mathhay.txt")
    assert "We set the temperature to zero for all models" in text
    for cell in _cells("mathhay", "mathhay.txt"):
        assert cell.generation == {"temperature": "0"}, cell.location
        assert cell.grader == {"grader": "GPT-4o"}, cell.location
        size = (cell.data or {}).get("size")
        assert size is not None and (cell.group is not None or size == str(cell.n)), cell.location


@pytest.mark.parametrize("benchmark", ["sara", "finqa"])
def test_the_retrieval_paper_states_no_generation_settings(benchmark: str) -> None:
    text = _text("rag-cot-semi-structured.txt")
    assert not re.search(r"temperature|top[ -]p\b", text, re.IGNORECASE)
    for cell in _cells(benchmark, "rag-cot-semi-structured.txt"):
        assert cell.generation is None and cell.grader == {}, cell.location
        assert (cell.data or {}).get("size") == str(cell.n), cell.location


def test_the_leaderboards_cells_state_the_reference_runs_settings() -> None:
    cells = [c for c in load_published("knowledgefmath") if c.paper.startswith("yale-nlp/")]
    assert len(cells) == 3344
    for cell in cells:
        assert cell.generation == {"temperature": "1.0", "top_p": "1.0", "max_tokens": "512"}
        solver = (cell.setting or {}).get("solver")
        assert cell.grader == ({"grader": "gpt-4o-mini"} if solver == "cot" else {})
        assert (cell.data or {})["split"] == (cell.setting or {})["split"]
