"""TAT-QA with the agent solvers of "Improved LLM agents for financial document question
answering" (Tan et al.): the ``tatqa`` task.

    inspect eval finmath_tasks/tatqa --model openai/gpt-4o -T solver=icritic_calculator
    inspect eval finmath_tasks/tatqa -T subset=all -T solver=cot --model openai/gpt-4o

``subset=arithmetic`` (default) is the paper's numerical subset (arithmetic questions
with numeric answers), scored with the paper's ``rounding`` comparison beside our
``profile`` (default ``tolerant``); ``subset=all`` takes every question and scores
TAT-QA's official EM/F1 with scale.
"""

from __future__ import annotations

import json
from typing import Literal

from inspect_ai import Task, task
from inspect_ai.model import ChatMessageAssistant, GenerateConfig, ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver

from finmath_tasks import params
from finmath_tasks.loading import PROVENANCE_KEY, dataset_provenance
from finmath_tasks.prefix_cache import cache_config
from finmath_tasks.sandbox.resolve import default_sandbox
from finmath_tasks.scorers.comparisons import exact, rounding, tolerant
from finmath_tasks.scorers.keyed import Scoring, keyed_scorers, scoring
from finmath_tasks.scorers.metrics import DOCUMENT_KEY, accuracy_by
from finmath_tasks.scorers.unscored import withheld_answers
from finmath_tasks.solvers.agents import (
    AGENT_ANSWERS_KEY,
    AGENT_KEYS,
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
from finmath_tasks.tasks.tatqa.causes import tatqa_causes
from finmath_tasks.tasks.tatqa.dataset import (
    NAME,
    Split,
    Subset,
    load_dataset,
)
from finmath_tasks.tasks.tatqa.scoring import is_number, official_check
from finmath_tasks.tasks.tatqa.variants import RULES, instantiate
from finmath_tasks.variants import Variant, apply_fresh, check_variant

TASK_VERSION = "3.2.0"
"""3.2.0: ``tolerant`` reads a fraction as a percent (or the reverse) only where a percentage
is in play (the question's ``scale`` is percent, or it has none and the question asks for a
percentage or a ratio); a money amount answered 100 times too small or too large is no
longer credited. The official keys are unchanged.
3.1.0: each of the task's scorers is registered by its key's name with plain arguments
(recorded in the log), so ``inspect score LOG`` rebuilds it in a fresh process; the
per-key ``unscored`` metric is gone: where the data has samples without a gold answer a
score ``unscored`` (metric ``n``) counts them from the scores, right after an
``inspect eval-retry``, an eval-set resume or ``inspect score``. Prompts and verdicts are those of 3.0.1.
3.0.1: a number literal beyond Python's int or float range has no value in the
official EM/F1 (incorrect); it was left unscored by a catch-all.
3.0.0: every agent call is its own single-turn prompt carrying what that agent reads,
as the agents paper's appendix D: the critic and the revision restate the
document, the question and the response (and the critique), the improved critic the
document, the question and the previous answer, the comparison the question and both
replies, the calculator's extraction the analyst's whole output as its list of steps and
its final prompt that output with the checked calculations; no agent asks for a marked
prompt cache (no later request repeats a cacheable opening); the calculator solvers add
the ``unsourced_equations`` diagnostic. Agent scores of 2.x logs are not comparable.
2.1.0: the single-call solvers (cot, pot) ask for no marked prompt cache
(``cache_prompt=False``): no later request reads what they would write, so on Anthropic
the write would only cost 1.25 times the input price; answers and scores unchanged.
2.0.0: plain metric names (one scorer per score key: ``rounding`` ``accuracy``,
``gold=float``, ``type=span``, ``correct_to_wrong`` ``count``, ...; no ``finmath_tasks/``
prefix), and the first answer and flips only for a solver with a critic or calculator
stage; the numbers are unchanged.
1.1.0: ``rounding`` rounds the answer to the gold's written places (the paper's rule);
minor/major changes are counted for flipped samples only, by their steps,
as the paper's change analysis counts them;
prompts follow the paper's appendix D with made-up example figures (no evaluation record's); the
arithmetic subset is the paper's 717 questions (a duplicate question dropped)."""
GENERATE_CONFIG = GenerateConfig(temperature=0.0)
"""Greedy decoding, for reproducible agent runs (override with --temperature)."""

SolverName = Literal[AgentName, "oracle"]
Profile = Literal["tolerant", "exact"]
PROFILES = {"tolerant": tolerant, "exact": exact}

ARITHMETIC_INSTRUCTION = (
    "The answer is a single number written with digits only (no thousands separators, "
    "no currency sign, no scale word): state it in the units the document uses for that "
    "quantity (for a table in millions, 2417.3 means $2,417.3 million), and write a "
    "percentage as its number of percent (41.64 for 41.64%)."
)
"""The figures are made up (an earlier version carried a TAT-QA dev document's)."""
ALL_INSTRUCTION = (
    "Answer with the words or number as the document states them. For an amount add the "
    "document's scale word (thousand, million or billion) when it gives one, write a "
    "percentage with a % sign, and for several items give a JSON list of strings."
)


@solver
def tatqa_oracle(subset: str) -> Solver:
    """Answer with the gold answer as a model is asked to write it (validates the pipeline)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        metadata = state.metadata or {}
        gold = oracle_answer(metadata, subset, state.target.text)
        content = json.dumps({"steps": "gold answer", "answer": gold})
        state.output = ModelOutput.from_content(model="oracle", content=content)
        state.messages.append(ChatMessageAssistant(content=content, model="oracle"))
        stages = [{"stage": "oracle", "answer": gold, "method": "gold", "detail": "oracle"}]
        state.store.set(AGENT_ANSWERS_KEY, stages)
        return state

    return solve


def oracle_answer(metadata: dict[str, object], subset: str, target: str) -> str | list[str]:
    """The gold answer written as :data:`ALL_INSTRUCTION` asks (scale words, %)."""
    if subset == "arithmetic":
        return target
    answer = metadata.get("answer")
    scale = str(metadata.get("scale") or "")
    items = [str(a) for a in answer] if isinstance(answer, list) else [str(answer)]
    if metadata.get("answer_type") == "count":
        items = [str(int(float(items[0])))]
    written = []
    for item in items:
        if scale == "percent" and is_number(item):
            written.append(item if "%" in item else f"{item}%")
        elif scale:
            written.append(f"{item} {scale}")
        else:
            written.append(item)
    return written[0] if len(written) == 1 else written


def _check(subset: str, profile: str) -> tuple[AnswerCheck, list[str], str]:
    """The answer check, its score keys and the answer instruction of ``subset``."""
    if subset == "arithmetic":
        keys = list(dict.fromkeys(["rounding", profile]))
        return (
            numeric_check({"rounding": rounding, profile: PROFILES[profile]}),
            keys,
            ARITHMETIC_INSTRUCTION,
        )
    return official_check, ["em", "f1"], ALL_INSTRUCTION


@scoring(NAME, ("rounding", *PROFILES, "em", "f1", *AGENT_KEYS))
def tatqa_scoring(
    subset: str = "arithmetic", solver: str = "cot", profile: str = "tolerant"
) -> Scoring:
    """The task's scoring from the task arguments that decide it (``inspect score``
    rebuilds it from them)."""
    check, keys, _ = _check(subset, profile)
    extra = {key: [accuracy_by("answer_type", prefix="type=")] for key in keys}
    return agent_scoring(
        check,
        keys,
        solver in REVIEW_AGENTS,
        extra if subset == "all" else None,
        calculator=solver in CALCULATOR_AGENTS,
        cluster=DOCUMENT_KEY,
        gold_check=tatqa_causes,
    )


APPLIES = {
    "profile": params.only(subset="arithmetic"),
}
"""Where a parameter has an effect (:func:`finmath_tasks.params.refuse_unused`):
``subset=all`` is scored with the official EM/F1 alone. A Hub revision with a data
folder is the loader's error (it sees ``FINMATH_DATA_DIR`` too)."""


@task(name=NAME)
def tatqa(
    split: Split = "dev",
    subset: Subset = "arithmetic",
    solver: SolverName = "cot",
    profile: Profile = "tolerant",
    data_dir: str | None = None,
    revision: str | None = None,
    variant: Variant = "original",
    variant_seed: int = 0,
) -> Task:
    """TAT-QA (hybrid table + text financial QA) with the agent solvers.

    Args:
      split: dev (default; tatqa_dataset_dev.json) or test (tatqa_dataset_test_gold.json).
      subset: arithmetic (the agents paper's numerical subset: arithmetic questions with
        numeric answers, each once: 717 on dev) or all (every question, official EM/F1
        with scale).
      solver: cot, pot (program in the sandbox), critic, icritic (improved critic),
        calculator, critic_calculator, icritic_calculator, critic_oracle (the critic only
        when the first answer is wrong BY THE GOLD ANSWER: uses gold labels), or oracle
        (answers with the gold answer; validates the pipeline).
      profile: our comparison beside the paper's rounding one (arithmetic subset):
        tolerant (default) or exact.
      data_dir: directory with the upstream files (or a tatqa/ subfolder); default
        $FINMATH_DATA_DIR, else the authors' files in NExTplusplus/TAT-QA at the
        pinned commit (downloaded once, verified, cached).
      revision: read the Hub copy (next-tat/TAT-QA) at this revision instead
        (its files: b47dc5894185d2504b3aad7af4af13edd972eb54).
      variant: original (default: the questions as published) or fresh (each
        arithmetic question re-instantiated with new values for the numbers of its gold
        derivation in the table and paragraphs, the answer recomputed; other questions
        and those that cannot be are left out, see ``finmath variants tatqa``).
      variant_seed: the draw of the fresh values, 1 or more with variant=fresh
    """
    params.choice(NAME, "split", split, Split)
    params.choice(NAME, "subset", subset, Subset)
    params.choice(NAME, "solver", solver, SolverName)
    params.choice(NAME, "profile", profile, Profile)
    data_dir = params.optional_path(NAME, "data_dir", data_dir)
    revision = params.optional_text(NAME, "revision", revision)
    params.refuse_unused(
        NAME,
        tatqa,
        {"subset": subset, "profile": profile, "data_dir": data_dir, "revision": revision},
        APPLIES,
    )
    params.refuse_unused_roles(NAME, {}, {})  # no solver or scorer calls a model role

    check, keys, instruction = _check(subset, profile)
    if solver == "oracle":
        solve: Solver = tatqa_oracle(subset)
    else:
        name: AgentName = solver
        solve = agent_solver(name, answer_instruction=instruction, oracle_check=check)
    # where programs run by default: Inspect's --sandbox replaces it (docs/sandboxes.md)
    sandbox_spec = default_sandbox() if solver in PROGRAM_AGENTS else None
    chosen_variant, variant_seed = check_variant(NAME, variant, variant_seed)
    dataset, variant_summary = apply_fresh(
        NAME,
        load_dataset(split, subset, data_dir, revision),
        chosen_variant,
        variant_seed,
        split,
        instantiate,
        RULES,
    )
    return Task(
        dataset=dataset,
        solver=solve,
        # one scalar scorer per key, each rebuilt by `inspect score` from these arguments
        scorer=keyed_scorers(
            NAME,
            count_unscored=withheld_answers(dataset),
            subset=subset,
            solver=solver,
            profile=profile,
        ),
        # every agent call is a prompt of its own whose opening (its instruction) no later
        # request repeats at a cacheable length: a marked write would never be read
        config=cache_config(GENERATE_CONFIG, readable=False),
        sandbox=sandbox_spec,
        version=TASK_VERSION,
        continue_on_fail=True,
        metadata={
            "benchmark": NAME,
            "split": split,
            "subset": subset,
            "solver": solver,
            "score_keys": keys,
            "uses_gold_labels": solver in GOLD_LABEL_AGENTS or solver == "oracle",
            PROVENANCE_KEY: dataset_provenance(dataset),
            **({"variant": variant_summary} if variant_summary else {}),
        },
    )
