"""The benchmarks the shared tests run over: the package's one list, discovered from the
folders under ``src/finmath_tasks/tasks/`` (``finmath_tasks.tasks.benchmarks``), never a
list kept here. A new folder is a new parameter of every test that uses :data:`BENCHMARKS`.

Where a test needs a fact that only a person can write for each benchmark (a scripted run,
expected published numbers), it keeps a table and reads it through :func:`need`: a
benchmark missing from the table fails that test, naming the benchmark and the table, so a
new benchmark is never left out in silence. :func:`cases` gives the parameters of a test
over such a table: its entries, and each benchmark that has none.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, TypeVar

import pytest

from finmath_tasks.tasks import benchmark_folder, benchmarks, ships_its_data

BENCHMARKS: list[str] = benchmarks()
"""Every benchmark folder, sorted."""
WITH_UPSTREAM: list[str] = [b for b in BENCHMARKS if not ships_its_data(b)]
"""The benchmarks that read their authors' files (an ``upstream.tsv``); the others ship all of
their data in the package (no paper to link, no upstream copy to verify)."""

T = TypeVar("T")


def need(table: Mapping[str, T], benchmark: str, what: str, where: str) -> T:
    """``table[benchmark]``, or a failure naming the benchmark, what is missing and where to
    add it (``where``: the file and the table's name)."""
    if benchmark not in table:
        pytest.fail(f"no {what} for benchmark {benchmark}: add them to {where}", pytrace=False)
    return table[benchmark]


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
    "WITH_UPSTREAM",
    "benchmark_folder",
    "case_benchmark",
    "cases",
    "need",
    "ships_its_data",
    "task_function",
    "task_module",
]
