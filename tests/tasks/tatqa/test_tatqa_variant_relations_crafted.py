"""TAT-QA fresh variants keep the relations of crafted tables shaped like the real records
whose variants broke one: a percent change from a positive to a negative figure, a "2%"
beside an average of two years, a row's percent change beside a column of percentages
that add up by chance, a total with a run on each side, a difference written in the text,
and figures in millions rounded from the table's thousands. Each variant is checked by
hand and by the independent audit (:mod:`finmath_tasks.variant_audit`)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tatqa_fixtures import arithmetic_question

from finmath_tasks.tasks.tatqa.dataset import records_to_samples
from finmath_tasks.tasks.tatqa.document import Document
from finmath_tasks.tasks.tatqa.variant_checks import violations
from finmath_tasks.tasks.tatqa.variants import instantiate, plan
from finmath_tasks.variant_audit import audit_records, read_cell
from finmath_tasks.variants import find_numbers

SEEDS = (1, 2, 3, 4, 5)


def _sample(
    table: list[list[str]], derivation: str, answer: float, scale: str, paragraphs: list[str]
) -> Any:
    record = {
        "table": {"uid": "t-crafted", "table": copy.deepcopy(table)},
        "paragraphs": [
            {"uid": f"p{i}", "order": i + 1, "text": t} for i, t in enumerate(paragraphs)
        ],
        "questions": [
            arithmetic_question("q", "What is asked of the figures?", derivation, answer, scale)
        ],
    }
    [one] = records_to_samples([record], "arithmetic", "f")
    return one


def _variants(sample: Any) -> list[dict[str, Any]]:
    """Every seed's variant, each breaking no rule of the maker's and no real relation of
    the audit's; at least one seed must give one."""
    out = []
    for seed in SEEDS:
        result = instantiate([sample], seed)
        for variant in result.samples:
            after = dict(variant.metadata or {})
            assert violations(dict(sample.metadata), after) == []
            audited = audit_records("tatqa", sample.metadata, after)
            assert audited.shape is None
            assert audited.real == [], [r.describe() for r in audited.real]
            out.append(after)
    assert out, "no seed instantiates the question"
    return out


def _v(table: list[list[str]], r: int, c: int) -> float:
    cell = read_cell(table[r][c])
    return 0.0 if cell is None else cell.value


SIGNED = [
    ["(in thousands of $)", "2018", "2017", "Change", "% Change"],
    ["Share of net earnings in partners", "7,001", "17,702", "(10,701)", "(60)%"],
    ["Impairment of investment", "(149,389)", "—", "(149,389)", "100%"],
    ["Net loss on deemed disposal", "—", "(16,992)", "16,992", "100%"],
    ["Share of net earnings in other affiliates", "3,711", "793", "2,918", "368%"],
    ["", "(138,677)", "1,503", "(140,180)", "(9,327)%"],
]


def test_a_percent_change_from_a_positive_to_a_negative_figure_is_read_signed() -> None:
    sample = _sample(SIGNED, "((3,711 - 793)/793 ) * 100", 367.97, "percent", [])
    for after in _variants(sample):
        table = after["table"]
        now, before = _v(table, 5, 1), _v(table, 5, 2)
        assert _v(table, 5, 3) == now - before
        assert _v(table, 5, 4) == round((now - before) / abs(before) * 100)
        assert _v(table, 5, 4) < 0  # "(9,327)%" stays a fall, recomputed


AVERAGE = [
    ["", "FY19", "FY18", "Change"],
    ["", "$M", "$M", "%"],
    ["Shareholder distributions", "23.9", "21.8", "10%"],
    ["Total employee expenditure", "370.1", "361.9", "2%"],
]


def test_a_two_percent_change_is_not_the_two_an_average_divides_by() -> None:
    sample = _sample(AVERAGE, "(370.1+361.9)/2", 366, "million", [])
    document = Document.of(sample.metadata)
    derived = [document.written(d.place).text for d in plan(dict(sample.metadata)).derived]
    assert "2" in derived  # recomputed, not held as the derivation's 2
    for after in _variants(sample):
        table = after["table"]
        a, b = _v(table, 3, 1), _v(table, 3, 2)
        assert _v(table, 3, 3) == round((a - b) / b * 100)


ANCHORED = [
    ["(in millions of €)", "2019", "2018", "Actual", "Comp."],
    ["Orders", "19,975", "18,451", "8 %", "7 %"],
    ["Revenue", "17,663", "18,125", "(3) %", "(4) %"],
    ["therein: service business", "8,025", "7,756", "3%", "2%"],
    ["Adjusted EBITA", "679", "722", "(6)%", ""],
]


def test_a_rows_percent_change_of_figures_that_stay_is_no_sum_of_its_column() -> None:
    """(6)% is (679 - 722) / 722, and by chance (3)% - 3% of its column: when revenue's
    change moves, EBITA's stays."""
    sample = _sample(ANCHORED, "17,663 - 18,125", -462, "million", [])
    for after in _variants(sample):
        table = after["table"]
        assert table[4] == ANCHORED[4]
        a, b = _v(table, 2, 1), _v(table, 2, 2)
        assert _v(table, 2, 3) == round((a - b) / b * 100)


PARENTHESES = [
    ["(Dollars in Millions)", "April 28, 2018", "April 29, 2017", "Net Change ($)", "Net (%)"],
    ["Net Sales", "$ 0.3", "$ 0.2", "$ 0.1", "50.0 %"],
    ["Gross Profit", "$ (3.5)", "$ (3.1)", "$ (0.4)", "(12.9)%"],
    ["Loss from Operations", "$ (11.4)", "$ (8.5)", "$ (2.9)", "(34.1)%"],
]


def test_a_percentage_whose_parenthesis_stands_before_its_sign_is_recomputed() -> None:
    sample = _sample(PARENTHESES, "-(11.4+8.5) / 2", -9.95, "million", [])
    for after in _variants(sample):
        table = after["table"]
        a, b = _v(table, 3, 1), _v(table, 3, 2)
        assert _v(table, 3, 4) == round((a - b) / abs(b) * 100, 1)


BOTH_SIDES = [
    ["", "2019", "2018", "2017"],
    ["Service-Based RSUs", "$2,207", "$2,036", "$1,762"],
    ["Performance-Based RSUs", "2,553", "3,089", "2,350"],
    ["Cash-settled awards", "255", "131", "72"],
    ["Total", "$5,015", "$5,256", "$4,184"],
    ["Income tax benefit", "1,133", "1,188", "1,573"],
    ["Net", "$3,882", "$4,068", "$2,611"],
]


def test_a_total_of_the_lines_above_it_splits_into_the_lines_below() -> None:
    """The Total is the three lines above it and the tax benefit plus the Net below it: a
    draw changes a line above, the Total, and the Net (its largest part below)."""
    sample = _sample(BOTH_SIDES, "(5,015-5,256)/5,256", -4.59, "percent", [])
    for after in _variants(sample):
        table = after["table"]
        for c in (1, 2):
            assert _v(table, 4, c) == sum(_v(table, r, c) for r in (1, 2, 3))
            assert _v(table, 4, c) == _v(table, 5, c) + _v(table, 6, c)
            assert table[5][c] == BOTH_SIDES[5][c]  # the smaller part below is held


SEGMENTS = [
    ["(in thousands of U.S. dollars)", "2019", "2018"],
    ["Revenues", "601,256", "510,762"],
    ["Voyage expenses", "(21,387)", "(28,237)"],
    ["Vessel operating expenses", "(111,585)", "(117,658)"],
    ["Income from vessel operations", "468,284", "364,867"],
    ["Liquefied Gas Carriers", "469,551", "386,186"],
    ["Conventional Tankers", "(1,267)", "(21,319)"],
]


def test_an_income_summed_from_above_is_split_into_its_segments_below() -> None:
    sample = _sample(SEGMENTS, "601,256-510,762", 90494, "thousand", [])
    for after in _variants(sample):
        table = after["table"]
        for c in (1, 2):
            assert _v(table, 4, c) == sum(_v(table, r, c) for r in (1, 2, 3))
            assert _v(table, 4, c) == _v(table, 5, c) + _v(table, 6, c)
        assert table[6] == SEGMENTS[6]


SEGMENT_SALES = [
    ["Reporting Segment", "Fiscal 2019 Net Sales", "Fiscal 2018 Net Sales", "% Inc (Dec)"],
    ["Grocery & Snacks", "$3,279.2", "$3,287.0", "—%"],
    ["International", "793.4", "843.5", "(6)%"],
    ["Foodservice", "934.2", "1,054.8", "(11)%"],
]
SALES_TEXT = [
    "International net sales for fiscal 2019 were $793.4 million, a decrease of $50.1 "
    "million, or 6%, compared to fiscal 2018. Volume was flat.",
    "Foodservice net sales for fiscal 2019 were $934.2 million, a decrease of $120.6 "
    "million, or 11%, compared to fiscal 2018.",
]


def test_a_difference_the_text_writes_between_two_cells_is_recomputed() -> None:
    sample = _sample(
        SEGMENT_SALES,
        "((793.4+934.2)-(843.5+1,054.8))/(843.5+1,054.8)",
        -8.99,
        "percent",
        SALES_TEXT,
    )
    for after in _variants(sample):
        table = after["table"]
        for r, text in ((2, after["paragraphs"][0]), (3, after["paragraphs"][1])):
            now, before = _v(table, r, 1), _v(table, r, 2)
            written = [w.value for w in find_numbers(text)]
            assert written[1] == now  # the restated figure
            assert written[2] == pytest.approx(round(before - now, 1))  # its decrease


THOUSANDS = [
    ["(Dollars in thousands)", "2019", "2018", "Amount", "Percentage"],
    ["Software-as-a-service related", "$ 72,831", "$ 65,646", "7,185", "10.9 %"],
    ["Maintenance", "10,519", "9,834", "685", "7.0 %"],
]
THOUSANDS_TEXT = [
    "Maintenance revenue increased $0.7 million, or 7.0%, from $9.8 million in the year "
    "ended December 31, 2018 to $10.5 million for the year ended December 31, 2019."
]


def test_figures_in_millions_rounded_from_thousands_still_add_up_in_their_sentence() -> None:
    """$9.8 and $10.5 million follow their cells in thousands, and the $0.7 million between
    them follows both, at one decimal: a draw whose rounded figures disagree is redrawn."""
    sample = _sample(THOUSANDS, "(10,519 + 9,834)/2", 10176.5, "thousand", THOUSANDS_TEXT)
    moved = 0
    for after in _variants(sample):
        table = after["table"]
        change, before, now = (w.value for w in find_numbers(after["paragraphs"][0]) if w.scale > 1)
        assert before == round(_v(table, 2, 2) / 1000, 1)
        assert now == round(_v(table, 2, 1) / 1000, 1)
        assert change == pytest.approx(round(now - before, 1))
        moved += before != 9.8
    assert moved
