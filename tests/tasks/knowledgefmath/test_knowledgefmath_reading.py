"""The official ``financemath`` verdict reads answers as FinanceMath's reference does.

Expected verdicts come from ``reading_shapes.py``, written by hand from the
reference's rules; the realdata tests run them through real evals on
validation questions.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reading_shapes import (
    OUTPUT_SHAPES,
    REPLY_SHAPES,
    body_of,
    run_output_shapes,
    run_reply_shapes,
    validation_records,
)

from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.scorers.extraction import parse_reply_number
from finmath_tasks.scorers.numeric import ReadingInput
from finmath_tasks.tasks.knowledgefmath.reading import (
    read_extractor_reply,
    read_program_result,
)

BWRAP_OK, BWRAP_REASON = bwrap_available()


def official(reply: str) -> float | None:
    reading = read_extractor_reply(ReadingInput(output="", reply=reply))
    assert reading is not None
    return reading.value


# --- the reply normalisation, crafted cases (what the reference accepts and rejects) -----


@pytest.mark.parametrize(
    ("reply", "value", "step"),
    [
        ("7 years", 7.0, "unit dropped"),
        ("approximately 12.5", 12.5, "'approximately' dropped"),
        ("5 or 6", 5.0, "first of 'or' kept"),
        ("NPV = -1,234.5", -1234.5, "right of '=' taken"),
        ("≈ 0.25", 0.25, "right of '≈' taken"),
        ("`42`", 42.0, "backticks dropped"),
        ("$1,234.56", 1234.56, "dollar sign dropped"),
        ("12.5%", 12.5, "percent sign dropped"),  # the number as written: no /100
        ("3.2 million", 3.2, "million dropped"),
        ("1/3", 1 / 3, "as written"),
        ("5 x 10^2", 500.0, "10^k read as a power"),
        ("1,234", 1234.0, "thousands separators dropped"),
        ("USD 40", 40.0, "US/USD dropped"),
        ("8.5.", 8.5, "trailing period dropped"),
        ("yes", 1.0, "boolean"),
    ],
)
def test_reply_read_as_the_reference_does(reply: str, value: float, step: str) -> None:
    reading = read_extractor_reply(ReadingInput(output="", reply=reply))
    assert reading is not None and reading.value == pytest.approx(value)
    assert step in reading.description and reply in reading.description


@pytest.mark.parametrize(
    ("reply", "flagged"),
    [
        ("None", False),  # "none" anywhere: no answer
        ("I found none", False),
        ("The answer is 5", True),  # the reference's eval fails: it uses 0
        ("", True),  # nothing left: the reference uses 0
        ("1, 2", False),  # a tuple: never equal
        ("(b)", False),  # an option letter
        ("2 ** 99999999", True),  # not computed
        ("1/0", True),
    ],
)
def test_replies_the_reference_cannot_read_are_incorrect(reply: str, flagged: bool) -> None:
    reading = read_extractor_reply(ReadingInput(output="", reply=reply))
    assert reading is not None and reading.value is None
    assert ("unreadable" in reading.flags) is flagged


def test_rules_extractor_has_no_official_reading() -> None:
    assert read_extractor_reply(ReadingInput(output="The answer is 5.")) is None


@given(
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.integers(min_value=-(10**15), max_value=10**15),
    )
)
def test_reference_reading_and_ours_agree_on_str_of_any_number(x: float | int) -> None:
    ours = parse_reply_number(str(x))
    assert ours is not None
    assert official(str(x)) == float(x) == ours.value


# --- the program result, crafted records ---------------------------------------------


def program_reading(
    output: str = "", **record: object
) -> tuple[float | None, bool | None, tuple[str, ...]]:
    reading = read_program_result(ReadingInput(output=output, program=record))
    assert reading is not None
    return reading.value, reading.executed, reading.flags


def test_program_results_read_as_the_reference_does() -> None:
    ok = {"ok": True, "value": 3.5, "returned": True}
    assert program_reading(**ok) == (3.5, True, ())
    # argparse anywhere in the output: discarded before running
    assert program_reading("import argparse", **ok) == (None, False, ("argparse_discarded",))
    returned = {"ok": False, "value": None, "returned": True, "error": "x"}
    assert program_reading(**returned, float_text="-8184.0")[:2] == (-8184.0, True)
    assert program_reading(**returned, value_type="NoneType", float_text="")[:2] == (None, True)
    assert program_reading(**returned, float_text="inf")[:2] == (None, True)
    # NaN: credited by the reference's comparison; left out of ours, flagged
    assert program_reading(**returned, float_text="nan") == (None, True, ("nan_result",))
    raised = {"ok": False, "value": None, "returned": False, "error": "ValueError: x"}
    assert program_reading(**raised)[:2] == (None, False)


# --- every reply shape of the two reading tables, on real validation questions --------


@pytest.mark.slow
@pytest.mark.realdata
def test_reply_shapes_on_real_validation_questions(data_dir: Path, tmp_path: Path) -> None:
    records = validation_records(data_dir)
    picks = [
        r["question_id"]
        for r in records
        if float(r["ground_truth"]) != 0 and "e" not in repr(float(r["ground_truth"]))
    ][:3]
    rows = run_reply_shapes(data_dir, picks, tmp_path)
    assert len(rows) == 3 * len(REPLY_SHAPES)
    for row in rows:
        got = row["value"]["financemath"] == 1.0
        assert got is row["expected_correct"], (row["shape"], row["explanation"])
        if row["expected_correct"]:
            assert "read " in row["explanation"]
    unreadable = [r for r in rows if r["metadata"].get("unreadable")]
    assert {r["shape"] for r in unreadable} == {"The answer is g"}


@pytest.mark.realdata
def test_unreadable_reply_against_a_gold_of_zero_is_incorrect(
    data_dir: Path, tmp_path: Path
) -> None:
    # the reference reads an unreadable reply as 0 and credits it against a gold of 0
    [zero] = [r["question_id"] for r in validation_records(data_dir) if r["ground_truth"] == 0]
    rows = run_reply_shapes(data_dir, [zero], tmp_path)
    by_shape = {r["shape"]: r for r in rows}
    quirk = by_shape["The answer is g"]
    assert quirk["value"]["financemath"] == 0.0 and quirk["metadata"]["unreadable"] is True
    assert by_shape["g"]["value"]["financemath"] == 1.0


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.skipif(not BWRAP_OK, reason=f"bubblewrap unavailable: {BWRAP_REASON}")
def test_output_shapes_on_real_validation_questions(data_dir: Path, tmp_path: Path) -> None:
    records = validation_records(data_dir)
    picks = [
        r["question_id"]
        for r in records
        if (body_of(r["python_solution"].strip()) or "").startswith("    ")
    ][:2]
    rows = run_output_shapes(data_dir, picks, tmp_path)
    assert len(rows) == 2 * len(OUTPUT_SHAPES)
    for row in rows:
        value = row["value"]
        assert (value["financemath"] == 1.0) is row["expected_correct"], row
        assert (value["execution_rate"] == 1.0) is row["expected_executed"], row
        # ours stays strict: only a returned finite number counts (argparse is run)
        strict = row["shape"] not in ("returns a string", "returns a list", "returns None (prints)")
        assert (value["strict_execution_rate"] == 1.0) is strict, row
    assert not any(math.isnan(r["value"]["financemath"]) for r in rows)
