"""The generic equivalence judge: strict Yes/No reading, skipped without a grader role."""

from __future__ import annotations

import asyncio

import pytest

from finmath_tasks.scorers.judge import judge_equivalence, parse_yes_no


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


def test_without_a_grader_role_the_judge_is_skipped() -> None:
    result = asyncio.run(judge_equivalence("Are these the same?"))
    assert result.status == "skipped" and result.verdict is None
    assert "--model-role grader=" in result.detail
