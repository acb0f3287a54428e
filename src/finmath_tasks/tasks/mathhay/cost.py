"""MathHay's dry-run counting (``finmath grid mathhay --dry-run``): no haystack built.

A haystack fills the length asked, less the reserve at 128K
(:func:`~finmath_tasks.tasks.mathhay.haystack.haystack_budget`), with the prompt
and the question's documents; when they alone need more (the sample is flagged
``haystack_too_short``) the prompt is their size. So a sample's prompt is
``max(budget, document tokens + empty-prompt tokens)`` in o200k tokens: the
budget is exact up to the last irrelevant document's cut, and the documents'
count omits the few separator tokens between them. One call of the evaluated
model per sample.

The judge (:func:`grader`, the ``grader`` role): the paper's verdict asks it once for a
sample whose answer is a number but not an exact match, so 0 up to one call per sample
(the bound used: every sample judged). Its prompt holds the gold solution and answer
(exact) and the model's reasoning and answer, which come from its reply: between none
and a reply of the generation limit (+2 tokens where the pieces join). Its output is
at most the judge's limit. Without a ``grader`` role the evaluated model judges (the
dry run prices the calls at its price); with ``-T judge=false`` the judge is not asked.

For the prompt-cache estimate (:func:`prompts`) each haystack is laid out as the
solver lays it out (tokens as built, not decoded and re-read), between the tokens of
the prompt's text before and after it, in the task's order. The task asks for no
marked cache (``cache_prompt=False``), so a prompt carries no cache point.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from typing import Any

from finmath_tasks import params
from finmath_tasks.cli.cost import (
    GraderCount,
    GraderLoad,
    SampleLoad,
    built,
    count_tokens,
    encode,
)
from finmath_tasks.prefix_cache import Prompt
from finmath_tasks.scorers.judge import JUDGE_MAX_TOKENS
from finmath_tasks.tasks.mathhay.dataset import MathHayData, load_data
from finmath_tasks.tasks.mathhay.haystack import haystack_budget
from finmath_tasks.tasks.mathhay.scoring import judge_prompt
from finmath_tasks.tasks.mathhay.task import (
    in_files_order,
    mathhay,
    prompt_for,
    prompt_parts,
    sample_layout,
    token_pool,
)

_NEEDED: dict[tuple[str, str, str, str], int] = {}


def _needed(key: tuple[str, str, str, str], question: Any) -> int:
    """Tokens of the question's documents and its prompt without a haystack (cached)."""
    if key not in _NEEDED:
        _NEEDED[key] = count_tokens(prompt_for(question.question, "")) + sum(
            count_tokens(d) for d in question.documents
        )
    return _NEEDED[key]


def _task(args: Mapping[str, Any]) -> Any:
    """``mathhay(**args)`` (it reads the question files only), built once per run."""
    return built(mathhay, args)


def _read(**args: Any) -> MathHayData:
    meta = _task(args).metadata or {}
    return load_data(
        args.get("data_dir"), str(meta["release"]), str(meta["subset"]), list(meta["task_types"])
    )


def _data(args: Mapping[str, Any]) -> MathHayData:
    """The run's questions and pool, read once per run (for the loads and the prompts)."""
    data: MathHayData = built(_read, args)
    return data


def loads(args: Mapping[str, Any], max_tokens: int | None) -> list[SampleLoad]:
    """One load per sample of ``mathhay(**args)``, in the task's order."""
    task = _task(args)
    meta = task.metadata or {}
    release, reserve = str(meta["release"]), int(meta["reserve"])
    data = _data(args)
    out = []
    for sample in task.dataset:
        key = str(sample.metadata["question_key"])
        budget = haystack_budget(int(sample.metadata["length"]), reserve)
        needed = _needed((str(data.root), release, key, ""), data.questions[key])
        out.append(SampleLoad(max(budget, needed)))
    return out


def max_tokens(args: Mapping[str, Any]) -> int | None:
    """The task's generation limit."""
    limit: int | None = _task(args).config.max_tokens
    return limit


def note(args: Mapping[str, Any]) -> str:
    return "haystack length as prompt, none built"


JOIN = 2
"""Tokens allowed where the reply's pieces join the judge's template."""


def grader(args: Mapping[str, Any], max_tokens: int | None, role_given: bool) -> GraderCount | None:
    """The judge's calls per sample, in the task's order (see the module docstring); None
    with ``-T judge=false`` (the verdict is the exact match alone)."""
    if not params.boolean("mathhay", "judge", args.get("judge", True)):
        return None
    task = _task(args)
    data = _data(args)
    reply = max_tokens or 0
    loads = []
    for sample in task.dataset:
        question = data.questions[str(sample.metadata["question_key"])]
        empty = count_tokens(judge_prompt(question.solution, question.answer, "", ""))
        loads.append(GraderLoad(0, 1, 0, empty + reply + JOIN, JUDGE_MAX_TOKENS))
    return GraderCount(
        "judge",
        "0 up to 1 per sample: asked when the exact match fails; the bound counts every sample",
        loads,
    )


def prompts(args: Mapping[str, Any], files_order: bool = False) -> Iterator[Prompt]:
    """Each sample's prompt as tokens, in the task's order (no cache point: see above);
    ``files_order``: in the release files' order instead (to measure what the task's
    prefix order earns)."""
    task = _task(args)
    meta = task.metadata or {}
    data = _data(args)
    pool = token_pool(data)
    reserve = int(meta["reserve"])
    samples = in_files_order(task).dataset if files_order else task.dataset
    for sample in samples:
        question, segments, _, _ = sample_layout(data, pool, dict(sample.metadata or {}), reserve)
        head, tail = prompt_parts(question)
        tokens = array("I", encode(head))
        tokens.extend(pool.tokens(segments))
        tokens.extend(encode(tail))
        yield Prompt(tokens)
