"""Statute parser and citation extraction: on our fixture, and on every real section."""

from __future__ import annotations

from pathlib import Path

import pytest
from sara_fixtures import SECTION_10, SECTION_11

from finmath_tasks.tasks.sara.citations import extract_citations, statute_references
from finmath_tasks.tasks.sara.statutes import (
    StatuteCode,
    StatuteError,
    load_statutes,
    parse_statute,
)


def test_fixture_units_headings_and_sentence_owners() -> None:
    s = parse_statute(SECTION_10, "section10")
    assert list(s.units) == [
        "s10", "s10(a)", "s10(a)(1)", "s10(a)(2)", "s10(b)", "s10(b)(A)", "s10(b)(B)",
        "s10(c)", "s10(c)(1)", "s10(c)(1)(i)", "s10(c)(1)(i)(I)", "s10(c)(1)(i)(II)",
        "s10(c)(2)",
    ]  # fmt: skip
    assert s.title == "Widget levy"
    assert s.units["s10(a)"].heading == "General rule"
    assert s.units["s10(c)(1)"].heading == "In general"
    assert s.units["s10(c)(1)(i)"].heading == "Special rule"
    assert s.units["s10(a)(1)"].heading is None  # text, not a heading
    # the tail after a list belongs to the list's parent
    assert s.units["s10(b)"].sentences == [
        "For purposes of this section, a seller is exempt if-",
        "such seller shall pay no levy.",
    ]
    # a definition over several paragraphs stays with its unit, split into sentences
    assert s.units["s10(c)(1)"].sentences == [
        'The term "widget" means any gadget.',
        "A gadget sold by weight counts once.",
        "Gadgets made before 1990 are not widgets.",
    ]
    assert s.units["s10(c)(1)(i)(II)"].sentences == ["a prototype destroyed before sale."]
    owners = dict((sentence, unit) for unit, sentence in s.sentences())
    assert owners["A prototype is a widget only if sold."] == "s10(c)(1)(i)"
    assert s.ancestors("s10(c)(1)(i)(I)") == ["s10", "s10(c)", "s10(c)(1)", "s10(c)(1)(i)"]


def test_section_without_subsections() -> None:
    s = parse_statute(SECTION_11, "section11")
    assert list(s.units) == ["s11"]
    assert s.root.sentences == ["A charity is an organization described in section 10(c)(1)."]


def test_render_keeps_title_headings_and_order() -> None:
    s = parse_statute(SECTION_10)
    text = s.render(["s10(c)(1)(i)"])
    assert text.splitlines()[0] == "§10. Widget levy"
    assert "(c) Definitions" in text and "    (1) In general" in text
    assert "        A prototype is a widget only if sold." in text
    assert 'widget" means' not in text  # the ancestor's own text is not selected
    assert "(a) General rule" not in text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty statute file"),
        ("Widget levy\n\n(a) x", "expected a title line"),
        ("§1. T\n\n(a) x\n\n  (1) y", "not a multiple of 4"),
        ("§1. T\n\n(a) x;\n\n(a) y;", r"unit s1\(a\) appears twice"),
    ],
)
def test_malformed_statutes_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(StatuteError, match=message):
        parse_statute(text, "bad")


def test_question_citations() -> None:
    got = [
        c.label
        for c in extract_citations(
            "Section 7703(a)(1) applies; section 151(d)(3)(B) and §152(c) and § 63 too."
        )
    ]
    assert got == ["s7703(a)(1)", "s151(d)(3)(B)", "s152(c)", "s63"]
    assert extract_citations("How much tax does Alice have to pay in 2017?") == []


def test_references_inside_statutes_resolve_relative_to_their_unit() -> None:
    where = ("151", ("d", "3", "B"))
    refs = statute_references(
        "For purposes of subparagraph (A), see paragraph (2) and subsection (a) and "
        "section 68(b); subparagraph (H) of section 152(d)(2); paragraph (1) or (2).",
        where,
    )
    assert [r.label for r in refs] == [
        "s151(d)(3)(A)", "s151(d)(2)", "s151(a)", "s68(b)", "s152(d)(2)(H)",
        "s151(d)(1)", "s151(d)(2)",
    ]  # fmt: skip


# --- the nine real sections --------------------------------------------------------

EXPECTED_UNITS = {
    "1": 27, "2": 23, "63": 38, "68": 11, "151": 11, "152": 31, "3301": 1, "3306": 42, "7703": 8,
}  # fmt: skip
EXPECTED_LABELS = {
    "1": ["s1(a)(1)", "s1(a)(v)", "s1(d)(iii)"],
    "2": ["s2(a)(1)(B)", "s2(b)(1)(A)(i)(I)", "s2(b)(1)(A)(i)(II)", "s2(b)(3)(B)"],
    "63": ["s63(c)(2)(A)(ii)", "s63(c)(6)(D)", "s63(c)(7)(i)", "s63(g)"],
    "68": ["s68(b)(1)(D)", "s68(f)"],
    "151": ["s151(d)(3)(B)", "s151(d)(5)"],
    "152": ["s152(c)(1)(E)", "s152(d)(2)(H)"],
    "3301": ["s3301"],
    "3306": ["s3306(b)(10)(B)", "s3306(c)(A)", "s3306(c)(1)(A)(ii)", "s3306(c)(10)(A)(i)"],
    "7703": ["s7703(a)(1)", "s7703(a)(2)", "s7703(b)(3)"],
}
# (unit, number of its own sentences, a phrase of its first sentence, a phrase of its last)
EXPECTED_OWNERS = [
    ("s1(a)", 2, "There is hereby imposed", "in accordance with the following"),
    ("s2(a)(1)", 2, 'the term "surviving spouse"', "considered as maintaining a household"),
    ("s63(c)(6)", 2, "In the case of", "shall be zero"),
    ("s63(c)(7)", 2, "taxable year beginning after", "Paragraph (2) shall be applied"),
    ("s68(b)(1)", 2, "applicable amount", "marital status shall be determined"),
    ("s151(d)(3)(B)", 3, "applicable percentage", "In no event"),
    ("s152(c)(1)", 1, "qualifying child", "qualifying child"),
    ("s3301", 1, "excise tax", "excise tax"),
    ("s3306(b)(10)", 2, "any payment or series", "other than any such payment"),
    ("s7703(b)", 2, "For purposes of those provisions", "shall not be considered as married"),
]
HEADINGS = {
    "s7703(a)": "General rule",
    "s2(b)(2)": "Determination of status",
    "s63(c)(6)": "Certain individuals, etc., not eligible for standard deduction",
    "s3306(c)(10)": None,
    "s3306(c)(10)(A)": None,
}


@pytest.fixture
def code(data_dir: Path) -> StatuteCode:
    if not (data_dir / "sara").is_dir():
        pytest.skip(f"no sara/ folder in {data_dir}")
    return load_statutes(data_dir / "sara" / "statutes" / "source")


@pytest.mark.realdata
def test_every_real_section_parses_to_its_units(code: StatuteCode) -> None:
    assert {n: len(s.units) for n, s in code.sections.items()} == EXPECTED_UNITS
    assert list(code.sections) == ["1", "2", "63", "68", "151", "152", "3301", "3306", "7703"]
    for number, labels in EXPECTED_LABELS.items():
        assert set(labels) <= set(code.sections[number].units), number


@pytest.mark.realdata
def test_real_sentences_go_to_their_most_specific_unit(code: StatuteCode) -> None:
    for label, count, first, last in EXPECTED_OWNERS:
        sentences = code.statute_of(label).units[label].sentences
        assert len(sentences) == count, (label, sentences)
        assert first in sentences[0] and last in sentences[-1], label
    for label, heading in HEADINGS.items():
        assert code.statute_of(label).units[label].heading == heading, label
    # every sentence of every section has exactly one owner, and no text line is lost
    for statute in code.sections.values():
        source = Path(statute.source).read_text(encoding="utf-8")
        n_text_lines = sum(1 for line in statute.lines if line.kind == "text")
        n_headings = sum(1 for line in statute.lines if line.kind != "text")
        assert n_text_lines + n_headings == sum(1 for ln in source.splitlines() if ln.strip())
