"""Relations of TAT-QA's originals kept by their fresh variants, on the real files: the
records named where a total, its text and its percent column were left stale, checked by
hand; the records whose variants broke a relation the audit reads, each for its cause;
and the independent audit (:mod:`finmath_tasks.variant_audit`) over seed 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from finmath_tasks.tasks.tatqa.variants import instantiate, load_dataset
from finmath_tasks.variant_audit import audit_records, audit_split, read_cell
from finmath_tasks.variants import find_numbers

pytestmark = pytest.mark.realdata

NAMED = {
    "2e569f93-d58b-44a7-a947-ea6784b0623d": "income from vessel operations",
    "bd8bb8d3-c7e9-4a7f-be23-97b27a29f74e": "a total of the three lines above it",
    "eca3afa3-cd52-44ed-9e62-2003038a0926": "a total, its percent column, its text",
}
ALWAYS = ("2e569f93", "bd8bb8d3", "eca3afa3")
"""Instantiated at every seed of 1-5 (bd8bb8d3 was left out at every seed, 2e569f93 at
seeds 1 and 4, before a total's run on its other side took its change)."""

CAUSES = {
    ("dev", "9332c840-68f6-43e1-a06c-902dae3fef81"): "an as-revised column: no evidence",
    ("dev", "e151e953-f5ab-4041-8e6f-7aec08ed5a60"): "an as-revised column: no evidence",
    ("test", "fe113b8aef0f01f9d48afe157fd98009"): "(9,327)% read on signed figures",
    ("dev", "3d8a0eb1-e9be-49e7-855c-cce8b1f2ee03"): "a row's percent change of figures that stay",
    ("test", "7f5203a09a509ad96e94ca5d3d7cb647"): "a 2% beside an average of two years",
    ("test", "22d19a4091fba29a4b7fdfffbb7a8080"): "a (34.1)% whose % follows its parenthesis",
    ("dev", "dc1e344f-db11-4415-af80-728cd87e1b6b"): "a 2% beside an average of two years",
    ("test", "a30c0da091bbd33f665ab11a25117074"): "Net Income = a + b - c in one column only",
    ("dev", "775c21fd-9c4c-44d7-9879-81c2ca6d2420"): "a $0.4 million difference in a sentence",
    ("test", "aed11f116a0b4b2cbddaf5e095c59153"): "$9.8 million following 9,834 thousand",
    ("test", "4d01ba962642e28c284761f7f8edde1e"): "figures in millions that still add up",
}
"""Records whose variants broke a real relation of the audit's (seeds 1-5), fixed in the
maker or told apart as chance by the audit."""


def _value(table: list[list[str]], r: int, c: int) -> float:
    cell = read_cell(table[r][c])
    return 0.0 if cell is None else cell.value


def _by_hand(sample_id: str, before: dict[str, Any], after: dict[str, Any]) -> None:
    old, new = before["table"], after["table"]
    if sample_id.startswith("2e569f93"):
        for c in (1, 2):
            rows = sum(_value(new, r, c) for r in range(2, 10))
            assert _value(new, 10, c) == pytest.approx(rows)  # income from vessel operations
            assert _value(new, 10, c) == pytest.approx(_value(new, 11, c) + _value(new, 12, c))
            assert _value(new, 13, c) == _value(new, 10, c)
    elif sample_id.startswith("bd8bb8d3"):
        for c in (1, 2):
            lines = sum(_value(new, r, c) for r in (2, 3, 4))
            assert _value(new, 5, c) == pytest.approx(lines)
    else:
        total = sum(_value(new, r, 1) for r in range(2, 7))
        assert _value(new, 7, 1) == pytest.approx(total)
        for r in (4, 5, 7):
            a, b = _value(new, r, 1), _value(new, r, 2)
            assert round(abs((a - b) / b * 100)) == abs(_value(new, r, 3)), (r, new[r])
        for r, text in ((4, after["paragraphs"][5]), (5, after["paragraphs"][6])):
            # "were $793.4 million, a decrease of $50.1 million": 843.5 - 793.4
            written = [w.value for w in find_numbers(text)]
            now, before = _value(new, r, 1), _value(new, r, 2)
            assert written[1] == now and written[2] == pytest.approx(round(before - now, 1))
    assert old != new


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_the_three_stale_records_are_consistent_or_left_out(seed: int, data_dir: Path) -> None:
    samples = [s for s in load_dataset("dev", str(data_dir)) if str(s.id) in NAMED]
    assert len(samples) == 3
    result = instantiate(samples, seed)
    for variant in result.samples:
        before = next(s for s in samples if s.id == variant.id)
        _by_hand(str(variant.id), dict(before.metadata or {}), dict(variant.metadata or {}))
        audited = audit_records("tatqa", before.metadata or {}, variant.metadata or {})
        assert audited.real == [], [r.describe() for r in audited.real]
    assert sorted(str(v.id)[:8] for v in result.samples) == sorted(ALWAYS), result.left_out


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_the_records_of_each_fixed_cause_break_no_real_relation(seed: int, data_dir: Path) -> None:
    made = 0
    for split in ("dev", "test"):
        wanted = {sid for s, sid in CAUSES if s == split}
        samples = [s for s in load_dataset(split, str(data_dir)) if str(s.id) in wanted]
        assert len(samples) == len(wanted)
        for variant in instantiate(samples, seed).samples:
            before = next(s for s in samples if s.id == variant.id)
            audited = audit_records("tatqa", before.metadata or {}, variant.metadata or {})
            assert audited.real == [], (variant.id, [r.describe() for r in audited.real])
            made += 1
    assert made >= len(CAUSES) - 2  # each is instantiated, or (two at most) left out


def test_the_audit_of_seed_1_on_dev(data_dir: Path) -> None:
    """Measured: of 622 variants (717 questions, 86.8%), none breaks a real relation of its
    original (3 of 619 under rules 3, 97 of 633 under rules 2); the ones the earlier rules
    broke are :data:`CAUSES` and docs/variants.md names them."""
    [row] = audit_split("tatqa", "dev", [1], str(data_dir))
    assert row.coverage >= 0.85
    assert row.broken_real == {}
