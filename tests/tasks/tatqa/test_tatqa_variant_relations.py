"""Relations of TAT-QA's originals kept by their fresh variants, on the real dev file: the
three records where a total, its text and its percent column were left stale, checked by
hand, and the independent audit (:mod:`finmath_tasks.variant_audit`) over seed 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from finmath_tasks.tasks.tatqa.variants import instantiate, load_dataset
from finmath_tasks.variant_audit import audit_records, audit_split, read_cell

pytestmark = pytest.mark.realdata

NAMED = {
    "2e569f93-d58b-44a7-a947-ea6784b0623d": "income from vessel operations",
    "bd8bb8d3-c7e9-4a7f-be23-97b27a29f74e": "a total of the three lines above it",
    "eca3afa3-cd52-44ed-9e62-2003038a0926": "a total, and its percent column",
}


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
    for sample_id, why in result.left_out.items():
        assert why, sample_id  # left out with its reason


def test_the_audit_of_seed_1_on_dev(data_dir: Path) -> None:
    """Measured: of 619 variants (717 questions, 86.3%), 3 break a real relation of their
    original (97 of 633 before totals were found both ways and across columns, short
    percent-change columns and ratios recomputed or held, the text's figures in millions
    rewritten and three-number relations held); the ones left are named in
    docs/variants.md."""
    [row] = audit_split("tatqa", "dev", [1], str(data_dir))
    assert row.coverage >= 0.85
    assert len(row.broken_real) <= 3, row.broken_real
    kinds = {r.split()[0] for broken in row.broken_real.values() for r in broken}
    assert "three" not in kinds
