"""The relations of FinanceMath's Markdown tables a draw keeps (a total over a run, a
three-number relation, a short ratio), on tables written by us, and the real questions where
the variant audit found them broken before these rules (validation-63 and -66, each draw's
program run in the sandbox)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from finmath_tasks.tasks.knowledgefmath.variant_rules import written_rules
from finmath_tasks.tasks.knowledgefmath.variant_tables import Relations, Tables, year_shape
from finmath_tasks.tasks.knowledgefmath.variants import plan
from finmath_tasks.variant_audit import audit_split

INCOME = """| Income statement (US$ million) | 2017 |
|---|---|
| Total rental income | 450 |
| Total property expenses | 228 |
| Net operating income | 222 |
| Other expenses | 22 |
| General and administrative expenses | 28 |
| Depreciation and amortization | 46 |
| Net interest expenses | 34 |
| Net income | 92 |
| Weighted average shares outstanding (million) | 118 |
| Earnings per share | 0.78 |"""


def _edit(table: str, old: str, new: str) -> str:
    assert old in table
    return table.replace(old, new)


def test_the_relations_of_a_table_are_found() -> None:
    found = Relations(Tables([INCOME]))
    # net operating income is the five lines below it; rental income its two parts
    assert {(t.cell, t.parts) for _, t in found.totals} == {
        ((1, 1), ((2, 1), (3, 1))),
        ((3, 1), ((4, 1), (5, 1), (6, 1), (7, 1), (8, 1))),
    }
    assert ((0, 2, 1), (0, 3, 1), (0, 5, 1), (0, 4, 1)) in found.threes  # 228 = 222 + 28 - 22
    assert ((0, 8, 1), (0, 9, 1)) in found.ratios[(0, 10, 1)]  # 0.78 = 92 / 118


def test_a_draw_that_breaks_one_is_rejected() -> None:
    question = "What is the share price?"
    before = [question, INCOME]
    assert written_rules(before, before) is None
    stale_total = _edit(INCOME, "| Net income | 92 |", "| Net income | 97 |")
    why = written_rules(before, [question, stale_total])
    assert why is not None and "222" in why  # net operating income is no longer its sum
    stale_ratio = _edit(INCOME, "(million) | 118 |", "(million) | 140 |")
    why = written_rules(before, [question, stale_ratio])
    assert why is not None and "ratio 0.78" in why
    # moved together, every relation holds: net income, its totals, shares within 0.78
    kept = _edit(INCOME, "| Net income | 92 |", "| Net income | 95 |")
    kept = _edit(kept, "| Net operating income | 222 |", "| Net operating income | 225 |")
    kept = _edit(kept, "| Total rental income | 450 |", "| Total rental income | 456 |")
    kept = _edit(kept, "| Total property expenses | 228 |", "| Total property expenses | 231 |")
    kept = _edit(kept, "(million) | 118 |", "(million) | 122 |")
    assert Relations(Tables([INCOME])).broken(Tables([kept])) is None


def test_two_tables_in_one_part_are_read_apart() -> None:
    two = "| Yield | % |\n|---|---|\n| Treasury | 2.3 |\n| AA bond | 4.4 |\n\n"
    two += (
        "| Premium | % |\n|---|---|\n| Inflation | 0.8 |\n| Illiquidity | 0.9 |\n| Equity | 8.4 |"
    )
    found = Relations(Tables([two]))
    assert found.totals == []  # 8.4 = 0.9 + 0.8 + 4.4 + 2.3 only across the two tables
    assert {k[0] for k in Tables([two]).grid} == {0, 1}


@pytest.mark.realdata
@pytest.mark.bwrap
@pytest.mark.slow
def test_the_real_questions_break_no_relation_the_audit_finds(session_data_dir: Path) -> None:
    ids = ["validation-63", "validation-66", "validation-174"]
    rows = audit_split("knowledgefmath", "validation", (1, 4), str(session_data_dir), ids=ids)
    for row in rows:
        assert row.broken_real == {}, (row.seed, row.broken_real)
        assert row.variants >= 2, row.seed  # held values, not left out


def test_a_figure_keeps_reading_as_an_amount_or_a_year() -> None:
    table = "| | 2019 | 2018 |\n|---|---|---|\n| Sales | 2125 | 1890 |"
    assert year_shape([table], [table.replace("2125", "2230")]) is None
    why = year_shape([table], [table.replace("2125", "2066")])
    assert why is not None and "'2066' reads as a year" in why
    question = "What is the change in sales?"
    assert written_rules([question, table], [question, table.replace("1890", "1930")])


def test_a_table_larger_than_any_real_one_is_left_out_at_once() -> None:
    rows = "\n".join(f"| Item {i} | {1000 + 7 * i} |" for i in range(3000))
    big = f"| Item | Amount |\n|---|---|\n{rows}"
    program = "def solution():\n    return 1007 - 1000\n"
    started = time.monotonic()
    found = plan("What is item 1 less item 0?", [big], program)
    assert time.monotonic() - started < 1
    assert found.reason == "table too large to check its totals (3001 rows)"
    small = "| Item | Amount |\n|---|---|\n| Item 0 | 1000 |\n| Item 1 | 1007 |"
    assert plan("What is item 1 less item 0?", [small], program).reason is None
