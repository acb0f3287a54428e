"""Retrieval strategies: the paper's Figure 1 example, the fixture, every real test case."""

from __future__ import annotations

from pathlib import Path

import pytest
from sara_fixtures import SECTION_10, SECTION_11

from finmath_tasks.tasks.sara.dataset import load_records
from finmath_tasks.tasks.sara.retrieval import retrieve
from finmath_tasks.tasks.sara.statutes import StatuteCode, load_statutes, parse_statute

FIXTURE = StatuteCode({"10": parse_statute(SECTION_10), "11": parse_statute(SECTION_11)})


def test_fixture_strategies() -> None:
    q = "Cat is exempt under section 10(b)(B) for 2018."
    mentioned = retrieve(FIXTURE, q, "mentioned_only", "entailment")
    assert mentioned.units == ["s10", "s10(b)", "s10(b)(B)"]
    assert "such seller shall pay no levy." in mentioned.text  # the parent's tail
    assert "(A) the seller sold fewer" not in mentioned.text
    whole = retrieve(FIXTURE, q, "entire_section", "entailment")
    assert whole.units == ["s10", "s10(b)", "s10(b)(A)", "s10(b)(B)"]
    refs = retrieve(FIXTURE, q, "references", "entailment")
    # s10(b)(B) cites "paragraph (2) of subsection (c)"; s10(c)(2) cites section 11,
    # which is NOT followed (one hop)
    assert refs.referenced == ["s10(c)(2)"]
    assert "s11" not in refs.units
    assert '"charity" has the meaning' in refs.text and "(c) Definitions" in refs.text
    assert "A charity is an organization" not in refs.text
    none = retrieve(FIXTURE, q, "none", "entailment")
    assert none.text == ""
    everything = retrieve(FIXTURE, q, "all_statutes", "entailment")
    assert everything.text.startswith("§10. Widget levy") and "§11. Charities" in everything.text


def test_tax_cases_and_uncited_questions_get_all_statutes() -> None:
    all_text = FIXTURE.render()
    for strategy in ("mentioned_only", "entire_section", "references"):
        tax = retrieve(FIXTURE, "How much levy does Eve pay? (see section 10(a))", strategy, "tax")
        assert tax.text == all_text and tax.fallback == "all_statutes" and tax.cited == []
    uncited = retrieve(FIXTURE, "Dan is exempt.", "mentioned_only", "entailment")
    assert uncited.fallback == "all_statutes"


def test_missing_unit_resolves_to_deepest_ancestor() -> None:
    r = retrieve(FIXTURE, "Section 10(a)(7) applies.", "mentioned_only", "entailment")
    assert r.cited == ["s10(a)"] and r.unresolved == ["Section 10(a)(7) -> s10(a)"]


@pytest.fixture
def real(data_dir: Path) -> tuple[Path, StatuteCode]:
    root = data_dir / "sara"
    if not root.is_dir():
        pytest.skip(f"no sara/ folder in {data_dir}")
    return root, load_statutes(root / "statutes" / "source")


@pytest.mark.realdata
def test_figure_1_example(real: tuple[Path, StatuteCode]) -> None:
    _, code = real
    q = "Section 7703(a)(1) applies to Alice for the year 2012."
    assert retrieve(code, q, "mentioned_only", "entailment").units == [
        "s7703", "s7703(a)", "s7703(a)(1)",
    ]  # fmt: skip
    assert retrieve(code, q, "entire_section", "entailment").units == [
        "s7703", "s7703(a)", "s7703(a)(1)", "s7703(a)(2)",
    ]  # fmt: skip
    refs = retrieve(code, "Section 7703(b)(1) applies to Alice.", "references", "entailment")
    assert refs.referenced == ["s7703(a)", "s151"]


@pytest.mark.realdata
def test_mentioned_only_holds_the_cited_unit_and_its_ancestors_headings(
    real: tuple[Path, StatuteCode],
) -> None:
    root, code = real
    cases = load_records(root, "test", "entailment")
    assert len(cases) == 100
    for case in cases:
        r = retrieve(code, case["question"], "mentioned_only", "entailment")
        assert r.fallback is None and len(r.cited) == 1, case["case_id"]
        statute = code.statute_of(r.cited[0])
        context_lines = r.text.splitlines()
        # the cited unit's full text (its own lines and its sub-units') and every
        # ancestor's heading (title included), as whole lines with their indentation
        wanted = {r.cited[0], *statute.subtree(r.cited[0])}
        for line in statute.lines:
            rendered = " " * (4 * line.level) + line.text
            if line.unit in wanted or (
                line.kind != "text" and line.unit in statute.ancestors(r.cited[0])
            ):
                assert rendered in context_lines, (case["case_id"], line.text)
        assert context_lines[0].startswith(f"§{statute.section}. ")


@pytest.mark.realdata
def test_all_statutes_token_count(real: tuple[Path, StatuteCode]) -> None:
    import tiktoken

    _, code = real
    text = retrieve(code, "", "all_statutes", "entailment").text
    tokens = len(tiktoken.get_encoding("o200k_base").encode(text))
    assert tokens == ALL_STATUTES_TOKENS


ALL_STATUTES_TOKENS = 6086
"""o200k_base tokens of the nine sections as rendered (the README reports it)."""


@pytest.mark.realdata
def test_strategies_nest_on_every_case(real: tuple[Path, StatuteCode]) -> None:
    root, code = real
    for case in load_records(root, "train", "entailment") + load_records(
        root, "test", "entailment"
    ):
        q = case["question"]
        mentioned = set(retrieve(code, q, "mentioned_only", "entailment").units)
        section = set(retrieve(code, q, "entire_section", "entailment").units)
        refs = retrieve(code, q, "references", "entailment")
        assert mentioned <= section and mentioned <= set(refs.units), case["case_id"]
        for target in refs.referenced:  # one hop: each referenced unit in full
            assert set(code.statute_of(target).subtree(target)) <= set(refs.units)
