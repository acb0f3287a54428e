"""The task's own solver on its own: ``tatqa_oracle`` answers with the gold answer
written as a model is asked to write it (scale words, %), without calling a model."""

from __future__ import annotations

import json

import pytest
from tatqa_fixtures import DOCUMENT

from eval_helpers import solve, state_of
from finmath_tasks.solvers.agents import AGENT_ANSWERS_KEY
from finmath_tasks.tasks.tatqa.dataset import records_to_samples
from finmath_tasks.tasks.tatqa.task import tatqa_oracle


def oracle_reply(subset: str, uid: str) -> tuple[object, dict]:
    [sample] = [s for s in records_to_samples([DOCUMENT], subset, "f.json") if uid in str(s.id)]
    state = solve(tatqa_oracle(subset), state_of(sample))
    assert state.output.model == "oracle"
    assert state.messages[-1].role == "assistant"
    assert state.messages[-1].text == state.output.completion
    return json.loads(state.output.completion)["answer"], state.store.get(AGENT_ANSWERS_KEY)


@pytest.mark.parametrize(("subset", "uid", "answer"), [
    ("arithmetic", "q-arith", "250"),  # the arithmetic subset's target, as scored
    ("all", "q-arith", "250.0 million"),  # the scale word, as the instruction asks
    ("all", "q-pct", "25%"),
    ("all", "q-span", ["widgets", "gadgets"]),
    ("all", "q-count", "2"),
])  # fmt: skip
def test_the_oracle_writes_the_gold_answer(subset: str, uid: str, answer: object) -> None:
    written, stages = oracle_reply(subset, uid)
    assert written == answer
    assert stages == [{"stage": "oracle", "answer": answer, "method": "gold", "detail": "oracle"}]
