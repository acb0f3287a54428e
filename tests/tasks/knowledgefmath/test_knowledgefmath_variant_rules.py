"""The rules that decide what a FinanceMath variant varies (our own questions; no sandbox)."""

from __future__ import annotations

import random

from inspect_ai.dataset import Sample

from finmath_tasks.tasks.knowledgefmath.variants import (
    Draft,
    Plan,
    _candidate,
    narrowed_plans,
    plan,
    rewrite_parts,
    rewrite_program,
)


def values(p: Plan) -> list[float]:
    return [v.literal.value for v in p.variables]


def test_percent_scale_word_and_separators_are_located() -> None:
    question = "A firm earns $1.2 million on assets of 3,400,000 at a 7.5% margin."
    program = "def solution():\n    return 1200000 / 3400000 * 0.075"
    p = plan(question, [], program)
    assert p.reason is None and values(p) == [1200000.0, 3400000.0, 0.075]
    new = [1.4, 3100000.0, 8.1]
    [text] = rewrite_parts([question], p.variables, new)
    assert text == "A firm earns $1.4 million on assets of 3,100,000 at a 8.1% margin."
    assert rewrite_program(program, p.variables, new) == (
        "def solution():\n    return 1400000 / 3100000 * 0.081"
    )


def test_exponents_are_structure_not_values() -> None:
    question = "Cash flows of 120 and 120 arrive in years 1 and 2 at a rate of 5%."
    program = "def solution():\n    return 120 / 1.05 + 120 / 1.05 ** 2"
    # 120 is used twice and written twice (held), 2 is an exponent (the text's "years 1
    # and 2" stays), 1.05 is not how the text writes 5%: nothing varies
    p = plan(question, [], program)
    assert p.reason is not None and "2:" not in p.reason and "ambiguous" in p.reason


def test_a_number_worked_out_by_hand_leaves_the_question_out() -> None:
    question = "Bid 41.45 and offer 41.50: what is the effective spread of a trade at 41.50?"
    program = "def solution():\n    midpoint = 41.475\n    return 2 * (41.50 - midpoint)"
    assert "worked out by hand" in str(plan(question, [], program).reason)


def test_one_plus_a_rate_follows_the_rate() -> None:
    question = "A dividend of $2 grows at 4% with a required return of 9%."
    program = "def solution():\n    return 2 * 1.04 / (0.09 - 0.04)"
    p = plan(question, [], program)
    assert p.reason is None
    rate = next(v for v in p.variables if v.literal.value == 0.04)
    assert [lit.value for lit, _ in rate.linked] == [1.04]
    new = [v.written.value for v in p.variables]
    new[p.variables.index(rate)] = 5.0
    assert "2 * 1.05 / (0.09 - 0.05)" in rewrite_program(program, p.variables, new)


def test_shares_stay_a_whole() -> None:
    question = "A portfolio holds 30% in stocks returning 8% and 70% in bonds returning 3%."
    program = "def solution():\n    return 0.30 * 0.08 + 0.70 * 0.03"
    p = plan(question, [], program)
    assert p.reason is None and len(p.shares) == 1
    sample = Sample(id="q", input=question, metadata={"gold_program": program})
    for seed in range(20):
        draft = Draft(sample, p, rng=random.Random(seed))
        candidate = _candidate(draft)
        assert candidate is not None
        drawn = dict(zip([v.literal.value for v in p.variables], candidate[0], strict=True))
        assert round(drawn[0.30] + drawn[0.70], 9) == 100.0


def test_a_total_beside_its_parts_is_recomputed_a_one_digit_one_is_not() -> None:
    table = "| part | amount |\n|---|---|\n| a | 450 |\n| b | 300 |\n| total | 750 |"
    program = "def solution():\n    return 450 / 1000"
    question = "What share of the budget of $1,000 is part a?"
    p = plan(question, [table], program)
    assert p.reason is None and len(p.sums) == 1 and p.sums[0].place.written.text == "750"
    new = [500.0 if v.literal.value == 450 else v.written.value for v in p.variables]
    [_, text] = rewrite_parts([question, table], p.variables, new, p.sums)
    assert "| a | 500 |" in text and "| total | 800 |" in text
    # a two-digit total beside its parts is recomputed too (it used to leave the question out)
    short = "| part | amount |\n|---|---|\n| a | 45 |\n| b | 30 |\n| total | 75 |"
    p = plan(question, [short], "def solution():\n    return 45 / 1000")
    assert p.reason is None and [t.place.written.text for t in p.sums] == ["75"]
    # a relation with a number written elsewhere (not in the varied number's sentence,
    # row or column) is a coincidence: the question is kept, that number stays
    text = "Part a costs $45 of the budget. The office has 30 desks and 75 chairs."
    p = plan(text, [], "def solution():\n    return 45 / 1000")
    assert p.reason is None and not p.sums


def test_a_value_written_once_and_used_twice_varies_in_every_literal() -> None:
    table = "| firm | sales |\n|---|---|\n| A | 500 |\n| B | 350 |\n| others | 40 |"
    program = "def solution():\n    return (500 + 350) / (500 + 350 + 40) * 100"
    p = plan("What is the two firms' concentration ratio?", [table], program)
    assert p.reason is None and not p.held and values(p) == [500.0, 350.0, 40.0]
    new = [400.0, 370.0, 30.0]
    assert rewrite_program(program, p.variables, new) == (
        "def solution():\n    return (400 + 370) / (400 + 370 + 30) * 100"
    )
    # a one-digit value may be the formula's own constant too (the 2 of 1 / 2): held
    question = "A delta of 130 and a gamma of -70 for a price move of $2.00."
    program = "def solution():\n    return 130 * -2 + (1 / 2) * -70 * 2 ** 2"
    assert "2: used by 3 literals" in " ".join(plan(question, [], program).held)


def test_a_percent_and_its_fraction_vary_together() -> None:
    question = "40% fail within a year: P(failure) = 0.40. P(success) = 0.55, that is 55%."
    program = "def solution():\n    f = 0.40\n    return (0.55 - 0.5 * (1 - f)) / f"
    p = plan(question, [], program)
    assert p.reason is None and values(p) == [0.4, 0.55]
    rate = p.variables[0]
    new = [v.written.value for v in p.variables]
    new[0] = 0.37 if rate.factor == 1 else 37.0
    [text] = rewrite_parts([question], p.variables, new)
    assert "37% fail" in text and "P(failure) = 0.37" in text
    assert "f = 0.37" in rewrite_program(program, p.variables, new)


def test_narrowed_plans_hold_one_more_value_each() -> None:
    # 9% can only move down (10 would be a two-digit rate) and must stay above the 8%
    # coupon: a plan holding 9% lets 7% vary
    question = "A coupon of 8% and spot rates of 7% and 9%."
    program = "def solution():\n    return 8 / (1 + 0.07) + (8 + 100) / (1 + 0.09) ** 2 + 0.08"
    full = plan(question, [], program)
    assert values(full) == [0.07, 0.09]
    narrower = narrowed_plans(question, [], program, full)
    assert [values(q) for q in narrower] == [[0.09], [0.07]]
    assert any(h.startswith("0.09: held so that") for h in narrower[1].held)


def test_the_gold_moves_rule_reads_the_gold_as_written() -> None:
    from finmath_tasks.scorers.comparisons import GoldNumber
    from finmath_tasks.tasks.knowledgefmath.variant_rules import recites
    from finmath_tasks.variants import gold_like

    # a new value that rounds back to the published answer at its precision: left out
    gold = GoldNumber(gold_like(0.5401, "0.54", 0.54))
    assert str(gold.written) == "0.54" and recites(0.54, gold)
    # "0.50" asks two decimals: 0.54 does not score on it (read as the float 0.5, one
    # decimal, a rounding comparison would take 0.54 for 0.5 and leave the question out)
    assert not recites(0.54, GoldNumber("0.50"))
    assert recites(0.54, 0.5)
