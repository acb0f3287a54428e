"""Fresh variants of FinQA questions (real data; golds by the DSL executor)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval

from eval_helpers import metric
from finmath_tasks.tasks.finqa import finqa
from finmath_tasks.tasks.finqa.dataset import load_dataset
from finmath_tasks.tasks.finqa.dsl import same_value
from finmath_tasks.tasks.finqa.variants import Instantiation, instantiate, table_totals
from finmath_tasks.variants import VARIANT_KEY, find_numbers

pytestmark = pytest.mark.realdata

MEASURED_TEST_SHARE = 0.5
"""Seed 1 instantiates 54 of the 100 test records held here (measured)."""


def digest(result: Instantiation) -> str:
    rows = [[s.id, s.input, s.target, (s.metadata or {})["context"]] for s in result.samples]
    payload = json.dumps([rows, sorted(result.left_out.items())], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


@pytest.fixture(scope="module")
def original(session_data_dir: Path) -> list[Any]:
    return list(load_dataset("test", str(session_data_dir)))


@pytest.fixture(scope="module")
def seed1(original: list[Any]) -> Instantiation:
    return instantiate(original, 1)


def test_at_least_half_of_the_test_split_is_instantiated(seed1: Instantiation) -> None:
    assert seed1.total == 100
    assert len(seed1.samples) / seed1.total >= MEASURED_TEST_SHARE
    assert all(reason.strip() for reason in seed1.left_out.values())


@pytest.mark.slow
def test_the_same_seed_gives_the_same_variant_here_and_in_another_process(
    original: list[Any], seed1: Instantiation, session_data_dir: Path
) -> None:
    first = digest(seed1)
    assert first == digest(instantiate(original, 1))
    code = (
        "import hashlib, json;"
        "from finmath_tasks.tasks.finqa.dataset import load_dataset;"
        "from finmath_tasks.tasks.finqa.variants import instantiate;"
        f"r = instantiate(list(load_dataset('test', {str(session_data_dir)!r})), 1);"
        "rows = [[s.id, s.input, s.target, s.metadata['context']] for s in r.samples];"
        "p = json.dumps([rows, sorted(r.left_out.items())], sort_keys=True);"
        "print(hashlib.sha256(p.encode()).hexdigest())"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert other.returncode == 0, other.stderr[-2000:]
    assert other.stdout.strip().splitlines()[-1] == first
    assert digest(instantiate(original, 2)) != first


def _skeleton(text: str) -> str:
    out, at = [], 0
    for w in find_numbers(text):
        out += [text[at : w.start], "#"]
        at = w.end
    return "".join(out) + text[at:]


def test_each_variant_differs_only_at_numbers_and_its_totals_add_up(
    original: list[Any], seed1: Instantiation
) -> None:
    by_id = {s.id: s for s in original}
    for variant in seed1.samples:
        before, after = by_id[variant.id].metadata, variant.metadata
        assert _skeleton(before["context"]) == _skeleton(after["context"]), variant.id
        assert _skeleton(before["question"]) == _skeleton(after["question"])
        assert before["context"] != after["context"]
        assert after[VARIANT_KEY]["replaced"]
        # every total of the original table is still a total in the variant's
        assert len(table_totals(after["table"])) >= len(table_totals(before["table"]))


@pytest.mark.slow
def test_golds_recomputed_from_the_original_values_equal_the_published_ones(
    session_data_dir: Path,
) -> None:
    for split in ("train", "dev", "test"):
        records = list(load_dataset(split, str(session_data_dir)))
        result = instantiate(records, 1)
        differ = [
            s.id for s in records if not same_value(result.originals[s.id], s.metadata["exe_ans"])
        ]
        assert differ == [], split  # every gold program reproduces its exe_ans


@pytest.mark.parametrize(
    "variant", [{"variant": "original"}, {"variant": "original", "variant_seed": 0}]
)
def test_seed_0_and_the_original_variant_reproduce_the_data_byte_for_byte(
    variant: dict[str, Any], session_data_dir: Path
) -> None:
    default = finqa(data_dir=str(session_data_dir))
    other = finqa(data_dir=str(session_data_dir), **variant)
    for a, b in zip(default.dataset, other.dataset, strict=True):
        assert (a.id, a.input, a.target, a.metadata) == (b.id, b.input, b.target, b.metadata)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_oracle_scores_one_on_every_instantiated_question(
    seed: int, session_data_dir: Path, tmp_path: Path
) -> None:
    task = finqa(
        solver="oracle", variant="fresh", variant_seed=seed, data_dir=str(session_data_dir)
    )
    summary = (task.metadata or {})["variant"]
    assert summary["of"] == 100 and summary["instantiated"] >= 40
    [log] = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    assert log.status == "success"
    assert log.results is not None
    assert log.results.total_samples == summary["instantiated"]
    for key in ("execution_accuracy", "program_accuracy", "tolerant"):
        assert metric(log, key) == 1.0


@pytest.mark.slow
def test_reciting_the_published_answers_scores_at_most_1_percent_on_numeric_variants(
    session_data_dir: Path, tmp_path: Path
) -> None:
    from inspect_ai.scorer import value_to_float

    from eval_helpers import scripted

    task = finqa(variant="fresh", variant_seed=1, data_dir=str(session_data_dir))
    published = [s.metadata[VARIANT_KEY]["original_exe_ans"] for s in task.dataset]
    outputs = [f"The answer is as published.\nFinal answer: {p}" for p in published]
    [log] = eval(
        task, model=scripted(outputs), log_dir=str(tmp_path), display="none", max_samples=1
    )
    assert log.status == "success" and log.samples
    to_float = value_to_float()
    numeric = [
        s for s in log.samples if not isinstance(s.metadata[VARIANT_KEY]["original_exe_ans"], str)
    ]
    assert len(numeric) >= 70
    for key in ("execution_accuracy", "tolerant", "rounding"):
        scored = [to_float(s.scores[key].value) for s in numeric if s.scores and key in s.scores]
        assert len(scored) == len(numeric), key
        assert sum(scored) / len(scored) <= 0.01, key
