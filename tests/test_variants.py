"""The shared pieces of fresh variants: locating, drawing and writing numbers."""

from __future__ import annotations

import logging
import math
import subprocess
import sys
from typing import Any

import pytest
from inspect_ai.dataset import MemoryDataset, Sample

from finmath_tasks.errors import UsageError
from finmath_tasks.loading import attach_provenance, dataset_provenance
from finmath_tasks.variants import (
    Instantiation,
    accept_gold,
    apply_fresh,
    derived_fingerprint,
    derived_from,
    draw_written,
    find_numbers,
    format_like,
    gold_like,
    question_rng,
    replace_spans,
)


def test_find_numbers_reads_separators_percents_scale_words_and_signs() -> None:
    text = "Cost $ 57,000, a rate of 1.25%, 3.5 million units and a change of -8.1 in 2019."
    found = find_numbers(text)
    assert [(w.text, w.value, w.decimals, w.grouped, w.percent, w.scale) for w in found] == [
        ("57,000", 57000.0, 0, True, False, 1.0),
        ("1.25", 1.25, 2, False, True, 1.0),
        ("3.5", 3.5, 1, False, False, 1e6),
        ("-8.1", -8.1, 1, False, False, 1.0),
        ("2019", 2019.0, 0, False, False, 1.0),
    ]
    assert text[found[0].start : found[0].end] == "57,000"


def test_format_like_keeps_precision_separators_and_sign() -> None:
    [grouped, rate, negative] = find_numbers("$ 57,000 and 0.40 and -19.0")
    assert format_like(61234, grouped) == "61,234"
    assert format_like(0.5, rate) == "0.50"
    assert format_like(-20.0, negative) == "-20.0"


def test_draw_keeps_sign_precision_magnitude_and_trailing_zeros() -> None:
    rng = question_rng(1, "q")
    for value, decimals in [(57000.0, 0), (0.0075, 4), (-8.1, 1), (3.0, 0), (3700000.0, 0)]:
        for _ in range(50):
            new = draw_written(value, decimals, rng)
            assert new is not None and new != value
            assert (new > 0) == (value > 0)
            assert math.floor(math.log10(abs(new))) == math.floor(math.log10(abs(value)))
            assert round(new, decimals) == new
            if value == 3700000.0:
                assert new % 100000 == 0  # written to the hundred thousand, as the original
    for _ in range(50):  # trailing zeros kept only where such a value lies within the spread
        assert 14 <= (draw_written(20.0, 0, rng) or 0) <= 26
        assert draw_written(3.0, 0, rng) in (2.0, 4.0)
    assert draw_written(1.0, 0, rng) is None  # no whole number near 1 keeps its magnitude
    assert draw_written(0.0, 2, rng) is None


def test_the_seeded_draw_is_the_same_in_another_process() -> None:
    rng = question_rng(7, "validation-3")
    here = [rng.random() for _ in range(3)]
    code = (
        "from finmath_tasks.variants import question_rng;"
        "r = question_rng(7, 'validation-3'); print([r.random() for _ in range(3)])"
    )
    there = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert there.strip() == repr(here)
    assert here[0] != question_rng(8, "validation-3").random()


def test_derived_numbers_are_found_and_chance_ones_are_not() -> None:
    others = find_numbers("parts 45,000 and 10,000 make 55,000; rate 14.0")
    values = [w.value for w in others]
    # a total of a varied part and another number: derived
    found = derived_from([45000.0], values[1:], others[2:])
    assert found is not None and found[0].text == "55,000" and found[1] == "45000 + 10000"
    # adding a tiny number to an existing one is no derivation (14.0075 rounds to 14.0)
    assert derived_from([0.0075], [14.0], find_numbers("14.0")) is None
    # a one-digit number is not checked
    assert derived_from([3.0], [4.0], find_numbers("7")) is None


def test_accept_gold_rejects_flips_blowups_and_non_numbers() -> None:
    assert accept_gold(-8184.0, -5537.8) is None
    assert "sign" in str(accept_gold(-8184.0, 12.0))
    assert "factor of 10" in str(accept_gold(100.0, 1001.0))
    assert "factor of 10" in str(accept_gold(100.0, 9.9))
    assert "finite" in str(accept_gold(1.0, math.inf))
    assert "not a number" in str(accept_gold(1.0, "yes"))


def test_a_recomputed_gold_is_written_at_the_original_gold_s_precision() -> None:
    # the original is the program's value rounded (0.798 for 0.79781): as many
    # significant digits
    assert gold_like(0.7358256599140525, "0.798", 0.7978142076502763) == "0.736"
    assert gold_like(0.09720379000000001, "0.043", 0.04286875) == "0.097"
    assert gold_like(12.3456, "4.56", 4.5612) == "12.3"
    # the original is the program's value itself (float noise aside): its decimals, never
    # fewer significant digits, and no further than 0.1% from the new value
    assert gold_like(0.5, "0.54", 0.54) == "0.50"  # trailing zero kept: two decimals
    assert gold_like(0.5025000000000001, "0.54", 0.5400000000000001) == "0.503"
    assert gold_like(0.020000000000000018, "0.1", 0.1) == "0.02"  # never "0.0"
    assert gold_like(5.714285714285714, "10.0", 10.0) == "5.71"
    assert gold_like(-0.6666666666666666, "-0.5", -0.5) == "-0.667"
    assert gold_like(1437.5, "1500.0", 1500.0) == "1437.5"
    assert gold_like(2.5, "3", None) == "2.5"  # no program value: taken as exact
    # never a float's noise, never an exponent
    for value in (0.1 + 0.2, 1e-7 / 3, 123456789.123456789):
        text = gold_like(value, "0.3", 0.3)
        assert "e" not in text.lower() and len(text.replace("-", "").replace(".", "")) <= 16
        assert math.isclose(float(text), value, rel_tol=1e-3)
    with pytest.raises(ValueError, match="finite"):
        gold_like(math.nan, "0.5", 0.5)


def test_replace_spans() -> None:
    assert replace_spans("a 1 b 22 c", [(6, 8, "33"), (2, 3, "4")]) == "a 4 b 33 c"


# -- the one way a benchmark applies -T variant= to its dataset -----------------------


def _instantiate_every_other(samples: list[Any], seed: int) -> Instantiation:
    kept = [s for i, s in enumerate(samples) if i % 2 == 0]
    left = {str(s.id): "no number to vary" for i, s in enumerate(samples) if i % 2}
    return Instantiation(seed, kept, left)


def _loaded(n: int) -> MemoryDataset:
    dataset = MemoryDataset(
        [Sample(id=f"q{i}", input="?", target="1") for i in range(n)],
        name="bench-dev",
        location="/data/bench/dev.json",
    )
    return attach_provenance(dataset, {"fingerprint": "0a8adb06", "files": ["dev.json"]})


def test_apply_fresh_leaves_the_original_questions_untouched() -> None:
    dataset = _loaded(3)
    assert apply_fresh("bench", dataset, "original", 0, "dev", _instantiate_every_other) == (
        dataset,
        None,
    )


def test_apply_fresh_names_counts_and_marks_the_variant(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        fresh, summary = apply_fresh(
            "bench", _loaded(5), "fresh", 2, "dev", _instantiate_every_other
        )
    assert [s.id for s in fresh] == ["q0", "q2", "q4"]
    assert fresh.name == "bench-dev fresh seed 2: 3 of 5 instantiated"
    assert fresh.location == "/data/bench/dev.json"
    assert summary is not None and summary["left_out"] == {
        "q1": "no number to vary",
        "q3": "no number to vary",
    }
    provenance = dataset_provenance(fresh)
    assert provenance is not None
    assert provenance["fingerprint"] == derived_fingerprint("0a8adb06", 2) != "0a8adb06"
    assert provenance["variant"] == {"name": "fresh", "seed": 2, "original_fingerprint": "0a8adb06"}
    assert "`finmath variants bench --seed 2 --split dev` lists the 2 left out" in caplog.text
    # a benchmark whose rules changed what a seed gives names their version: another data
    # fingerprint, so its variants are never taken for those of its earlier rules
    later, _ = apply_fresh("bench", _loaded(5), "fresh", 2, "dev", _instantiate_every_other, "2")
    provenance = dataset_provenance(later)
    assert provenance is not None and provenance["variant"]["rules"] == "2"
    assert provenance["fingerprint"] == derived_fingerprint("0a8adb06", 2, "2")
    assert provenance["fingerprint"] != derived_fingerprint("0a8adb06", 2)
    # or its instantiation records the version (the task need not pass it)

    def versioned(samples: list[Any], seed: int) -> Instantiation:
        made = _instantiate_every_other(samples, seed)
        made.rules = "3"
        return made

    recorded, _ = apply_fresh("bench", _loaded(5), "fresh", 2, "dev", versioned)
    provenance = dataset_provenance(recorded)
    assert provenance is not None and provenance["variant"]["rules"] == "3"
    assert provenance["fingerprint"] == derived_fingerprint("0a8adb06", 2, "3")


def test_apply_fresh_refuses_a_split_with_nothing_instantiated_in_one_line() -> None:
    def none_kept(samples: list[Any], seed: int) -> Instantiation:
        return Instantiation(seed, [], {str(s.id): "the gold reads no number (x)" for s in samples})

    with pytest.raises(UsageError) as refused:
        apply_fresh("bench", _loaded(2), "fresh", 3, "dev", none_kept)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("bench-dev fresh seed 3: none of 2 questions could be instantiated")
    assert "(e.g. the gold reads no number)" in message
    assert "`finmath variants bench --seed 3 --split dev` lists why" in message


def test_factor_of_reads_a_written_number_as_a_programs_literal() -> None:
    from finmath_tasks.variants import factor_of, find_numbers

    [plain, percent, scaled] = find_numbers("sold 1,250 units at 4.5% for $2.5 million")
    assert factor_of(1250, plain) == 1.0
    assert factor_of(-1250, plain) == 1.0  # the sign is the program's
    assert factor_of(0.045, percent) == 0.01
    assert factor_of(4.5, percent) == 1.0
    assert factor_of(2_500_000, scaled) == 1e6
    assert factor_of(2.5, scaled) == 1.0
    assert factor_of(1251, plain) is None and factor_of(0.45, percent) is None
