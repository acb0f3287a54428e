"""Prompts and the eight fixed exemplars, and the prompt solver.

The layout follows the paper's Figure 4 (Mavi et al., appendix E): each
question shows the statutes retrieved for it, then ``Question:`` with the
case's facts and its claim followed by "True or False?", and the answer is
True or False, after an explanation for ``cot``. As a chat conversation: a
system prompt (the instruction, per prompting mode), for ``few_shot`` and
``cot`` eight exemplar turns (a user turn rendered like the case's, an
assistant turn with the answer), then the case's user turn. Statutes are
inserted into a user turn by the shared
:func:`finmath_tasks.retrieval.passages.insert_passages` solver. Each
exemplar's user turn carries the statutes the same strategy retrieves for
its own question; with ``all_statutes`` the statutes appear once, in the
case's turn, and with ``none`` nowhere. All wording is ours.

The exemplars are the paper's eight in-context cases (section 4.2, Figure 4),
in its order, four entailed then four contradicted, the same for every
question. Three of the paper's eight are cases of SARA's test split, which
we evaluate: each is replaced by a train case of the same statute subsection
with the same verdict (``data/exemplars.json`` names the paper's case and why).
The package ships only the case ids and our explanations; the cases' facts
and claims are read from the release's train split when the task is built
(:func:`load_exemplars`), so no benchmark text is shipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver

from finmath_tasks.loading import DatasetError
from finmath_tasks.retrieval.passages import render_passages
from finmath_tasks.tasks.sara.dataset import SaraData, read_case, read_split
from finmath_tasks.tasks.sara.retrieval import retrieve
from finmath_tasks.tasks.sara.statutes import StatuteCode

Prompting = Literal["zero_shot", "few_shot", "cot"]

HERE = Path(__file__).parent
EXEMPLAR_SPLIT = "train"
EXEMPLAR_COUNT = 8
"""The paper's in-context examples for SARA (section 4.2; Figure 4's caption)."""
VERDICT_WORDS = {"Entailment": "True", "Contradiction": "False"}
"""The answer as the paper's prompt writes it, per gold label."""


def _prompt(name: str) -> str:
    return (HERE / "prompts" / name).read_text(encoding="utf-8").rstrip("\n")


SYSTEM_PROMPT = _prompt("system.txt")
SYSTEM_DIRECT = _prompt("system_direct.txt")
SYSTEM_COT = _prompt("system_cot.txt")
ENTAILMENT_CASE = _prompt("entailment.txt")
TAX_CASE = _prompt("tax.txt")
TAX_DIRECT = _prompt("tax_direct.txt")
TAX_COT = _prompt("tax_cot.txt")
STATUTES_TEMPLATE = _prompt("statutes.txt")


def system_prompt(prompting: str) -> str:
    """The system prompt: the task, then how to answer in ``prompting`` mode."""
    return f"{SYSTEM_PROMPT}\n\n{SYSTEM_COT if prompting == 'cot' else SYSTEM_DIRECT}"


@dataclass(frozen=True)
class ExemplarSpec:
    """What the package ships for one exemplar: a train case id and our explanation."""

    case_id: str
    paper_case: str
    """The case the paper's Figure 4 shows in this place (``case_id`` when it is the same)."""
    explanation: str
    substitute: str | None = None
    """Why ``case_id`` stands in for ``paper_case`` (None when they are the same)."""


@dataclass(frozen=True)
class Exemplar:
    id: str
    text: str
    question: str
    answer: str
    """The gold label, Entailment or Contradiction."""
    explanation: str


def load_specs(path: Path = HERE / "data" / "exemplars.json") -> tuple[ExemplarSpec, ...]:
    records = json.loads(path.read_text(encoding="utf-8"))
    return tuple(
        ExemplarSpec(r["case_id"], r["paper_case"], r["explanation"], r.get("substitute"))
        for r in records
    )


EXEMPLAR_SPECS = load_specs()


def load_exemplars(data: SaraData) -> list[Exemplar]:
    """The exemplars: our explanations with their cases read from the release's train split.

    A case missing from the train split (or from ``cases/``) is an error naming it:
    an exemplar never comes from the test split.
    """
    train = set(read_split(data.root, EXEMPLAR_SPLIT))
    missing = [s.case_id for s in EXEMPLAR_SPECS if s.case_id not in train]
    if missing:
        raise DatasetError(
            f"sara: the few-shot exemplars {', '.join(missing)} are not in "
            f"{data.root / 'splits' / EXEMPLAR_SPLIT}: the exemplars are train cases of the "
            "SARA v1 release; supply the full release with -T data_dir"
        )
    exemplars = []
    for spec in EXEMPLAR_SPECS:
        record = read_case(data.root, spec.case_id)
        if record["kind"] != "entailment":
            raise DatasetError(f"sara: exemplar {spec.case_id} is not an entailment case")
        exemplars.append(
            Exemplar(spec.case_id, record["text"], record["question"], record["label"],
                     spec.explanation)
        )  # fmt: skip
    return exemplars


def case_turn(kind: str, text: str, question: str, prompting: str) -> str:
    """The user turn of one case, without statutes."""
    if kind == "tax":
        instruction = TAX_COT if prompting == "cot" else TAX_DIRECT
        return f"{TAX_CASE.format(text=text, question=question)}\n\n{instruction}"
    return ENTAILMENT_CASE.format(text=text, question=question)


def with_statutes(code: StatuteCode, turn: str, question: str, kind: str, strategy: str) -> str:
    """``turn`` with the statutes ``strategy`` retrieves for ``question`` put in, as the
    task's retrieval step renders them."""
    statutes = retrieve(code, question, strategy, kind).text
    return render_passages(STATUTES_TEMPLATE, turn, statutes)


def exemplar_answer(exemplar: Exemplar, prompting: str) -> str:
    verdict = VERDICT_WORDS[exemplar.answer]
    if prompting == "cot":
        return f"{exemplar.explanation}\n{verdict}"
    return verdict


Turn = dict[str, str]
"""One exemplar turn as plain data: ``{"role": "user" | "assistant", "content": ...}``.
A solver's parameters are recorded in the log and hashed into Inspect's eval-set task
identifier: a message object there would carry a fresh random id at every build, so
every rerun would be a new task and an eval set could never resume."""


def exemplar_turns(
    code: StatuteCode, strategy: str, prompting: str, exemplars: list[Exemplar]
) -> list[Turn]:
    """The exemplar turns for ``prompting`` (none for zero_shot), as plain data."""
    if prompting == "zero_shot":
        return []
    turns: list[Turn] = []
    for exemplar in exemplars:
        turn = case_turn("entailment", exemplar.text, exemplar.question, prompting)
        if strategy not in ("none", "all_statutes"):
            turn = with_statutes(code, turn, exemplar.question, "entailment", strategy)
        turns.append({"role": "user", "content": turn})
        turns.append({"role": "assistant", "content": exemplar_answer(exemplar, prompting)})
    return turns


def turn_messages(turns: list[Turn]) -> list[ChatMessage]:
    """The exemplar turns as chat messages (new messages, with new ids, at each call)."""
    kinds = {"user": ChatMessageUser, "assistant": ChatMessageAssistant}
    return [kinds[t["role"]](content=t["content"]) for t in turns]


@solver
def sara_prompt(exemplars: list[Turn], prompting: str) -> Solver:
    """Put the exemplar turns (plain ``role``/``content`` data, see :data:`Turn`) before
    the case and render the case's user turn."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        metadata = state.metadata
        turn = case_turn(metadata["kind"], metadata["text"], metadata["question"], prompting)
        others = [m for m in state.messages if not isinstance(m, ChatMessageUser)]
        state.messages = [*others, *turn_messages(exemplars), ChatMessageUser(content=turn)]
        return state

    return solve
