"""Every agent call as its own prompt: scripted replies that take every path of every agent
solver, and the prompts each call must have been sent. Used on real records
by ``tests/tasks/tatqa`` and ``tests/tasks/finqa``, and on a generic task by
``tests/solvers/agents``.

Each sample's scripted replies carry a marker of the sample and the call, so a prompt
that carries the wrong text (another call's reply, another sample's) fails the exact
comparison. What each call must carry, from the paper's appendix D:

- analyst: the document and the question;
- critic: the document, the question and the analyst's whole reply;
- revision: the document, the question, that reply and the whole critique;
- improved critic: the document, the question and the analyst's whole reply;
- comparison (after an update): the question and both whole replies;
- calculator extraction: the current whole reply (the revision's or the comparison's
  after a critic) as its list of steps, nothing else of the sample;
- calculator final: that reply and the checked calculations.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval, task_with
from inspect_ai.dataset import MemoryDataset
from inspect_ai.log import EvalSample, resolve_sample_attachments
from inspect_ai.model import ChatMessageUser

from eval_helpers import metrics, scripted
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.solvers.agents import AGENT_NAMES, CALCULATOR_AGENTS, UNSOURCED_KEY
from finmath_tasks.solvers.agents import prompts as P
from finmath_tasks.solvers.agents.calculator import check_equations, render_checks

BWRAP_OK, BWRAP_REASON = bwrap_available()
SOLVERS = [
    pytest.param(
        name, marks=[pytest.mark.bwrap, pytest.mark.skipif(not BWRAP_OK, reason=BWRAP_REASON)]
    )
    if name == "pot"
    else name
    for name in AGENT_NAMES
]
"""Every agent solver; pot's programs run in the bubblewrap sandbox."""


def call_prompts(sample: EvalSample) -> list[str]:
    """The prompt of each model call of a logged sample, in order; every call must be one
    user message (a single-turn prompt, no earlier turn)."""
    sample = resolve_sample_attachments(sample)
    prompts = []
    for event in sample.events:
        if event.event != "model":
            continue
        assert len(event.input) == 1, [m.role for m in event.input]
        [message] = event.input
        assert isinstance(message, ChatMessageUser), message.role
        prompts.append(message.text)
    return prompts


@dataclass(frozen=True)
class Script:
    """One sample's scripted replies and the prompts its calls must have been sent."""

    replies: list[str]
    prompts: list[str]
    carries: list[tuple[str, ...]]
    """Per call, the texts its prompt must hold verbatim, in this order."""
    lacks: list[tuple[str, ...]]
    """Per call, texts its prompt must not hold (the document where the paper leaves it out)."""
    unsourced: int
    """Extracted equations the calculator diagnostic must count for this sample."""


def script(
    solver: str, n: int, context: str, question: str, instruction: str, gold: str | None = None
) -> Script:
    """Sample ``n``'s replies under ``solver``: every optional call made (the improved
    critic updates, the calculator finds equations), the first answer wrong, except with
    ``gold``: the first answer is the gold answer and ``critic_oracle`` stops there. The
    calculator's extraction of sample 1 copies an equation of the prompt's examples (its
    operands are not in the analyst's output)."""
    tag = f"s{n}"
    first = json.dumps({"steps": [f"{tag}-cot: 700 - 300 = 400"], "answer": gold or "-99999"})
    replies: list[str] = [first]
    template = P.ANALYST_POT if solver == "pot" else P.ANALYST_COT
    prompts = [P.fill(template, context=context, question=question, answer_instruction=instruction)]
    carries: list[tuple[str, ...]] = [(context, question)]
    lacks: list[tuple[str, ...]] = [()]
    if solver == "pot":
        program = "```python\ndef solution():\n    return 400\n```"
        return Script([program], prompts, carries, lacks, 0)
    response, equation = first, "700-300=400"
    unsourced = 0
    if solver in ("critic", "critic_calculator", "critic_oracle"):
        critique = f"{tag}-critique: the subtraction should use 710."
        revised = json.dumps({"steps": [f"{tag}-revision: 710 - 300 = 420"], "answer": "410"})
        replies += [critique, revised]
        prompts += [
            P.critic_prompt(context, question, response),
            P.revision_prompt(context, question, response, critique, instruction),
        ]
        carries += [(context, question, response), (context, question, response, critique)]
        lacks += [(), ()]
        response, equation = revised, "710-300=420"
        if solver == "critic_oracle" and gold is not None:
            return Script([first], prompts[:1], carries[:1], lacks[:1], 0)
    if solver in ("icritic", "icritic_calculator"):
        critic = json.dumps(
            {"decision": "update", "steps": [f"{tag}-icritic: 710 - 300 = 410"], "answer": "410"}
        )
        chosen = json.dumps({"steps": [f"{tag}-compare: 710 - 300 = 420"], "answer": "410"})
        replies += [critic, chosen]
        prompts += [
            P.improved_critic_prompt(context, question, response, instruction),
            P.compare_prompt(question, response, critic, instruction),
        ]
        carries += [(context, question, response), (question, response, critic)]
        lacks += [(), ()]
        response, equation = chosen, "710-300=420"
    if solver in ("calculator", "critic_calculator", "icritic_calculator"):
        equations = [equation]
        if n == 1:  # a copy of the prompt's second example's last equation
            equations = ["4454.7/2=2227.35"]
            unsourced = 1
        extraction = json.dumps({"answer": equations})
        final = json.dumps({"steps": [f"{tag}-final"], "answer": "410"})
        replies += [extraction, final]
        checks = render_checks(check_equations(extraction))
        prompts += [
            P.extraction_prompt(response),
            P.final_prompt(response, checks, instruction),
        ]
        # the extraction: the examples first, the whole response last, under "List of steps"
        carries += [("4454.7/2=2227.35", "### List of steps\n" + response), (response, checks)]
        lacks += [(context, question), (context,)]
    return Script(replies, prompts, carries, lacks, unsourced)


def assert_calls(sent: list[str], expected: Script, label: object = "") -> None:
    """The prompts ``sent`` are those expected, and each carries (and lacks) its texts."""
    assert len(sent) == len(expected.prompts), (label, len(sent), len(expected.prompts))
    for i, got in enumerate(sent):
        position = 0
        for text in expected.carries[i]:
            found = got.find(text, position)
            assert found >= 0, (label, i, "missing or out of order", text[:80])
            position = found + len(text)
        for text in expected.lacks[i]:
            assert text not in got, (label, i, "should not carry", text[:80])
        assert got == expected.prompts[i], (label, i)


def check_every_call(task: Task, solver: str, instruction: str, log_dir: Path) -> None:
    """A real eval of ``task`` (built with ``solver``) on its first two samples with
    replies that take every path: each call's prompt is exactly the expected one, and the
    calculators' diagnostic counts the one unsourced equation the script plants."""
    samples = list(task.dataset)[:2]
    scripts = []
    for n, sample in enumerate(samples):
        metadata: dict[str, Any] = sample.metadata or {}
        gold = str(sample.target) if solver == "critic_oracle" and n == 1 else None
        scripts.append(
            script(solver, n, metadata["context"], metadata["question"], instruction, gold)
        )
    task = task_with(task, dataset=MemoryDataset(samples))
    replies = [r for s in scripts for r in s.replies]
    [log] = eval(
        task,
        model=scripted(replies),
        # programs (pot) run in bubblewrap, as `--sandbox finmath_bwrap` chooses it
        sandbox="finmath_bwrap" if task.sandbox is not None else None,
        max_samples=1,
        display="none",
        log_dir=str(log_dir),
    )
    assert log.status == "success", log.error
    assert log.samples is not None
    by_id = {s.id: s for s in log.samples}
    for sample, expected in zip(samples, scripts, strict=True):
        assert_calls(call_prompts(by_id[sample.id]), expected, (solver, sample.id))
    if solver in CALCULATOR_AGENTS:
        assert metrics(log, UNSOURCED_KEY) == {"count": 1.0, "extracted": 2.0, "samples": 1.0}
    else:
        assert log.results is not None
        assert UNSOURCED_KEY not in [s.name for s in log.results.scores]
