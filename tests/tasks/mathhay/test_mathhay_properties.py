"""Property tests: JSON answer extraction and the scorer never raise, whatever the reply."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from inspect_ai.model import GenerateConfig, ModelOutput, get_model
from inspect_ai.scorer import Target
from inspect_ai.solver import TaskState

from finmath_tasks._inspect_private import init_active_model
from finmath_tasks.scorers.json_answer import extract_json_object
from finmath_tasks.tasks.mathhay.scoring import exact_match, mathhay_scorer

JSONISH = st.sampled_from(
    ['{', '}', '"answer"', ':', '```json\n', '```', '"', '[', ']', ',', ' ', '\n', '1e999',
     'NaN', '-', '0.5', 'null', 'true', '{"answer": 3}', '\\', '{"a": {"answer": 1}}']
)  # fmt: skip
REPLIES = st.one_of(st.text(max_size=300), st.lists(JSONISH, max_size=60).map("".join))


@settings(max_examples=300, deadline=None)
@given(REPLIES)
def test_extraction_never_raises(reply: str) -> None:
    found, how = extract_json_object(reply, "answer")
    assert isinstance(how, str)
    assert found is None or "answer" in found


def test_extraction_cases() -> None:
    fenced = 'Work...\n```json\n{"reasoning": "x", "answer": 4.5}\n```\nDone.'
    assert extract_json_object(fenced, "answer") == ({"reasoning": "x", "answer": 4.5}, "fenced")
    bare = 'Example {"answer": 1} then final: {"reasoning": "y", "answer": 2}'
    assert extract_json_object(bare, "answer")[0] == {"reasoning": "y", "answer": 2}
    nested = '{"result": {"answer": 9}, "answer": 3}'
    assert extract_json_object(nested, "answer")[0] == {"result": {"answer": 9}, "answer": 3}
    assert extract_json_object("answer: 4", "answer")[0] is None
    assert extract_json_object("{" * 100_000, "answer")[0] is None  # bounded work


def test_exact_match_rules() -> None:
    assert exact_match(40.0, 40) and exact_match(40.0, "40.0000000000001")
    assert not exact_match(40.0, None)  # the reference accepts a missing value; we do not
    assert not exact_match(40.0, 40.001) and not exact_match(1.0, True)
    assert not exact_match(0.0, float("nan")) and not exact_match(40.0, "forty")


def state_with(output: str, metadata: dict[str, Any]) -> TaskState:
    state = TaskState(
        model="mockllm/model", sample_id=1, epoch=1, input="q", messages=[],
        metadata=metadata,
    )  # fmt: skip
    state.output = ModelOutput.from_content("mockllm/model", output)
    return state


@settings(max_examples=150, deadline=None)
@given(
    REPLIES,
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(10**400), max_value=10**400),
        st.text(max_size=10),
        st.none(),
        st.lists(st.integers(), max_size=2),
    ),
    st.floats(allow_nan=False, allow_infinity=False),
    st.dictionaries(st.sampled_from(["solution", "answer"]), st.text(max_size=20)),
)
def test_a_bad_model_output_never_raises(
    reply: str, answer: Any, gold: float, metadata: dict[str, Any]
) -> None:
    """Whatever the reply or its ``answer`` field holds, scoring a real (finite) gold gives
    a score: an exception here would be the sample's error."""
    texts = (reply, json.dumps({"answer": answer, "reasoning": reply}))
    # with the judge on and no grader role the evaluated model judges: mockllm's default
    # reply, which is no verdict (a judge's nonsense)
    init_active_model(get_model("mockllm/model"), GenerateConfig())
    for judge in (False, True):
        score_fn = mathhay_scorer(judge=judge)
        for text in texts:
            score = asyncio.run(score_fn(state_with(text, metadata), Target(repr(gold))))
            check(score.value)
            assert score.explanation


def check(value: Any) -> None:
    assert isinstance(value, dict)
    assert set(value) == {"mathhay", "exact_match", "tolerant"}
    for v in value.values():
        assert math.isnan(v) or v in (0.0, 1.0)
