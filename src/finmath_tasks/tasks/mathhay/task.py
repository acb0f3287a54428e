"""MathHay (Wang et al., 2024): the ``mathhay`` task.

Mathematical reasoning over long contexts: a question whose numbers sit in one
to three real web documents, hidden in a haystack of irrelevant documents of
32K/64K/128K o200k tokens. Seven task types (sssd, 2ssd, 3ssd: one document,
1-3 steps; ss2d, 2s2d, 3s2d: two documents; 3s3d: three documents).

    inspect eval finmath_tasks/mathhay -T length=128000 --model openai/gpt-4o \\
        --model-role grader=openai/gpt-4o
    inspect eval finmath_tasks/mathhay -T task_type=sssd,3s3d -T length=32000,64000,128000 ...
    inspect eval finmath_tasks/mathhay -T placement=p1,p2,p3,p4,p5,p6,p7,p8,p9 ...

Haystacks are built when a sample is solved (not when the dataset loads), from
a document pool tokenized once per run (:mod:`.haystack`).
"""

from __future__ import annotations

import copy
import logging
from importlib import resources
from typing import Any, Literal

import anyio
from inspect_ai import Task, task
from inspect_ai.dataset import Dataset, MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser, GenerateConfig
from inspect_ai.solver import Generate, Solver, TaskState, chain, generate, solver

from finmath_tasks import params
from finmath_tasks.loading import PROVENANCE_KEY
from finmath_tasks.prefix_cache import IN_FLIGHT, cache_config, prefix_order
from finmath_tasks.scorers.unscored import withheld_answers
from finmath_tasks.solvers.budget import prompt_budget
from finmath_tasks.tasks.mathhay.causes import SPANS_KEY, relevant_spans
from finmath_tasks.tasks.mathhay.dataset import (
    CATEGORIES,
    DEFAULT_PLACEMENT,
    TASK_TYPES,
    MathHayData,
    Release,
    TaskType,
    check_release,
    load_data,
    release_info,
    subset_task_types,
)
from finmath_tasks.tasks.mathhay.haystack import (
    LONG_LENGTH,
    LONG_LENGTH_RESERVE,
    O1_LONG_LENGTH_RESERVE,
    Haystack,
    Segment,
    TokenPool,
    haystack_budget,
)
from finmath_tasks.tasks.mathhay.scoring import HAYSTACK_KEY, mathhay_scorers
from finmath_tasks.variants import Variant, check_variant

logger = logging.getLogger(__name__)

NAME = "mathhay"
TASK_VERSION = "5.1.0"
"""5.1.0: ``tolerant`` reads a fraction as a percent (or the reverse) only where a percentage
is in play (the question asks for a percentage or a ratio); a money amount answered 100
times too small or too large is no longer credited. The official keys are unchanged.
5.0.0: the 95% interval is Inspect's Wilson interval (``ci95_lower``, ``ci95_upper``,
clustered by document group where questions share one) instead of the normal
approximation (``ci95_low``, ``ci95_high``, of zero width at 0/n and n/n); ``scored`` is
Inspect's ``scored_samples``; each of the task's scorers is registered by its key's name with plain arguments
(recorded in the log), so ``inspect score LOG`` rebuilds it in a fresh process; the
per-key ``unscored`` metric is gone: where the data has samples without a gold answer a
score ``unscored`` (metric ``n``) counts them from the scores, right after an
``inspect eval-retry``, an eval-set resume or ``inspect score``. Verdicts are those of 4.0.0.
4.0.0: without a ``grader`` role the evaluated model judges (the judge is no longer
skipped, so ``mathhay`` is no longer the exact match alone; the ``judge_skipped`` count is
gone); each judged score names its judge. Runs with a grader role score as in 3.1.0,
except that a JSON answer that is an integer beyond the float range is a parse failure
(incorrect), as the reference's float field; a catch-all left it unscored. A haystack
that cannot be built is the sample's error in Inspect (it was an unscored sample).
3.1.0: samples are sent in prefix order: questions whose prompts open with the same
text go out close together, so that a provider's prompt cache serves the shared opening;
each prompt and verdict is unchanged, only the order moves (so ``--limit N`` takes the
first N of the new order). 3.1.0 also offered ``-T order`` and ``-T in_flight``; they
were removed in 4.0.0 (the order is a run-time matter: Inspect's
``--sample-shuffle`` gives another). Anthropic's automatic caching is not requested
(``cache_prompt=False``): a MathHay prompt is one content block, no later request can
read it, and every write would cost 1.25 times the input price.
3.0.0: plain metric names (one scorer per score key: ``mathhay`` ``accuracy``,
``ci95_low``, ``category=SSSD``, ...; no ``finmath_tasks/`` prefix), the per-group
breakdowns other than the category leave the summary (they stay in the samples); the
numbers are unchanged.
2.0.0: the paper's settings (see the README's audit): default set v1 verified+unverified,
three documents first-first-first, the paper's solving and judge prompts (judge reply as
JSON), an unreadable judge reply or failed judge call counts as incorrect."""
PACKAGE = "finmath_tasks.tasks.mathhay"
SOLVE_TEMPLATE = (resources.files(PACKAGE) / "prompts" / "solve.txt").read_text(encoding="utf-8")

Position = Literal["first", "middle", "last", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"]
POSITIONS: tuple[str, ...] = (
    "first", "middle", "last", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9",
)  # fmt: skip
PAPER_LENGTHS = (32000, 64000, 128000)
Category = Literal["mssd", "ssmd", "msmd"]
TYPE_CHOICES = tuple(dict.fromkeys((*TASK_TYPES, *CATEGORIES)))
MAX_LENGTH = 10_000_000

GENERATE_CONFIG = GenerateConfig(temperature=0.0, max_tokens=1024)
"""Every model at temperature 0 with 1,024 output tokens (the paper: temperature 0; the
reference: 1,024 tokens for its OpenAI models)."""


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _list_item_int(value: Any) -> Any:
    """Inspect turns ``-T length=32000,64000`` into ``["32000", "64000"]`` (strings)."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value


def parse_placement(value: Any) -> list[str]:
    """``first-middle`` -> ["first", "middle"]; the params-module error otherwise."""
    parts = value.split("-") if isinstance(value, str) else []
    if not parts or any(p not in POSITIONS for p in parts):
        raise params.TaskParameterError(
            f"{NAME}: -T placement={value!r} is not one of {', '.join(POSITIONS)} "
            "or a dash-joined combination with one position per document (first-middle, "
            "first-middle-last)"
        )
    return parts


def placement_for(spec: str | None, documents: int) -> tuple[str, list[str]]:
    """(label, one position per document) of ``spec`` (None: the paper's default)."""
    label = spec if spec is not None else DEFAULT_PLACEMENT[documents]
    parts = parse_placement(label)
    if len(parts) == 1:
        return label, parts * documents
    if len(parts) != documents:
        raise params.TaskParameterError(
            f"{NAME}: -T placement={label!r} has {len(parts)} positions, but a task type with "
            f"{documents} document(s) needs 1 or {documents} (choose -T task_type to match)"
        )
    return label, parts


def prompt_for(question: str, context: str) -> str:
    return SOLVE_TEMPLATE.format(context=context, question=question)


def prompt_parts(question: str) -> tuple[str, str]:
    """The solving prompt's text before and after the haystack."""
    head, tail = SOLVE_TEMPLATE.split("{context}")
    return head.format(), tail.format(question=question)


SPACING = IN_FLIGHT
"""Requests in flight the prefix order is spaced for (:func:`prefix_sorted`): 10, the
``--max-connections`` Inspect's providers default to. Fixed, not read from the run: the
samples a ``--limit N`` run takes do not depend on its concurrency."""

_POOLS: dict[tuple[str, int, int], TokenPool] = {}


def token_pool(data: MathHayData) -> TokenPool:
    """The release's pool, tokenized once per process (shared by every task built on it)."""
    try:
        stamp = data.pool_file.stat().st_mtime_ns
    except OSError:
        stamp = 0
    key = (str(data.pool_file), data.pool_size, stamp)
    pool = _POOLS.get(key)
    if pool is None:
        if len(_POOLS) >= 4:
            _POOLS.clear()
        pool = _POOLS[key] = TokenPool(data.pool_documents, data.pool_size)
    return pool


def sample_layout(
    data: MathHayData, pool: TokenPool, meta: dict[str, Any], reserve: int
) -> tuple[str, list[Segment], Haystack, int]:
    """A sample's question text, its haystack as segments with its facts (text not
    decoded), and the tokens of its prompt without a haystack. A fresh variant's haystack
    is the original question's, its changed documents spliced in at the same offsets."""
    key = meta["question_key"]
    question = data.questions[key]
    variant = data.fresh.get(key)
    _, positions = placement_for(str(meta["placement"]), len(question.documents))
    prompt_tokens = len(pool.encode(prompt_for(question.question, "")))
    segments, haystack = pool.layout(
        data.order(key), question.documents, positions, int(meta["length"]), prompt_tokens,
        reserve, spliced=None if variant is None else variant.documents,
    )  # fmt: skip
    return (question if variant is None else variant).question, segments, haystack, prompt_tokens


def prefix_sorted(
    dataset: Dataset, data: MathHayData, pool: TokenPool, reserve: int, spacing: int
) -> MemoryDataset:
    """The samples in prefix order (:func:`finmath_tasks.prefix_cache.prefix_order`), each
    sent ``spacing`` places after the sample it shares its opening with: the haystacks are
    laid out (not decoded) to compare their openings. A sample that cannot be laid out
    keeps an empty key (it goes first; its solver reports the problem)."""
    samples = list(dataset)
    keys: list[tuple[Any, ...]] = []
    for sample in samples:
        try:
            _, segments, _, _ = sample_layout(data, pool, dict(sample.metadata or {}), reserve)
            keys.append(pool.key(segments))
        except Exception:  # the solver raises it again, as that sample's error
            keys.append(())
    order = prefix_order(keys, spacing)
    return MemoryDataset([samples[i] for i in order], name=dataset.name, location=dataset.location)


def in_files_order(task: Task) -> Task:
    """A copy of a ``mathhay`` task with its samples in the release files' order (each
    length, then each placement, then the questions as the files list them): the order
    before :func:`prefix_sorted`, for measurements that compare the two orders and tests
    whose scripted replies follow the files. The task itself always sends prefix order;
    a user wanting another order uses Inspect's ``--sample-shuffle``."""
    meta = task.metadata or {}
    lengths = [int(n) for n in meta["lengths"]]
    specs: list[str | None] = list(meta["placements"])
    types = list(meta["task_types"])

    def place(sample: Sample) -> tuple[int, int, int, int]:
        m = sample.metadata or {}
        documents = int(m["documents"])
        spec = next(
            i for i, s in enumerate(specs) if placement_for(s, documents)[0] == m["placement"]
        )
        position = int(str(m["question_key"]).rsplit("-", 1)[1])
        return lengths.index(int(m["length"])), spec, types.index(str(m["task_type"])), position

    dataset = task.dataset
    ordered = MemoryDataset(
        sorted(dataset, key=place), name=dataset.name, location=dataset.location
    )
    copied = copy.copy(task)
    copied.dataset = ordered
    return copied


def expand(
    dataset: MemoryDataset, lengths: list[int], placements: list[str | None]
) -> MemoryDataset:
    """One sample per question, length and placement (ids ``<type>-<n>-<length>-<placement>``)."""
    samples = []
    for length in lengths:
        for spec in placements:
            for sample in dataset:
                meta = dict(sample.metadata or {})
                label, _ = placement_for(spec, int(meta["documents"]))
                meta.update(
                    length=length,
                    placement=label,
                    cell=f"{length}/{label}",
                    type_length=f"{meta['task_type']}/{length}",
                )
                samples.append(
                    Sample(
                        id=f"{sample.id}-{length}-{label}",
                        input=sample.input,
                        target=sample.target,
                        metadata=meta,
                    )
                )
    return MemoryDataset(samples, name=dataset.name, location=dataset.location)


def smallest_need(data: MathHayData, pool: TokenPool) -> tuple[int, str] | None:
    """The fewest tokens a question's documents and its prompt take (the smallest
    haystack any sample can have) and that question's key; None when no question can be
    laid out (each sample's solver then reports why)."""
    best: tuple[int, str] | None = None
    for key, question in data.questions.items():
        try:
            prompt_tokens = len(pool.encode(prompt_for(question.question, "")))
            positions = ["first"] * len(question.documents)
            _, haystack = pool.layout(
                data.order(key), question.documents, positions, 0, prompt_tokens, 0
            )
        except Exception:  # the sample's solver raises it again, as that sample's error
            continue
        if best is None or haystack.needed < best[0]:
            best = (haystack.needed, key)
    return best


def check_lengths(lengths: list[int], reserve: int, smallest: tuple[int, str] | None) -> None:
    """Refuse a length (less the reserve at 128000) that leaves less room than every
    question's documents and prompt need: each of its prompts would be those alone, longer
    than asked, with no haystack."""
    if LONG_LENGTH in lengths and reserve >= LONG_LENGTH:
        raise params.TaskParameterError(
            f"{NAME}: -T reserve={reserve} is not smaller than the length {LONG_LENGTH} it is "
            f"taken from (the reference: {LONG_LENGTH_RESERVE}, {O1_LONG_LENGTH_RESERVE} for "
            "o1 models)"
        )
    if smallest is None:
        return
    need, key = smallest
    for length in lengths:
        budget = haystack_budget(length, reserve)
        if budget < need:
            less = f" less -T reserve={reserve}" if length == LONG_LENGTH else ""
            raise params.TaskParameterError(
                f"{NAME}: -T length={length}{less} leaves {budget} tokens for the documents "
                f"and the prompt, fewer than any question needs (the fewest: {need}, "
                f"question {key}): no sample would have a haystack; use -T length={need} "
                "or more"
            )


@solver
def mathhay_haystack(
    data: MathHayData, pool: TokenPool, reserve: int = LONG_LENGTH_RESERVE
) -> Solver:
    """Build the sample's haystack now and make the solving prompt the user turn.

    A haystack that cannot be built is a fault of our code or data, not of a model
    output: the exception reaches Inspect as that sample's error, before any model
    call; the other samples go on (the task sets ``continue_on_fail``). A length too
    small for the question's own documents and the prompt gives, as in the
    reference, a prompt of the documents alone (longer than the length asked):
    a warning in the log names the sample, the requested and the needed size,
    and the score flags it (``haystack_too_short``).
    """

    def build(state: TaskState) -> str:
        question, segments, haystack, prompt_tokens = sample_layout(
            data, pool, state.metadata, reserve
        )
        length = int(state.metadata["length"])
        if haystack.too_short:
            logger.warning(
                "%s: sample %s: -T length=%d (%d tokens for documents and prompt) is smaller "
                "than the question's documents and the prompt need (%d tokens): the prompt "
                "holds no irrelevant text and is longer than asked; use -T length=%d or more",
                NAME, state.sample_id, length, haystack.budget, haystack.needed,
                length + haystack.needed - haystack.budget,
            )  # fmt: skip
        prompt = prompt_for(question, pool.decode(segments))
        key = state.metadata["question_key"]
        documents = (data.fresh.get(key) or data.questions[key]).documents
        state.store.set(
            HAYSTACK_KEY,
            {
                **haystack.metadata(),
                "prompt_tokens": prompt_tokens,
                # where the relevant documents stand in the prompt (the causes' evidence)
                SPANS_KEY: relevant_spans(prompt, documents),
            },
        )
        return prompt

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        prompt = await anyio.to_thread.run_sync(build, state)
        state.messages = [ChatMessageUser(content=prompt)]
        return state

    return solve


APPLIES = {"reserve": params.only(length=LONG_LENGTH)}
ROLES = {"grader": params.only(judge=True)}
"""The model roles a run calls (:func:`finmath_tasks.params.refuse_unused_roles`): the
judge asks the grader role."""
"""Where a parameter has an effect (:func:`finmath_tasks.params.refuse_unused`): the
reference leaves the reserve free at exactly 128000 tokens, at no other length."""


@task(name=NAME)
def mathhay(
    task_type: TaskType | Category | Literal["all"] | list[str] = "all",
    release: Release | str = "v1",
    subset: Literal["verified+unverified", "verified", "unverified", "full"] | None = None,
    length: int | list[int] = 32000,
    placement: str | list[str] | None = None,
    judge: bool = True,
    reserve: int = LONG_LENGTH_RESERVE,
    data_dir: str | None = None,
    max_prompt_tokens: int | None = None,
    variant: Variant = "original",
    variant_seed: int = 0,
) -> Task:
    """MathHay long-context mathematical reasoning.

    The samples are sent in prefix order: those whose prompts open with the same text
    go close together, each 10 places after the one it shares its opening with, so that
    with 10 requests in flight (``--max-connections 10``) that one is answered and
    cached first. Prompts and verdicts do not depend on the order (``--sample-shuffle``
    gives another); other concurrency only misses some cache reads.

    Args:
      task_type: sssd, 2ssd, 3ssd, ss2d, 2s2d, 3s2d, 3s3d, a category of the
        paper's Table 3 (mssd: 2ssd+3ssd, ssmd: ss2d, msmd: 2s2d+3s2d+3s3d),
        several (a list: ``-T task_type=sssd,3s3d``) or all (every type the
        subset has).
      release: v1 (the paper's Table 3: 126 verified + 547 unverified
        questions) or March-2024-to-September-2024 (602 questions, a later
        release not in the paper).
      subset: default the release's own first set (v1: verified+unverified;
        March-2024-to-September-2024 and a built release: full);
        verified+unverified (the paper's "Full", 673 questions),
        verified, unverified (v1, or the later release's own), or full (the
        files named full_haystack_*: v1's 585-question set, not the paper's;
        the later release's 602).
      length: haystack length in o200k tokens (32000, 64000, 128000 in the
        paper; any integer); a list runs each length.
      placement: where the relevant documents go: first, middle, last,
        p1..p9 (N tenths in), or one position per document joined by dashes
        (first-middle, first-first-first); a list runs each. Default (the
        paper's): middle (one document), first-middle (two),
        first-first-first (three).
      judge: ask the ``grader`` model role (else the evaluated model, with a
        warning) whether a non-exact answer's solution is equivalent to the gold
        one (the paper's verdict); false: exact match alone.
      reserve: tokens left free at length 128000 (the reference: 2000, and
        20000 for o1-mini and o1-preview); other lengths have none.
      data_dir: folder with the release folders (directly or in mathhay/);
        default $FINMATH_DATA_DIR, else the authors' repository at the pinned
        commit (the files needed are downloaded once, verified, cached).
      max_prompt_tokens: the model's context budget in o200k tokens; a longer
        prompt is not sent, the sample is incorrect and counted as
        over_length. Default: the context length Inspect knows for the model.
      variant: original (default: the questions as published) or fresh (each
        question asked again with new values for the quantities its solve()
        reads, written anew in its documents, the gold recomputed by running
        solve() in the bubblewrap sandbox; questions that cannot be are left
        out, see ``finmath variants mathhay``).
      variant_seed: the draw of the fresh values, 1 or more with variant=fresh
        (refused otherwise; 0, the default, goes with variant=original).
    """
    release = check_release(NAME, release, data_dir)
    offered = release_info(release).subsets
    chosen: str = offered[0] if subset is None else params.choice(NAME, "subset", subset, offered)
    judge = params.boolean(NAME, "judge", judge)
    data_dir = params.optional_path(NAME, "data_dir", data_dir)
    lengths = [
        params.integer_in_range(NAME, "length", _list_item_int(v), 1, MAX_LENGTH)
        for v in _as_list(length)
    ]
    placements: list[str | None] = (
        [None] if placement is None else [str(p) for p in _as_list(placement)]
    )
    for spec in placements:
        if spec is not None:
            parse_placement(spec)
    reserve = int(params.integer_in_range(NAME, "reserve", _list_item_int(reserve), 0, MAX_LENGTH))
    params.refuse_unused(NAME, mathhay, {"length": lengths, "reserve": reserve}, APPLIES)
    requested = _as_list(task_type)
    if requested == ["all"]:
        types = subset_task_types(data_dir, release, chosen)
    else:
        types = []
        for t in requested:
            value = params.choice(NAME, "task_type", t, TYPE_CHOICES)
            types.extend(CATEGORIES.get(value, (value,)))
        types = list(dict.fromkeys(types))
    if max_prompt_tokens is not None:
        max_prompt_tokens = params.positive_integer(NAME, "max_prompt_tokens", max_prompt_tokens)
    params.refuse_unused_roles(NAME, {"judge": judge}, ROLES)
    chosen_variant, variant_seed = check_variant(NAME, variant, variant_seed)

    data = load_data(data_dir, release, chosen, types)
    variant_summary = None
    if chosen_variant == "fresh":
        from finmath_tasks.tasks.mathhay.variants import apply_variant

        data, variant_summary = apply_variant(data, chosen_variant, variant_seed, chosen)
    dataset = expand(data.dataset, lengths, placements)
    pool = token_pool(data)
    check_lengths(lengths, reserve, smallest_need(data, pool))
    dataset = prefix_sorted(dataset, data, pool, reserve, SPACING)
    return Task(
        dataset=dataset,
        solver=chain(
            mathhay_haystack(data, pool, reserve),
            prompt_budget("auto" if max_prompt_tokens is None else max_prompt_tokens),
            generate(),
        ),
        scorer=mathhay_scorers(judge, count_unscored=withheld_answers(dataset)),
        # one content block no later request repeats: a marked write is never read
        config=cache_config(GENERATE_CONFIG, readable=False),
        version=TASK_VERSION,
        continue_on_fail=True,
        metadata={
            "benchmark": NAME,
            "release": release,
            "subset": chosen,
            "task_types": types,
            "lengths": lengths,
            "placements": placements,
            "reserve": reserve,
            "sample_order": f"prefix (spacing {SPACING})",
            "pool_file": str(data.pool_file),
            "pool_size": data.pool_size,
            "missing_pool_entries": data.missing_pool_entries,
            PROVENANCE_KEY: data.provenance,
            "repeated_records": list(data.repeated_records),
            **({"variant": variant_summary} if variant_summary else {}),
        },
    )
