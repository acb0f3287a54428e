"""Property: each task's own scorers, on real samples, never raise on a bad model output.

Our scorers catch no exception at their boundary any more: an exception in our own
code reaches Inspect as the sample's error (see ``scorers.keyed``). So a bad model
output (empty, enormous, hostile, an odd number, half a JSON object, a program line
that does not parse) must be handled inside each benchmark's scoring as a wrong or
unscored sample with the reason. This runs the scorers of each task, as the task
builds them, on real samples of each benchmark with generated outputs.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inspect_ai import Task
from inspect_ai.model import ModelOutput
from inspect_ai.util import registry_info

from benchmark_list import case_benchmark, cases, default_task, need
from eval_helpers import state_of
from finmath_tasks.scorers.error_classes import ERROR_CLASS_KEY, SHARED_CLASSES

ANSWER_KEYS = {
    "financemath",
    "knowledgefmath2023",
    "tolerant",
    "rounding",
    "exact",
    "execution_accuracy",
    "program_accuracy",
    "em",
    "f1",
    "entailment",
    "exact_dollar",
    "sara_tolerance",
}
"""The keys that judge an answer (each has a class when wrong)."""

PIECES = st.sampled_from(
    [
        "The answer is ", "Therefore, the answer is ", "Final answer: ", "Program: ",
        "Answer: ", "\\boxed{", "}", "{", '"answer": ', "```json\n", "```", "```python\n",
        "def solution():\n    return ", "Entailment", "Contradiction", "yes", "no", "$",
        "%", "-", "1e999", "-1e999", "NaN", "inf", "0x1A", "9" * 400, "1,234.5", "(12)",
        "add(1, 2)", "divide(#0, 0)", "subtract(", "table_sum(x, none)", "const_100",
        "million", "billion", "\u0661\u0662", "\x00", "\n", " ", "½", "1/3", "3.",
    ]
)  # fmt: skip
OUTPUTS = st.one_of(
    st.text(max_size=300),
    st.lists(PIECES, max_size=40).map("".join),
    st.sampled_from(["", " " * 10_000, "7" * 200_000, "The answer is " + "1" * 5000]),
)
STOPS = st.sampled_from(["stop", "max_tokens", "model_length"])


def _knowledgefmath(data: str) -> Task:  # the demo split ships with the package
    from finmath_tasks.tasks.knowledgefmath import knowledgefmath

    return knowledgefmath(split="demo", solver="cot")


def _sara(data: str) -> Task:
    from finmath_tasks.tasks.sara import sara

    return sara(kind="all", data_dir=data)


def _finqa(data: str) -> Task:
    from finmath_tasks.tasks.finqa import finqa

    return finqa(data_dir=data)


def _finqa_agent(data: str) -> Task:
    from finmath_tasks.tasks.finqa import finqa

    return finqa(solver="cot", data_dir=data)


def _tatqa(data: str) -> Task:
    from finmath_tasks.tasks.tatqa import tatqa

    return tatqa(subset="all", data_dir=data)


TASKS: dict[str, Callable[[str], Task]] = {
    "knowledgefmath": _knowledgefmath,
    "sara": _sara,
    "finqa": _finqa,
    "finqa_agent": _finqa_agent,
    "tatqa": _tatqa,
}
"""Per benchmark (a case is named ``<benchmark>`` or ``<benchmark>_<more>``), its task on
real samples. A benchmark with no case here runs its task at its defaults (and its own
``SHARED_TEST_ARGS``), unless :data:`TESTED_ELSEWHERE` says where it is tested; one whose
task does not build so fails, named."""
TESTED_ELSEWHERE = {
    "mathhay": "tests/tasks/mathhay/test_mathhay_properties.py: its judge asks a model",
}
CASES = cases(TASKS, skip=TESTED_ELSEWHERE)
FILE = "test_task_scorers_bad_outputs.py TASKS"


def _generic(name: str) -> Callable[[str], Task]:
    task = default_task(name)  # at its defaults and its own SHARED_TEST_ARGS
    return lambda data: task


def _task(name: str) -> Callable[[str], Task]:
    return need(TASKS, name, "task on real samples", "tests/scorers/" + FILE, default=_generic)


def _own_classes(benchmark: str) -> set[str]:
    """The error classes a benchmark adds (its ``error_classes.py``, where it has one)."""
    name = f"finmath_tasks.tasks.{benchmark}.error_classes"
    if importlib.util.find_spec(name) is None:
        return set()
    return set(importlib.import_module(name).CLASSES)


ALL_CLASSES = SHARED_CLASSES | {c for case in CASES for c in _own_classes(case_benchmark(case))}
"""The shared classes and those of the benchmarks tested here."""
SAMPLES_PER_TASK = 6


@cache
def built(name: str, data: str) -> tuple[Any, list[Any]]:
    task = _task(name)(data)
    samples = list(task.dataset)
    step = max(1, len(samples) // SAMPLES_PER_TASK)  # spread over the kinds of questions
    scorers = task.scorer if isinstance(task.scorer, list) else [task.scorer]
    return scorers, samples[::step][:SAMPLES_PER_TASK]


def score_all(scorers: list[Any], sample: Any, output: str, stop: str) -> list[Any]:
    state = state_of(sample)
    state.output = ModelOutput.from_content("mockllm/model", output, stop_reason=stop)  # type: ignore[arg-type]

    async def run() -> list[Any]:
        return [await s(state, state.target) for s in scorers]  # in order, as Inspect does

    return asyncio.run(run())


@pytest.mark.realdata
@pytest.mark.parametrize("name", CASES)
def test_a_bad_model_output_never_raises_from_a_tasks_scorers(
    name: str, session_data_dir: Path
) -> None:
    scorers, samples = built(name, str(session_data_dir))
    assert samples and scorers

    names = [registry_info(s).name.split("/")[-1] for s in scorers]

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(output=OUTPUTS, index=st.integers(0, len(samples) - 1), stop=STOPS)
    def check(output: str, index: int, stop: str) -> None:
        for name, score in zip(
            names, score_all(scorers, samples[index], output, stop), strict=True
        ):
            assert score is not None
            value = score.value
            assert isinstance(value, float | int) and (math.isnan(value) or 0 <= value <= 1)
            assert score.explanation  # the reason is always there
            # an answer key: correct, or exactly one error class (never both)
            cls = (score.metadata or {}).get(ERROR_CLASS_KEY)
            if math.isnan(value) or value >= 1:
                assert cls is None, (name, cls)
            elif name in ANSWER_KEYS:
                assert cls in ALL_CLASSES, (name, cls, score.explanation)

    check()
