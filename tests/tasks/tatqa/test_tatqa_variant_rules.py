"""TAT-QA fresh variants on crafted records (our own figures): each meaning rule, the
derivation's written forms, totals recomputed, and the one-line errors."""

from __future__ import annotations

import contextlib
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tatqa_fixtures import arithmetic_question, write_split

from finmath_tasks.cli.main import main
from finmath_tasks.errors import UsageError
from finmath_tasks.tasks.tatqa import tatqa
from finmath_tasks.tasks.tatqa.dataset import records_to_samples
from finmath_tasks.tasks.tatqa.derivation import DerivationError, evaluate, parse, reading_of
from finmath_tasks.tasks.tatqa.document import Document
from finmath_tasks.tasks.tatqa.variant_checks import violations
from finmath_tasks.tasks.tatqa.variants import instantiate, plan, variant_of

TABLE = [
    ["", "2021", "2020"],
    ["Widgets", "1,340", "1,060"],
    ["Gadgets", "460", "440"],
    ["Total revenue", "1,800", "1,500"],
    ["Costs", "(720)", "(610)"],
    ["Margin", "38.5%", "38.5%"],
]
PARAGRAPHS = [
    "Total revenue was $1,800 million in 2021. Staff costs were 35 and 33 million.",
    "The margin target is 95% of plan.",
]


def record(
    questions: list[dict[str, Any]],
    table: list[list[str]] | None = None,
    paragraphs: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "table": {"uid": "t-crafted", "table": copy.deepcopy(table or TABLE)},
        "paragraphs": [
            {"uid": f"p{i}", "order": i + 1, "text": t}
            for i, t in enumerate(PARAGRAPHS if paragraphs is None else paragraphs)
        ],
        "questions": questions,
    }


def question(uid: str, derivation: str, answer: float, scale: str = "million") -> dict[str, Any]:
    return arithmetic_question(uid, f"Question {uid} about the figures?", derivation, answer, scale)


def sample(derivation: str, answer: float, scale: str = "million", **kw: Any) -> Any:
    [one] = records_to_samples(
        [record([question("q", derivation, answer, scale)], **kw)], "arithmetic", "f"
    )
    return one


def edited(
    metadata: dict[str, Any], cells: dict[tuple[int, int], str], **fields: Any
) -> dict[str, Any]:
    after = copy.deepcopy(metadata)
    for (r, c), text in cells.items():
        after["table"][r][c] = text
    after.update(fields)
    return after


# -- the derivation's written forms ---------------------------------------------------


@pytest.mark.parametrize(
    ("derivation", "answer", "negative_alone", "factor"),
    [
        ("3 + (13) + 26", 16, True, 1.0),  # a number alone in parentheses is negative
        ("(19+11+18)/3", 16, False, 1.0),
        ("(1-15%)*($2.2/15%)", 12.47, False, 1.0),
        ("[(166+178)/2] - [(57+44)/2]", 121.5, False, 1.0),
        ("115.9/431.9", 26.83, False, 100.0),  # a fraction given in percent
        ("- (1,172 + 1,212 + 1,468) / 3", -1284, False, 1.0),
        ("$5,121 +$(-5,946) + $17,592", 16767, False, 1.0),
    ],
)
def test_the_derivation_reproduces_the_published_answer(
    derivation: str, answer: float, negative_alone: bool, factor: float
) -> None:
    reading = reading_of(parse(derivation), answer)
    assert reading is not None
    assert (reading.negative_alone, reading.factor) == (negative_alone, factor)


def test_every_intermediate_value_is_traced() -> None:
    value, trace = evaluate(parse("(1,800-1,500)/1,500"))
    assert trace == [1800, 1500, 300, 1500, 0.2] and value == 0.2


# -- variants of crafted records ------------------------------------------------------


def test_a_varied_total_is_recomputed_from_its_drawn_part_and_rewritten_where_restated() -> None:
    original = sample("1,800 - 1,500", 300)
    result = instantiate([original], 1)
    [variant] = result.samples
    after = variant.metadata
    table = after["table"]
    widgets, gadgets, total = (int(table[r][1].replace(",", "")) for r in (1, 2, 3))
    assert total == widgets + gadgets and total != 1800
    assert gadgets == 460  # only the largest part is drawn
    assert f"${table[3][1]} million" in after["paragraphs"][0]  # the restated total
    assert violations(original.metadata, after) == []
    assert variant.target == after["gold_as_written"] != "300"


CHANGES = [
    ["", "2020", "2021", "Change", "Change in percent"],
    ["Revenue", "1,060", "1,340", "280", "26.4%"],
    ["Costs", "610", "720", "110", "18.0%"],
]
"""A table whose last two columns are computed from the first two."""


def test_a_change_column_beside_a_varied_figure_is_recomputed() -> None:
    original = sample("1,340 - 1,000", 340, table=CHANGES)
    p = plan(original.metadata)
    assert p.reason is None
    written = Document.of(original.metadata).written
    assert [(written(d.place).text, d.op) for d in p.derived] == [("26.4", "%"), ("280", "-")]
    for seed in (1, 2, 3):
        [variant] = instantiate([original], seed).samples
        revenue = variant.metadata["table"][1]
        before, now, change, percent = (float(c.strip("%").replace(",", "")) for c in revenue[1:])
        assert before == 1060 and now != 1340  # 1,060 is no number of the derivation
        assert change == now - before
        assert percent == round((now - before) / before * 100, 1)
        assert violations(original.metadata, variant.metadata) == []


def test_rule_a_number_computed_beside_a_changed_one_is_recomputed() -> None:
    metadata = sample("1,340 - 1,000", 340, table=CHANGES).metadata
    stale = _doc_edit(metadata, {(1, 2): "1,400"}, "1,400 - 1,000", 400)
    found = violations(metadata, stale)
    assert "row 1: 280 equals 1340 - 1060 but is not recomputed with the new values" in found
    assert any(p.startswith("row 1: 26.4 equals (1340 - 1060) / 1060 %") for p in found)
    fresh = _doc_edit(
        metadata, {(1, 2): "1,400", (1, 3): "340", (1, 4): "32.1%"}, "1,400 - 1,000", 400
    )
    assert violations(metadata, fresh) == []


SMALL_CHANGES = [
    ["", "2020", "2021", "Change"],
    ["Revenue", "1,060", "1,340", "280"],
    ["Costs", "101", "117", "16"],
]
"""A change column with a two-digit difference."""


def test_a_short_difference_in_a_table_is_recomputed_and_its_staleness_named() -> None:
    original = sample("117 - 101", 16, table=SMALL_CHANGES)
    written = Document.of(original.metadata).written
    assert [written(d.place).text for d in plan(original.metadata).derived] == ["16"]
    for seed in (1, 2, 3):
        [variant] = instantiate([original], seed).samples
        before, now, change = (int(c) for c in variant.metadata["table"][2][1:])
        assert (before, now) != (101, 117) and change == now - before
    stale = _doc_edit(original.metadata, {(2, 2): "119"}, "119 - 101", 18)
    assert "row 2: 16 equals 117 - 101 but is not recomputed with the new values" in violations(
        original.metadata, stale
    )


def test_a_short_number_in_a_sentence_is_not_taken_for_a_difference() -> None:
    """In a sentence a one- or two-digit number equal to two amounts' difference is
    often chance (a count, a day, a note): it is neither recomputed nor called stale."""
    paragraphs = ["Revenue was $1,340 million in 2021 and $1,330 million, from 10 sites."]
    original = sample("1,340 - 1,330", 10, paragraphs=paragraphs)
    written = Document.of(original.metadata).written
    assert "10" not in [written(d.place).text for d in plan(original.metadata).derived]
    [variant] = instantiate([original], 1).samples
    assert "from 10 sites" in variant.metadata["paragraphs"][0]
    assert violations(original.metadata, variant.metadata) == []


def test_the_divisor_of_an_average_and_a_hundred_stay() -> None:
    p = plan(sample("(35+33)/2", 34).metadata)
    assert p.reason is None
    assert sorted(v.magnitude for v in p.drawn) == [33, 35]
    p = plan(sample("(1,800-1,500)/1,500*100", 20, "percent").metadata)
    assert p.reason is None and all(v.magnitude != 100 for v in p.drawn)


def test_a_short_number_written_twice_is_held_a_longer_one_changes_everywhere() -> None:
    table = [*TABLE, ["Sites", "7", "7"]]
    p = plan(sample("35 - 7", 28, "", table=table).metadata)
    assert p.held == ["7: written in 2 places"]
    assert [v.magnitude for v in p.drawn] == [35]
    p = plan(sample("38.5 - 35", 3.5, "").metadata)
    assert [len(v.places) for v in p.drawn] == [2, 1]  # 38.5 in both cells of its row


def test_left_out_with_a_reason() -> None:
    assert "does not reproduce" in str(plan(sample("1,800 - 1,500", 299).metadata).reason)
    assert "not plain arithmetic" in str(plan(sample("1,800 ## 1,500", 300).metadata).reason)
    none = plan(sample("7 * 9", 63, "").metadata).reason
    assert "not written in the document" in str(none)
    variant, why = variant_of(
        sample("38.5 - 38.5", 0, "").metadata and sample("38.5 - 38.5", 0, ""), 1
    )
    assert variant is None and why


# -- each rule, broken by hand ---------------------------------------------------------


@pytest.fixture
def base() -> Any:
    return sample("1,340 - 1,060", 280)


def _doc_edit(
    metadata: dict[str, Any], cells: dict[tuple[int, int], str], derivation: str, answer: float
) -> dict[str, Any]:
    after = edited(
        metadata, cells, derivation=derivation, answer=answer, gold_as_written=str(answer)
    )
    after["context"] = Document.of(after).context()
    return after


def test_rule_sign_of_every_intermediate_value(base: Any) -> None:
    after = _doc_edit(
        base.metadata,
        {(1, 1): "1,040", (3, 1): "1,500"},
        "1,040 - 1,060",
        -20,
    )
    found = violations(base.metadata, after)
    assert any("changes sign" in p for p in found), found


def test_rule_zero_stays_zero() -> None:
    metadata = sample("(1,340 - 1,060) * 0 + 5", 5, "").metadata
    after = _doc_edit(metadata, {}, "(1,340 - 1,060) * 0 + 5", 5)
    assert violations(metadata, after)  # the published gold kept
    from finmath_tasks.variant_rules import sign_changed

    assert sign_changed([0.0, 1.0], [0.5, 1.0]) == 0


def test_rule_order_and_equality_in_a_row_column_sentence(base: Any) -> None:
    # the margin row writes 38.5% twice: equal values stay equal
    after = _doc_edit(
        base.metadata,
        {(1, 1): "1,300", (3, 1): "1,760", (5, 1): "39.1%"},
        "1,300 - 1,060",
        240,
    )
    found = violations(base.metadata, after)
    assert any("row 5: 38.5 and 38.5 change order or equality" in p for p in found), found
    # a column's order: Widgets drops below Gadgets
    after = _doc_edit(base.metadata, {(1, 1): "450", (3, 1): "910"}, "450 - 1,060", -610)
    found = violations(base.metadata, after)
    assert any(p.startswith("column 1:") for p in found), found
    # a sentence: 35 and 33 swap
    after = _doc_edit(base.metadata, {(1, 1): "1,300", (3, 1): "1,760"}, "1,300 - 1,060", 240)
    after["paragraphs"][0] = after["paragraphs"][0].replace("35 and 33", "31 and 33")
    after["paragraphs"][0] = after["paragraphs"][0].replace("$1,800", "$1,760")
    found = violations(base.metadata, after)
    assert any("paragraph 0 sentence 1" in p for p in found), found


def test_rule_totals_add_up(base: Any) -> None:
    after = _doc_edit(base.metadata, {(1, 1): "1,300"}, "1,300 - 1,060", 240)
    found = violations(base.metadata, after)
    assert any("the total in cell (3, 1) is no longer the sum" in p for p in found), found


SHARES = [
    ["", "2021", "2020"],
    ["Research", "6,577", "6,332"],
    ["Percentage of revenue", "12.7%", "12.8%"],
    ["Marketing", "9,571", "9,242"],
    ["Percentage of revenue", "18.4%", "18.7%"],
    ["Administration", "1,827", "2,144"],
    ["Percentage of revenue", "3.5%", "4.3%"],
    ["Total", "17,975", "17,718"],
    ["Percentage of revenue", "34.6%", "35.8%"],
]
"""Amounts, each with its percentage of revenue in the row below: the amounts' total is
a sum of cells that are not next to each other."""


def test_a_total_across_the_percentages_between_its_parts_is_recomputed() -> None:
    original = sample("6,577 - 6,332", 245, table=SHARES)
    for seed in (1, 2, 3):
        [variant] = instantiate([original], seed).samples
        table = variant.metadata["table"]
        research, marketing, admin, total = (
            int(table[r][1].replace(",", "")) for r in (1, 3, 5, 7)
        )
        assert research != 6577 and total == research + marketing + admin
        assert violations(original.metadata, variant.metadata) == []
    stale = _doc_edit(original.metadata, {(1, 1): "6,600"}, "6,600 - 6,332", 268)
    found = violations(original.metadata, stale)
    assert any("the total in cell (7, 1) is no longer the sum" in p for p in found), found


def test_rule_a_percentage_stays_within_its_range(base: Any) -> None:
    after = _doc_edit(base.metadata, {(1, 1): "1,300", (3, 1): "1,760"}, "1,300 - 1,060", 240)
    after["paragraphs"][1] = "The margin target is 105% of plan."
    found = violations(base.metadata, after)
    assert any("95% leaves [0, 100]" in p for p in found), found


def test_rule_the_published_gold_no_longer_scores(base: Any) -> None:
    after = _doc_edit(base.metadata, {(1, 1): "1,340"}, "1,340 - 1,060", 280)
    found = violations(base.metadata, after)
    assert any("still scores under the official EM" in p for p in found), found
    close = sample("1,800 / 1,500", 1.2, "").metadata
    after = _doc_edit(close, {(1, 1): "1,341", (3, 1): "1,801"}, "1,801 / 1,500", 1.2)
    assert any("still scores" in p for p in violations(close, after))


def test_a_gold_that_is_not_the_variant_derivations_is_caught(base: Any) -> None:
    after = _doc_edit(base.metadata, {(1, 1): "1,300", (3, 1): "1,760"}, "1,300 - 1,060", 250)
    assert any("is not the derivation's" in p for p in violations(base.metadata, after))


# -- one line for unusable data and an empty variant ---------------------------------


@pytest.mark.slow
def test_no_instantiable_question_is_one_line(tmp_path: Path, no_data_env: None) -> None:
    write_split(tmp_path, [record([question("q", "1,800 - 1,500", 299)])])
    with pytest.raises(UsageError, match="none of 1 questions could be instantiated"):
        tatqa(data_dir=str(tmp_path), variant="fresh", variant_seed=1)
    run = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval", "finmath_tasks/tatqa", "--model",
         "mockllm/model", "-T", f"data_dir={tmp_path}", "-T", "variant=fresh", "-T",
         "variant_seed=1", "--log-dir", str(tmp_path / "logs"), "--display", "plain"],
        capture_output=True, text=True,
    )  # fmt: skip
    said = " ".join((run.stdout + run.stderr).split())  # Inspect wraps it to the terminal
    assert "Traceback" not in said
    assert "tatqa-dev fresh seed 1: none of 1 questions could be instantiated" in said
    assert "finmath variants tatqa --seed 1 --split dev" in said


def test_finmath_variants_on_malformed_data_is_one_line(
    tmp_path: Path, no_data_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_split(tmp_path, [record([question("q", "1,800 - 1,500", 300)])])
    path.write_text(json.dumps([{"questions": "not a list"}]), encoding="utf-8")
    assert main(["variants", "tatqa", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "malformed" in err[0] and "tatqa_dataset_dev.json" in err[0]
    path.write_text("{not json", encoding="utf-8")
    assert main(["variants", "tatqa", "--data-dir", str(tmp_path)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_finmath_variants_lists_and_shows_crafted_questions(
    tmp_path: Path, no_data_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    write_split(
        tmp_path,
        [record([question("q1", "1,800 - 1,500", 300), question("q2", "1,800 - 1,500", 299)])],
    )
    assert main(["variants", "tatqa", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "tatqa dev fresh seed 1: 1 of 2 instantiated, 1 left out"
    assert out[1].startswith("  q2: the derivation does not reproduce")
    assert main(["variants", "tatqa", "--show", "q1", "--data-dir", str(tmp_path)]) == 0
    shown = capsys.readouterr().out
    assert "gold 300 million" in shown and "replaced: " in shown and " * " in shown


# -- never raises ------------------------------------------------------------------------

DERIVATION_TEXT = st.text(alphabet="0123456789.,%$()[]+-*/x÷ million", max_size=30)


@settings(max_examples=200, deadline=None)
@given(DERIVATION_TEXT, st.floats(allow_nan=False, allow_infinity=False, width=32))
def test_a_question_with_any_derivation_is_varied_or_left_out_with_a_reason(
    derivation: str, answer: float
) -> None:
    with contextlib.suppress(DerivationError):  # the only error the parser raises
        parse(derivation)
    result = instantiate([sample(derivation, answer)], 1)
    assert result.total == 1
    for reason in result.left_out.values():
        assert reason.strip()


@st.composite
def computed_table(draw: st.DrawFn) -> tuple[list[list[str]], str, float]:
    """A table of two years per row, each row with its change and its percent change
    (some left out, some written wrong), and a derivation over two of its figures."""
    rows = [["", "2020", "2021", "Change", "Change in percent"]]
    for name in ("Revenue", "Costs", "Staff"):
        before = draw(st.integers(100, 99_999))
        near = st.integers(max(100, before - 99), before + 99)  # a change of one or two digits
        now = draw(st.one_of(st.integers(100, 99_999), near))
        change = now - before + draw(st.sampled_from([0, 0, 0, 1]))  # now and then wrong
        percent = f"{abs(change) / before * 100:.1f}%"
        rows.append([name, f"{before:,}", f"{now:,}", f"{abs(change):,}", percent])
    r1, r2 = draw(st.sampled_from([(1, 2), (2, 1), (1, 3), (3, 2)]))
    c = draw(st.sampled_from([1, 2]))
    a, b = (float(rows[r][c].replace(",", "")) for r in (r1, r2))
    return rows, f"{rows[r1][c]} - {rows[r2][c]}", a - b


@settings(max_examples=60, deadline=None)
@given(computed_table(), st.integers(1, 5))
@example(  # a two-digit change column: 16 beside 101 and 117 went stale while 15.8% moved
    (
        [
            ["", "2020", "2021", "Change", "Change in percent"],
            ["Revenue", "117", "100", "17", "14.5%"],
            ["Costs", "101", "117", "16", "15.8%"],
            ["Staff", "100", "100", "0", "0.0%"],
        ],
        "117 - 101",
        16.0,
    ),
    1,
)
def test_a_table_of_computed_columns_is_varied_consistently_or_left_out(
    drawn: tuple[list[list[str]], str, float], seed: int
) -> None:
    table, derivation, answer = drawn
    original = sample(derivation, answer, table=table)
    result = instantiate([original], seed)
    assert result.total == 1
    for variant in result.samples:
        assert violations(original.metadata, variant.metadata) == []
        for old, new in zip(table[1:], variant.metadata["table"][1:], strict=True):
            before, now, change = (int(c.replace(",", "")) for c in old[1:4])
            if change == abs(now - before):  # a right change column stays right
                before, now, change = (int(c.replace(",", "")) for c in new[1:4])
                assert change == abs(now - before), (old, new)
    for reason in result.left_out.values():
        assert reason.strip()
