"""Reading the agents' JSON replies."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finmath_tasks.solvers.agents.answers import decision, last_json_object, parse_reply


@pytest.mark.parametrize(
    ("reply", "answer", "method"),
    [
        ('{"steps": "a", "answer": 293.6}', "293.6", "json"),
        ('{"steps": "a", "answer": "12.5%"}', "12.5%", "json"),
        ('```json\n{"steps": "x {y}", "answer": -3}\n```', "-3", "json"),
        ('First {"answer": 1} then {"steps": "s", "answer": 2}', "2", "json"),
        ('{"steps": {"a": 1}, "answer": 7}', "7", "json"),  # nested object
        ('{"steps": "s", "ANSWER": 5}', "5", "json"),
        ('{"answer": ["Fixed Price", "Other"]}', ["Fixed Price", "Other"], "json"),
        ('{"answer": ["only"]}', "only", "json"),
        ('{"answer": true}', "yes", "json"),
        ('{"steps": "unterminated, "answer": "4.5"', "4.5", "json_field"),
        ("The answer is 42.", "42", "rules:marker"),
        ("no number at all", None, "none"),
        ("", None, "none"),
        ('{"steps": "2019 was up", "answer": null}', None, "json"),  # no guess from the steps
    ],
)
def test_parse_reply(reply: str, answer: object, method: str) -> None:
    parsed = parse_reply(reply)
    assert parsed.answer == answer
    assert parsed.method == method


def test_truncated_reply_takes_no_guess() -> None:
    cut = '{"steps": "1250 - 1000 = 250, so the change is'
    assert parse_reply(cut).answer == "250"
    parsed = parse_reply(cut, truncated=True)
    assert parsed.answer is None and parsed.method == "none"
    assert "truncated" in parsed.detail
    assert parse_reply('{"answer": 3}', truncated=True).answer == "3"


def test_decision() -> None:
    assert decision('{"decision": "Maintain"}', ("maintain", "update"))[0] == "maintain"
    verdict, obj = decision(
        '{"critique": "x", "decision": "update", "answer": 3}', ("maintain", "update")
    )
    assert verdict == "update" and obj["answer"] == 3
    assert decision('{"decision": "maybe"}', ("maintain", "update"))[0] is None
    assert decision("no json", ("maintain", "update")) == (None, {})


def test_last_json_object_is_bounded() -> None:
    text = "{" * 100_000 + '{"answer": 1}'
    assert last_json_object(text, "answer") == {"answer": 1}


JSONISH = st.sampled_from(
    [
        "{",
        "}",
        '"answer"',
        ":",
        '"',
        "1",
        "2.5",
        "[",
        "]",
        ",",
        "null",
        " ",
        "\\",
        "\n",
        "steps",
        "The answer is ",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=400), st.lists(JSONISH, max_size=80).map("".join)))
def test_parse_reply_never_raises(text: str) -> None:
    parsed = parse_reply(text)
    assert parsed.answer is None or isinstance(parsed.answer, str | list)
    decision(text, ("maintain", "update"))
