"""FinQA (Chen et al., EMNLP 2021) as in "Retrieval-augmented chain-of-thought in
semi-structured domains" (Mavi, Saparov, Zhao, NLLP 2023) and in "Improved LLM agents
for financial document question answering" (Tan et al.): the ``finqa`` task.

Numerical questions over an excerpt of an annual report (sentences and one
table), each with a gold program in FinQA's DSL and its value ``exe_ans``.
``rag_cot`` and ``oracle`` are scored with FinQA's official execution and program
accuracy and with our answer accuracy (``profile``, beside the ``rounding``
comparison); the agent solvers (:data:`AGENT_NAMES`: cot, pot, critic, ...) are scored
on their recorded answers (``rounding`` and ``profile``, first answer, flips).

    inspect eval finmath_tasks/finqa -T data_dir=/data/finqa --model openai/gpt-4o
    inspect eval finmath_tasks/finqa -T retrieval=gold -T split=dev ...
    inspect eval finmath_tasks/finqa -T solver=icritic_calculator -T split=dev --model openai/gpt-4o
    inspect eval finmath_tasks/finqa -T solver=oracle --model mockllm/model

Solvers are a table (:data:`SOLVERS`): a name, in :data:`SolverName`, maps to
a factory taking the task's :class:`SolverConfig`. Adding a solver is one
entry in each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from inspect_ai import Task, task
from inspect_ai.model import ChatMessageAssistant, GenerateConfig, ModelOutput
from inspect_ai.scorer import mean, stderr
from inspect_ai.solver import Generate, Solver, TaskState, chain, generate, solver, system_message

from finmath_tasks import params
from finmath_tasks.loading import PROVENANCE_KEY, dataset_provenance, with_extra
from finmath_tasks.prefix_cache import cache_config
from finmath_tasks.retrieval.passages import insert_passages
from finmath_tasks.retrieval.scorer import RECALL_KEY, with_recall
from finmath_tasks.sandbox.resolve import default_sandbox
from finmath_tasks.scorers.comparisons import COMPARISONS
from finmath_tasks.scorers.keyed import Scoring, keyed_scorers, scoring
from finmath_tasks.scorers.metrics import DOCUMENT_KEY, accuracy_metrics
from finmath_tasks.scorers.unscored import withheld_answers
from finmath_tasks.solvers.agents import (
    AGENT_KEYS,
    AGENT_NAMES,
    CALCULATOR_AGENTS,
    GOLD_LABEL_AGENTS,
    PROGRAM_AGENTS,
    REVIEW_AGENTS,
    AgentName,
    AnswerCheck,
    agent_scoring,
    agent_solver,
    numeric_check,
)
from finmath_tasks.tasks.finqa.causes import finqa_causes
from finmath_tasks.tasks.finqa.dataset import Split, file_provenance, load_dataset
from finmath_tasks.tasks.finqa.error_classes import yes_no_check
from finmath_tasks.tasks.finqa.prompts import (
    ANSWER_TEMPLATE,
    EXEMPLAR_SPLIT,
    FACTS_TEMPLATE,
    SYSTEM_PROMPT,
    Exemplar,
    finqa_prompt,
    load_exemplars,
)
from finmath_tasks.tasks.finqa.retrieval import Retrieval, selector
from finmath_tasks.tasks.finqa.scoring import EXECUTION, PROGRAM, finqa_keys, finqa_scorer
from finmath_tasks.tasks.finqa.solver_config import SolverConfig
from finmath_tasks.tasks.finqa.variants import instantiate
from finmath_tasks.variants import (
    Variant,
    apply_fresh,
    check_variant,
    is_fresh,
    variant_provenance,
)
from finmath_tasks.verification import combined

NAME = "finqa"
DEFAULT_SPLIT: Split = "test"
"""Every solver's default split: FinQA's own evaluation split (the retrieval paper's)."""
AGENT_SPLIT = "dev"
"""The agents paper evaluates FinQA's dev set (883 questions; its appendix B): its runs
pass ``-T split=dev`` (the grid does)."""
PAPER_DEV_QUESTIONS = 883
"""The agents paper's count of FinQA dev questions (the full upstream dev.json)."""
TASK_VERSION = "3.3.0"
"""3.3.0: ``tolerant`` reads a fraction as a percent (or the reverse) only where a percentage
is in play (the gold program's last step divides by a figure of the document or multiplies
by 100, or the question asks for a percentage or a ratio); a money amount answered 100 times
too small or too large is no longer credited. The official keys are unchanged.
3.2.0: each of the task's scorers is registered by its key's name with plain arguments
(recorded in the log), so ``inspect score LOG`` rebuilds it in a fresh process; the
per-key ``unscored`` metric is gone: where the data has samples without a gold answer a
score ``unscored`` (metric ``n``) counts them from the scores, right after an
``inspect eval-retry``, an eval-set resume or ``inspect score``. Prompts and verdicts are those of 3.1.0.
3.1.0: one default split for every solver, test (FinQA's own evaluation split); the
agent solvers defaulted to dev (the agents paper's split), which is now ``-T split=dev``.
Prompts and scores are unchanged; a default agent run evaluates test.
3.0.0: every agent call is its own single-turn prompt carrying what that agent reads,
as the agents paper's appendix D: the critic and the revision restate the
document, the question and the response (and the critique), the improved critic the
document, the question and the previous answer, the comparison the question and both
replies, the calculator's extraction the analyst's whole output as its list of steps and
its final prompt that output with the checked calculations; the agents ask for no marked
prompt cache (no later request repeats a cacheable opening); the calculator solvers add
the ``unsourced_equations`` diagnostic. Agent scores of 2.x logs are not comparable.
2.1.0: the single-call agent solvers (cot, pot) ask for no marked prompt cache
(``cache_prompt=False``): no later request reads what they would write (rag_cot keeps it:
its exemplars open every prompt); answers and scores unchanged.
2.0.0: the agent solvers report plain metric names (one scorer per score key:
``rounding`` ``accuracy``, ``gold=float``, ``correct_to_wrong`` ``count``, ...; no
``finmath_tasks/`` prefix), and the first answer and flips only for a solver with a
critic or calculator stage; the numbers are unchanged (rag_cot's names were already plain).
1.1.0: ``rounding`` rounds the answer to the gold's written places (the paper's rule);
minor/major changes are counted for flipped samples only, by their steps,
as the paper's change analysis counts them;
exemplars and format examples from FinQA train, none from an evaluation split
(no evaluation record reaches a prompt);
the agent solvers default to the dev split, as the agents paper evaluates."""
DEFAULT_TOP_K = 3
"""Facts retrieved per question: FinQA's retriever (FinQANet) passes its top 3 facts on."""
GENERATE_CONFIG = GenerateConfig(temperature=0.0)
RETRIEVAL_KEY = "retrieval"
"""Sample metadata key of what retrieval chose (keys, scores, gold keys, recall)."""

SolverName = Literal["rag_cot", "oracle", AgentName]
Profile = Literal["tolerant", "rounding", "exact"]
OFFICIAL_ANSWER_PROFILE = "rounding"
"""The comparison reported beside ``profile`` (the agents paper's)."""

ANSWER_INSTRUCTION = (
    "The answer is a single number written with digits only (no thousands separators, "
    "no currency sign, no scale word, no % sign), in the units the document uses for that "
    "quantity (for a table in millions, 52380 means $52,380 million). Write a "
    "percentage, a rate of change or a share as a decimal fraction, not as a number of "
    "percent: 0.62995 for 62.995%, -0.07838 for a 7.838% decrease. Give a value that is not "
    "a whole number to 5 decimal places. For a yes/no question, the answer is yes or no."
)
"""How an agent writes its answer: as FinQA's ``exe_ans`` is written (percentages as
fractions, yes/no as text), since the paper's ``rounding`` comparison does not
rescale by 100. Its figures come from FinQA train records (SWKS/2012/page_116.pdf-2,
MRO/2008/page_41.pdf-1) and occur in no evaluation record (an earlier version used a TAT-QA
dev document's and a FinQA dev answer)."""


def context_steps(config: SolverConfig) -> list[Solver]:
    """The user turn with its facts: exemplars + question (+ retrieved facts) or the document."""
    steps: list[Solver] = [
        finqa_prompt(whole_document=config.retrieval == "none", exemplars=config.exemplars)
    ]
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


def agent(name: AgentName) -> Callable[[SolverConfig], Solver]:
    """The factory of the agent solver ``name`` (whole document, :data:`ANSWER_INSTRUCTION`)."""

    def build(config: SolverConfig) -> Solver:
        return agent_solver(name, answer_instruction=ANSWER_INSTRUCTION, oracle_check=config.check)

    return build


SOLVERS: dict[str, Callable[[SolverConfig], Solver]] = {
    "rag_cot": rag_cot,
    "oracle": oracle,
    "cot": agent("cot"),
    "pot": agent("pot"),
    "critic": agent("critic"),
    "icritic": agent("icritic"),
    "calculator": agent("calculator"),
    "critic_calculator": agent("critic_calculator"),
    "icritic_calculator": agent("icritic_calculator"),
    "critic_oracle": agent("critic_oracle"),
}
"""-T solver= name -> factory. Every name of SolverName has an entry (a test checks it)."""

DSL_SOLVERS = frozenset({"rag_cot", "oracle"})
"""Solvers whose answers end in a ``Program:`` line: scored with FinQA's execution and
program accuracy too. The agent solvers (:data:`AGENT_NAMES`, JSON answers) are scored
on their recorded answers (:func:`agent_scoring`)."""

FEW_SHOT_SOLVERS = frozenset({"rag_cot", "oracle"})
"""Solvers that show the 12 few-shot exemplars (the oracle replays rag_cot's prompt): only
these read the train split for them when the task is built."""

APPLIES = {
    "retrieval": params.only(solver=("rag_cot", "oracle")),
    "top_k": params.only(solver=("rag_cot", "oracle"), retrieval="bm25"),
}
"""Where a parameter has an effect (:func:`finmath_tasks.params.refuse_unused`): the agent
solvers read the whole document (no retrieval), and ``top_k`` is BM25's. A Hub revision
with a data folder is the loader's error (it sees ``FINMATH_DATA_DIR`` too)."""


def _check(profile: str) -> AnswerCheck:
    """The agents' check: the paper's rounding first (primary: flips, the oracle gate);
    a yes/no question answered with the other word is ``yes_no_flipped``."""
    return yes_no_check(
        numeric_check(
            {
                OFFICIAL_ANSWER_PROFILE: COMPARISONS[OFFICIAL_ANSWER_PROFILE],
                profile: COMPARISONS[profile],
            }
        )
    )


@scoring(NAME, (EXECUTION, PROGRAM, *COMPARISONS, RECALL_KEY, *AGENT_KEYS))
def finqa_scoring(
    solver: str = "rag_cot", profile: str = "tolerant", retrieval: str = "bm25"
) -> Scoring:
    """The task's scoring from the task arguments that decide it (``inspect score``
    rebuilds it from them)."""
    if solver in AGENT_NAMES:
        names = list(dict.fromkeys([OFFICIAL_ANSWER_PROFILE, profile]))
        return agent_scoring(
            _check(profile),
            names,
            review=solver in REVIEW_AGENTS,
            calculator=solver in CALCULATOR_AGENTS,
            cluster=DOCUMENT_KEY,
            gold_check=finqa_causes,
        )
    names = list(dict.fromkeys([profile, OFFICIAL_ANSWER_PROFILE]))
    comparisons = {name: COMPARISONS[name] for name in names}
    programs = solver in DSL_SOLVERS
    rag_scorer = finqa_scorer(comparisons, programs=programs)
    metrics = accuracy_metrics(finqa_keys(comparisons, programs), cluster=DOCUMENT_KEY)
    if retrieval != "none":
        rag_scorer = with_recall(rag_scorer, RETRIEVAL_KEY)
        metrics[RECALL_KEY] = [mean(), stderr()]
    return Scoring(rag_scorer, metrics)


@task(name=NAME)
def finqa(
    split: Split = DEFAULT_SPLIT,
    solver: SolverName = "rag_cot",
    retrieval: Retrieval = "bm25",
    top_k: int = DEFAULT_TOP_K,
    profile: Profile = "tolerant",
    data_dir: str | None = None,
    revision: str | None = None,
    variant: Variant = "original",
    variant_seed: int = 0,
) -> Task:
    """FinQA.

    Args:
      split: train, dev or test (the upstream file names); default test, FinQA's
        evaluation split, for every solver (the agents paper evaluates dev:
        ``-T split=dev``).
      solver: rag_cot (retrieval-augmented few-shot chain of thought ending in
        a Program: and a Final answer: line), oracle (the same prompt, then
        the gold program and answer instead of a model: should score 1), or an
        agent solver of the agents paper over the whole document: cot, pot
        (program in the sandbox), critic, icritic (improved critic), calculator,
        critic_calculator, icritic_calculator, critic_oracle (the critic only
        when the first answer is wrong BY THE GOLD ANSWER: uses gold labels).
      retrieval: for rag_cot and oracle: bm25 (default: the top_k sentences and
        table rows for the question), gold (the annotated supporting facts,
        gold_inds) or none (the whole document). Agent solvers always read the
        whole document.
      top_k: facts retrieved with bm25 (1..50; default 3).
      profile: our answer comparison, reported beside ``rounding``: tolerant
        (default), rounding or exact.
      data_dir: directory with train.json/dev.json/test.json (or a finqa/
        subfolder); default $FINMATH_DATA_DIR, else the authors' files in
        czyssrs/FinQA at the pinned commit (downloaded once, verified, cached).
        rag_cot and oracle also read train.json: their exemplars are train records.
      revision: read the third-party Hub copy (mihirinamdar/finqa) at this
        revision instead (its files: 1558227b828a7e9401a02810c9997fbf5ff64960).
      variant: original (default: the questions as published) or fresh (each
        question re-instantiated with new values for the numbers its gold program
        reads from the report, the gold recomputed by that program; questions that
        cannot be are left out, see ``finmath variants finqa``).
      variant_seed: the draw of the fresh values, 1 or more with variant=fresh
        (refused otherwise; 0, the default, goes with variant=original).
    """
    params.choice(NAME, "solver", solver, SolverName)
    if split is None:  # an eval retry of a log of 3.0.0 or earlier, which recorded None
        raise params.TaskParameterError(
            f"{NAME}: -T split=None: the split has one default since task version 3.1.0, "
            "test; runs of earlier versions that left it unset read dev for the agent "
            "solvers and test for rag_cot and oracle: pass -T split=dev or -T split=test"
        )
    chosen: str = params.choice(NAME, "split", split, Split)
    params.choice(NAME, "retrieval", retrieval, Retrieval)
    top_k = params.integer_in_range(NAME, "top_k", top_k, 1, 50)
    params.choice(NAME, "profile", profile, Profile)
    data_dir = params.optional_path(NAME, "data_dir", data_dir)
    revision = params.optional_text(NAME, "revision", revision)
    params.refuse_unused(
        NAME,
        finqa,
        {"solver": solver, "retrieval": retrieval, "top_k": top_k, "data_dir": data_dir,
         "revision": revision},
        APPLIES,
    )  # fmt: skip
    params.refuse_unused_roles(NAME, {}, {})  # no solver or scorer calls a model role

    check = _check(profile)
    if solver in AGENT_NAMES:
        names = list(dict.fromkeys([OFFICIAL_ANSWER_PROFILE, profile]))
        retrieval_used: str | None = None
    else:
        names = list(dict.fromkeys([profile, OFFICIAL_ANSWER_PROFILE]))
        retrieval_used = retrieval
    chosen_variant, variant_seed = check_variant(NAME, variant, variant_seed)
    original = load_dataset(chosen, data_dir, revision)
    dataset, variant_summary = apply_fresh(
        NAME, original, chosen_variant, variant_seed, chosen, instantiate
    )
    exemplars: tuple[Exemplar, ...] = ()
    if solver in FEW_SHOT_SOLVERS:  # their records are read from the train split, once
        own = chosen == EXEMPLAR_SPLIT
        exemplars = load_exemplars(
            data_dir,
            revision,
            train=list(original) if own else None,
            source=original.location if own else None,
        )
    provenance = dataset_provenance(original)
    if exemplars and chosen != EXEMPLAR_SPLIT and provenance is not None:
        # the exemplars' records are read from the train file: part of the run's data
        train = file_provenance(EXEMPLAR_SPLIT, data_dir, revision)
        provenance = combined(with_extra(provenance, train["files"]), [train])
    if provenance is not None and is_fresh(chosen_variant, variant_seed):
        # derived from the whole run's data (the exemplars' file too), so the variant's
        # original is the fingerprint a run on the original questions records
        provenance = variant_provenance(provenance, variant_seed)
    config = SolverConfig(retrieval=retrieval, top_k=top_k, check=check, exemplars=exemplars)
    # where programs run by default: Inspect's --sandbox replaces it (docs/sandboxes.md)
    sandbox_spec = default_sandbox() if solver in PROGRAM_AGENTS else None
    return Task(
        dataset=dataset,
        solver=SOLVERS[solver](config),
        # one scalar scorer per key, as the other tasks: plain metric names, each rebuilt
        # by `inspect score` from these arguments
        scorer=keyed_scorers(
            NAME,
            count_unscored=withheld_answers(dataset),
            solver=solver,
            profile=profile,
            retrieval=retrieval,
        ),
        # shared exemplars are read back; every agent call is a prompt of its own whose
        # opening (its instruction) no later request repeats at a cacheable length
        config=cache_config(GENERATE_CONFIG, readable=solver in FEW_SHOT_SOLVERS),
        sandbox=sandbox_spec,
        version=TASK_VERSION,
        continue_on_fail=True,
        metadata={
            "benchmark": NAME,
            "split": chosen,
            "solver": solver,
            "retrieval": retrieval_used,
            "top_k": top_k if retrieval_used == "bm25" else None,
            "profiles": names,
            "uses_gold_labels": solver in GOLD_LABEL_AGENTS or solver == "oracle",
            PROVENANCE_KEY: provenance,
            **({"variant": variant_summary} if variant_summary else {}),
        },
    )
