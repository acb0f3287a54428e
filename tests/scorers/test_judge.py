"""The generic equivalence judge: the two readers of a reply; a failed call is an error."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inspect_ai.model import ModelOutput, get_model

from finmath_tasks.scorers.grader import Grader
from finmath_tasks.scorers.judge import (
    json_verdict_reader,
    judge_equivalence,
    last_line_reader,
    parse_yes_no,
)


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("Yes", True), ("no", False), ("Same answer.\nYes.", True), ("**No**", False),
        ("Reasoning...\nVerdict: Yes", True), ("Output: no", False), ("`Yes`", True),
        ("Final answer: No.", False),
        ("Yes, but the units differ", None), ("Maybe", None), ("", None),
        ("Yes\nor rather no, hard to say", None), ("YesNo", None), ("Yes or No", None),
    ],
)  # fmt: skip
def test_strict_yes_no(reply: str, verdict: bool | None) -> None:
    assert parse_yes_no(reply) is verdict


def _grader(reply: object) -> Grader:
    def answer(*_: object) -> ModelOutput:
        if isinstance(reply, Exception):
            raise reply
        return ModelOutput.from_content("mockllm/judge", str(reply))

    return Grader(get_model("mockllm/judge", custom_outputs=answer), "mockllm/judge", True)


def test_the_judge_asks_the_grader_it_is_given_and_never_raises() -> None:
    assert asyncio.run(judge_equivalence("Same?", _grader("Same.\nYes"))).status == "yes"
    unread = asyncio.run(judge_equivalence("Same?", _grader("perhaps")))
    assert unread.status == "unparseable" and unread.reply == "perhaps"
    failed = asyncio.run(judge_equivalence("Same?", _grader(RuntimeError("down"))))
    assert failed.status == "error" and failed.verdict is None
    assert "RuntimeError: down" in failed.detail


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ('{"reasoning": "same", "output": "Yes"}', True),
        ('Thoughts first.\n```json\n{"reasoning": "r", "output": "yes."}\n```', True),
        ('{"reasoning": "r", "output": "YES, equivalent"}', True),  # substring, any case
        ('{"reasoning": "r", "output": "No"}', False),
        ('{"reasoning": "r", "output": "different"}', False),  # readable, not yes
        ('{"reasoning": "r", "output": ""}', False),
        ('{"output": "Yes"}', None),  # the schema's reasoning string is missing
        ('{"reasoning": "r", "output": true}', None),  # not a string
        ('{"reasoning": "r", "verdict": "Yes"}', None),  # no output field
        ("Yes", None),  # no JSON object at all
        ("", None),
    ],
)  # fmt: skip
def test_json_verdict_reader(reply: str, verdict: bool | None) -> None:
    read = json_verdict_reader("output", accept="yes", required=("reasoning",))
    got, why = read(reply)
    assert got is verdict
    assert bool(why) == (verdict is None)


def test_last_line_reader_explains_an_unreadable_reply() -> None:
    assert last_line_reader("Same.\nYes") == (True, "")
    verdict, why = last_line_reader("hard to say")
    assert verdict is None and "does not end with Yes or No" in why


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400) | st.builds(
    lambda a, b, out: f'{a}{{"reasoning": {b!r}, "output": {out}}}',
    st.text(max_size=50), st.text(max_size=50),
    st.one_of(st.just('"yes"'), st.just("1"), st.just("null"), st.text(max_size=10)),
))  # fmt: skip
def test_json_verdict_reader_never_raises(reply: str) -> None:
    verdict, why = json_verdict_reader("output", required=("reasoning",))(reply)
    assert verdict in (True, False, None) and (verdict is None) == bool(why)
