"""KnowledgeFMATH / FinanceMath (Zhao et al., ACL 2024): the ``knowledgefmath`` task.

Finance problems, many with Markdown tables, each with a gold Python
``def solution()`` program. Splits: ``validation`` (200, answers public),
``test`` (1,000, answers withheld: generated and logged, unscored) and our own
offline ``demo`` split (15 original problems shipped with the package).

Prompts and generation settings follow the reference code (zero-shot CoT:
temperature 1.0, top_p 1.0, 512 max tokens); the official FinanceMath
comparison is reported beside our stricter ``profile`` (default ``tolerant``).

    inspect eval finmath_tasks/knowledgefmath --model openai/gpt-4o
    inspect eval finmath_tasks/knowledgefmath -T split=demo -T solver=oracle --model mockllm/model
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, cast, get_args

from inspect_ai import Task, task
from inspect_ai.dataset import Dataset
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import mean, stderr
from inspect_ai.solver import Solver, chain

from finmath_tasks import params
from finmath_tasks.loading import PROVENANCE_KEY, dataset_provenance
from finmath_tasks.retrieval.scorer import RECALL_KEY, with_recall
from finmath_tasks.sandbox.client import DEFAULT_TIMEOUT
from finmath_tasks.sandbox.resolve import default_sandbox
from finmath_tasks.scorers.comparisons import COMPARISONS
from finmath_tasks.scorers.keyed import Scoring, keyed_scorers, scoring
from finmath_tasks.scorers.metrics import accuracy_by, accuracy_metrics, flag_counts
from finmath_tasks.scorers.numeric import Extractor, numeric_answer
from finmath_tasks.scorers.unscored import withheld_answers
from finmath_tasks.solvers.cot import cot
from finmath_tasks.solvers.oracle import oracle, oracle_program
from finmath_tasks.solvers.pot import execute_program, pot
from finmath_tasks.tasks.knowledgefmath.causes import knowledgefmath_causes
from finmath_tasks.tasks.knowledgefmath.dataset import (
    COT_SYSTEM_PROMPT,
    DATASET_REVISION,
    POT_SYSTEM_PROMPT,
    PromptStyle,
    Split,
    financemath_prompt,
    load_dataset,
)
from finmath_tasks.tasks.knowledgefmath.knowledge import (
    DEFAULT_EMBEDDING_MODEL,
    METADATA_KEY,
    RETRIEVAL_SETTINGS,
    RETRIEVER_SETTINGS,
    Knowledge,
    KnowledgeBase,
    Retriever,
    bank_hash,
    knowledge_solver,
    load_bank,
    load_oracle,
)
from finmath_tasks.tasks.knowledgefmath.programs import (
    ENTRY_POINT,
    extract_program,
    extract_repaired_program,
    january_program,
    reference_program,
)
from finmath_tasks.tasks.knowledgefmath.reading import (
    READING_FLAGS,
    read_extractor_reply,
    read_program_result,
)
from finmath_tasks.tasks.knowledgefmath.scoring import (
    OFFICIAL,
    ExtractorMessages,
    answer_extraction,
    financemath,
)
from finmath_tasks.tasks.knowledgefmath.scoring2023 import (
    FLAGS_2023,
    KNOWLEDGEFMATH2023,
    knowledgefmath2023,
    read_program_2023,
    read_reply_2023,
)
from finmath_tasks.tasks.knowledgefmath.variants import instantiate
from finmath_tasks.variants import Variant, apply_fresh, check_variant, is_fresh

NAME = "knowledgefmath"
TASK_VERSION = "1.5.0"
# 1.1: knowledge settings (results of knowledge=none unchanged)
# 1.2: the official financemath verdict reads the extractor's reply and the program's
#      result as the reference does (README: "What moved in 1.2"); -T retriever= for
#      rerank and instructed; prompts in our own words; one scorer per score with plain
#      metric names (topic=<topic>, unreadable, ...) that print whole
# 1.3: score knowledgefmath2023 (the paper's Tables 4 and 5 scoring); PoT: the official
#      verdict runs the program as the reference cuts it; the extraction call as the
#      reference makes it (roles, temperature 1.0, 16/8 tokens)
# 1.4: each scorer rebuilt by `inspect score` (registered by its key's name, plain
#      arguments in the log); the per-key `unscored` metric is gone: the test split (answers
#      withheld) has a score `unscored` (metric `n`) counted from the scores
# 1.5: `tolerant` reads a fraction as a percent (or the reverse) only where the question asks
#      for a percentage or a ratio; a money amount 100 times off is no longer credited
#      (the official keys are unchanged)
GENERATE_CONFIG = GenerateConfig(temperature=1.0, top_p=1.0, max_tokens=512)

SolverName = Literal["cot", "pot", "oracle", "oracle_pot"]
Profile = Literal["tolerant", "rounding", "exact", "financemath"]
CODE_SOLVERS = ("pot", "oracle_pot")
COMPARISONS_OFFERED = {
    **COMPARISONS,
    OFFICIAL: financemath,
    KNOWLEDGEFMATH2023: knowledgefmath2023,
}


PROGRAM_READINGS = {OFFICIAL: reference_program, KNOWLEDGEFMATH2023: january_program}
"""Each official reading's own cut of the program (run too where it differs from ours)."""


def _program_args(repair: bool) -> dict[str, Any]:
    return {
        "extract": extract_repaired_program if repair else extract_program,
        "entry": ENTRY_POINT,
        "timeout": DEFAULT_TIMEOUT,
        "gold_program_field": "gold_program",
        # with repair every score reads the repaired program (a departure from the
        # references, off by default): no reference cuts
        "alternatives": {} if repair else PROGRAM_READINGS,
    }


def _prompt(style: PromptStyle, knowledge: Solver | None) -> Solver:
    """The reference's user prompt, then (with a knowledge setting) the knowledge before it."""
    prompt = financemath_prompt(style)
    return prompt if knowledge is None else chain(prompt, knowledge)


SOLVERS: dict[str, Callable[[bool, Solver | None], Solver]] = {
    "cot": lambda repair, knowledge: cot(COT_SYSTEM_PROMPT, prompt=_prompt("cot", knowledge)),
    "pot": lambda repair, knowledge: pot(
        POT_SYSTEM_PROMPT, prompt=_prompt("pot", knowledge), **_program_args(repair)
    ),
    "oracle": lambda repair, knowledge: chain(_prompt("cot", knowledge), oracle()),
    "oracle_pot": lambda repair, knowledge: chain(
        _prompt("pot", knowledge),
        oracle_program("gold_program", execute_program(**_program_args(False))),
    ),
}
"""-T solver= name -> the solver, given ``program_repair`` and the knowledge solver."""


def check_gold_programs(dataset: Dataset, split: str) -> None:
    """``-T solver=oracle_pot`` runs each record's gold program: every record needs one,
    checked here so the run stops before it starts, not sample by sample."""
    without = [
        str(s.id) for s in dataset if not str((s.metadata or {}).get("gold_program", "")).strip()
    ]
    if without:
        raise params.TaskParameterError(
            f"{NAME}: -T solver=oracle_pot runs each record's gold program, and {len(without)} "
            f"of {len(dataset)} records of split {split!r} have none (python_solution is "
            f"empty; first: {without[0]}); use a split with gold programs (validation, demo)"
        )


SCORE_KEYS = (
    OFFICIAL,
    KNOWLEDGEFMATH2023,
    *COMPARISONS,
    "execution_rate",
    "strict_execution_rate",
    RECALL_KEY,
)
"""Every score key the task may log (which ones a run has depends on its arguments)."""


@scoring(NAME, SCORE_KEYS)
def knowledgefmath_scoring(
    profile: str = "tolerant",
    solver: str = "cot",
    extractor: str = "rules",
    extractor_messages: str = "reference",
    knowledge: str = "none",
) -> Scoring:
    """The task's scoring from the task arguments that decide it (``inspect score``
    rebuilds it from them): the official ``financemath`` verdict, the 2023 reading and
    ``profile``, each with its metrics."""
    names = list(dict.fromkeys([OFFICIAL, KNOWLEDGEFMATH2023, profile]))
    runs_code = solver in CODE_SOLVERS
    scorer = numeric_answer(
        comparisons={name: COMPARISONS_OFFERED[name] for name in names},
        answer="program" if runs_code else "text",
        gold="program" if runs_code else "target",
        extractor=cast(Extractor, extractor),
        model_extraction=answer_extraction(cast(ExtractorMessages, extractor_messages)),
        # the official verdict reads the answer as the reference does (reading.py)
        readers={
            OFFICIAL: read_program_result if runs_code else read_extractor_reply,
            KNOWLEDGEFMATH2023: read_program_2023 if runs_code else read_reply_2023,
        },
        # a wrong answer's cause, from the gold solution() run in the sandbox (causes.py)
        gold_check=knowledgefmath_causes,
    )
    # the leaderboard's execution rate: programs that ran; CoT, extractor replies that do
    # not say "none" (the rules extractor has no reply: no rate)
    executions = (
        ["execution_rate", "strict_execution_rate"]
        if runs_code
        else ["execution_rate"]
        if extractor == "model"
        else []
    )
    metrics = accuracy_metrics(names + executions)
    # accuracy per topic and the reading flags for the official comparison only: plain
    # names (topic=Accounting, unreadable) that fit Inspect's 100-column summary once
    metrics[OFFICIAL] += [accuracy_by("topic", prefix="topic="), flag_counts(READING_FLAGS)]
    # the 2023 reading's flags (its accuracy per topic would cut the 100-column summary:
    # each sample's score carries its topic)
    metrics[KNOWLEDGEFMATH2023] += [flag_counts(FLAGS_2023)]
    if knowledge in RETRIEVAL_SETTINGS:
        # the share of the oracle-annotated terms retrieved, next to accuracy
        scorer = with_recall(scorer, METADATA_KEY)
        metrics[RECALL_KEY] = [mean(), stderr()]
    return Scoring(scorer, metrics, shared=["topic", *READING_FLAGS, *FLAGS_2023])


FILE_SPLITS = ("validation", "test")
"""The splits read from files (``demo`` is packaged: no folder or Hub revision is read)."""
APPLIES = {
    "data_dir": params.only(split=FILE_SPLITS),
    # with a data folder too: the loader's error (it sees FINMATH_DATA_DIR as well)
    "revision": params.only(split=FILE_SPLITS),
    "extractor_messages": params.only(extractor="model"),
    "program_repair": params.only(solver="pot"),
    "top_n": params.only(knowledge=RETRIEVAL_SETTINGS),
    "retriever": params.only(knowledge=RETRIEVER_SETTINGS),
    "knowledge_bank": params.only(knowledge=tuple(k for k in get_args(Knowledge) if k != "none")),
    "embedding_model": params.only(knowledge="dense") | params.only(retriever="dense"),
}
"""Where a parameter has an effect (:func:`finmath_tasks.params.refuse_unused`)."""
ROLES = {"grader": params.only(extractor="model")}
"""The model roles a run calls (:func:`finmath_tasks.params.refuse_unused_roles`): the
model extractor asks the grader role."""


@task(name=NAME)
def knowledgefmath(
    split: Split = "validation",
    solver: SolverName = "cot",
    profile: Profile = "tolerant",
    extractor: Extractor = "rules",
    extractor_messages: ExtractorMessages = "reference",
    data_dir: str | None = None,
    revision: str | None = DATASET_REVISION,
    program_repair: bool = False,
    knowledge: Knowledge = "none",
    top_n: int = 3,
    retriever: Retriever = "bm25",
    knowledge_bank: str | None = None,
    embedding_model: str = DEFAULT_EMBEDDING_MODEL,
    variant: Variant = "original",
    variant_seed: int = 0,
) -> Task:
    """KnowledgeFMATH / FinanceMath.

    Args:
      split: validation (200, scored), test (1,000, answers withheld: unscored),
        or demo (15 offline problems shipped with the package).
      solver: cot (zero-shot chain of thought), pot (program of thought, run in
        the sandbox), oracle (answers with the gold answer) or oracle_pot (runs
        the gold program through the pot path).
      profile: our comparison reported beside the official ``financemath``
        one: tolerant (default), rounding, exact, financemath.
      extractor: rules (default) or model (the ``grader`` model role reads the
        final number, as the reference evaluation does; without a ``grader``
        role the evaluated model does it, which each score records).
      extractor_messages: with extractor=model, reference (default: the
        instruction as a user message, the question and solution as an
        assistant message, as the reference sends them) or user (both in one
        user message: for servers that continue a final assistant message,
        such as llama.cpp's, instead of answering it).
      data_dir: local directory with validation.json/test.json (or a
        financemath/ subfolder); default $FINMATH_DATA_DIR, else the
        authors' files at the pinned commit (downloaded once, verified, cached).
      revision: read the Hub copy (yale-nlp/FinanceMath, gated) at this revision
        instead of the authors' files.
      program_repair: with solver=pot, wrap a bare function body in
        ``def solution():`` instead of failing it as the reference does; every
        score then reads our (repaired) cut of the program, not the references'
        (changes the execution rate; off by default for comparability).
      knowledge: the paper's knowledge settings (section 5): none (default),
        oracle (the annotated bank terms), llm_kb (the model first writes the
        terms it needs), bm25 or dense (retrieval with the question as query),
        rerank (BM25 retrieves 3 x top_n, the model picks top_n), instructed
        (the llm_kb terms are the BM25 queries). The knowledge goes before the
        question; what was chosen is in each sample's ``knowledge`` metadata.
      top_n: terms retrieved per question (1..20; the paper uses 3 and 5).
      retriever: bm25 (default) or dense: the retriever under knowledge=rerank
        and knowledge=instructed (the paper's Table 5 runs both with each).
      knowledge_bank: a JSON bank in our schema (see knowledge.py and the
        README) instead of the packaged one.
      embedding_model: sentence-transformers model for knowledge=dense: a Hub
        id (from the Hub at first use) or a local directory (the default also
        resolves to an installed offline copy, see retrieval/dense.py).
      variant: original (default: the questions as published) or fresh (each
        question with a gold program re-instantiated with new values for the
        numbers its program reads from the text, the gold recomputed by that
        program in the sandbox; questions that cannot be are left out, see
        ``finmath variants knowledgefmath``).
      variant_seed: the draw of the fresh values, 1 or more with variant=fresh
        (refused otherwise; 0, the default, goes with variant=original).
    """
    params.choice(NAME, "split", split, Split)
    params.choice(NAME, "solver", solver, SolverName)
    params.choice(NAME, "profile", profile, Profile)
    params.choice(NAME, "extractor", extractor, Extractor)
    params.choice(NAME, "extractor_messages", extractor_messages, ExtractorMessages)
    data_dir = params.optional_path(NAME, "data_dir", data_dir)
    revision = params.optional_text(NAME, "revision", revision)
    program_repair = params.boolean(NAME, "program_repair", program_repair)
    params.choice(NAME, "knowledge", knowledge, Knowledge)
    top_n = params.integer_in_range(NAME, "top_n", top_n, 1, 20)
    params.choice(NAME, "retriever", retriever, Retriever)
    knowledge_bank = params.optional_path(NAME, "knowledge_bank", knowledge_bank)
    embedding_model = params.optional_path(NAME, "embedding_model", embedding_model) or ""
    params.refuse_unused(
        NAME,
        knowledgefmath,
        {
            "split": split, "solver": solver, "extractor": extractor,
            "extractor_messages": extractor_messages, "data_dir": data_dir,
            "revision": revision, "program_repair": program_repair, "knowledge": knowledge,
            "top_n": top_n, "retriever": retriever, "knowledge_bank": knowledge_bank,
            "embedding_model": embedding_model,
        },
        APPLIES,
    )  # fmt: skip
    params.refuse_unused_roles(NAME, {"extractor": extractor}, ROLES)
    if knowledge == "oracle" and split == "test":
        raise params.TaskParameterError(
            f"{NAME}: -T knowledge=oracle needs the oracle annotations, which cover the "
            "validation and demo splits only"
        )
    if solver == "oracle" and split == "test":
        raise params.TaskParameterError(
            f"{NAME}: -T solver=oracle needs gold answers, which the test split withholds"
        )
    chosen_variant, variant_seed = check_variant(NAME, variant, variant_seed)
    if is_fresh(chosen_variant, variant_seed) and split == "test":
        raise params.TaskParameterError(
            f"{NAME}: -T variant=fresh recomputes each gold with the question's program, "
            "which the test split withholds (use validation or demo)"
        )

    knowledge_step = None
    bank_sha = None
    if knowledge != "none":
        terms = load_bank(knowledge_bank)
        bank_sha = bank_hash(terms)
        base = KnowledgeBase(
            terms,
            load_oracle(),
            dense=knowledge == "dense" or retriever == "dense",
            embedding_model=embedding_model or DEFAULT_EMBEDDING_MODEL,
        )
        knowledge_step = knowledge_solver(knowledge, base, top_n, retriever)

    names = list(dict.fromkeys([OFFICIAL, KNOWLEDGEFMATH2023, profile]))
    runs_code = solver in CODE_SOLVERS
    # where programs run by default: Inspect's --sandbox replaces it (docs/sandboxes.md)
    sandbox_spec = default_sandbox() if runs_code else None
    dataset, variant_summary = apply_fresh(
        NAME,
        load_dataset(split, data_dir, revision),
        chosen_variant,
        variant_seed,
        split,
        instantiate,
    )
    if solver == "oracle_pot":
        check_gold_programs(dataset, split)
    return Task(
        dataset=dataset,
        solver=SOLVERS[solver](program_repair, knowledge_step),
        # one scalar scorer per score, the official first: plain metric names that print
        # whole; each rebuilt by `inspect score` from the arguments the log records
        scorer=keyed_scorers(
            NAME,
            count_unscored=withheld_answers(dataset),
            profile=profile,
            solver=solver,
            extractor=extractor,
            extractor_messages=extractor_messages,
            knowledge=knowledge,
        ),
        config=GENERATE_CONFIG,
        sandbox=sandbox_spec,
        version=TASK_VERSION,
        continue_on_fail=True,
        metadata={
            "benchmark": NAME,
            "split": split,
            "profiles": names,
            **(
                {
                    "knowledge": knowledge,
                    "top_n": top_n,
                    "retriever": retriever if knowledge in RETRIEVER_SETTINGS else None,
                    "knowledge_bank": knowledge_bank or "packaged",
                    "knowledge_bank_hash": bank_sha,
                    "embedding_model": embedding_model
                    if knowledge == "dense" or retriever == "dense"
                    else None,
                }
                if knowledge != "none"
                else {}
            ),
            "grader": "the grader model role, else the evaluated model"
            if extractor == "model"
            else None,
            PROVENANCE_KEY: dataset_provenance(dataset),
            **({"variant": variant_summary} if variant_summary else {}),
        },
    )
