"""Scripted-model runs of the tatqa task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from inspect_ai.log import EvalLog
from inspect_ai.model import ChatMessageUser
from tatqa_fixtures import DOCUMENT, write_split

from agent_calls import call_prompts
from eval_helpers import metric, scripted
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.solvers.agents import AGENT_ANSWERS_KEY, AGENT_TRACE_KEY
from finmath_tasks.solvers.agents import prompts as P
from finmath_tasks.tasks.tatqa import tatqa
from finmath_tasks.tasks.tatqa.task import ALL_INSTRUCTION, ARITHMETIC_INSTRUCTION

TOTAL = "count"
BWRAP_OK, BWRAP_REASON = bwrap_available()


def reply(answer: Any, steps: str = "s") -> str:
    return json.dumps({"steps": steps, "answer": answer})


def run(
    tmp_path: Path, outputs: list[str], sandbox: str | None = None, **task_args: Any
) -> EvalLog:
    """``sandbox``: Inspect's ``--sandbox`` (None: the task's own)."""
    write_split(tmp_path / "data", [DOCUMENT])
    task = tatqa(data_dir=str(tmp_path / "data"), **task_args)
    [log] = eval(
        task,
        model=scripted(outputs),
        sandbox=sandbox,
        display="none",
        max_samples=1,
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    return log


def test_icritic_calculator_on_the_arithmetic_subset(tmp_path: Path) -> None:
    outputs = [
        # q-arith (gold 250, in millions): right, the critic maintains, the calculator agrees
        reply(250),
        json.dumps({"critique": "", "decision": "maintain", "answer": None}),
        "1250 - 1000 = 250",
        reply(250),
        # q-pct (gold 25 percent): 2.5 first, the critic updates to 25, the analyst takes it;
        # the calculator finds 250 / 1000 * 100 = 25 correct
        reply(2.5, "250 / 1000 * 10 = 2.5"),
        json.dumps({"critique": "x100", "decision": "update", "answer": 25}),
        reply(25, "250 / 1000 * 100 = 25"),
        "250 / 1000 * 100 = 25",
        reply(25, "250 / 1000 * 100 = 25"),
    ]
    log = run(tmp_path, outputs, solver="icritic_calculator")
    assert log.samples is not None
    first = log.samples[0]
    users = call_prompts(first)  # every call one user prompt of its own
    context, question = first.metadata["context"], "What is the change in revenue?"
    assert users[0] == P.fill(
        P.ANALYST_COT,
        context=context,
        question=question,
        answer_instruction=ARITHMETIC_INSTRUCTION,
    )
    assert users[1:] == [
        P.improved_critic_prompt(context, question, outputs[0], ARITHMETIC_INSTRUCTION),
        P.extraction_prompt(outputs[0]),
        P.final_prompt(outputs[0], "1250 - 1000 = 250  [correct]", ARITHMETIC_INSTRUCTION),
    ]
    second = log.samples[1]
    assert [(a["stage"], a["answer"]) for a in second.store[AGENT_ANSWERS_KEY]] == [
        ("cot", "2.5"),
        ("icritic", "25"),
        ("calculator", "25"),
    ]
    assert second.store[AGENT_TRACE_KEY]["icritic"]["decision"] == "update"
    assert metric(log, "rounding") == 1.0
    assert metric(log, "tolerant") == 1.0
    assert metric(log, "first_answer") == 0.5
    assert metric(log, "wrong_to_correct", TOTAL) == 1
    assert metric(log, "correct_to_wrong", TOTAL) == 0
    assert metric(log, "major_change", TOTAL) == 1  # x10 became x100: other steps
    assert metric(log, "major_change", "share_w_to_c") == 1.0
    assert log.eval.metadata is not None and log.eval.metadata["uses_gold_labels"] is False


def test_cot_on_all_questions_with_official_em_f1(tmp_path: Path) -> None:
    outputs = [
        reply("250 million"),  # q-arith: right, scale in the text
        reply("25%"),  # q-pct: right
        reply(["gadgets", "sprockets"]),  # q-span: half right (F1 0.5)
        reply("3"),  # q-count: wrong
    ]
    log = run(tmp_path, outputs, subset="all", solver="cot")
    assert log.samples is not None
    users = [m.text for m in log.samples[0].messages if isinstance(m, ChatMessageUser)]
    assert ALL_INSTRUCTION in users[0]
    assert metric(log, "em") == 0.5
    assert metric(log, "f1") == pytest.approx((1 + 1 + 0.5 + 0) / 4)
    assert metric(log, "em", "type=arithmetic") == 1.0
    assert metric(log, "em", "type=multi-span") == 0.0
    assert metric(log, "f1", "type=multi-span") == 0.5


@pytest.mark.parametrize("subset", ["arithmetic", "all"])
def test_oracle_scores_one(tmp_path: Path, subset: str) -> None:
    log = run(tmp_path, [], subset=subset, solver="oracle")
    key = "rounding" if subset == "arithmetic" else "em"
    assert metric(log, key) == 1.0
    assert log.eval.metadata is not None and log.eval.metadata["uses_gold_labels"] is True


@pytest.mark.slow
@pytest.mark.bwrap
@pytest.mark.skipif(not BWRAP_OK, reason=f"bubblewrap unavailable: {BWRAP_REASON}")
def test_pot_runs_in_the_sandbox(tmp_path: Path) -> None:
    outputs = [
        "```python\ndef solution():\n    return 1250.0 - 1000.0\n```",
        "```python\nimport os\ndef solution():\n    return os.listdir('/nonexistent')\n```",
    ]
    log = run(tmp_path, outputs, solver="pot", sandbox="finmath_bwrap")
    assert log.eval.sandbox is not None and log.eval.sandbox.type == "finmath_bwrap"
    assert log.samples is not None
    first = log.samples[0]
    assert first.messages[0].role == "user"  # no system prompt (the paper's appendix D)
    users = [m.text for m in first.messages if isinstance(m, ChatMessageUser)]
    assert users == [
        P.fill(
            P.ANALYST_POT,
            context=first.metadata["context"],
            question="What is the change in revenue?",
            answer_instruction=ARITHMETIC_INSTRUCTION,
        )
    ]
    assert [a["answer"] for a in log.samples[0].store[AGENT_ANSWERS_KEY]] == ["250.0"]
    failed = log.samples[1].store[AGENT_ANSWERS_KEY][0]
    assert failed["answer"] is None and failed["method"] == "program_failed"
    assert "FileNotFoundError" in failed["detail"]
    assert metric(log, "rounding") == 0.5
    # a program has no review stage: no first answer and no flips are reported
    assert [s.name for s in log.results.scores] == ["rounding", "tolerant"]  # type: ignore[union-attr]


@pytest.mark.parametrize("factor", [0.01, 100.0])
def test_tolerant_never_credits_an_amount_100_times_off(tmp_path: Path, factor: float) -> None:
    """A money gold (scale million) answered 100 times too small or too large scores 0 under
    ``tolerant`` and is a ``scale`` error; the same rescaling of a percent gold is the
    percent/fraction reading and scores 1."""
    outputs = [reply(round(250 * factor, 6)), reply(round(25 * factor, 6))]
    log = run(tmp_path, outputs, solver="cot")
    assert log.samples is not None
    by_id = {str(s.id): s for s in log.samples}
    money, percent = by_id["q-arith"].scores, by_id["q-pct"].scores  # type: ignore[union-attr]
    assert money["tolerant"].value == 0.0
    assert money["tolerant"].metadata["error_class"] == "scale"  # type: ignore[index]
    assert percent["tolerant"].value == 1.0
    assert "error_class" not in (percent["tolerant"].metadata or {})
    assert metric(log, "tolerant") == 0.5
