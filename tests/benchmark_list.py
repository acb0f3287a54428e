"""The benchmarks the shared tests run over: the package's one list, discovered from the
folders under ``src/finmath_tasks/tasks/`` (``finmath_tasks.tasks.benchmarks``), never a
list kept here. A new folder is a new parameter of every test that uses :data:`BENCHMARKS`.

Where a test asserts values only a person can write for a benchmark (a scripted run, its
expected scores), it keeps a table of hand entries and reads it through :func:`need`. A
benchmark with no hand entry gets the generic default the test derives from the
benchmark's own folder: its task at its defaults (with the arguments its ``task.py`` may
declare in :data:`SHARED_TEST_ARGS_NAME`), answered by :func:`oracle_model` (the target of
each sample, so scores are not all zero). Where no default can be derived (the task does
not build), the test fails naming the benchmark and what to declare in its folder, so a
new benchmark is never left out in silence. :func:`cases` gives the parameters of a test
over such a table: its entries, and each benchmark that has none.
"""

from __future__ import annotations

import importlib
import inspect as pyinspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pytest
from inspect_ai import Task
from inspect_ai.model import ChatMessage, Model, ModelOutput, get_model

from finmath_tasks.tasks import benchmark_folder, benchmarks, ships_its_data

BENCHMARKS: list[str] = benchmarks()
"""Every benchmark folder, sorted."""
WITH_UPSTREAM: list[str] = [b for b in BENCHMARKS if not ships_its_data(b)]
"""The benchmarks that read their authors' files (an ``upstream.tsv``); the others ship all of
their data in the package (no paper to link, no upstream copy to verify)."""

T = TypeVar("T")


SHARED_TEST_ARGS_NAME = "SHARED_TEST_ARGS"
"""The optional dict in a benchmark's ``task.py``: the task arguments its generic runs in
the shared tests take (e.g. a small split), where its defaults are not enough."""


class NoDefault(Exception):
    """No generic default can be derived from the benchmark's folder (the message says why)."""


def need(
    table: Mapping[str, T],
    benchmark: str,
    what: str,
    where: str,
    default: Callable[[str], T] | None = None,
) -> T:
    """``table[benchmark]`` (the hand entry), else ``default(benchmark)`` (the generic default
    from the benchmark's folder). Without a default, or where it raises :class:`NoDefault`
    (whose message says what to declare in the benchmark's folder), a failure naming the
    benchmark, what is missing and where else to add it (``where``: the file and the
    table's name)."""
    if benchmark in table:
        return table[benchmark]
    if default is None:
        pytest.fail(f"no {what} for benchmark {benchmark}: add them to {where}", pytrace=False)
    try:
        return default(benchmark)
    except NoDefault as error:
        pytest.fail(
            f"no {what} for benchmark {benchmark}: {error}, or add them to {where}",
            pytrace=False,
        )


def shared_test_args(benchmark: str) -> dict[str, Any]:
    """The task arguments ``tasks/<benchmark>/task.py`` declares for the shared tests
    (:data:`SHARED_TEST_ARGS_NAME`), or none."""
    args = getattr(task_module(benchmark), SHARED_TEST_ARGS_NAME, {})
    if not isinstance(args, dict):
        raise NoDefault(f"{SHARED_TEST_ARGS_NAME} in tasks/{benchmark}/task.py is not a dict")
    return dict(args)


def default_task(benchmark: str, **args: Any) -> Task:
    """The benchmark's task at its defaults, with its :func:`shared_test_args` and ``args``;
    :class:`NoDefault` (naming the cause) where it does not build."""
    arguments = {**shared_test_args(benchmark), **args}
    try:
        return task_function(benchmark)(**arguments)  # type: ignore[no-any-return]
    except Exception as error:  # any failure to build is reported, named
        shown = " ".join(str(error).split())[:300]
        raise NoDefault(
            f"its task does not build with {arguments or 'its defaults'} "
            f"({type(error).__name__}: {shown}): declare the arguments it needs in "
            f"{SHARED_TEST_ARGS_NAME} in tasks/{benchmark}/task.py"
        ) from error


def oracle_reply(target: str) -> str:
    """A reply that answers with ``target`` in the shapes our extractors read."""
    return f"The answer is {target}.\nAnswer: {target}\nTherefore, the answer is {target}."


def oracle_model(task: Task, name: str = "mockllm/model") -> Model:
    """A mockllm model answering each sample of ``task`` with its target
    (:func:`oracle_reply`): the prompt is matched to the sample whose input it holds
    (the longest, so one input inside another is not mistaken)."""
    pairs = sorted(
        ((_text(s.input), ", ".join(s.target) if isinstance(s.target, list) else s.target)
         for s in task.dataset),
        key=lambda p: -len(p[0]),
    )  # fmt: skip

    def answer(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        prompt = "\n".join(m.text for m in messages if m.role == "user")
        target = next((t for text, t in pairs if text and text in prompt), None)
        reply = oracle_reply(target) if target is not None else "no sample matched"
        return ModelOutput.from_content(name, reply)

    return get_model(name, custom_outputs=answer)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "\n".join(m.text for m in value if m.role == "user")


def detail_argument(benchmark: str) -> tuple[str, Any]:
    """A parameter of the benchmark's task and a value other than its default: the first
    with a ``Literal`` of several choices (or a bool, an int), read from its signature."""
    function = task_function(benchmark)
    hints = typing.get_type_hints(pyinspect.unwrap(function))
    for name, parameter in pyinspect.signature(function).parameters.items():
        default = parameter.default
        kind = hints.get(name)
        if default is pyinspect.Parameter.empty:
            continue
        if typing.get_origin(kind) is typing.Literal:
            others = [c for c in typing.get_args(kind) if c != default]
            if others:
                return name, others[0]
        elif isinstance(default, bool):
            return name, not default
        elif isinstance(default, int):
            return name, default + 1
    raise NoDefault(
        f"its task has no parameter with a second value (a Literal, bool or int): give "
        f"tasks/{benchmark}/task.py's @task one"
    )


def case_benchmark(case: str) -> str:
    """The benchmark a table's case belongs to: its name, or the name before ``_<more>``
    (``knowledgefmath_test`` is a case of ``knowledgefmath``)."""
    return max(
        (b for b in BENCHMARKS if case == b or case.startswith(f"{b}_")), key=len, default=case
    )


def cases(table: Mapping[str, Any], skip: Mapping[str, str] | None = None) -> list[str]:
    """The parameters of a test over ``table``: its cases, and each benchmark with no case
    (its test then fails through :func:`need`), except those in ``skip`` (benchmark ->
    where it is tested instead)."""
    covered = {case_benchmark(c) for c in table}
    return [*table, *(b for b in BENCHMARKS if b not in covered and b not in (skip or {}))]


def task_module(name: str) -> Any:
    """The benchmark's ``task.py`` module."""
    return importlib.import_module(f"finmath_tasks.tasks.{name}.task")


def task_function(name: str) -> Any:
    """The benchmark's ``@task`` function (named after its folder)."""
    return getattr(task_module(name), name)


__all__ = [
    "BENCHMARKS",
    "SHARED_TEST_ARGS_NAME",
    "WITH_UPSTREAM",
    "NoDefault",
    "benchmark_folder",
    "case_benchmark",
    "cases",
    "default_task",
    "detail_argument",
    "need",
    "oracle_model",
    "oracle_reply",
    "shared_test_args",
    "ships_its_data",
    "task_function",
    "task_module",
]
