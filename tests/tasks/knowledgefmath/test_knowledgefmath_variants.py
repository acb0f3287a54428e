"""Fresh variants of the FinanceMath validation questions (real data, programs in bwrap)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval

from eval_helpers import metric
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.knowledgefmath.dataset import load_dataset, render_prompt
from finmath_tasks.tasks.knowledgefmath.scoring import financemath_compare
from finmath_tasks.tasks.knowledgefmath.variants import Instantiation, instantiate, plan
from finmath_tasks.variants import VARIANT_KEY, find_numbers

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.skipif(not bwrap_available()[0], reason="needs the bubblewrap sandbox"),
]

NUMBER = r"\d+(\.\d*)?(e[+-]?\d+)?"

PUBLISHED_GOLD_DIFFERS = {"validation-68", "validation-106", "validation-187"}
"""Questions whose gold program, run on the published values, does not give the published
ground truth under the official comparison: the published answer is rounded to three
decimals (0.005 for 0.00548, 0.042 for 0.0422, -0.011 for -0.01146), beyond its 0.15%
tolerance."""


def digest(result: Instantiation) -> str:
    rows = [
        [s.id, s.input, s.target, (s.metadata or {})["tables"], (s.metadata or {})["gold_program"]]
        for s in result.samples
    ]
    payload = json.dumps([rows, sorted(result.left_out.items())], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


@pytest.fixture(scope="module")
def original(session_data_dir: Path) -> list[Any]:
    return list(load_dataset("validation", str(session_data_dir)))


@pytest.fixture(scope="module")
def seed1(original: list[Any]) -> Instantiation:
    return instantiate(original, 1)


@pytest.mark.slow
def test_at_least_170_of_200_are_instantiated_and_each_left_out_has_a_reason(
    seed1: Instantiation,
) -> None:
    assert seed1.total == 200
    assert len(seed1.samples) >= 170
    assert all(reason.strip() for reason in seed1.left_out.values())
    assert set(seed1.left_out) | {s.id for s in seed1.samples} == {
        f"validation-{i}" for i in range(200)
    }


@pytest.mark.slow
def test_the_same_seed_gives_the_same_variant_here_and_in_another_process(
    original: list[Any], seed1: Instantiation, session_data_dir: Path
) -> None:
    first = digest(seed1)
    assert first == digest(instantiate(original, 1))
    code = (
        "import hashlib, json;"
        "from finmath_tasks.tasks.knowledgefmath.dataset import load_dataset;"
        "from finmath_tasks.tasks.knowledgefmath.variants import instantiate;"
        f"r = instantiate(list(load_dataset('validation', {str(session_data_dir)!r})), 1);"
        "rows = [[s.id, s.input, s.target, s.metadata['tables'], s.metadata['gold_program']]"
        " for s in r.samples];"
        "p = json.dumps([rows, sorted(r.left_out.items())], sort_keys=True);"
        "print(hashlib.sha256(p.encode()).hexdigest())"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert other.returncode == 0, other.stderr[-2000:]
    assert other.stdout.strip().splitlines()[-1] == first
    assert digest(instantiate(original[:20], 2)) != digest(instantiate(original[:20], 1))


def _skeleton(text: str) -> str:
    """The text with every number's digits replaced by a marker."""
    out, at = [], 0
    for w in find_numbers(text):
        out += [text[at : w.start], "#"]
        at = w.end
    return "".join(out) + text[at:]


@pytest.mark.slow
def test_each_variant_differs_from_its_original_only_at_the_replaced_numbers(
    original: list[Any], seed1: Instantiation
) -> None:
    by_id = {s.id: s for s in original}
    for variant in seed1.samples:
        before, after = by_id[variant.id].metadata, variant.metadata
        parts_before = [before["question"], *before["tables"]]
        parts_after = [after["question"], *after["tables"]]
        changed = 0
        for old, new in zip(parts_before, parts_after, strict=True):
            assert _skeleton(old) == _skeleton(new), variant.id
            old_numbers = [w.text for w in find_numbers(old)]
            new_numbers = [w.text for w in find_numbers(new)]
            changed += sum(a != b for a, b in zip(old_numbers, new_numbers, strict=True))
        replaced = after[VARIANT_KEY]["replaced"]
        assert changed == sum(r["from"] != r["to"] for r in replaced) > 0, variant.id
        # the program changes at its literals only
        code = re.sub(NUMBER, "#", before["gold_program"])
        assert re.sub(NUMBER, "#", after["gold_program"]) == code


def test_golds_recomputed_from_the_original_values_equal_the_published_ones(
    original: list[Any], seed1: Instantiation
) -> None:
    differ = {
        s.id
        for s in original
        if seed1.originals[s.id] is None
        or not financemath_compare(seed1.originals[s.id], s.metadata["ground_truth"]).correct
    }
    assert differ == PUBLISHED_GOLD_DIFFERS


def test_a_written_value_used_twice_in_the_program_is_held_not_varied() -> None:
    question = "Buy 200,000 shares at EUR90; the rate is 1.5% for 90 days."
    program = "def solution():\n    cost = 200000 * 90\n    return cost * 0.015 * 90 / 360"
    p = plan(question, [], program)
    assert p.reason is None
    assert [v.literal.value for v in p.variables] == [200000.0, 0.015]
    assert p.held and p.held[0].startswith("90:")
    assert "no literal" in str(
        plan("What is three plus four?", [], "def solution():\n    return 3 + 4").reason
    )


@pytest.mark.parametrize(
    "variant", [{"variant": "original"}, {"variant": "original", "variant_seed": 0}]
)
def test_seed_0_and_the_original_variant_reproduce_the_prompts_byte_for_byte(
    variant: dict[str, Any], session_data_dir: Path
) -> None:
    default = knowledgefmath(data_dir=str(session_data_dir))
    other = knowledgefmath(data_dir=str(session_data_dir), **variant)
    assert "variant" not in (other.metadata or {})
    pairs = list(zip(default.dataset, other.dataset, strict=True))
    assert len(pairs) == 200
    for a, b in pairs:
        assert (a.id, a.input, a.target, a.metadata) == (b.id, b.input, b.target, b.metadata)
        for style in ("cot", "pot"):
            assert render_prompt(a.metadata["question"], a.metadata["tables"], style) == (
                render_prompt(b.metadata["question"], b.metadata["tables"], style)
            )


def test_bad_variant_settings_are_refused() -> None:
    from finmath_tasks.params import TaskParameterError

    with pytest.raises(TaskParameterError, match="variant_seed=3 draws new values"):
        knowledgefmath(split="demo", variant_seed=3)
    # a fresh variant without a seed would be the published questions named "fresh"
    for seed in ({}, {"variant_seed": 0}):
        with pytest.raises(TaskParameterError, match="variant=fresh needs -T variant_seed=N"):
            knowledgefmath(split="demo", variant="fresh", **seed)
    with pytest.raises(TaskParameterError, match="test split withholds"):
        knowledgefmath(split="test", variant="fresh", variant_seed=1)
    with pytest.raises(TaskParameterError, match="variant"):
        knowledgefmath(split="demo", variant="stale")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_oracle_scores_one_on_every_instantiated_question(
    seed: int, session_data_dir: Path, tmp_path: Path
) -> None:
    task = knowledgefmath(
        split="validation", solver="oracle", variant="fresh", variant_seed=seed,
        data_dir=str(session_data_dir),
    )  # fmt: skip
    summary = (task.metadata or {})["variant"]
    assert summary["variant_seed"] == seed and summary["instantiated"] >= 165
    [log] = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    assert log.status == "success"
    assert log.results is not None
    assert log.results.total_samples == summary["instantiated"]
    assert metric(log, "financemath") == 1.0
    assert metric(log, "tolerant") == 1.0
    assert f"fresh seed {seed}: {summary['instantiated']} of 200" in log.eval.dataset.name


@pytest.mark.slow
def test_the_gold_program_oracle_scores_one_on_a_variant(
    session_data_dir: Path, tmp_path: Path
) -> None:
    task = knowledgefmath(
        split="validation", solver="oracle_pot", variant="fresh", variant_seed=2,
        data_dir=str(session_data_dir),
    )  # fmt: skip
    [log] = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none", limit=40)
    assert log.status == "success"
    assert metric(log, "financemath") == 1.0
    assert metric(log, "execution_rate") == 1.0


@pytest.mark.slow
def test_reciting_the_published_answers_scores_at_most_1_percent_on_the_variants(
    session_data_dir: Path, tmp_path: Path
) -> None:
    from inspect_ai.scorer import value_to_float

    from eval_helpers import scripted

    task = knowledgefmath(
        split="validation", solver="cot", variant="fresh", variant_seed=1,
        data_dir=str(session_data_dir),
    )  # fmt: skip
    published = [s.metadata[VARIANT_KEY]["original_ground_truth"] for s in task.dataset]
    outputs = [f"Therefore, the answer is {p}." for p in published]
    [log] = eval(
        task, model=scripted(outputs), log_dir=str(tmp_path), display="none", max_samples=1
    )
    assert log.status == "success" and log.samples and len(log.samples) >= 170
    to_float = value_to_float()
    for key in ("financemath", "tolerant"):
        scored = [
            to_float(s.scores[key].value) for s in log.samples if s.scores and key in s.scores
        ]
        assert len(scored) == len(log.samples), key
        assert sum(scored) / len(scored) <= 0.01, key


@pytest.mark.slow
def test_variant_golds_keep_the_original_precision_and_carry_no_float_noise(
    original: list[Any], seed1: Instantiation
) -> None:
    from decimal import Decimal

    from finmath_tasks.scorers.comparisons import GOLD_WRITTEN_KEY
    from finmath_tasks.variants import gold_like

    by_id = {s.id: s for s in original}
    for variant in seed1.samples:
        metadata = variant.metadata or {}
        record = metadata[VARIANT_KEY]
        value, before = record["program_value"], str(by_id[variant.id].target)
        assert variant.target == metadata[GOLD_WRITTEN_KEY], variant.id
        assert variant.target == gold_like(value, before, record["original_program_value"])
        assert float(variant.target) == metadata["ground_truth"]
        # no float noise: at most the original's digits and three more (0.54 -> 0.503)
        digits = [len(Decimal(t).as_tuple().digits) for t in (variant.target, before)]
        assert digits[0] <= digits[1] + 3, (variant.id, variant.target, before)
    targets = {s.id: s.target for s in seed1.samples}
    # the program gives 0.5025000000000001 and 0.7358256599140525 on these variants
    assert targets["validation-56"] == "0.503"  # the original, 0.54, is the program's value
    assert targets["validation-72"] == "0.736"  # 0.798 is 0.79781 rounded: 3 digits


@pytest.mark.slow
def test_an_answer_at_the_variant_gold_s_precision_scores_under_every_profile(
    session_data_dir: Path, tmp_path: Path
) -> None:
    from inspect_ai import Task

    from eval_helpers import scripted
    from finmath_tasks.loading import PROVENANCE_KEY
    from finmath_tasks.scorers.keyed import keyed_scorers

    ids = ["validation-56", "validation-72"]
    task = knowledgefmath(
        split="validation", solver="cot", profile="rounding", variant="fresh", variant_seed=1,
        data_dir=str(session_data_dir),
    )  # fmt: skip
    chosen = {s.id: s for s in task.dataset if s.id in ids}
    values = {i: chosen[i].metadata[VARIANT_KEY]["program_value"] for i in ids}
    assert [chosen[i].target for i in ids] == ["0.503", "0.736"]
    answers = {
        "at the gold's precision": [chosen[i].target for i in ids],
        "the program's value to 4 decimals": [f"{values[i]:.4f}" for i in ids],
    }
    for profile in ("rounding", "tolerant", "exact"):
        scored = task
        if profile != "rounding":
            scorer = keyed_scorers(
                "knowledgefmath", count_unscored=False, profile=profile, solver="cot",
                extractor="rules", extractor_messages="reference", knowledge="none",
            )  # fmt: skip
            scored = Task(dataset=task.dataset, solver=task.solver, scorer=scorer)
        for name, said in answers.items():
            if profile == "exact" and name != "at the gold's precision":
                continue
            outputs = [f"Therefore, the answer is {a}." for a in said]
            [log] = eval(
                scored, model=scripted(outputs), log_dir=str(tmp_path), display="none",
                sample_id=ids, max_samples=1,
            )  # fmt: skip
            assert log.status == "success", (profile, name)
            assert log.results is not None and log.results.total_samples == 2
            for key in {profile, "financemath"}:
                assert metric(log, key) == 1.0, (profile, name, key)
    assert (task.metadata or {})[PROVENANCE_KEY]["variant"]["rules"] == "3"
