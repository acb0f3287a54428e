"""Fresh variants of TAT-QA's arithmetic questions on the real dev and test files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from inspect_ai.dataset import MemoryDataset

from eval_helpers import metric, scripted
from finmath_tasks.tasks.tatqa import tatqa
from finmath_tasks.tasks.tatqa.derivation import evaluate, parse, reading_of, rounded
from finmath_tasks.tasks.tatqa.document import Document
from finmath_tasks.tasks.tatqa.task import oracle_answer
from finmath_tasks.tasks.tatqa.variant_checks import violations
from finmath_tasks.tasks.tatqa.variants import Instantiation, instantiate, load_dataset
from finmath_tasks.variant_rules import find_totals, sign
from finmath_tasks.variants import VARIANT_KEY

pytestmark = pytest.mark.realdata

COVERAGE = 0.70
"""Seed 1 instantiates at least this share of each split's arithmetic questions (measured:
dev 619 of 717, test 603 of 699)."""
SPLITS = ("dev", "test")

_cache: dict[tuple[str, int], tuple[list[Any], Instantiation]] = {}


def instantiated(split: str, seed: int, data_dir: Path) -> tuple[list[Any], Instantiation]:
    if (split, seed) not in _cache:
        if (split, 0) not in _cache:
            _cache[(split, 0)] = (
                list(load_dataset(split, str(data_dir))),
                Instantiation(0, [], {}),
            )
        original = _cache[(split, 0)][0]
        _cache[(split, seed)] = (original, instantiate(original, seed))
    return _cache[(split, seed)]


def _traced(metadata: dict[str, Any], negative_alone: bool) -> tuple[float, list[float]]:
    return evaluate(parse(str(metadata["derivation"])), negative_alone)


def rule_breaks(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The rules checked here directly (the derivations traced, the totals re-found), and
    everything :func:`violations` checks from the two records."""
    problems = list(violations(before, after))
    reading = reading_of(parse(str(before["derivation"])), float(before["answer"]))
    assert reading is not None
    _, trace = _traced(before, reading.negative_alone)
    new_value, new_trace = _traced(after, reading.negative_alone)
    if [sign(v) for v in trace] != [sign(v) for v in new_trace]:
        problems.append(f"signs {trace} -> {new_trace}")
    if rounded(new_value * reading.factor, reading.decimals) != float(after["answer"]):
        problems.append("the gold is not the variant derivation's")
    old, new = Document.of(before), Document.of(after)
    grid = old.grid()
    for total in find_totals({cell: old.value(place) for cell, place in grid.items()}):
        parts = sum(new.value(grid[p]) for p in total.parts)
        written = new.written(grid[total.cell])
        if abs(parts - new.value(grid[total.cell])) > 0.5 * 10**-written.decimals + 1e-9:
            problems.append(f"total {total.cell}")
    if after["answer"] == before["answer"]:
        problems.append("the published gold kept")
    return problems


@pytest.mark.slow
@pytest.mark.parametrize("split", SPLITS)
def test_every_variant_of_seeds_1_to_5_keeps_the_rules(split: str, session_data_dir: Path) -> None:
    broken: list[str] = []
    checked = 0
    for seed in range(1, 6):
        original, result = instantiated(split, seed, session_data_dir)
        by_id = {s.id: s for s in original}
        for variant in result.samples:
            before, after = by_id[variant.id].metadata, variant.metadata
            checked += 1
            broken += [f"{seed} {variant.id}: {p}" for p in rule_breaks(before, after)]
    assert checked >= 5 * COVERAGE * len(original)
    assert broken == []


@pytest.mark.slow
@pytest.mark.parametrize("split", SPLITS)
def test_seed_1_covers_most_arithmetic_questions(split: str, session_data_dir: Path) -> None:
    original, result = instantiated(split, 1, session_data_dir)
    assert result.total == len(original) == {"dev": 717, "test": 699}[split]
    assert len(result.samples) / result.total >= COVERAGE
    assert all(reason.strip() for reason in result.left_out.values())
    again = instantiate(original[:40], 1)
    first = [s for s in result.samples if s.id in {o.id for o in original[:40]}]
    assert [(s.id, s.target, s.metadata["context"]) for s in again.samples] == [
        (s.id, s.target, s.metadata["context"]) for s in first
    ]


def test_the_original_document_renders_as_the_task_renders_it(session_data_dir: Path) -> None:
    for sample in load_dataset("dev", str(session_data_dir)):
        assert Document.of(sample.metadata).context() == sample.metadata["context"]


@pytest.mark.parametrize(
    "variant", [{"variant": "original"}, {"variant": "original", "variant_seed": 0}]
)
def test_seed_0_and_the_original_variant_reproduce_the_data(
    variant: dict[str, Any], session_data_dir: Path
) -> None:
    default = tatqa(data_dir=str(session_data_dir))
    other = tatqa(data_dir=str(session_data_dir), **variant)
    assert "variant" not in (other.metadata or {})
    for a, b in zip(default.dataset, other.dataset, strict=True):
        assert (a.id, a.input, a.target, a.metadata) == (b.id, b.input, b.target, b.metadata)


def _reply(answer: Any) -> str:
    return json.dumps({"steps": ["recited"], "answer": answer})


def _recited(sample: Any, subset: str) -> str:
    """The published answer, as a model that memorised it writes it."""
    metadata = dict(sample.metadata)
    published = metadata[VARIANT_KEY]["original_answer"] if VARIANT_KEY in metadata else None
    if published is None:
        published = metadata["answer"]
    if subset == "arithmetic":
        return str(published)
    written = oracle_answer({**metadata, "answer": published}, "all", str(published))
    assert isinstance(written, str)
    return written


@pytest.mark.slow
@pytest.mark.parametrize(("split", "subset"), [("dev", "arithmetic"), ("test", "all")])
def test_reciting_the_published_answers_scores_on_originals_not_on_variants(
    split: str, subset: str, session_data_dir: Path, tmp_path: Path
) -> None:
    keys = ("rounding", "tolerant") if subset == "arithmetic" else ("em", "f1")
    for seed in (0, 1):
        task = tatqa(
            split=split,
            subset=subset,
            variant="fresh" if seed else "original",
            variant_seed=seed,
            data_dir=str(session_data_dir),
        )
        samples = list(task.dataset)
        if subset == "all":  # arithmetic questions (those a variant re-instantiates): 150
            samples = [s for s in samples if s.metadata["answer_type"] == "arithmetic"][:150]
            task.dataset = MemoryDataset(samples)
        replies = [_reply(_recited(s, subset)) for s in samples]
        [log] = eval(
            task,
            model=scripted(replies),
            max_samples=1,
            log_dir=str(tmp_path / str(seed)),
            display="none",
        )
        assert log.status == "success", log.error
        assert log.samples is not None and len(log.samples) == len(samples)
        reply_of = {s.id: reply for s, reply in zip(samples, replies, strict=True)}
        for sample in log.samples:  # each question got its own reply (the log lists by id)
            assert sample.output.completion == reply_of[sample.id]
        for key in keys:
            value = metric(log, key)
            print(f"tatqa {split} {subset} seed {seed}: n={len(samples)} {key}={value:.4f}")
            assert value == 1.0 if seed == 0 else value <= 0.01, (seed, key, value)


@pytest.mark.slow
@pytest.mark.parametrize("subset", ["arithmetic", "all"])
def test_the_oracle_scores_one_on_every_instantiated_question(
    subset: str, session_data_dir: Path, tmp_path: Path
) -> None:
    task = tatqa(
        subset=subset,
        solver="oracle",
        variant="fresh",
        variant_seed=2,
        data_dir=str(session_data_dir),
    )
    summary = (task.metadata or {})["variant"]
    assert summary["instantiated"] / 717 >= COVERAGE
    [log] = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    assert log.status == "success"
    assert log.results is not None and log.results.total_samples == summary["instantiated"]
    for key in ("rounding", "tolerant") if subset == "arithmetic" else ("em", "f1"):
        print(f"oracle {subset} seed 2: n={summary['instantiated']} {key}={metric(log, key)}")
        assert metric(log, key) == 1.0
