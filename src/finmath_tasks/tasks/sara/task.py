"""SARA (Holzenberger et al., 2020) as in "Retrieval-augmented chain-of-thought in
semi-structured domains" (Mavi, Saparov, Zhao, NLLP 2023): the ``sara`` task.

Statutory reasoning over nine sections of the US Internal Revenue Code:
276 entailment cases (does the premise entail the hypothesis about a cited
statute unit?) and 100 tax cases (how much tax?), split 256 train / 120 test.
Variants: statute ``retrieval`` (mentioned_only, entire_section, references,
all_statutes, none) and ``prompting`` (zero_shot, few_shot, cot).

    inspect eval finmath_tasks/sara -T data_dir=/data/sara --model openai/gpt-4o
    inspect eval finmath_tasks/sara -T retrieval=all_statutes -T prompting=few_shot ...
"""

from __future__ import annotations

from collections.abc import Callable

from inspect_ai import Task, task
from inspect_ai.model import GenerateConfig
from inspect_ai.solver import TaskState, chain, generate, system_message

from finmath_tasks import params
from finmath_tasks.loading import PROVENANCE_KEY, dataset_provenance
from finmath_tasks.prefix_cache import cache_config
from finmath_tasks.retrieval.passages import insert_passages
from finmath_tasks.scorers.unscored import withheld_answers
from finmath_tasks.solvers.budget import prompt_budget
from finmath_tasks.tasks.sara.causes import RETRIEVAL_KEY
from finmath_tasks.tasks.sara.dataset import Kind, Split, load_data, load_dataset
from finmath_tasks.tasks.sara.prompts import (
    EXEMPLAR_SPECS,
    STATUTES_TEMPLATE,
    Prompting,
    exemplar_turns,
    load_exemplars,
    sara_prompt,
    system_prompt,
)
from finmath_tasks.tasks.sara.retrieval import Strategy, retrieve
from finmath_tasks.tasks.sara.scoring import sara_scorers
from finmath_tasks.tasks.sara.statutes import StatuteCode

NAME = "sara"
TASK_VERSION = "4.0.0"
"""4.0.0: the 90% interval is Inspect's Wilson interval (``ci90_lower``, ``ci90_upper``,
clustered by case where questions share one) instead of the normal approximation
(``ci90_low``, ``ci90_high``, of zero width at 0/n and n/n); ``scored`` is Inspect's
``scored_samples``; each of the task's scorers is registered by its key's name with plain arguments
(recorded in the log), so ``inspect score LOG`` rebuilds it in a fresh process; the
per-key ``unscored`` metric is gone: where the data has samples without a gold answer a
score ``unscored`` (metric ``n``) counts them from the scores, right after an
``inspect eval-retry``, an eval-set resume or ``inspect score``. Verdicts are those of 3.1.1.
3.1.1: a tax answer that reads as no finite number is incorrect (``unreadable``); it
was left unscored by a catch-all.
3.1.0: zero-shot prompting and ``retrieval=all_statutes`` ask for no marked prompt cache
(``cache_prompt=False``): their prompts share no opening a later request could read (or,
with all statutes in every case turn, far less than they would write at 1.25 times the
input price on Anthropic); answers and scores unchanged.
3.0.0: plain metric names (one scorer per score key, metrics ``accuracy``, ``ci90_low``,
``ci90_high``, ``scored``, ``unreadable``, ``section=s63``, ...; no ``finmath_tasks/``
prefix); the numbers are unchanged.
2.0.0: the paper's exemplars (its eight cases, three test-split ones replaced by train
cases), its question/answer layout (True or False), the exemplars left out of split=train,
unreadable-reply counts (see the README's audit)."""
APPLIES = {
    # a tax case cites no unit: every strategy but none gives it all nine sections, so the
    # strategy reaches the prompt only through the (entailment) exemplars' statutes
    "retrieval": params.only(kind=("entailment", "all"))
    | params.only(prompting=("few_shot", "cot"))
    | params.only(retrieval="none"),
}
"""Where a parameter has an effect (:func:`finmath_tasks.params.refuse_unused`)."""
ROLES: dict[str, params.Applies] = {}
"""The model roles a run calls (:func:`finmath_tasks.params.refuse_unused_roles`): none."""


def statutes_for(code: StatuteCode, strategy: str) -> Callable[[TaskState], str]:
    """The retrieve callable of insert_passages for ``strategy``."""

    def statutes(state: TaskState) -> str:
        result = retrieve(code, state.metadata["question"], strategy, state.metadata["kind"])
        state.store.set(
            RETRIEVAL_KEY,
            {
                "strategy": strategy,
                "cited": result.cited,
                "referenced": result.referenced,
                "units": result.units if result.fallback is None else "all",
                "unresolved": result.unresolved,
                "fallback": result.fallback,
            },
        )
        return result.text

    return statutes


@task(name=NAME)
def sara(
    split: Split = "test",
    kind: Kind = "entailment",
    retrieval: Strategy = "mentioned_only",
    prompting: Prompting = "cot",
    data_dir: str | None = None,
    max_prompt_tokens: int | None = None,
) -> Task:
    """SARA statutory reasoning.

    Args:
      split: train (256 cases, less the 8 exemplars) or test (120).
      kind: entailment (276 cases in all), tax (100) or all.
      retrieval: mentioned_only (the cited unit and its ancestors),
        entire_section (the cited unit's whole subsection), references
        (mentioned_only plus the units its text cites, one hop), all_statutes
        (all nine sections) or none. Tax cases cite no unit: every strategy
        but none gives them all nine sections.
      prompting: zero_shot, few_shot (the paper's 8 exemplars, train cases, with
        True/False answers) or cot (the same 8 with our explanations).
      data_dir: directory with the SARA v1 release (cases/, statutes/, splits/,
        directly or in sara/); default $FINMATH_DATA_DIR, else the authors'
        repository at the pinned commit (downloaded once, verified, cached; the
        split derived from its dataset/train.tsv and dataset/test.tsv).
      max_prompt_tokens: the model's context budget in o200k tokens; a longer
        prompt is not sent and the sample is incorrect with the reason. Default:
        the context length Inspect knows for the model (none checked for a
        model it does not know).
    """
    params.choice(NAME, "split", split, Split)
    params.choice(NAME, "kind", kind, Kind)
    params.choice(NAME, "retrieval", retrieval, Strategy)
    params.choice(NAME, "prompting", prompting, Prompting)
    data_dir = params.optional_path(NAME, "data_dir", data_dir)
    if max_prompt_tokens is not None:
        max_prompt_tokens = params.positive_integer(NAME, "max_prompt_tokens", max_prompt_tokens)
    params.refuse_unused(
        NAME,
        sara,
        {"kind": kind, "retrieval": retrieval, "prompting": prompting},
        APPLIES,
    )
    params.refuse_unused_roles(NAME, {}, ROLES)

    data = load_data(data_dir)
    exemplars = load_exemplars(data) if prompting != "zero_shot" else []
    steps = [
        system_message(system_prompt(prompting)),
        sara_prompt(exemplar_turns(data.statutes, retrieval, prompting, exemplars), prompting),
    ]
    if retrieval != "none":
        steps.append(insert_passages(statutes_for(data.statutes, retrieval), STATUTES_TEMPLATE))
    steps += [prompt_budget("auto" if max_prompt_tokens is None else max_prompt_tokens), generate()]
    # the paper evaluates no case it shows as an exemplar (its n, 228, leaves them out)
    dataset = load_dataset(data, split, kind, frozenset(s.case_id for s in EXEMPLAR_SPECS))
    return Task(
        dataset=dataset,
        solver=chain(steps),
        scorer=sara_scorers(kind, count_unscored=withheld_answers(dataset)),
        # the exemplars open every prompt; zero-shot shares nothing, all_statutes' long
        # case turns would be written and never read
        config=cache_config(
            GenerateConfig(), readable=prompting != "zero_shot" and retrieval != "all_statutes"
        ),
        version=TASK_VERSION,
        continue_on_fail=True,
        metadata={
            "benchmark": NAME,
            "split": split,
            "kind": kind,
            "retrieval": retrieval,
            "prompting": prompting,
            "exemplars": [e.id for e in exemplars],
            PROVENANCE_KEY: dataset_provenance(dataset),
        },
    )
