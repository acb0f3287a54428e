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
# Every unit of every section, as label suffixes after "s<section>" ("-": the section).
ALL_LABELS = {
    "1": "- (a) (a)(1) (a)(2) (a)(i) (a)(ii) (a)(iii) (a)(iv) (a)(v) (b) (b)(i) (b)(ii) (b)(iii) "
    "(b)(iv) (b)(v) (c) (c)(i) (c)(ii) (c)(iii) (c)(iv) (c)(v) (d) (d)(i) (d)(ii) (d)(iii) "
    "(d)(iv) (d)(v)",
    "2": "- (a) (a)(1) (a)(1)(A) (a)(1)(B) (a)(2) (a)(2)(A) (a)(2)(B) (b) (b)(1) (b)(1)(A) "
    "(b)(1)(A)(i) (b)(1)(A)(i)(I) (b)(1)(A)(i)(II) (b)(1)(A)(ii) (b)(1)(B) (b)(2) (b)(2)(A) "
    "(b)(2)(B) (b)(2)(C) (b)(3) (b)(3)(A) (b)(3)(B)",
    "63": "- (a) (b) (b)(1) (b)(2) (c) (c)(1) (c)(1)(A) (c)(1)(B) (c)(2) (c)(2)(A) (c)(2)(A)(i) "
    "(c)(2)(A)(ii) (c)(2)(B) (c)(2)(C) (c)(3) (c)(5) (c)(5)(A) (c)(5)(B) (c)(6) (c)(6)(A) "
    "(c)(6)(B) (c)(6)(D) (c)(7) (c)(7)(i) (c)(7)(ii) (d) (d)(1) (d)(2) (f) (f)(1) (f)(1)(A) "
    "(f)(1)(B) (f)(2) (f)(2)(A) (f)(2)(B) (f)(3) (g)",
    "68": "- (a) (a)(1) (a)(2) (b) (b)(1) (b)(1)(A) (b)(1)(B) (b)(1)(C) (b)(1)(D) (f)",
    "151": "- (a) (b) (c) (d) (d)(1) (d)(2) (d)(3) (d)(3)(A) (d)(3)(B) (d)(5)",
    "152": "- (a) (a)(1) (a)(2) (b) (b)(1) (b)(2) (c) (c)(1) (c)(1)(A) (c)(1)(B) (c)(1)(C) "
    "(c)(1)(E) (c)(2) (c)(2)(A) (c)(2)(B) (c)(3) (d) (d)(1) (d)(1)(A) (d)(1)(B) (d)(1)(D) "
    "(d)(2) (d)(2)(A) (d)(2)(B) (d)(2)(C) (d)(2)(D) (d)(2)(E) (d)(2)(F) (d)(2)(G) (d)(2)(H)",
    "3301": "-",
    "3306": "- (a) (a)(1) (a)(1)(A) (a)(1)(B) (a)(2) (a)(2)(A) (a)(2)(B) (a)(3) (a)(4) (b) (b)(1) "
    "(b)(2) (b)(2)(A) (b)(2)(C) (b)(7) (b)(10) (b)(10)(A) (b)(10)(B) (b)(11) (b)(15) (c) "
    "(c)(A) (c)(B) (c)(1) (c)(1)(A) (c)(1)(A)(i) (c)(1)(A)(ii) (c)(1)(B) (c)(2) (c)(5) (c)(6) "
    "(c)(7) (c)(10) (c)(10)(A) (c)(10)(A)(i) (c)(10)(A)(ii) (c)(10)(B) (c)(11) (c)(13) (c)(16) "
    "(c)(21)",
    "7703": "- (a) (a)(1) (a)(2) (b) (b)(1) (b)(2) (b)(3)",
}
# Number of sentences owned by each unit, in the order of ALL_LABELS (one digit per unit):
# headings own none; text after a list counts for the list's parent.
SENTENCES_PER_UNIT = {
    "1": "021111111111111111111111111",
    "2": "00211112021111111111111",
    "63": "01111111111111111112111211111011121111",
    "68": "01110211111",
    "151": "01111110131",
    "152": "0111111111111111111111111111111",
    "3301": "1",
    "3306": "002111111111111121111111111111111011111111",
    "7703": "00112111",
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
    for number, suffixes in ALL_LABELS.items():
        expected = [f"s{number}" + ("" if x == "-" else x) for x in suffixes.split()]
        assert list(code.sections[number].units) == expected, number


@pytest.mark.realdata
def test_real_sentences_go_to_their_most_specific_unit(code: StatuteCode) -> None:
    for number, counts in SENTENCES_PER_UNIT.items():
        units = code.sections[number].units.values()
        assert "".join(str(len(u.sentences)) for u in units) == counts, number
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
