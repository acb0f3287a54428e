"""The rules a fresh variant keeps (benchmark-neutral pieces; our own small cases)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from finmath_tasks.sandbox.batch import run_programs
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.variant_rules import (
    Number,
    instrument_python,
    order_violation,
    range_violation,
    read_trace,
    restated_violation,
    signature,
    sum_relations,
    sum_violation,
    trace_violation,
    written_violation,
)

FEE = """def solution():
    aum = 602.5
    hwm = 540
    fee = (aum - hwm * 1.05) * 0.2
    if fee > 0:
        paid = fee
    else:
        paid = 0
    best = max(aum, hwm)
    return (aum - paid) / best
"""


def _run_traced(program: str) -> tuple[float, str | None]:
    import pytest

    if not bwrap_available()[0]:
        pytest.skip("needs the bubblewrap sandbox")
    [result] = run_programs([instrument_python(program)])
    assert result.ok, result.error
    assert result.value is not None
    return result.value, read_trace(result.stdout)


@pytest.mark.slow
def test_a_traced_program_returns_its_value_and_its_path() -> None:
    value, trace = _run_traced(FEE)
    assert value == (602.5 - (602.5 - 540 * 1.05) * 0.2) / 602.5
    assert trace is not None
    # the fee: positive; its test: true; max chose the first argument
    assert "T" in trace and "a" in trace
    _below, other = _run_traced(FEE.replace("602.5", "560.0"))
    assert other is not None
    why = trace_violation(trace, other)
    assert why is not None and ("negative" in why or "branch" in why)
    same, again = _run_traced(FEE.replace("602.5", "610.0"))
    assert again is not None and trace_violation(trace, again) is None
    assert same != value


def test_step_signatures_compare_signs_and_yes_no() -> None:
    assert signature([3.0, -1.0, 0.0, "yes"]) == "+-0T"
    assert trace_violation("+-0T", "+-0T") is None
    assert "turns positive to negative" in str(trace_violation("+-0T", "--0T"))
    assert "branch" in str(trace_violation("+-0T", "+-0F"))


def test_order_equality_and_distinctness_within_a_group() -> None:
    old = [0.997, 0.992, 0.985, 0.976]
    assert order_violation(old, [0.99, 0.988, 0.98, 0.976], [[0, 1, 2, 3]]) is None
    assert order_violation(old, [0.91, 0.863, 0.891, 0.976], [[0, 1, 2, 3]]) is not None
    outcomes = [7.0, 8.0, 9.0, 10.0]
    assert order_violation(outcomes, [5.0, 7.0, 7.0, 11.0], [[0, 1, 2, 3]]) is not None
    # values in different groups are not compared
    assert order_violation([1.0, 2.0], [3.0, 2.0], [[0], [1]]) is None


def test_totals_in_runs_nested_and_over_sub_rows() -> None:
    column = [10.0, 20.0, 30.0, 5.0, 7.0, 12.0, 42.0]  # 30 = 10+20, 12 = 5+7, 42 = 30+12
    found = dict((t, p) for t, p in sum_relations(column, [0] * 7, min_digits=2))
    assert found[2] == [0, 1] and found[5] == [3, 4] and found[6] == [2, 5]
    # a total on top of segments whose product lines sit between them
    sales = [44033.0, 37437.0, 4004.0, 2658.0, 3362.0, 1894.0, 1340.0]
    [(_total, parts)] = [r for r in sum_relations(sales, [0] * 7) if r[0] == 0]
    assert parts == [1, 4, 5, 6]
    new = list(sales)
    new[1] = 40000.0
    assert sum_violation([(0, parts)], new, [0] * 7) is not None
    new[0] = 40000.0 + 3362 + 1894 + 1340
    assert sum_violation([(0, parts)], new, [0] * 7) is None


def test_restated_figures_and_percent_ranges() -> None:
    assert restated_violation([5735.0, 5735.0, 12.0], [5800.0, 5735.0, 12.0]) is not None
    assert restated_violation([5735.0, 5735.0], [5800.0, 5800.0]) is None
    assert range_violation([95.0], [101.0], [True]) is not None
    assert range_violation([95.0], [101.0], [False]) is None


def test_written_violation_names_the_broken_rule() -> None:
    numbers = [
        Number(20.0, 22.0, 0, False, ("row",)),
        Number(50.0, 21.0, 0, False, ("row",)),
    ]
    assert "compare the same way" in str(written_violation(numbers))
    assert written_violation([Number(20.0, 20.0, 0, False, ("row",))]) is None


@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=8),
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=8),
)
def test_the_checks_never_raise(old: list[float], new: list[float]) -> None:
    n = min(len(old), len(new))
    old, new = old[:n], new[:n]
    order_violation(old, new, [list(range(n))])
    restated_violation(old, new)
    range_violation(old, new, [True] * n)
    relations = sum_relations([round(x, 2) for x in old], [2] * n)
    sum_violation(relations, new, [2] * n)
    assert all(math.isfinite(x) for x in old)
