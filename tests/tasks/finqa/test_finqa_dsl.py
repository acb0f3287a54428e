"""FinQA's DSL: tokenizer, parser, executor (the reference's reading) and program equivalence."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from finqa_fixtures import TABLE

from finmath_tasks.tasks.finqa.dsl import (
    CLOSE,
    MAX_EXPANDED_SIZE,
    MAX_PROGRAM_CHARS,
    MAX_STEPS,
    OPEN,
    SEP,
    TEXT,
    DSLError,
    Step,
    equivalent_programs,
    execute,
    expanded_size,
    parse_program,
    same_value,
    tokenize,
)


def test_tokenizer_separates_on_comma_space_only() -> None:
    tokens = tokenize("subtract(5,829, 5735), divide(#0, 5735)")
    assert [t.kind for t in tokens] == [
        TEXT,
        OPEN,
        TEXT,
        SEP,
        TEXT,
        CLOSE,
        SEP,
        TEXT,
        OPEN,
        TEXT,
        SEP,
        TEXT,
        CLOSE,
    ]
    assert tokens[2].text == "5,829"  # a thousands comma is part of the number


def test_parse_steps() -> None:
    assert parse_program(" subtract(5829, 5735), divide(#0, 5735) ") == [
        Step("subtract", ("5829", "5735")),
        Step("divide", ("#0", "5735")),
    ]
    assert parse_program("table_max(net sales, none)") == [Step("table_max", ("net sales", "none"))]


@pytest.mark.parametrize(
    ("program", "value"),
    [
        ("subtract(1250, 1000), divide(#0, 1000)", 0.25),
        ("divide(2, 3)", 0.66667),  # rounded to 5 decimals
        ("add(1,250, 5)", 1255.0),  # thousands comma dropped
        ("multiply(245.7, 49.9%)", 122.6043),  # n% is n/100
        ("add(const_m1, const_1000)", 999.0),
        ("multiply(const_1000000, 2)", 2000000.0),
        ("exp(1.05, 2)", 1.1025),
        ("subtract(5, 7), multiply(#0, #0)", 4.0),
        ("greater(120, 100)", "yes"),
        ("greater(100, 100)", "no"),
        ("divide(1000, 1250), greater(#0, 0.5)", "yes"),
        ("table_sum(revenue, none)", 3150.0),  # "$ 1,250" read as 1250
        ("table_max(net income, none)", 300.0),  # "$ 300 ( 1 )": "( 1 )" dropped
        ("table_min(revenue, none)", 900.0),
        ("table_average(net income, none)", 250.0),
        ("table_average(revenue, none), divide(#0, const_100)", 10.5),
    ],
)
def test_execute(program: str, value: float | str) -> None:
    result = execute(program, TABLE)
    assert result.ok, result.error
    assert result.value == value


@pytest.mark.parametrize(
    ("program", "message"),
    [
        ("", "empty"),
        ("divide(subtract(5, 3), 2)", "nested"),
        ("__import__(os, system)", "unknown operation"),
        ("add(1, 2", "')' closing add"),
        ("add(1, 2, 3)", "two arguments"),
        ("add(1,2)", "', ' between the arguments"),
        ("add(1, 2) divide(#0, 2)", "', ' between steps"),
        ("add(#1, 2), add(3, 4)", "not earlier"),
        ("add(#0, 2)", "not earlier"),
        ("add(x#1, 2)", "malformed step reference"),
        ("greater(2, 1), add(#0, 1)", "not a number"),
        ("divide(1, 0)", "division by zero"),
        ("exp(10, 400)", "overflows"),
        ("exp(const_m1, 0.5)", "not a finite number"),
        ("add(nan, 1)", "not a number"),
        ("add(inf, 1)", "not a number"),
        ("add(const_x, 1)", "unknown constant"),
        ("add(os.system, 1)", "not a number"),
        ("table_sum(profits, none)", "no table row"),
        ("table_sum(headcount, none)", "is not a number"),
        ("table_sum(#0, none)", "not earlier"),
        ("add(1, 2), table_sum(#0, none)", "row name"),
        ("x" * (MAX_PROGRAM_CHARS + 1), "longer than"),
        (", ".join(["add(1, 1)"] * (MAX_STEPS + 1)), f"more than {MAX_STEPS} steps"),
    ],
)
def test_malformed_and_hostile_programs_are_errors_with_reasons(program: str, message: str) -> None:
    result = execute(program, TABLE)
    assert not result.ok and result.value is None
    assert message in result.error


@pytest.mark.parametrize(
    "program",
    ["", "add(1, 2", "add(1, 2, 3)", "divide(subtract(5, 3), 2)", "sum(1, 2)", "add(1, 2))"],
)
def test_syntax_errors_raise_from_the_parser(program: str) -> None:
    with pytest.raises(DSLError):
        parse_program(program)


def test_same_value_is_exact_after_rounding() -> None:
    assert same_value(0.25, 0.25)
    assert not same_value(0.25001, 0.25)
    assert same_value("yes", "yes") and not same_value("no", "yes")
    assert not same_value(1.0, "yes") and not same_value(None, 1.0)


@pytest.mark.parametrize(
    ("gold", "predicted", "equal"),
    [
        ("subtract(5829, 5735), divide(#0, 5735)", "subtract(5829, 5735), divide(#0, 5735)", True),
        ("add(500, 350)", "add(350, 500)", True),  # commutativity
        ("add(1, 2), add(#0, 3)", "add(2, 3), add(1, #0)", True),  # associativity
        ("multiply(2, 3), divide(#0, 4)", "divide(2, 4), multiply(#0, 3)", True),
        ("divide(5829, 5735)", "divide(5735, 5829)", False),
        ("divide(40, const_100)", "divide(40, 100)", False),  # 100 is not const_100 (as upstream)
        ("subtract(5, 3)", "subtract(5, 4)", False),  # 4 is no literal of the gold program
        ("table_average(net income, none)", "table_average(net income, none)", True),
        ("table_average(net income, none)", "table_max(net income, none)", False),
        ("greater(120, 100)", "greater(120, 100)", True),
        ("greater(120, 100)", "greater(100, 120)", False),
        ("add(1, 2)", "add(1, 2", False),
        ("add(1, 2)", "add(#0, 2)", False),
    ],
)
def test_program_equivalence(gold: str, predicted: str, equal: bool) -> None:
    result, reason = equivalent_programs(gold, predicted)
    assert result is equal, reason


def test_equivalence_says_why_not() -> None:
    assert "does not occur in the gold program" in equivalent_programs("add(1, 2)", "add(1, 3)")[1]
    assert "does not parse" in equivalent_programs("add(1, 2)", "add(1 2)")[1]


FILES = ("train", "dev", "test")
EXPECTED_RECORDS = {"train": 100, "dev": 200, "test": 100}


@pytest.mark.realdata
@pytest.mark.parametrize("split", FILES)
def test_every_gold_program_reproduces_exe_ans(data_dir: Path, split: str) -> None:
    records = json.loads((data_dir / "finqa" / f"{split}.json").read_text(encoding="utf-8"))
    assert len(records) == EXPECTED_RECORDS[split]
    failures = []
    for record in records:
        qa = record["qa"]
        result = execute(qa["program"], record["table"])
        if not (result.ok and same_value(result.value, qa["exe_ans"])):
            failures.append((record["id"], qa["program"], result, qa["exe_ans"]))
        same, reason = equivalent_programs(qa["program"], qa["program"])
        assert same, (record["id"], reason)
    # Measured: every gold program of the three files reproduces its exe_ans (100/200/100).
    assert failures == []


def test_equivalence_refuses_programs_too_large_to_simplify() -> None:
    # each exp(#k, #k) doubles the expression: 2**40 terms if written out
    tower = "exp(2, 2), " + ", ".join(f"exp(#{i}, #{i})" for i in range(39))
    assert expanded_size(parse_program(tower)) > MAX_EXPANDED_SIZE
    started = time.monotonic()
    equal, reason = equivalent_programs("add(2, 2), exp(#0, 2)", tower)
    assert not equal and "expands to" in reason
    assert time.monotonic() - started < 5
    assert not execute(tower, TABLE).ok  # and executing it overflows, with the reason


@pytest.mark.realdata
def test_gold_programs_are_far_below_the_equivalence_bound(data_dir: Path) -> None:
    sizes = [
        expanded_size(parse_program(record["qa"]["program"]))
        for split in FILES
        for record in json.loads((data_dir / "finqa" / f"{split}.json").read_text(encoding="utf-8"))
    ]
    assert max(sizes) == 11 < MAX_EXPANDED_SIZE
