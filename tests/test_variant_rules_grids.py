"""The generic meaning rules of fresh variants over number sequences and table grids
(finmath_tasks.variant_rules: the checks a benchmark that traces its own derivation uses)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from finmath_tasks.variant_rules import (
    Total,
    find_totals,
    order_changed,
    range_changed,
    sign_changed,
    totals_hold,
)


def column(values: list[float], c: int = 1) -> dict[tuple[int, int], float]:
    return {(r, c): v for r, v in enumerate(values)}


def test_a_total_over_sub_totals_counts_each_part_once() -> None:
    # a1 a2 A=a1+a2 b1 b2 B=b1+b2 T=A+B
    grid = column([130, 128, 258, 2235, 38, 2273, 2531])
    found = {t.cell: t.parts for t in find_totals(grid)}
    assert found[(2, 1)] == ((0, 1), (1, 1))
    assert found[(5, 1)] == ((3, 1), (4, 1))
    assert found[(6, 1)] == ((2, 1), (5, 1))


def test_totals_below_above_and_along_a_row_with_signs() -> None:
    grid = {(0, 0): 500.0, (0, 1): -200.0, (0, 2): 300.0}  # revenue, (costs), margin
    assert find_totals(grid) == [Total((0, 2), ((0, 0), (0, 1)))]
    above = column([90, 40, 50])  # a total written first
    assert find_totals(above) == [Total((0, 1), ((1, 1), (2, 1)))]


def test_no_total_of_one_figure_and_zeros_nor_of_zero() -> None:
    assert find_totals(column([0, 40, 40])) == []
    assert find_totals(column([5, -5, 0])) == []


def test_totals_hold_at_the_totals_written_precision() -> None:
    total = Total((2, 1), ((0, 1), (1, 1)))
    assert totals_hold([total], column([1.04, 2.02, 3.1]), {(2, 1): 1}) is None
    assert totals_hold([total], column([1.04, 2.12, 3.1]), {(2, 1): 1}) == total


def test_order_and_equality() -> None:
    assert order_changed([3, 2, 2], [3.5, 2.1, 2.1]) is None
    assert order_changed([3, 2, 2], [3.5, 2.1, 2.0]) == (1, 2)  # equal ones stay equal
    assert order_changed([3, 2, 1], [3, 2, 2]) == (1, 2)  # distinct ones stay distinct
    assert order_changed([3, 2], [1, 2]) == (0, 1)


def test_signs_and_ranges() -> None:
    assert sign_changed([1.0, -2.0, 0.0], [1.5, -1.0, 0.0]) is None
    assert sign_changed([1.0, 0.0], [1.0, 0.1]) == 1  # zero stays zero
    assert sign_changed([1.0, -2.0], [1.0, 2.0]) == 1
    assert range_changed(95.0, 105.0) and not range_changed(120.0, 130.0)


@given(st.lists(st.integers(-10_000, 10_000), min_size=0, max_size=12))
def test_find_totals_never_raises_and_each_total_adds_up(values: list[int]) -> None:
    grid = column([float(v) for v in values])
    for total in find_totals(grid):
        assert sum(grid[p] for p in total.parts) == grid[total.cell]
