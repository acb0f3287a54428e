"""FinQA (Chen et al., EMNLP 2021) as in "Retrieval-augmented chain-of-thought in
semi-structured domains" (Mavi, Saparov, Zhao, NLLP 2023): the ``finqa`` task.

Numerical questions over an excerpt of an annual report (sentences and one
table), each with a gold program in FinQA's DSL and its value ``exe_ans``.
Scored with FinQA's official execution and program accuracy and with our
answer accuracy (``profile``, beside the ``rounding`` comparison).

    inspect eval finmath_tasks/finqa -T data_dir=/data/finqa --model openai/gpt-4o
    inspect eval finmath_tasks/finqa -T retrieval=gold -T split=dev ...
    inspect eval finmath_tasks/finqa -T solver=oracle --model mockllm/model

Solvers are a table (:data:`SOLVERS`): a name, in :data:`SolverName`, maps to
a factory taking the task's :class:`SolverConfig`. Adding a solver is one
entry in each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from inspect_ai import Task, task
from inspect_ai.model import ChatMessageAssistant, GenerateConfig, ModelOutput
from inspect_ai.scorer import mean, stderr
from inspect_ai.solver import Generate, Solver, TaskState, chain, generate, solver, system_message

from finmath_tasks import params
from finmath_tasks.retrieval.passages import insert_passages
from finmath_tasks.retrieval.scorer import RECALL_KEY, with_recall
from finmath_tasks.scorers.comparisons import COMPARISONS
from finmath_tasks.scorers.metrics import accuracy_metrics
from finmath_tasks.tasks.finqa.dataset import DATASET_REVISION, Split, load_dataset
from finmath_tasks.tasks.finqa.prompts import (
    ANSWER_TEMPLATE,
    FACTS_TEMPLATE,
    SYSTEM_PROMPT,
    finqa_prompt,
)
from finmath_tasks.tasks.finqa.retrieval import Retrieval, selector
from finmath_tasks.tasks.finqa.scoring import finqa_keys, finqa_scorer
from finmath_tasks.tiktoken_offline import ensure_tiktoken_encodings

NAME = "finqa"
TASK_VERSION = "1.0.0"
DEFAULT_TOP_K = 3
"""Facts retrieved per question: FinQA's retriever (FinQANet) passes its top 3 facts on."""
GENERATE_CONFIG = GenerateConfig(temperature=0.0)
RETRIEVAL_KEY = "retrieval"
"""Sample metadata key of what retrieval chose (keys, scores, gold keys, recall)."""

SolverName = Literal["rag_cot", "oracle"]
Profile = Literal["tolerant", "rounding", "exact"]
OFFICIAL_ANSWER_PROFILE = "rounding"
"""The comparison reported beside ``profile`` (the agents paper's)."""


@dataclass(frozen=True)
class SolverConfig:
    """What a solver factory gets from the task parameters."""

    retrieval: str
    top_k: int


def context_steps(config: SolverConfig) -> list[Solver]:
    """The user turn with its facts: exemplars + question (+ retrieved facts) or the document."""
    steps: list[Solver] = [finqa_prompt(whole_document=config.retrieval == "none")]
    if config.retrieval != "none":
        steps.append(
            insert_passages(selector(config.retrieval, config.top_k), FACTS_TEMPLATE, RETRIEVAL_KEY)
        )
    return steps


def rag_cot(config: SolverConfig) -> Solver:
    """The retrieval-augmented few-shot CoT of the retrieval paper (12 exemplars)."""
    return chain(system_message(SYSTEM_PROMPT), *context_steps(config), generate())


@solver
def gold_answer() -> Solver:
    """Answer with the gold program and exe_ans in the CoT answer format (no model)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        content = ANSWER_TEMPLATE.format(
            explanation="(oracle: the gold program)",
            program=state.metadata["program"],
            answer=state.target.text,
        )
        state.output = ModelOutput.from_content(model="oracle", content=content)
        state.messages.append(ChatMessageAssistant(content=content, model="oracle"))
        return state

    return solve


def oracle(config: SolverConfig) -> Solver:
    """The rag_cot prompt and retrieval, then the gold answer: checks the pipeline scores 1."""
    return chain(system_message(SYSTEM_PROMPT), *context_steps(config), gold_answer())


SOLVERS: dict[str, Callable[[SolverConfig], Solver]] = {
    "rag_cot": rag_cot,
    "oracle": oracle,
}
"""-T solver= name -> factory. Every name of SolverName has an entry (a test checks it)."""

DSL_SOLVERS = frozenset({"rag_cot", "oracle"})
"""Solvers whose answers end in a ``Program:`` line: scored with FinQA's execution and
program accuracy too. Other solvers (JSON answers) are scored on the answer only."""


@task(name=NAME)
def finqa(
    split: Split = "test",
    solver: SolverName = "rag_cot",
    retrieval: Retrieval = "bm25",
    top_k: int = DEFAULT_TOP_K,
    profile: Profile = "tolerant",
    data_dir: str | None = None,
    revision: str | None = DATASET_REVISION,
) -> Task:
    """FinQA.

    Args:
      split: train, dev or test (default; the upstream file names).
      solver: rag_cot (retrieval-augmented few-shot chain of thought ending in
        a Program: and a Final answer: line) or oracle (the same prompt, then
        the gold program and answer instead of a model: should score 1).
      retrieval: bm25 (default: the top_k sentences and table rows for the
        question), gold (the annotated supporting facts, gold_inds) or none
        (the whole document).
      top_k: facts retrieved with bm25 (1..50; default 3).
      profile: our answer comparison, reported beside ``rounding``: tolerant
        (default), rounding or exact.
      data_dir: directory with train.json/dev.json/test.json (or a finqa/
        subfolder); default $FINMATH_DATA_DIR, else the Hub copy.
      revision: Hub revision of the Hub copy.
    """
    params.choice(NAME, "split", split, Split)
    params.choice(NAME, "solver", solver, SolverName)
    params.choice(NAME, "retrieval", retrieval, Retrieval)
    top_k = params.integer_in_range(NAME, "top_k", top_k, 1, 50)
    params.choice(NAME, "profile", profile, Profile)
    data_dir = params.optional_path(NAME, "data_dir", data_dir)
    revision = params.optional_text(NAME, "revision", revision)
    ensure_tiktoken_encodings()  # offline token counting (Inspect's mockllm)

    names = list(dict.fromkeys([profile, OFFICIAL_ANSWER_PROFILE]))
    comparisons = {name: COMPARISONS[name] for name in names}
    programs = solver in DSL_SOLVERS
    scorer = finqa_scorer(comparisons, programs=programs)
    metrics = accuracy_metrics(finqa_keys(comparisons, programs))
    if retrieval != "none":
        scorer = with_recall(scorer, RETRIEVAL_KEY)
        metrics[RECALL_KEY] = [mean(), stderr()]
    config = SolverConfig(retrieval=retrieval, top_k=top_k)
    return Task(
        dataset=load_dataset(split, data_dir, revision),
        solver=SOLVERS[solver](config),
        scorer=scorer,
        metrics=metrics,
        config=GENERATE_CONFIG,
        version=TASK_VERSION,
        metadata={
            "benchmark": NAME,
            "split": split,
            "solver": solver,
            "retrieval": retrieval,
            "top_k": top_k if retrieval == "bm25" else None,
            "profiles": names,
        },
    )
