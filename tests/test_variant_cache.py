"""Fresh variants made once: a seed's variants are written to the cache by the first run and
read back, identical, by the next ones (``finmath_tasks.variant_cache``)."""

from __future__ import annotations

import gzip
import logging
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.dataset import Sample

from finmath_tasks import variant_cache
from finmath_tasks.loading import dataset_provenance
from finmath_tasks.variants import Instantiation, instantiate_once

FIELDS = ("id", "input", "target", "metadata", "choices", "sandbox", "files", "setup")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "variants"
    monkeypatch.setenv(variant_cache.CACHE_ENV, str(folder))
    return folder


class Counting:
    """A benchmark's ``instantiate`` that counts its calls."""

    def __init__(self, instantiate: Callable[[list[Any], int], Instantiation]) -> None:
        self.instantiate = instantiate
        self.calls = 0
        self.__module__ = instantiate.__module__  # its RULES are the benchmark's
        self.__qualname__ = instantiate.__qualname__  # and its entries

    def __call__(self, samples: list[Any], seed: int) -> Instantiation:
        self.calls += 1
        return self.instantiate(samples, seed)


def same_samples(a: list[Sample], b: list[Sample]) -> None:
    assert [s.id for s in a] == [s.id for s in b]
    for x, y in zip(a, b, strict=True):
        for name in FIELDS:
            assert getattr(x, name) == getattr(y, name), (x.id, name)
        assert x == y


def finqa_test(data_dir: Path) -> tuple[list[Sample], dict[str, Any] | None]:
    from finmath_tasks.tasks.finqa.dataset import load_dataset

    dataset = load_dataset("test", str(data_dir))
    return list(dataset), dataset_provenance(dataset)


def toy(samples: list[Any], seed: int) -> Instantiation:
    """A benchmark-neutral instantiation: every sample's target times the seed."""
    made = [
        Sample(
            id=s.id,
            input=s.input,
            target=str(float(s.target) * seed),
            metadata={"seed": seed, "rows": [[1, 2.5, None, True, "x"]]},
            choices=["a", "b"],
        )
        for s in samples
    ]
    return Instantiation(seed, made, {"left": "a reason"}, {str(s.id): 1.5 for s in samples})


TOY = [Sample(id=f"q{i}", input=f"question {i}", target=str(i + 1)) for i in range(3)]
PROVENANCE = {"fingerprint": "0123456789abcdef"}


@pytest.mark.realdata
def test_a_hit_gives_the_samples_instantiate_made_and_does_not_call_it(
    data_dir: Path, cache: Path
) -> None:
    from finmath_tasks.tasks.finqa.variants import instantiate

    samples, provenance = finqa_test(data_dir)
    counting = Counting(instantiate)
    first = instantiate_once("finqa", "test", 1, samples, counting, provenance)
    assert counting.calls == 1 and len(list(cache.glob("finqa/test-seed1-*.json.gz"))) == 1
    again = instantiate_once("finqa", "test", 1, samples, counting, provenance)
    assert counting.calls == 1  # read, not made
    assert len(again.samples) == len(first.samples) > 50
    same_samples(again.samples, first.samples)
    assert again.left_out == first.left_out and again.originals == first.originals
    # and equal to what a run with no cache at all makes
    same_samples(again.samples, instantiate(samples, 1).samples)


@pytest.mark.realdata
def test_a_task_built_twice_reads_its_variant_from_the_cache(
    data_dir: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from finmath_tasks.tasks.finqa import task as finqa_task

    counting = Counting(finqa_task.instantiate)
    monkeypatch.setattr(finqa_task, "instantiate", counting)
    built = [
        finqa_task.finqa(variant="fresh", variant_seed=2, data_dir=str(data_dir)) for _ in (1, 2)
    ]
    assert counting.calls == 1
    same_samples(list(built[0].dataset), list(built[1].dataset))
    assert built[0].dataset.name == built[1].dataset.name
    assert dataset_provenance(built[0].dataset) == dataset_provenance(built[1].dataset)


def test_the_key_changes_with_everything_that_changes_the_variants() -> None:
    base = dict(
        benchmark="tatqa",
        split="dev",
        seed=1,
        fingerprint="f1",
        samples="s1",
        rules="2",
        code="c",
        function="finmath_tasks.tasks.tatqa.variants.instantiate",
    )
    key = variant_cache.cache_key(**base)  # type: ignore[arg-type]
    path = variant_cache.entry_path(Path("/c"), key)
    changed = {
        "benchmark": "finqa",
        "split": "test",
        "seed": 2,
        "fingerprint": "f2",
        "samples": "s2",
        "rules": "3",
        "code": "d",
        "function": "finmath_tasks.tasks.finqa.variants.instantiate",
    }
    for name, value in changed.items():
        other = variant_cache.cache_key(**{**base, name: value})  # type: ignore[arg-type]
        assert other != key and variant_cache.entry_path(Path("/c"), other) != path, name
    assert variant_cache.entry_path(Path("/c"), variant_cache.cache_key(**base)) == path  # type: ignore[arg-type]
    # the sources: each benchmark's folder is its own
    assert variant_cache.code_digest("tatqa") != variant_cache.code_digest("finqa")
    # the questions instantiated: another subset of the same files is another entry
    assert variant_cache.samples_digest(TOY) != variant_cache.samples_digest(TOY[:2])


def test_seed_rules_and_fingerprint_each_make_their_own_entry(cache: Path) -> None:
    counting = Counting(toy)
    runs = [
        (1, PROVENANCE, ""),
        (2, PROVENANCE, ""),
        (1, {"fingerprint": "fedcba9876543210"}, ""),
        (1, PROVENANCE, "2"),
    ]
    for seed, provenance, rules in runs:
        instantiate_once("toy", "dev", seed, TOY, counting, provenance, rules)
    assert counting.calls == 4 and len(list(cache.rglob("*.json.gz"))) == 4
    for seed, provenance, rules in runs:  # each read back
        made = instantiate_once("toy", "dev", seed, TOY, counting, provenance, rules)
        assert made.samples[0].target == str(1.0 * seed)
    assert counting.calls == 4


@pytest.mark.parametrize("damage", ["truncated", "edited", "empty", "not gzip"])
def test_a_corrupt_entry_is_ignored_with_a_warning_and_made_again(
    cache: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    counting = Counting(toy)
    first = instantiate_once("toy", "dev", 3, TOY, counting, PROVENANCE)
    [entry] = cache.rglob("*.json.gz")
    data = entry.read_bytes()
    if damage == "truncated":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "edited":  # a whole gzip file whose content is not what was written
        text = gzip.decompress(data).replace(b'"9.0"', b'"9.5"')
        entry.write_bytes(gzip.compress(text))
    elif damage == "empty":
        entry.write_bytes(b"")
    else:
        entry.write_bytes(b"{}")
    with caplog.at_level(logging.WARNING, logger=variant_cache.__name__):
        again = instantiate_once("toy", "dev", 3, TOY, counting, PROVENANCE)
    assert counting.calls == 2  # made again, never used
    assert any(
        "is corrupt" in r.getMessage() and str(entry) in r.getMessage() for r in caplog.records
    )
    same_samples(again.samples, first.samples)
    assert again.samples[2].target == "9.0"
    instantiate_once("toy", "dev", 3, TOY, counting, PROVENANCE)  # rewritten whole
    assert counting.calls == 2


def test_an_unwritable_folder_leaves_the_variants_made_each_run_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(variant_cache.CACHE_ENV, str(blocker / "variants"))
    counting = Counting(toy)
    with caplog.at_level(logging.WARNING, logger=variant_cache.__name__):
        made = [instantiate_once("toy", "dev", 1, TOY, counting, PROVENANCE) for _ in (1, 2)]
    assert counting.calls == 2
    assert made[0].samples == made[1].samples == toy(TOY, 1).samples
    warnings = [r.getMessage() for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(warnings) == 2 and variant_cache.CACHE_ENV in warnings[0]


def test_off_turns_the_cache_off(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(variant_cache.CACHE_ENV, "off")
    counting = Counting(toy)
    for _ in (1, 2):
        instantiate_once("toy", "dev", 1, TOY, counting, PROVENANCE)
    assert counting.calls == 2 and not cache.exists()


def test_a_sample_json_would_not_give_back_is_not_cached(
    cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def with_tuple(samples: list[Any], seed: int) -> Instantiation:
        made = toy(samples, seed)
        made.samples[0].metadata = {"span": (1, 2)}  # JSON would give back a list
        return made

    counting = Counting(with_tuple)
    with caplog.at_level(logging.WARNING, logger=variant_cache.__name__):
        for _ in (1, 2):
            made = instantiate_once("toy", "dev", 1, TOY, counting, PROVENANCE)
    assert counting.calls == 2 and made.samples[0].metadata == {"span": (1, 2)}
    assert any("not cached" in r.getMessage() and "tuple" in r.getMessage() for r in caplog.records)
    assert not list(cache.rglob("*.json.gz"))


WORKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from inspect_ai.dataset import Sample
    from finmath_tasks.variants import Instantiation, instantiate_once

    calls = Path(sys.argv[1])

    def slow(samples, seed):
        with calls.open("a") as handle:
            handle.write("made\\n")
        time.sleep(1.5)  # the other process asks for the entry meanwhile
        made = [Sample(id=s.id, input=s.input, target=s.target + "0") for s in samples]
        return Instantiation(seed, made, {})

    samples = [Sample(id=f"q{i}", input="q", target=str(i)) for i in range(50)]
    made = instantiate_once("toy", "dev", 1, samples, slow, {"fingerprint": "ab"})
    print([s.target for s in made.samples][-1])
    """
)


def test_two_processes_asking_at_once_make_the_variants_once(cache: Path, tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(calls)], stdout=subprocess.PIPE, text=True
        )
        for _ in (1, 2)
    ]
    outputs = [w.communicate(timeout=120)[0] for w in workers]
    assert [w.returncode for w in workers] == [0, 0]
    assert outputs == ["490\n", "490\n"]
    assert calls.read_text() == "made\n"  # one made them, the other waited and read them
    assert len(list(cache.rglob("*.json.gz"))) == 1
    assert not [p for p in cache.rglob("*") if p.name.endswith(".part")]  # no temporary left


@pytest.mark.realdata
def test_finmath_variants_lists_the_variants_a_run_made(
    data_dir: Path,
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from finmath_tasks.cli.main import main
    from finmath_tasks.tasks.finqa import task as finqa_task
    from finmath_tasks.tasks.finqa import variants as finqa_variants

    counting = Counting(finqa_variants.instantiate)
    monkeypatch.setattr(finqa_task, "instantiate", counting)
    monkeypatch.setattr(finqa_variants, "instantiate", counting)
    built = finqa_task.finqa(variant="fresh", variant_seed=1, data_dir=str(data_dir))
    assert counting.calls == 1
    assert main(["variants", "finqa", "--seed", "1", "--data-dir", str(data_dir)]) == 0
    assert counting.calls == 1  # read from the run's entry
    head = capsys.readouterr().out.splitlines()[0]
    assert head.startswith(f"finqa test fresh seed 1: {len(built.dataset)} of 100 instantiated")


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.parametrize(
    "benchmark",
    ["tatqa", pytest.param("knowledgefmath", marks=pytest.mark.bwrap)],
)
def test_a_hit_gives_the_samples_made_on_tatqa_and_knowledgefmath(
    benchmark: str, data_dir: Path, cache: Path
) -> None:
    """The other benchmarks' metadata (TAT-QA's documents, FinanceMath's tables and traced
    programs) round-trips too: the instantiation made (and written) equals the one read."""
    import importlib

    module = importlib.import_module(f"finmath_tasks.tasks.{benchmark}.variants")
    dataset = module.load_dataset(module.DEFAULT_SPLIT, str(data_dir))
    samples, provenance = list(dataset), dataset_provenance(dataset)
    counting = Counting(module.instantiate)
    split = module.DEFAULT_SPLIT
    made = instantiate_once(benchmark, split, 1, samples, counting, provenance)
    read = instantiate_once(benchmark, split, 1, samples, counting, provenance)
    assert counting.calls == 1 and len(read.samples) > 100
    same_samples(read.samples, made.samples)
    assert read.left_out == made.left_out and read.originals == made.originals
    assert read.rules == made.rules
