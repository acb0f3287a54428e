"""Prompts and the eight fixed exemplars (our own wording), and the prompt solver.

The conversation for one case is: the system prompt; for ``few_shot`` and
``cot``, eight exemplar turns (a user turn rendered like the case's, an
assistant turn with the answer, preceded by our explanation for ``cot``);
then the case's user turn. Statutes are inserted into a user turn by the
shared :func:`finmath_tasks.retrieval.passages.insert_passages` solver. Each
exemplar's user turn carries the statutes the same strategy retrieves for
its own question; with ``all_statutes`` the statutes appear once, in the
case's turn, and with ``none`` nowhere.

The exemplars (``data/exemplars.json``) are cases we wrote, each modelled on
the kind of question of one train-split unit (``models_train_unit``), four
entailed and four contradicted; they are the same for every question. Tax
cases get the same eight entailment exemplars (they show how the statutes
are applied), then their own instruction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver

from finmath_tasks.retrieval.passages import render_passages
from finmath_tasks.tasks.sara.retrieval import retrieve
from finmath_tasks.tasks.sara.statutes import StatuteCode

Prompting = Literal["zero_shot", "few_shot", "cot"]

HERE = Path(__file__).parent


def _prompt(name: str) -> str:
    return (HERE / "prompts" / name).read_text(encoding="utf-8").rstrip("\n")


SYSTEM_PROMPT = _prompt("system.txt")
ENTAILMENT_CASE = _prompt("entailment.txt")
ENTAILMENT_DIRECT = _prompt("entailment_direct.txt")
ENTAILMENT_COT = _prompt("entailment_cot.txt")
TAX_CASE = _prompt("tax.txt")
TAX_DIRECT = _prompt("tax_direct.txt")
TAX_COT = _prompt("tax_cot.txt")
STATUTES_TEMPLATE = _prompt("statutes.txt")


@dataclass(frozen=True)
class Exemplar:
    id: str
    text: str
    question: str
    answer: str
    explanation: str


def load_exemplars(path: Path = HERE / "data" / "exemplars.json") -> list[Exemplar]:
    records = json.loads(path.read_text(encoding="utf-8"))
    return [
        Exemplar(r["id"], r["text"], r["question"], r["answer"], r["explanation"]) for r in records
    ]


EXEMPLARS = load_exemplars()


def case_turn(kind: str, text: str, question: str, prompting: str) -> str:
    """The user turn of one case, without statutes."""
    if kind == "tax":
        body = TAX_CASE.format(text=text, question=question)
        instruction = TAX_COT if prompting == "cot" else TAX_DIRECT
    else:
        body = ENTAILMENT_CASE.format(text=text, question=question)
        instruction = ENTAILMENT_COT if prompting == "cot" else ENTAILMENT_DIRECT
    return f"{body}\n\n{instruction}"


def exemplar_answer(exemplar: Exemplar, prompting: str) -> str:
    if prompting == "cot":
        return f"{exemplar.explanation}\nAnswer: {exemplar.answer}"
    return exemplar.answer


def exemplar_messages(
    code: StatuteCode, strategy: str, prompting: str, kind: str = "entailment"
) -> list[ChatMessage]:
    """The exemplar turns for ``prompting`` (none for zero_shot)."""
    if prompting == "zero_shot":
        return []
    messages: list[ChatMessage] = []
    for exemplar in EXEMPLARS:
        turn = case_turn("entailment", exemplar.text, exemplar.question, prompting)
        if strategy not in ("none", "all_statutes"):
            statutes = retrieve(code, exemplar.question, strategy, "entailment").text
            turn = render_passages(STATUTES_TEMPLATE, turn, statutes)
        messages.append(ChatMessageUser(content=turn))
        messages.append(ChatMessageAssistant(content=exemplar_answer(exemplar, prompting)))
    return messages


@solver
def sara_prompt(exemplars: list[ChatMessage], prompting: str) -> Solver:
    """Put the exemplar turns before the case and render the case's user turn."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        metadata = state.metadata
        turn = case_turn(metadata["kind"], metadata["text"], metadata["question"], prompting)
        others = [m for m in state.messages if not isinstance(m, ChatMessageUser)]
        state.messages = [
            *others,
            *[type(m)(content=m.content) for m in exemplars],  # fresh message ids
            ChatMessageUser(content=turn),
        ]
        return state

    return solve
