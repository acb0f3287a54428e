"""A run's identity: every parameter of every registered task is part of it or listed,
with its reason, as unable to change a score; the parts a log records, and their names."""

from __future__ import annotations

import inspect as pyinspect
import json

import pytest

from benchmark_list import BENCHMARKS
from finmath_tasks.identity import (
    NOT_IDENTITY,
    difference,
    identity_of,
    part_text,
    registered_tasks,
)

RECORDED = {"data": {"fingerprint": "93b433f860e73caf"}, "knowledge_bank_hash": "abc123"}


def _identity(task: str, args: dict[str, object] | None = None, **kwargs: object):  # type: ignore[no-untyped-def]
    parts: dict[str, object] = dict(
        task=task, version=1, args=args or {}, metadata=RECORDED, sample_ids=["a", "b"],
        epochs=1, model="mockllm/model",
    )  # fmt: skip
    parts.update(kwargs)
    return identity_of(**parts)  # type: ignore[arg-type]


def test_the_registered_tasks_are_the_benchmarks() -> None:
    """One task per benchmark folder, registered by its line in ``_registry.py``."""
    names = sorted(registered_tasks())
    unregistered = [n for n in BENCHMARKS if f"finmath_tasks/{n}" not in names]
    assert not unregistered, f"not registered (add its import to _registry.py): {unregistered}"
    assert names == [f"finmath_tasks/{n}" for n in BENCHMARKS]


@pytest.mark.parametrize("task", sorted(registered_tasks()))
def test_every_parameter_is_identity_or_listed_with_its_reason(task: str) -> None:
    """A log that names no argument still has every parameter in its identity, at the
    task's default; the only ones left out are listed in NOT_IDENTITY."""
    parameters = pyinspect.signature(registered_tasks()[task]).parameters.values()
    identity = _identity(task)
    unaccounted = []
    for p in parameters:
        name = f"arg.{p.name}"
        if name in NOT_IDENTITY:
            assert NOT_IDENTITY[name].reason.strip()
            continue
        if identity.get(name) is None:
            unaccounted.append(p.name)
            continue
        assert json.loads(identity.get(name) or "null") == json.loads(json.dumps(p.default))
    assert not unaccounted, f"{task}: parameters neither identity nor in NOT_IDENTITY"


def test_what_stands_for_a_left_out_argument_is_a_part_the_identity_records() -> None:
    identity = _identity("finmath_tasks/knowledgefmath")
    for name, entry in NOT_IDENTITY.items():
        if entry.stands_for:
            assert identity.get(entry.stands_for) is not None, name


def test_a_path_is_left_out_only_when_the_log_records_what_it_read() -> None:
    task = "finmath_tasks/sara"
    with_data = _identity(task, {"data_dir": "/a"})
    assert with_data.get("arg.data_dir") is None and with_data.get("data") is not None
    assert _identity(task, {"data_dir": "/b"}) == with_data
    # an older log without a fingerprint: the folder is all that tells its data apart
    old = _identity(task, {"data_dir": "/a"}, metadata={})
    assert old.get("arg.data_dir") == '"/a"'
    assert difference(old, _identity(task, {"data_dir": "/b"}, metadata={})) == ["arg.data_dir"]


def test_each_recorded_setting_that_can_change_a_score_is_a_difference() -> None:
    task = "finmath_tasks/mathhay"
    base = _identity(task, generation={"temperature": 1.0, "max_connections": 10})
    cases = {
        "arg.max_prompt_tokens": _identity(
            task, {"max_prompt_tokens": 1000}, generation={"temperature": 1.0}
        ),
        "generation.temperature": _identity(task, generation={"temperature": 0.0}),
        "samples": _identity(task, sample_ids=["a", "c"], generation={"temperature": 1.0}),
        "data": _identity(
            task,
            metadata={**RECORDED, "data": {"fingerprint": "0" * 16}},
            generation={"temperature": 1.0},
        ),
        "epochs": _identity(task, epochs=3, generation={"temperature": 1.0}),
        "role.grader": _identity(
            task, roles={"grader": "mockllm/judge"}, generation={"temperature": 1.0}
        ),
        "version": _identity(task, version=2, generation={"temperature": 1.0}),
        "model_args": _identity(
            task, model_args={"device": "cuda:1"}, generation={"temperature": 1.0}
        ),
    }
    for part, other in cases.items():
        assert difference(base, other) == [part], part
    # how many requests ran at once cannot change a score, nor a test model's script
    assert _identity(task, generation={"temperature": 1.0}) == base
    scripted = _identity(
        task, model_args={"custom_outputs": ["x"]}, generation={"temperature": 1.0}
    )
    assert scripted == base
    assert part_text(cases["arg.max_prompt_tokens"], "arg.max_prompt_tokens") == (
        "max_prompt_tokens=1000"
    )
    assert part_text(cases["data"], "data") == "data 00000000"
    assert part_text(base, "samples").startswith("2 samples #")
    assert part_text(base, "samples") != part_text(cases["samples"], "samples")


def test_a_planned_run_matches_its_log_whatever_samples_it_could_not_know() -> None:
    task = "finmath_tasks/sara"
    logged = _identity(task)
    planned = _identity(task, sample_ids=None)
    assert planned.matches(logged, ["samples"])
    assert not planned.matches(logged)
    assert not _identity(task, sample_ids=None, epochs=2).matches(logged, ["samples"])
