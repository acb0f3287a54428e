"""The variant audit tells real relations from chance ones by the table's structure, and
reads relations of the texts' numbers (crafted records, benchmark-neutral grids)."""

from __future__ import annotations

import copy

from finmath_tasks.variant_audit import Relation, audit, from_rows, relations

# A consideration equal by chance to five scattered cells of its preliminary column; the
# revised column is the preliminary one plus the adjustments, which write nothing for the
# consideration ("—") and whose five cells cancel: the sum holds in the revised column too.
REVISED = [
    ["", "Preliminary", "Adjustments", "Revised"],
    ["Total consideration", "100.0", "—", "100.0"],
    ["Assets:", "", "", ""],
    ["Cash", "10.0", "1.0", "11.0"],
    ["Receivables", "4.4", "—", "4.4"],
    ["Inventories", "30.0", "(2.0)", "28.0"],
    ["Prepaid", "2.3", "—", "2.3"],
    ["Goodwill", "60.0", "1.0", "61.0"],
    ["Other", "0.7", "0.3", "1.0"],
]
"""(10.0 + 30.0 + 60.0 = 100.0, and 1.0 - 2.0 + 1.0 = 0.)"""


def _sums_of(found: list[Relation], target: tuple[int, int, int]) -> list[Relation]:
    return [r for r in found if r.kind == "sum" and r.target == target]


def test_a_revised_column_that_follows_the_preliminary_one_is_no_evidence() -> None:
    found = _sums_of(relations(from_rows([REVISED], [])), (0, 1, 1))
    three = [r for r in found if {k for _, k in r.terms} == {(0, 3, 1), (0, 5, 1), (0, 7, 1)}]
    assert three and not any(r.real for r in three), [r.describe() for r in three]


def test_a_sum_that_holds_in_an_independent_column_is_real() -> None:
    """The same cells, but the third column is no sum of the other two: the sum holding
    there is evidence."""
    table = copy.deepcopy(REVISED)
    for r, text in ((1, "200.0"), (3, "20.0"), (4, "8.1"), (5, "60.0"), (7, "120.0")):
        table[r][3] = text
    found = _sums_of(relations(from_rows([table], [])), (0, 1, 1))
    three = [r for r in found if {k for _, k in r.terms} == {(0, 3, 1), (0, 5, 1), (0, 7, 1)}]
    assert three and all(r.real for r in three)
    assert "parallel" in three[0].why


BRIDGE = [
    ["", "2015", "2016"],
    ["Net Income", "672", "970"],
    ["Income tax provision", "158", "156"],
    ["Interest expense", "596", "717"],
    ["Interest income", "(17)", "(26)"],
    ["Depreciation", "1,285", "1,526"],
]
"""672 = -17 + 1,285 - 596 in 2015 only: chance, though its label says "Net"."""


def test_a_three_number_relation_a_parallel_column_breaks_is_chance() -> None:
    found = [r for r in relations(from_rows([BRIDGE], [])) if r.kind == "three"]
    chance = [r for r in found if r.target == (0, 1, 1)]
    assert chance and not any(r.real for r in chance)
    table = copy.deepcopy(BRIDGE)
    table[1][2] = "783"  # -26 + 1,526 - 717: now it holds in both columns
    found = [r for r in relations(from_rows([table], [])) if r.kind == "three"]
    assert any(r.real and r.target == (0, 1, 1) for r in found)


SALES = [
    ["Segment", "2019", "2018", "% change"],
    ["International", "793.4", "843.5", "(6)%"],
    ["Foodservice", "934.2", "1,054.8", "(11)%"],
]
SALES_TEXT = [
    "International net sales were $793.4 million, a decrease of $50.1 million, or 6%. "
    "Revenue increased $90.5 million to $601.3 million from $510.8 million. "
    "Amounts due were $200 (December 31, 2018: $169)."
]


def _text_sums(table: list[list[str]], texts: list[str]) -> list[Relation]:
    return [r for r in relations(from_rows([table], texts)) if r.kind == "text sum"]


def test_a_text_number_equal_to_a_difference_of_two_cells_or_two_text_numbers() -> None:
    found = _text_sums(SALES, SALES_TEXT)
    targets = {r.target for r in found}
    assert ("text", 0, 1) in targets  # 50.1 = 843.5 - 793.4, the row its sentence restates
    assert ("text", 0, 4) in targets  # 601.3 = 510.8 + 90.5 in its sentence
    assert all(r.real for r in found)
    assert not any(r.target == ("text", 0, 9) for r in found)  # 169 = 200 - 31: a day


def test_a_stale_text_difference_is_a_real_break_and_a_recomputed_one_holds() -> None:
    original = from_rows([SALES], SALES_TEXT)
    table = copy.deepcopy(SALES)
    table[1][1], table[1][3] = "700.0", "(17)%"
    stale = SALES_TEXT[0].replace("$793.4", "$700.0")
    broken = audit(original, from_rows([table], [stale]))
    assert [r.target for r in broken.real] == [("text", 0, 1)]
    kept = audit(original, from_rows([table], [stale.replace("$50.1", "$143.5")]))
    assert kept.real == []
    moved = SALES_TEXT[0].replace("$90.5", "$91.5")  # 601.3 no longer 510.8 + 91.5
    broken = audit(original, from_rows([SALES], [moved]))
    assert {r.target for r in broken.real} == {("text", 0, j) for j in (3, 4, 5)}


CHARGES = [
    ["(In millions)", "2019", "2018", "2017"],
    ["Restructuring charges", "41.9", "47.8", "12.1"],
    ["Total charges from continuing operations", "102.2", "61.7", "26.4"],
    ["Charges included in discontinued operations", "—", "—", "2.4"],
    ["Total charges", "102.2", "61.7", "28.8"],
]
"""2.4 is 28.8 - 26.4, and by chance 28.8 / 12.1 at one decimal."""


def test_a_label_with_ratio_inside_a_word_names_no_ratio() -> None:
    ratios = [r for r in relations(from_rows([CHARGES], [])) if r.kind == "ratio"]
    assert [r.target for r in ratios] == [(0, 3, 3)]
    assert not ratios[0].real  # "operations" is no ratio
