"""The independent audit of fresh variants (crafted records of each benchmark's shape), and
the variant maker's totals and three-number relations it checks."""

from __future__ import annotations

import copy
import time
from typing import Any

from finmath_tasks.tasks.finqa.audit_adapter import record as finqa_record
from finmath_tasks.tasks.knowledgefmath.audit_adapter import record as knowledgefmath_record
from finmath_tasks.tasks.tatqa.audit_adapter import record as tatqa_record
from finmath_tasks.tasks.tatqa.variant_checks import line_relation
from finmath_tasks.variant_audit import audit, audit_records, from_rows, relations
from finmath_tasks.variant_rules import (
    Total,
    find_totals,
    parallel_ratios,
    parallel_totals,
    ratio_violation,
    three_relations,
    three_violation,
)
from finmath_tasks.variants import find_numbers

# A total of the rows above it that is also the total of the segment rows below it, a
# chance equality (Other = Parts + Fees by chance, in one column only) and a percent
# change column.
TABLE = [
    ["", "2019", "2018", "% change"],
    ["Revenues", "601,256", "510,762", "17.7%"],
    ["Voyage expenses", "(21,387)", "(28,237)", ""],
    ["Vessel operating expenses", "(111,585)", "(117,658)", ""],
    ["Depreciation", "(136,765)", "(124,378)", ""],
    ["Income from vessel operations", "331,519", "240,489", ""],
    ["Liquefied Gas Carriers", "300,520", "169,918", ""],
    ["Conventional Tankers", "30,999", "70,571", ""],
    ["Parts", "120", "310", ""],
    ["Fees", "75", "48", ""],
    ["Other", "195", "401", ""],
]
PARAGRAPHS = ["Income from vessel operations was $331.5 million in 2019."]


def _tatqa(table: list[list[str]], paragraphs: list[str] = PARAGRAPHS) -> dict[str, Any]:
    return {"question": "What was the change?", "paragraphs": paragraphs, "table": table}


def _set(table: list[list[str]], cells: dict[tuple[int, int], str]) -> list[list[str]]:
    out = copy.deepcopy(table)
    for (r, c), text in cells.items():
        out[r][c] = text
    return out


def _kinds(found: list[Any], real: bool) -> set[tuple[str, Any]]:
    return {(r.kind, r.target) for r in found if r.real == real}


def test_a_total_of_the_rows_above_and_below_is_found_both_ways_and_real() -> None:
    found = relations(tatqa_record(_tatqa(TABLE)))
    sums = [r for r in found if r.kind == "sum" and r.target == (0, 5, 1)]
    parts = {frozenset(k for _, k in r.terms) for r in sums if r.real}
    above = frozenset((0, r, 1) for r in (1, 2, 3, 4))
    below = frozenset((0, r, 1) for r in (6, 7))
    assert above in parts and below in parts
    # the revenue changes and nothing else: the total of the rows above is stale, the
    # rows below still add up, the percent change and the text are stale
    variant = _tatqa(_set(TABLE, {(1, 1): "581,304"}))
    result = audit_records("tatqa", _tatqa(TABLE), variant)
    broken = {(r.kind, r.target) for r in result.real}
    assert ("sum", (0, 5, 1)) in broken and ("percent change", (0, 1, 3)) in broken
    recomputed = _set(
        TABLE, {(1, 1): "581,304", (5, 1): "311,567", (1, 3): "13.8%", (6, 1): "280,568"}
    )
    paragraphs = ["Income from vessel operations was $311.6 million in 2019."]
    result = audit_records("tatqa", _tatqa(TABLE), _tatqa(recomputed, paragraphs))
    assert result.real == [], [r.describe() for r in result.real]


def test_the_text_restating_a_figure_in_thousands_must_follow_it() -> None:
    variant = _set(TABLE, {(5, 1): "311,567", (1, 1): "581,304", (6, 1): "280,568"})
    variant[1][3] = "13.8%"
    result = audit_records("tatqa", _tatqa(TABLE), _tatqa(variant))
    assert [(r.kind, r.target) for r in result.real] == [("text", ("text", 1, 0))]


def test_a_chance_equality_is_reported_apart() -> None:
    found = relations(tatqa_record(_tatqa(TABLE)))
    other = [r for r in found if r.target == (0, 10, 1) and r.kind == "sum"]
    assert other and not any(r.real for r in other)  # 195 = 120 + 75 in 2019 only
    # 2018: 401 != 310 + 48, so the equality of 2019 is chance; the audit says so
    variant = _tatqa(_set(TABLE, {(8, 1): "130"}))
    result = audit_records("tatqa", _tatqa(TABLE), variant)
    assert ("sum", (0, 10, 1)) in {(r.kind, r.target) for r in result.chance}
    assert ("sum", (0, 10, 1)) not in {(r.kind, r.target) for r in result.real}


THREE = [
    ["", "Amortized Cost", "Unrealized Gains", "Unrealized Losses", "Fair Value"],
    ["Foreign government obligations", "$73,798", "$14,234", "$235", "$87,797"],
    ["U.S. government obligations", "97,223", "416", "6,436", "91,203"],
    ["Net debt to EBITDA", "0.5", "", "", ""],
    ["Net debt", "150.0", "", "", ""],
    ["EBITDA", "297.8", "", "", ""],
]


def test_three_number_relations_and_short_ratios() -> None:
    found = relations(tatqa_record(_tatqa(THREE, [])))
    assert ("three", (0, 1, 4)) in _kinds(found, True) or ("three", (0, 1, 1)) in _kinds(
        found, True
    )
    assert ("ratio", (0, 3, 1)) in _kinds(found, True)
    variant = _set(THREE, {(2, 1): "96,040", (2, 4): "92,922", (4, 1): "200.0"})
    result = audit_records("tatqa", _tatqa(THREE, []), _tatqa(variant, []))
    kinds = {r.kind for r in result.real}
    assert kinds == {"three", "ratio"}, [r.describe() for r in result.real]
    held = _set(THREE, {(2, 1): "96,040", (2, 4): "90,020", (4, 1): "160.0"})
    assert audit_records("tatqa", _tatqa(THREE, []), _tatqa(held, [])).real == []


def test_the_maker_finds_a_total_both_ways_and_holds_three_number_relations() -> None:
    grid = {
        (r, c): float(text.replace(",", "").strip("()")) * (-1 if "(" in text else 1)
        for r, row in enumerate(TABLE)
        for c, text in enumerate(row)
        if c in (1, 2) and r > 0
    }
    totals = [t for t in find_totals(grid) if t.cell == (5, 1)]
    assert {frozenset(t.parts) for t in totals} == {
        frozenset({(1, 1), (2, 1), (3, 1), (4, 1)}),
        frozenset({(6, 1), (7, 1)}),
    }
    # a run found after a chance pair inside it: 9,538.4 over five rows, one of them
    # (1,727.6) equal to the two above it by chance
    column = [3279.2, 2804.0, 793.4, 934.2, 1727.6, 9538.4]
    found = find_totals({(r, 0): v for r, v in enumerate(column)})
    assert Total((5, 0), tuple((r, 0) for r in range(5))) in found
    cells = {
        (r, c): float(t.strip("$").replace(",", ""))
        for r, row in enumerate(THREE[1:3])
        for c, t in enumerate(row)
        if c
    }
    relations_ = three_relations(cells)
    assert ((0, 1), (0, 2), (0, 3), (0, 4)) in relations_
    moved = dict(cells)
    moved[(1, 1)] = 96040.0
    assert three_violation(relations_, moved, {}) is not None


def test_finqa_and_knowledgefmath_records_are_read() -> None:
    finqa = {
        "question": "what was the change?",
        "pre_text": ["the balance was $ 35 million ."],
        "post_text": [],
        "table": [
            ["december 31,", "2015", "2014"],
            ["balance at beginning of year", "$ 35", "$ 63"],
            ["reductions", "-29 ( 29 )", "-30 ( 30 )"],
            ["balance at end of year", "$ 6", "$ 33"],
        ],
    }
    record = finqa_record(finqa)
    assert record.grid[(0, 2, 1)].value == -29 and (0, 0, 1) not in record.grid  # a year
    found = relations(record)
    assert any(r.kind == "sum" and r.target == (0, 3, 1) and r.real for r in found)
    after = copy.deepcopy(finqa)
    after["table"][1][1] = "$ 40"
    result = audit(record, finqa_record(after))
    assert {r.target for r in result.real} == {(0, 3, 1)}
    assert ("text", 1, 0) in {r.target for r in result.chance}  # "$ 35": two digits
    table = (
        "| Item | 2020 | 2021 |\n|---|:---:|---:|\n| Sales | $ 1,200 | $ 1,500 |\n"
        "| Costs | 700 | 800 |\n| Net income | 500 | 700 |\n\n\\* a note"
    )
    kfm = knowledgefmath_record({"question": "What is X?", "tables": [table]})
    assert kfm.grid[(0, 1, 1)].value == 1200
    assert any(r.kind == "sum" and r.real for r in relations(kfm))


def test_a_huge_table_is_searched_within_bounds() -> None:
    rows = [["", "2019", "2018"]] + [
        [f"line {i}", str(1000 + i), str(2000 + 3 * i)] for i in range(3000)
    ]
    record = from_rows([rows], [])
    started = time.monotonic()
    relations(record)
    assert time.monotonic() - started < 60


def test_the_maker_finds_non_adjacent_totals_and_ratios_that_hold_in_every_column() -> None:
    # recorded investment = its two allowances + the net receivables, in both years (the
    # total allowance written between them is rounded: 221 for 177 + 45)
    columns = {1: [22446.0, 177.0, 45.0, 221.0, 22224.0], 2: [31182.0, 220.0, 72.0, 292.0, 30890.0]}
    grid = {(r, c): v for c, values in columns.items() for r, v in enumerate(values)}
    totals = parallel_totals(grid)
    assert Total((0, 1), ((1, 1), (2, 1), (4, 1))) in totals
    assert Total((0, 2), ((1, 2), (2, 2), (4, 2))) in totals
    one_column = {k: v for k, v in grid.items() if k[1] == 1}
    assert parallel_totals(one_column) == []  # nothing to tell it from chance
    # basic earnings per share = net income / shares, in every year's column
    eps = {(0, 1): 1169.0, (0, 2): 116.0, (1, 1): 254.0, (1, 2): 268.0, (2, 1): 4.60, (2, 2): 0.43}
    decimals = {(2, 1): 2, (2, 2): 2}
    ratios = parallel_ratios(eps, decimals, [(2, 2)])
    assert ((2, 2), (0, 2), (1, 2)) in ratios
    moved = dict(eps)
    moved[(2, 2)] = 0.55
    assert ratio_violation(ratios, moved, decimals) == (2, 2)


def test_a_short_percent_change_is_read_in_the_direction_of_its_sign() -> None:
    text = "2%"
    [written] = find_numbers(text)
    places = [(("cell", 3, c), 0) for c in (1, 2, 3)]
    signed = [(2753.0, False), (2804.0, False)]  # 2018 changes; 2019 beside it
    relation = line_relation(written, [2753.0, 2804.0], 1, places, text, signed, False)
    assert relation is not None and relation.apply([2753.0, 2804.0]) > 0  # (2,804 - 2,753) / 2,753
    other = line_relation(written, [2753.0, 2804.0], 1, places, text, signed, True)
    assert other is not None and other.apply([2753.0, 2804.0]) < 0  # "(2)%": the other way
    # between percentages there is no percent change
    percents = [(2753.0, True), (2804.0, False)]
    assert line_relation(written, [2753.0, 2804.0], 1, places, text, percents, False) is None
