"""Property tests: the DSL parser/executor, program equivalence and the scorer never raise."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import math

from finqa_fixtures import RECORDS, TABLE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import Target
from inspect_ai.solver import TaskState

from finmath_tasks.scorers.comparisons import COMPARISONS
from finmath_tasks.tasks.finqa.dataset import record_to_sample
from finmath_tasks.tasks.finqa.dsl import OPS, DSLError, equivalent_programs, execute, parse_program
from finmath_tasks.tasks.finqa.scoring import finqa_scorer

# Pieces of DSL and of hostile text, so generated programs often get far into the grammar.
PIECES = [
    *[f"{op}(" for op in OPS],
    "(",
    ")",
    ", ",
    ",",
    " ",
    "#0",
    "#1",
    "#99999999999999999999",
    "const_100",
    "const_m1",
    "const_",
    "1",
    "0",
    "-2.5",
    "1e308",
    "9" * 40,
    "49.9%",
    "%",
    "1,250",
    "revenue",
    "net income",
    "none",
    "__import__('os')",
    "\n",
    "Program: ",
    "Final answer: ",
    "yes",
    "no",
    "**",
]
programs = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from(PIECES), max_size=40).map("".join),
)

PROPERTY_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY_SETTINGS
@given(programs)
def test_execute_never_raises(program: str) -> None:
    result = execute(program, TABLE)
    if result.ok:
        assert isinstance(result.value, str) or math.isfinite(result.value)
    else:
        assert result.error and result.value is None


@PROPERTY_SETTINGS
@given(programs)
def test_parser_raises_only_dsl_errors(program: str) -> None:
    with contextlib.suppress(DSLError):
        parse_program(program)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_equivalence_never_raises(program: str) -> None:
    result, reason = equivalent_programs("subtract(1250, 1000), divide(#0, 1000)", program)
    assert isinstance(result, bool) and reason


SCORER = finqa_scorer(dict(COMPARISONS))


def score(output: str, record_index: int) -> object:
    sample = record_to_sample(copy.deepcopy(RECORDS[record_index]))
    state = TaskState(
        model="mockllm/model",  # type: ignore[arg-type]
        sample_id=sample.id or 0,
        epoch=1,
        input=sample.input,
        messages=[],
        output=ModelOutput.from_content("mockllm/model", output),
        metadata=sample.metadata,
    )
    return asyncio.run(SCORER(state, Target(sample.target)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(PIECES), max_size=40).map("".join) | st.text(max_size=300),
    st.integers(0, 3),
)
def test_scorer_never_raises_and_scores_zero_or_one(output: str, index: int) -> None:
    result = score(output, index)
    values = result.value  # type: ignore[attr-defined]
    assert isinstance(values, dict)
    assert set(values) == {
        "execution_accuracy",
        "program_accuracy",
        "tolerant",
        "rounding",
        "exact",
    }
    assert all(v in (0.0, 1.0) for v in values.values())


def test_scorer_on_the_gold_answer() -> None:
    result = score("Program: greater(120, 100)\nFinal answer: yes", 2)
    assert result.value == {  # type: ignore[attr-defined]
        "execution_accuracy": 1.0,
        "program_accuracy": 1.0,
        "tolerant": 1.0,
        "rounding": 1.0,
        "exact": 1.0,
    }


def test_program_and_answer_on_the_line_after_their_labels() -> None:
    output = "Reasoning.\nProgram:\n```\ngreater(120, 100)\n```\nFinal answer:\n**Yes**"
    assert score(output, 2).value["execution_accuracy"] == 1.0  # type: ignore[attr-defined]
    assert score(output, 2).value["tolerant"] == 1.0  # type: ignore[attr-defined]


def test_answer_only_scoring_for_solvers_without_programs() -> None:
    sample = record_to_sample(copy.deepcopy(RECORDS[0]))
    state = TaskState(
        model="mockllm/model",  # type: ignore[arg-type]
        sample_id=1,
        epoch=1,
        input=sample.input,
        messages=[],
        output=ModelOutput.from_content(
            "mockllm/model", '{"steps": ["250 / 1000"], "answer": 0.25}'
        ),
        metadata=sample.metadata,
    )
    result = asyncio.run(
        finqa_scorer(dict(COMPARISONS), programs=False)(state, Target(sample.target))
    )
    assert result.value == {"tolerant": 1.0, "rounding": 1.0, "exact": 1.0}
