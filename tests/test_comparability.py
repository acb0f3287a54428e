"""The one comparability rule (``finmath_tasks.comparability.comparable``) on identities
built as real logs record them: each purpose, and the reason given when runs may not be
compared."""

from __future__ import annotations

from typing import Any

import pytest

from finmath_tasks.comparability import comparable, origin
from finmath_tasks.identity import Identity, identity_of
from finmath_tasks.loading import PROVENANCE_KEY
from finmath_tasks.variants import variant_provenance

TASK = "finmath_tasks/knowledgefmath"
AUTHORS = "411c83a0df41d3b9"
COPY = "0a8adb064877ec5e"


def _identity(data: str | None = AUTHORS, seed: int = 0, **change: Any) -> Identity:
    provenance: dict[str, object] = {"fingerprint": data} if data else {}
    args: dict[str, Any] = {"solver": "cot"}
    if seed:
        provenance = variant_provenance(provenance, seed)
        args.update(variant="fresh", variant_seed=seed)
    args.update(change.pop("args", {}))
    parts: dict[str, Any] = {
        "task": TASK, "version": "6.0.0", "args": args,
        "metadata": {PROVENANCE_KEY: provenance} if provenance else {},
        "sample_ids": ["a", "b", "c"] if not seed else ["a", "b"], "epochs": 1,
        "model": "mockllm/alpha",
    }  # fmt: skip
    parts.update(change)
    return identity_of(**parts)


def test_same_setting_attempts_and_repeats() -> None:
    a, b = _identity(), _identity()
    assert comparable(a, b, "same")
    assert comparable(a, b, "attempt", task_ids=("T1", "T1"))
    assert comparable(a, b, "repeat", task_ids=("T1", "T2"))
    assert not comparable(a, b, "attempt", task_ids=("T1", "T2")).ok
    refused = comparable(a, b, "repeat", task_ids=("T1", "T1"))
    assert not refused and "attempts of one run" in refused.reason
    other = _identity(generation={"temperature": 0.5})
    verdict = comparable(a, other, "same")
    assert not verdict and verdict.reason == "other settings: generation.temperature"
    with pytest.raises(ValueError, match="task ids"):
        comparable(a, b, "repeat")


def test_a_planned_run_without_its_sample_ids_is_the_same_setting() -> None:
    planned = _identity(sample_ids=None)
    assert comparable(planned, _identity(), "same", unknown=["samples"])
    assert not comparable(planned, _identity(), "same")


def test_paired_on_the_same_data_only_unless_asked() -> None:
    a = _identity()
    assert comparable(a, _identity(args={"solver": "pot"}), "paired") == comparable(a, a, "paired")
    copy = _identity(COPY)
    refused = comparable(a, copy, "paired")
    assert (
        not refused and refused.reason == f"different data (data {AUTHORS[:8]} and data {COPY[:8]})"
    )
    asked = comparable(a, copy, "paired", across_data=True)
    assert asked and asked.reason.startswith("DIFFERENT DATA")
    neither = comparable(_identity(None), _identity(None), "paired")
    assert neither and "paired on sample ids only" in neither.reason
    fresh = comparable(a, _identity(seed=1), "paired")
    assert not fresh and "memorisation gap only" in fresh.reason
    other_task = comparable(a, _identity(task="finmath_tasks/finqa"), "paired")
    assert not other_task and other_task.reason.startswith("different tasks")


def test_a_variant_is_compared_with_the_original_of_its_own_data() -> None:
    original, fresh = _identity(), _identity(seed=1)
    assert origin(fresh) == AUTHORS and origin(original) == AUTHORS
    assert comparable(original, fresh, "variant")
    refused = comparable(_identity(COPY), fresh, "variant")
    assert not refused
    assert refused.reason == (
        f"the fresh variant was instantiated from data {AUTHORS[:8]}, the original run read "
        f"data {COPY[:8]}: not the same questions"
    )
    assert not comparable(fresh, original, "variant").ok  # the first is the original
    other = comparable(original, _identity(seed=1, model="mockllm/beta"), "variant")
    assert not other and other.reason == "other settings besides the variant: model"


def test_a_variant_log_without_its_origin_is_matched_by_its_derived_fingerprint() -> None:
    original, fresh = _identity(), _identity(seed=2)
    older = Identity(tuple((n, t) for n, t in fresh.parts if n != "data.origin"))
    assert origin(older) is None
    assert comparable(original, older, "variant")
    assert not comparable(_identity(COPY), older, "variant")


def test_an_unknown_purpose_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown purpose"):
        comparable(_identity(), _identity(), "similar")  # type: ignore[arg-type]


def test_a_variant_is_read_from_the_provenance_and_contradicting_arguments_are_refused() -> None:
    from finmath_tasks.comparability import variant_contradiction, variant_of

    original, fresh = _identity(), _identity(seed=1)
    assert variant_of(fresh) == ("fresh", 1) and variant_contradiction(fresh) is None
    # the arguments name seed 2 where the data is the variant of seed 1 (an edited log)
    edited = _identity(seed=1, args={"variant_seed": 2})
    assert variant_of(edited) == ("fresh", 1)
    refused = comparable(original, edited, "variant")
    assert not refused and refused.reason == (
        "the fresh run's task arguments (variant=fresh variant_seed=2) contradict its "
        "data provenance (variant fresh, seed 1)"
    )
    # a run named original whose data is a fresh variant is no original run
    posing = _identity(seed=1, args={"variant": "original", "variant_seed": 0})
    assert variant_of(posing) == ("fresh", 1)
    assert not comparable(posing, fresh, "variant").ok


@pytest.mark.parametrize("seed", [float("inf"), float("nan"), "x", [1]])
def test_a_seed_that_is_no_integer_never_raises(seed: Any) -> None:
    """A log whose ``variant_seed`` was edited to Infinity (or anything not an integer): no
    traceback, the run is not a fresh variant of the original."""
    odd = _identity(args={"variant": "fresh", "variant_seed": seed})
    assert not comparable(_identity(), odd, "variant")
    comparable(_identity(), odd, "paired")  # a verdict either way, never a traceback
