"""Where a MathHay variant's quantities are written, which are held and why, and how the
program, its comments and the documents are rewritten (no sandbox needed)."""

from __future__ import annotations

from pathlib import Path

from mathhay_fixtures import RELEASE, RELEVANT, write_release

from finmath_tasks.tasks.mathhay.dataset import load_data
from finmath_tasks.tasks.mathhay.haystack import TokenPool
from finmath_tasks.tasks.mathhay.variant_places import find_written, plan
from finmath_tasks.tasks.mathhay.variants import (
    recites,
    rewrite_parts,
    rewrite_program,
    written_numbers,
)
from finmath_tasks.variant_rules import written_violation

PROGRAM = """def solve():
    revenue = 13485  # net income of $13,485 million
    growth = 0.06
    return revenue * growth
"""


def test_a_quantity_written_once_is_a_variable_and_every_place_is_rewritten() -> None:
    documents = ["Net income was $13,485 million in Q2. Sales grew 6% on the year."]
    question = "What is 6% of the net income of $13,485 million?"
    p = plan(question, documents, PROGRAM)
    assert p.reason is None
    assert [v.value for v in p.variables] == [13485.0, 0.06]
    assert [(pl.part, pl.written.text) for pl in p.variables[0].places] == [
        (0, "13,485"),
        (1, "13,485"),
    ]
    after = rewrite_parts([question, *documents], p.variables, [12907.0, 7.0])
    assert after == [
        "What is 7% of the net income of $12,907 million?",
        "Net income was $12,907 million in Q2. Sales grew 7% on the year.",
    ]
    program = rewrite_program(PROGRAM, p.variables, [12907.0, 7.0])
    # the literal, and the comment that writes it (the judge reads the gold solution)
    assert "revenue = 12907  # net income of $12,907 million" in program
    assert "growth = 0.07" in program


def test_a_short_number_written_in_two_places_with_other_words_is_held() -> None:
    documents = ["GOOG fell 6% this year.\nThe fund charges 6% in fees. Net income was 13,485."]
    p = plan("?", documents, PROGRAM)
    assert [v.value for v in p.variables] == [13485.0]
    assert any(h.startswith("0.06: written 2 times") for h in p.held)


def test_a_number_derived_beside_a_quantity_holds_it() -> None:
    documents = ["Net income was 13,485 and costs were 2,515, for revenue of 16,000."]
    p = plan("?", documents, "def solve():\n    return 13485 * 2\n")
    # the total, or a part read as the total less the quantity
    assert p.reason is not None and "written beside it equals 16000 - 13485" in p.reason


def test_a_share_written_beside_a_quantity_holds_it() -> None:
    documents = ["Of 17,336 specimens tested, 876 were positive (5.05%)."]
    p = plan("?", documents, "def solve():\n    return 876 * 2\n")
    assert (
        p.reason is not None
        and "'5.05' written beside it is 876 as a percentage of 17336" in p.reason
    )


def test_a_column_total_of_a_flattened_table_holds_its_parts() -> None:
    # rows of two columns, one cell a line, the last row the totals (of three parts: no
    # pair of cells beside the quantity gives it)
    cells = ["Q1", "4,120", "3,310", "Q2", "13,485", "2,205", "Q3", "1,010", "1,111"]
    cells += ["Total", "18,615", "6,626"]
    p = plan("?", ["\n".join(cells)], "def solve():\n    return 13485 + 1\n")
    assert p.reason is not None and "'18,615' is a total over it" in p.reason


def test_a_currency_code_against_the_digits_does_not_hide_the_number() -> None:
    [w] = find_written("revenue of RMB221.87 billion")
    assert (w.text, w.value, w.scale) == ("221.87", 221.87, 1e9)
    p = plan("?", ["Revenue was RMB221.87 billion."], "def solve():\n    return 221.87 / 3\n")
    assert [v.value for v in p.variables] == [221.87]


def test_conventions_and_question_only_numbers_are_not_varied() -> None:
    p = plan(
        "If it grows by 250 units, what is 2 times revenue?",
        ["Revenue was 120 million."],
        "def solve():\n    return (120 + 250) * 2\n",
    )
    assert [v.value for v in p.variables] == [120.0]
    assert p.held == [
        "250: written in the question only (a parameter of the question, not a document's)"
    ]


def test_the_order_rule_sees_numbers_of_one_sentence() -> None:
    before = ["?", "AMZN fell 13% and GOOG fell 6% since 2022."]
    p = plan(before[0], before[1:], "def solve():\n    return 13 - 6\n")
    assert [v.value for v in p.variables] == [13.0, 6.0]
    kept = rewrite_parts(before, p.variables, [12.0, 7.0])
    swapped = rewrite_parts(before, p.variables, [5.0, 7.0])
    ok, broken = written_numbers(before, kept), written_numbers(before, swapped)
    assert ok is not None and broken is not None
    assert written_violation(ok) is None
    assert "no longer compare the same way" in str(written_violation(broken))


def test_the_published_answer_is_recited_only_where_it_still_scores() -> None:
    assert recites(7.0, 7.0, "What is the difference?")
    assert not recites(7.0, 8.0, "What is the difference?")


def test_a_variant_haystack_is_the_original_s_with_the_documents_spliced_in(
    tmp_path: Path,
) -> None:
    """Same pool order, irrelevant tokens and insertion offsets; only the documents'
    text differs (a changed document of another token count moves nothing else)."""
    root = write_release(tmp_path)
    data = load_data(str(tmp_path), RELEASE, "full", ["ss2d"])
    pool = TokenPool(data.pool_documents, data.pool_size)
    [key] = data.questions
    question = data.questions[key]
    order = data.order(key)
    changed = [RELEVANT[0].replace("120", "1,234,567"), RELEVANT[2].replace("15", "16")]
    args = (order, question.documents, ["middle", "last"], 600, 40)
    original, facts = pool.layout(*args)
    variant, variant_facts = pool.layout(*args, spliced=changed)
    assert (variant_facts.rest, variant_facts.irrelevant_tokens) == (
        facts.rest,
        facts.irrelevant_tokens,
    )
    text, new_text = pool.decode(original), pool.decode(variant)
    for old, new in zip(question.documents, changed, strict=True):
        text = text.replace(old, "<doc>")
        new_text = new_text.replace(new, "<doc>")
    assert new_text == text and text.count("<doc>") == 2
    assert variant_facts.document_tokens != facts.document_tokens
    assert root.is_dir()
