"""Every fresh variant of seeds 1-5 keeps the rules (real data): the original and the variant
gold programs run again with every intermediate value traced (FinanceMath's ``solution()``
in the bubblewrap sandbox, FinQA's steps by the DSL executor), the written numbers and the
tables' totals compared, the published answer checked not to score; and the questions the
rules were written for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from finmath_tasks.sandbox.batch import run_programs
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.scorers.comparisons import GOLD_WRITTEN_KEY, GoldNumber
from finmath_tasks.tasks.finqa import variant_rules as finqa_rules
from finmath_tasks.tasks.finqa.dataset import load_dataset as finqa_load
from finmath_tasks.tasks.finqa.dsl import execute
from finmath_tasks.tasks.finqa.variants import instantiate as finqa_instantiate
from finmath_tasks.tasks.knowledgefmath import variant_rules as kf_rules
from finmath_tasks.tasks.knowledgefmath.dataset import load_dataset as kf_load
from finmath_tasks.tasks.knowledgefmath.variants import instantiate as kf_instantiate
from finmath_tasks.variant_rules import instrument_python, read_trace
from finmath_tasks.variants import VARIANT_KEY, find_numbers, gold_like

pytestmark = pytest.mark.realdata
SEEDS = (1, 2, 3, 4, 5)
needs_bwrap = pytest.mark.skipif(not bwrap_available()[0], reason="needs the bubblewrap sandbox")


def _parts(metadata: dict[str, Any]) -> list[str]:
    return [metadata["question"], *metadata.get("tables", [])]


@pytest.fixture(scope="module")
def kf_runs(session_data_dir: Path) -> dict[int, tuple[dict[str, Any], Any]]:
    original = {str(s.id): s for s in kf_load("validation", str(session_data_dir))}
    return {seed: (original, kf_instantiate(list(original.values()), seed)) for seed in SEEDS}


@pytest.fixture(scope="module")
def finqa_runs(session_data_dir: Path) -> dict[tuple[str, int], tuple[dict[str, Any], Any]]:
    out = {}
    for split in ("test", "dev", "train"):
        original = {str(s.id): s for s in finqa_load(split, str(session_data_dir))}
        for seed in SEEDS:
            out[(split, seed)] = (original, finqa_instantiate(list(original.values()), seed))
    return out


@pytest.mark.slow
@needs_bwrap
def test_every_knowledgefmath_variant_keeps_the_rules(
    kf_runs: dict[int, tuple[dict[str, Any], Any]],
) -> None:
    violations = []
    for seed, (original, result) in kf_runs.items():
        assert len(result.samples) >= 165, seed
        pairs = [(original[str(v.id)].metadata, v.metadata) for v in result.samples]
        programs = [instrument_python(m["gold_program"]) for pair in pairs for m in pair]
        runs = run_programs(programs, timeout=10.0)
        for k, (before, after) in enumerate(pairs):
            first, second = runs[2 * k], runs[2 * k + 1]
            assert first.ok and second.ok, (seed, after.get("id", k))
            # the gold is the program's value written at the published gold's precision
            assert second.value == pytest.approx(after[VARIANT_KEY]["program_value"], rel=1e-12)
            written = gold_like(second.value, repr(float(before["ground_truth"])), first.value)
            assert after[GOLD_WRITTEN_KEY] == written, after.get("question_id")
            why = kf_rules.violation(
                _parts(before),
                _parts(after),
                (read_trace(first.stdout), read_trace(second.stdout)),
                float(before["ground_truth"]),
                GoldNumber(written),
            )
            if why is not None:
                violations.append((seed, result.samples[k].id, why))
    assert violations == []


@pytest.mark.slow
def test_every_finqa_variant_keeps_the_rules(
    finqa_runs: dict[tuple[str, int], tuple[dict[str, Any], Any]],
) -> None:
    violations = []
    for (split, seed), (original, result) in finqa_runs.items():
        assert len(result.samples) >= 0.75 * result.total, (split, seed)
        for variant in result.samples:
            before = original[str(variant.id)].metadata
            after = variant.metadata
            run = execute(after["program"], after["table"])
            assert run.ok and run.value == after["exe_ans"]
            why = finqa_rules.violation(before, after)
            if why is not None:
                violations.append((split, seed, variant.id, why))
    assert violations == []


# --- the questions the rules were written for ----------------------------------------------


def _variants(runs: dict[int, tuple[dict[str, Any], Any]], qid: str) -> list[dict[str, Any]]:
    return [s.metadata for _, result in runs.values() for s in result.samples if str(s.id) == qid]


def _values_of(programs: list[str], name: str) -> list[float]:
    """The value a variable of each program ends with (the programs run in the sandbox)."""
    changed = []
    for program in programs:
        lines = program.rstrip().split("\n")
        body = [line for line in lines if not line.strip().startswith("return ")]
        changed.append("\n".join([*body, f"    return {name}"]))
    results = run_programs(changed)
    assert all(r.ok and r.value is not None for r in results), [r.error for r in results]
    return [float(r.value or 0.0) for r in results]


@pytest.mark.slow
@needs_bwrap
def test_intermediate_quantities_keep_their_sign(
    kf_runs: dict[int, tuple[dict[str, Any], Any]],
) -> None:
    cases = {
        "validation-57": ("incentive_fee", 1),  # a fund above its hurdle pays a fee
        "validation-12": ("economic_depreciation", 1),
        "validation-60": ("price_return", 1),
        "validation-143": ("ending_funded_status", -1),
    }
    for qid, (name, sign) in cases.items():
        programs = [m["gold_program"] for m in _variants(kf_runs, qid)]
        assert programs, qid  # instantiated in some seed, with the sign kept
        assert all(v * sign > 0 for v in _values_of(programs, name)), qid
    programs = [m["gold_program"] for m in _variants(kf_runs, "validation-60")]
    assert all(r < 0 for r in _values_of(programs, "roll_return"))


@pytest.mark.slow
@needs_bwrap
def test_values_written_together_keep_their_order_and_distinctness(
    kf_runs: dict[int, tuple[dict[str, Any], Any]],
) -> None:
    for metadata in _variants(kf_runs, "validation-92"):  # discount factors keep decreasing
        rows = [line for line in metadata["tables"][0].split("\n")[2:] if line.strip()]
        factors = [find_numbers(row)[-1].value for row in rows]
        assert factors == sorted(factors, reverse=True) and len(set(factors)) == len(factors)
    assert _variants(kf_runs, "validation-92")
    for metadata in _variants(kf_runs, "validation-74"):  # outcomes stay distinct, in order
        outcomes = [w.value for w in find_numbers(metadata["question"].split("[")[1])]
        assert outcomes == sorted(set(outcomes)), outcomes
    assert _variants(kf_runs, "validation-74")


@pytest.mark.slow
@needs_bwrap
def test_a_variant_never_keeps_the_published_gold(
    kf_runs: dict[int, tuple[dict[str, Any], Any]],
) -> None:
    for seed, (original, result) in kf_runs.items():
        for s in result.samples:
            published = float(original[str(s.id)].metadata["ground_truth"])
            gold = GoldNumber(s.metadata[GOLD_WRITTEN_KEY])  # as the scorers read it
            assert not kf_rules.recites(published, gold), (seed, s.id)
    assert not _variants(kf_runs, "validation-73")  # its answer is 0 whatever the values


def _first(cell: str) -> float:
    return find_numbers(cell)[0].value


@pytest.mark.slow
def test_totals_over_sub_rows_are_recomputed(
    finqa_runs: dict[tuple[str, int], tuple[dict[str, Any], Any]],
) -> None:
    checked = 0
    for (_split, _seed), (_original, result) in finqa_runs.items():
        for s in result.samples:
            table = s.metadata["table"]
            if str(s.id).startswith("MRK/2013/page_3.pdf"):
                rows = {row[0]: _first(row[1]) for row in table[1:]}
                assert rows["total sales"] == (
                    rows["pharmaceutical"] + rows["animal health"] + rows["consumer care"]
                    + rows["other revenues ( 1 )"]
                )  # fmt: skip
                checked += 1
            if str(s.id).startswith("GS/2014/page_51.pdf"):
                rows = {row[0]: _first(row[1]) for row in table[1:]}
                assert rows["total assets"] == (
                    rows["gcla and cash"] + rows["secured client financing"]
                    + rows["total inventory and related assets"] + rows["other assets"]
                )  # fmt: skip
                checked += 1
    assert checked >= 5


def test_numeric_variants_move_their_gold_and_yes_no_ones_are_marked(
    finqa_runs: dict[tuple[str, int], tuple[dict[str, Any], Any]],
) -> None:
    seen = set()
    for (_split, _seed), (original, result) in finqa_runs.items():
        for s in result.samples:
            before = original[str(s.id)].metadata["exe_ans"]
            if isinstance(before, str):
                assert s.metadata["answer_type"] == "yes_no"
            else:
                assert not finqa_rules.recites(before, s.metadata["exe_ans"]), s.id
            for prefix in ("CE/2009/page_65", "ETR/2016/page_23", "MRO/2013/page_39"):
                if str(s.id).startswith(prefix):
                    seen.add(prefix)
                    assert s.metadata[VARIANT_KEY]["original_exe_ans"] == before
    assert {"CE/2009/page_65", "ETR/2016/page_23"} <= seen
