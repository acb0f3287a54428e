"""The retrieval-augmented CoT prompt: system prompt, 12 few-shot exemplars, the user turn.

The exemplars are 12 records of FinQA's train split with explanations we wrote
ourselves. The package data (``data/exemplars.json``) holds only what is ours:
each exemplar's record ``id``, which of its facts to show (``text_i``/``table_j``
keys, the record's ``gold_inds``) and our ``explanation``. The question, the
facts, the gold program and ``exe_ans`` are read from the train split when the
task is built (:func:`load_exemplars`, the task's own loader: ``-T data_dir``,
``$FINMATH_DATA_DIR`` or the Hub copy): the benchmark's data is never shipped.
Each exemplar shows its facts (the sentences, and the rows under the table's
first row as header), and its answer ends with the gold program on a
``Program:`` line and its value on a ``Final answer:`` line. They are the same
whatever ``-T retrieval`` is.

Conversation: system prompt; per exemplar a user turn (facts + question) and
an assistant turn (explanation, Program, Final answer); then the sample's user
turn. With retrieval the user turn is ``Question: ...`` and the retrieval
solver puts the facts in front of it (``FACTS_TEMPLATE``, the same rendering
as the exemplars'); with ``retrieval=none`` it holds the whole document.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver

from finmath_tasks.loading import DATA_DIR_ENV, DatasetError
from finmath_tasks.retrieval.passages import render_passages
from finmath_tasks.tasks.finqa.dataset import FILES, answer_text, load_dataset
from finmath_tasks.tasks.finqa.retrieval import chosen_units, render_facts

EXEMPLAR_SPLIT = "train"
"""The split the exemplars are records of."""
_FACT_KEY = re.compile(r"(text|table)_(\d+)")

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
class ExemplarSpec:
    """What the package ships for one exemplar: ours, no benchmark text."""

    id: str
    """The train record's id."""
    facts: tuple[str, ...]
    """The units shown (``text_i``/``table_j``), in the record's numbering."""
    explanation: str
    """Our explanation (the assistant turn before the Program and Final answer lines)."""


@dataclass(frozen=True)
class Exemplar:
    """One exemplar as shown: our explanation with the train record's fields."""

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
def exemplar_specs() -> tuple[ExemplarSpec, ...]:
    """The package's exemplar list: ids, the facts to show, our explanations."""
    raw: list[dict[str, Any]] = json.loads(exemplars_file().read_text(encoding="utf-8"))
    return tuple(
        ExemplarSpec(id=item["id"], facts=tuple(item["facts"]), explanation=item["explanation"])
        for item in raw
    )


def exemplar_from_sample(spec: ExemplarSpec, sample: Sample) -> Exemplar:
    """``spec`` filled with its train record (a sample of the task's loader)."""
    metadata = sample.metadata or {}
    sentences = len(metadata["pre_text"]) + len(metadata["post_text"])
    rows = len(metadata["table"])
    for key in spec.facts:
        m = _FACT_KEY.fullmatch(key)
        limit = sentences if m and m.group(1) == "text" else rows
        if m is None or int(m.group(2)) >= limit:
            raise DatasetError(
                f"finqa exemplar {spec.id!r}: fact {key!r} is not a text_<i> or table_<j> of "
                f"the train record ({sentences} sentences, {rows} table rows)"
            )
    text, table = chosen_units(metadata, spec.facts)
    return Exemplar(
        id=spec.id,
        question=metadata["question"],
        text=text,
        table=table,
        explanation=spec.explanation,
        program=metadata["program"],
        exe_ans=metadata["exe_ans"],
    )


def build_exemplars(train: Iterable[Sample], source: str) -> tuple[Exemplar, ...]:
    """The exemplars from the train split's samples; an id missing from them is an error."""
    by_id = {sample.id: sample for sample in train}
    specs = exemplar_specs()
    missing = [spec.id for spec in specs if spec.id not in by_id]
    if missing:
        raise DatasetError(
            f"{source}: the FinQA train split has no record with id "
            f"{', '.join(repr(m) for m in missing)}: solver=rag_cot reads its {len(specs)} "
            f"few-shot exemplars (questions, facts, programs) from the upstream "
            f"{FILES[EXEMPLAR_SPLIT]} (czyssrs/FinQA dataset/); supply the full file with "
            f"-T data_dir=<directory holding {FILES[EXEMPLAR_SPLIT]}> or {DATA_DIR_ENV}"
        )
    return tuple(exemplar_from_sample(spec, by_id[spec.id]) for spec in specs)


def load_exemplars(
    data_dir: str | None = None,
    revision: str | None = None,
    train: Sequence[Sample] | None = None,
    source: str | None = None,
) -> tuple[Exemplar, ...]:
    """The exemplars, their records read from the train split (once, at task build time).

    ``train``/``source``: the train split already loaded (the task's own split);
    otherwise it is loaded like the task's data: ``data_dir``, ``$FINMATH_DATA_DIR``,
    the Hub copy at ``revision``, else the authors' files at the pinned commit.
    """
    if train is None:
        try:
            dataset = load_dataset(EXEMPLAR_SPLIT, data_dir, revision)
        except DatasetError as e:
            raise DatasetError(
                f"finqa: solver=rag_cot needs FinQA's {EXEMPLAR_SPLIT} split: its few-shot "
                f"exemplars' questions, facts and programs are read from "
                f"{FILES[EXEMPLAR_SPLIT]} (the package ships only their ids and our "
                f"explanations), and it could not be read. Supply it with -T data_dir=<directory "
                f"holding {FILES[EXEMPLAR_SPLIT]}, or a finqa/ subfolder with it> or "
                f"{DATA_DIR_ENV}. ({e})"
            ) from e
        train, source = list(dataset), dataset.location or FILES[EXEMPLAR_SPLIT]
    return build_exemplars(train, source or FILES[EXEMPLAR_SPLIT])


def exemplar_messages(exemplars: Iterable[Exemplar]) -> list[ChatMessage]:
    """The exemplar turns (fresh messages on each call)."""
    messages: list[ChatMessage] = []
    for exemplar in exemplars:
        messages.append(ChatMessageUser(content=exemplar.user()))
        messages.append(ChatMessageAssistant(content=exemplar.assistant()))
    return messages


def user_prompt(metadata: dict[str, Any], whole_document: bool) -> str:
    if whole_document:
        return DOCUMENT_TEMPLATE.format(context=metadata["context"], question=metadata["question"])
    return QUESTION_TEMPLATE.format(question=metadata["question"])


@solver
def finqa_prompt(whole_document: bool = False, exemplars: Sequence[Exemplar] = ()) -> Solver:
    """Replace the conversation (system messages kept) with the exemplars and the user turn.

    ``whole_document``: the user turn holds the rendered document (no retrieval);
    otherwise only the question, for a retrieval solver to add the facts.
    ``exemplars``: the few-shot exemplars (:func:`load_exemplars`), rendered once.
    """
    turns = [(e.user(), e.assistant()) for e in exemplars]

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        prompt = user_prompt(state.metadata, whole_document)
        shots: list[ChatMessage] = []
        for user, assistant in turns:  # fresh messages (ids) per sample
            shots += [ChatMessageUser(content=user), ChatMessageAssistant(content=assistant)]
        state.messages = [
            *(m for m in state.messages if m.role == "system"),
            *shots,
            ChatMessageUser(content=prompt),
        ]
        return state

    return solve
