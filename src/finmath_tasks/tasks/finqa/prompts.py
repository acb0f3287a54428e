"""The retrieval-augmented CoT prompt: system prompt, 12 few-shot exemplars, the user turn.

The exemplars (``data/exemplars.json``) are 12 FinQA train questions with
explanations we wrote ourselves; each shows its gold facts (the
``gold_inds`` sentences and rows, the table with its first row as header), and
the answer ends with the gold program on a ``Program:`` line and its value on
a ``Final answer:`` line. They are the same whatever ``-T retrieval`` is.

Conversation: system prompt; per exemplar a user turn (facts + question) and
an assistant turn (explanation, Program, Final answer); then the sample's user
turn. With retrieval the user turn is ``Question: ...`` and the retrieval
solver puts the facts in front of it (``FACTS_TEMPLATE``, the same rendering
as the exemplars'); with ``retrieval=none`` it holds the whole document.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver

from finmath_tasks.retrieval.passages import render_passages
from finmath_tasks.tasks.finqa.dataset import answer_text
from finmath_tasks.tasks.finqa.retrieval import render_facts

PROMPTS = Path(__file__).parent / "prompts"


def _prompt(name: str) -> str:
    return (PROMPTS / name).read_text(encoding="utf-8")


SYSTEM_PROMPT = _prompt("rag_cot_system.txt").strip()
FACTS_TEMPLATE = _prompt("facts_template.txt").strip()
"""``{passages}`` (the facts) and ``{prompt}`` (the question line)."""
DOCUMENT_TEMPLATE = _prompt("document_template.txt").strip()
QUESTION_TEMPLATE = _prompt("question_template.txt").strip()
ANSWER_TEMPLATE = "{explanation}\nProgram: {program}\nFinal answer: {answer}"


@dataclass(frozen=True)
class Exemplar:
    id: str
    question: str
    text: list[str]
    table: list[list[str]]
    explanation: str
    program: str
    exe_ans: float | str

    def user(self) -> str:
        question = QUESTION_TEMPLATE.format(question=self.question)
        return render_passages(FACTS_TEMPLATE, question, render_facts(self.text, self.table))

    def assistant(self) -> str:
        return ANSWER_TEMPLATE.format(
            explanation=self.explanation.strip(),
            program=self.program,
            answer=answer_text(self.exe_ans),
        )


def exemplars_file() -> Path:
    return Path(str(resources.files(__package__) / "data" / "exemplars.json"))


@cache
def load_exemplars() -> tuple[Exemplar, ...]:
    raw: list[dict[str, Any]] = json.loads(exemplars_file().read_text(encoding="utf-8"))
    return tuple(Exemplar(**item) for item in raw)


def exemplar_messages() -> list[ChatMessage]:
    messages: list[ChatMessage] = []
    for exemplar in load_exemplars():
        messages.append(ChatMessageUser(content=exemplar.user()))
        messages.append(ChatMessageAssistant(content=exemplar.assistant()))
    return messages


def user_prompt(metadata: dict[str, Any], whole_document: bool) -> str:
    if whole_document:
        return DOCUMENT_TEMPLATE.format(context=metadata["context"], question=metadata["question"])
    return QUESTION_TEMPLATE.format(question=metadata["question"])


@solver
def finqa_prompt(whole_document: bool = False, few_shot: bool = True) -> Solver:
    """Replace the conversation (system messages kept) with the exemplars and the user turn.

    ``whole_document``: the user turn holds the rendered document (no retrieval);
    otherwise only the question, for a retrieval solver to add the facts.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        prompt = user_prompt(state.metadata, whole_document)
        state.messages = [
            *(m for m in state.messages if m.role == "system"),
            *(exemplar_messages() if few_shot else []),
            ChatMessageUser(content=prompt),
        ]
        return state

    return solve
