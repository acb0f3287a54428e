"""Every task builds the same Inspect eval-set task identifier from the same arguments.

``inspect eval-set`` pairs a task with its earlier log by an identifier that hashes the
task's arguments and the parameters its solvers record: an object with a random id among
them (a chat message gets a fresh id at every build) makes every rebuild a new task, and
a rerun of the eval set can then never resume. The identifier is read here as Inspect's
own eval-set capture protocol writes it (``INSPECT_EVAL_SET_CAPTURE``: the manifest a
runner reads), for every task and each value of every parameter that selects a variant.
"""

from __future__ import annotations

import inspect
import json
import os
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest
from inspect_ai import Task, eval_set

from finmath_tasks.identity import registered_tasks
from finmath_tasks.loading import DatasetError

pytestmark = [pytest.mark.realdata, pytest.mark.slow]

COMPANIONS: dict[tuple[str, Any], dict[str, Any]] = {
    ("variant", "fresh"): {"variant_seed": 1},
    ("extractor_messages", "user"): {"extractor": "model"},
    ("retriever", "dense"): {"knowledge": "rerank"},
    ("program_repair", True): {"solver": "pot"},
}
"""A value that another setting must accompany (the task refuses it alone)."""

NEEDS_AN_EXTRA = {("knowledge", "dense"), ("retriever", "dense")}
"""Values that need an optional extra (sentence embeddings): built where it is installed."""

NEEDS_MORE_DATA = {("subset", "full")}
"""Values that read files the shared benchmark data may lack (MathHay's full subset)."""


def _values(hint: Any) -> list[Any]:
    """The values a parameter's type names (Literals, true/false), flattened."""
    if hint is bool:
        return [True, False]
    if get_origin(hint) is Literal:
        return list(get_args(hint))
    found: list[Any] = []
    for inner in get_args(hint):
        found += [v for v in _values(inner) if v not in found]
    return found


def settings(function: Callable[..., Any]) -> Iterator[dict[str, Any]]:
    """The task's defaults, then each value of each variant-selecting parameter."""
    yield {}
    hints = typing.get_type_hints(function)
    for name, parameter in inspect.signature(function).parameters.items():
        for value in _values(hints.get(name)):
            if value == parameter.default:
                continue
            yield {name: value, **COMPANIONS.get((name, value), {})}


def identifier(task: Task, tmp: Path) -> str:
    """Inspect's eval-set identifier of ``task`` (from its capture manifest)."""
    manifest = tmp / "manifest.json"
    old = os.environ.get("INSPECT_EVAL_SET_CAPTURE")
    os.environ["INSPECT_EVAL_SET_CAPTURE"] = str(manifest)
    try:
        eval_set(tasks=[task], model="mockllm/model", log_dir=str(tmp / "logs"), display="none")
    except SystemExit as e:  # capture mode exits once the manifest is written
        assert e.code in (0, None)
    finally:
        if old is None:
            os.environ.pop("INSPECT_EVAL_SET_CAPTURE", None)
        else:
            os.environ["INSPECT_EVAL_SET_CAPTURE"] = old
    [entry] = json.loads(manifest.read_text())["tasks"]
    return str(entry["identifier"])


@pytest.mark.parametrize("name", sorted(registered_tasks()))
def test_each_setting_builds_one_identifier(name: str, data_dir: Path, tmp_path: Path) -> None:
    function = registered_tasks()[name]
    checked: list[dict[str, Any]] = []
    for args in settings(function):
        try:
            first = function(**args)
        except ImportError:
            if set(args.items()) & NEEDS_AN_EXTRA:
                continue  # the optional extra is not installed here
            raise
        except DatasetError as e:
            if set(args.items()) & NEEDS_MORE_DATA and "not found" in str(e):
                continue  # the data folder lacks this subset's files
            raise
        second = function(**args)
        a = identifier(first, tmp_path / f"a{len(checked)}")
        b = identifier(second, tmp_path / f"b{len(checked)}")
        assert a == b, f"{name} {args}: two builds, two eval-set identifiers"
        checked.append(args)
    # every setting was built (none refused), the defaults among them
    assert checked[0] == {} and len(checked) >= 3, checked
