"""What a grid costs before it runs: ``finmath grid --dry-run``.

Per run of the grid (and in total): samples, model calls of the evaluated model
(first-turn calls exactly; a multi-turn solver as a lower and an upper bound
from its turn limit), prompt tokens (o200k_base), the output-token bound
(``--max-tokens`` or the task's own limit) and, with prices, the cost bounds.

A benchmark's ``grid.py`` may declare ``COST``, a :class:`Cost`: how the
per-sample load of a run is counted cheaply from the dataset records and the
prompt templates (no haystack built, no retrieval index, no model). Without a
declaration a run's prompts are rendered the generic way
(:func:`render_first_turns`: the task's solver chain runs per sample up to its
first generation, with a stand-in model): exact but slow on large grids.

Bounds, per sample with first-turn prompt tokens ``P``, calls ``lo..hi``,
generation limit ``M`` and follow-up user turns of at most ``F`` tokens:
input ``lo x P`` (every later call re-reads the first prompt) up to
``hi x P + (M + F) x hi(hi-1)/2`` (each later call also re-reads the replies
and follow-up turns before it); output ``0`` up to ``hi x M``.

Prompt caching: per model whose provider has a known rule
(:func:`finmath_tasks.prefix_cache.rule_for`), the first-turn prompt tokens its cache
can serve when the run's samples are sent in the task's order (every earlier prompt
of the run still cached and answered), and the cost with it: served tokens at the
cached-input price, tokens written to a marked cache at the provider's surcharge.

The grader role: where a benchmark's official verdict asks a model (a judge of
equivalence, an answer extractor), its ``COST.grader`` counts those calls per sample
(bounds: a judge asked only for a sample whose exact match fails makes 0 up to one call
per sample) and their tokens (the evaluated model's reply is part of the grader's
prompt: between an empty reply and one of the generation limit), priced at the grader's
model (``--model-role grader=...``; without that role an extractor runs on the evaluated
model, and a judge may not be asked at all: the benchmark's count says which).
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate, islice
from typing import Any, NamedTuple

from finmath_tasks.cli.declare import DECLARATION_MODULE, TASKS_PACKAGE, Declaration
from finmath_tasks.cli.prices import Price, batch_price, price_for
from finmath_tasks.prefix_cache import (
    IN_FLIGHT,
    WINDOW,
    CacheRule,
    Prompt,
    Served,
    message_points,
    rule_for,
    serve,
)

ENCODING = "o200k_base"


class SampleLoad(NamedTuple):
    """One sample's load on the evaluated model."""

    prompt: int
    """First-turn prompt tokens (exact for the tokenizer used)."""
    calls_low: int = 1
    calls_high: int = 1
    input_low: int | None = None
    """Input tokens over all calls; None: from the formula in the module docstring."""
    input_high: int | None = None


class GraderLoad(NamedTuple):
    """One sample's calls on the ``grader`` role, bounds over all of them."""

    calls_low: int
    calls_high: int
    input_low: int
    input_high: int
    output_high: int


@dataclass(frozen=True)
class GraderCount:
    """What a run's official verdict asks of the ``grader`` role: ``what`` asks (judge,
    extractor), ``bound`` how the bounds are taken, a load per sample in the task's order."""

    what: str
    bound: str
    loads: Sequence[GraderLoad]


@dataclass(frozen=True)
class GraderTotal:
    """A run's grader calls, summed over its samples (see :class:`GraderCount`)."""

    what: str
    bound: str
    calls: tuple[int, int]
    input: tuple[int, int]
    output_high: int

    def cost(self, price: Price | None) -> tuple[float, float] | None:
        if price is None:
            return None
        low = self.input[0] * price.input / 1e6
        return low, (self.input[1] * price.input + self.output_high * price.output) / 1e6


@dataclass(frozen=True)
class Cost:
    """A benchmark's counting, declared in its ``grid.py`` as ``COST``.

    ``loads(args, max_tokens)``: per-sample loads of the run with task arguments
    ``args`` (in dataset order, so ``--limit N`` keeps the first N), given the
    generation limit, counted cheaply; None: the prompts are rendered
    (:func:`render_first_turns`) and each sample gets ``calls(args)`` calls
    (lower, upper bound) with follow-up user turns of at most ``follow_up(args)``
    tokens. ``max_tokens(args)``: the task's own generation limit; None: read
    from the task's config. ``note(args)``: how the run was counted.
    ``prompts(args)``: each sample's first-turn prompt as tokens with its cache points,
    in the task's order, for the prompt-cache estimate; None: the rendered first turns.
    ``conversation``: a sample's later calls continue its first call's conversation (and
    so re-read it from the cache); False when they send a prompt of their own.
    ``grader(args, max_tokens, role_given)``: the calls the official verdict makes on the
    ``grader`` role (:class:`GraderCount`), given the evaluated model's generation limit
    and whether a grader role is given; None: the verdict calls no model.
    """

    loads: Callable[[Mapping[str, Any], int | None], Sequence[SampleLoad]] | None = None
    calls: Callable[[Mapping[str, Any]], tuple[int, int]] = lambda args: (1, 1)
    follow_up: Callable[[Mapping[str, Any]], int] = lambda args: 0
    max_tokens: Callable[[Mapping[str, Any]], int | None] | None = None
    note: Callable[[Mapping[str, Any]], str] = lambda args: ""
    prompts: Callable[[Mapping[str, Any]], Iterable[Prompt]] | None = None
    conversation: bool = True
    grader: Callable[[Mapping[str, Any], int | None, bool], GraderCount | None] | None = None


GENERIC = Cost()
"""A run of a benchmark that declares no ``COST``: prompts rendered, one call per sample."""


def declared_cost(declaration: Declaration) -> Cost | None:
    """The benchmark's ``COST``, or None when it declares none."""
    module = importlib.import_module(
        f"{TASKS_PACKAGE}.{declaration.benchmark}.{DECLARATION_MODULE}"
    )
    cost = getattr(module, "COST", None)
    if cost is not None and not isinstance(cost, Cost):
        raise TypeError(f"{module.__name__}: COST must be a finmath_tasks.cli.cost.Cost")
    return cost


_BUILT: dict[Callable[..., Any], tuple[str, Any]] = {}


def built(fn: Callable[..., Any], args: Mapping[str, Any]) -> Any:
    """``fn(**args)``, kept until ``fn`` is called with other arguments: a run's counts
    ask for the same task (or data) several times (loads, limit, prompts), once each.
    The data directory a task falls back to (``$FINMATH_DATA_DIR``) is part of the key."""
    key = repr((sorted(args.items()), os.environ.get("FINMATH_DATA_DIR")))
    kept = _BUILT.get(fn)
    if kept is None or kept[0] != key:
        kept = _BUILT[fn] = (key, fn(**args))
    return kept[1]


# --- token counting ---------------------------------------------------------------------


@lru_cache(maxsize=1)
def _encoding() -> Any:
    from finmath_tasks.tiktoken_offline import get_encoding

    return get_encoding(ENCODING)


@lru_cache(maxsize=65536)
def count_tokens(text: str) -> int:
    """o200k_base tokens of ``text`` (special-token text counted as ordinary text)."""
    return len(encode(text))


def encode(text: str) -> list[int]:
    """o200k_base tokens of ``text`` (special-token text encoded as ordinary text)."""
    tokens: list[int] = _encoding().encode(text, disallowed_special=())
    return tokens


def conversation_bounds(
    prompt: int, calls: tuple[int, int], max_tokens: int | None, follow_up: int = 0
) -> SampleLoad:
    """The load of a conversation of ``calls`` turns whose first prompt has ``prompt`` tokens."""
    low, high = calls
    growth = (max_tokens or 0) + follow_up
    return SampleLoad(
        prompt, low, high, low * prompt, high * prompt + growth * high * (high - 1) // 2
    )


# --- the generic (slow) way ---------------------------------------------------------------


def render_first_turns(task: Any, limit: int | None = None) -> list[list[Any]]:
    """Each sample's messages at its first generation: the task's solver chain run with a
    stand-in model (``mockllm/model``) up to the first ``generate``
    (``solvers.first_call``). Slow; the reference the cheap counts are tested against."""
    from inspect_ai.model import GenerateConfig, get_model

    from finmath_tasks._inspect_private import init_active_model
    from finmath_tasks.solvers.first_call import first_call

    model = get_model("mockllm/model")
    init_active_model(model, GenerateConfig())

    async def one(sample: Any) -> list[Any]:
        messages, _ = await first_call(task, sample, model)
        return list(messages)

    samples = list(task.dataset)[:limit] if limit is not None else list(task.dataset)

    async def every() -> list[list[Any]]:
        return [await one(s) for s in samples]

    return asyncio.run(every())


def message_tokens(messages: Sequence[Any]) -> int:
    """o200k tokens of the messages' text (no per-message framing tokens)."""
    return sum(count_tokens(m.text) for m in messages)


def messages_prompt(messages: Sequence[Any], cached: bool = True) -> Prompt:
    """A first turn as tokens (each message's text, no framing) with the cache points
    Inspect marks (none when ``cached`` is False: the task asks for no caching)."""
    pieces = [encode(m.text) for m in messages]
    tokens = [t for piece in pieces for t in piece]
    points = message_points([len(p) for p in pieces], [m.role for m in messages])
    return Prompt(tokens, points if cached else (), tuple(accumulate(len(p) for p in pieces)))


def rendered_prompts(task: Any, limit: int | None) -> list[Prompt]:
    """The task's rendered first turns as prompts (:func:`messages_prompt`)."""
    cached = task.config.cache_prompt is not False
    return [messages_prompt(m, cached) for m in render_first_turns(task, limit)]


# --- the dry-run table ----------------------------------------------------------------------


@dataclass
class Cached:
    """What one rule's cache serves of a run: the first turns as sent
    (:class:`~finmath_tasks.prefix_cache.Served`), and the later turns of a conversation,
    each of which re-reads the sample's first turn from the cache (at least that: the
    bounds take the replies as empty for the low count) and, under a marked rule, writes
    its reply and follow-up turn (at most ``max_tokens + follow_up``)."""

    first: Served
    later_low: int = 0
    later_high: int = 0
    later_written_high: int = 0

    @property
    def read(self) -> tuple[int, int]:
        return self.first.read + self.later_low, self.first.read + self.later_high

    @property
    def written(self) -> tuple[int, int]:
        return self.first.written, self.first.written + self.later_written_high


def _later_read(rule: CacheRule, prompt: int, marked: bool) -> int:
    """Tokens of a ``prompt``-token first turn a later turn of its conversation reads back."""
    if rule.last_only or prompt < rule.min_tokens:
        return 0
    if rule.marked:
        return prompt if marked else 0
    return prompt // rule.block * rule.block


@dataclass
class RunCost:
    args: dict[str, Any]
    samples: int
    calls: tuple[int, int]
    prompt: int
    """First-turn prompt tokens, summed over samples."""
    input: tuple[int, int]
    max_tokens: int | None
    output_high: int | None
    note: str = ""
    error: str = ""
    served: dict[str, Cached] = field(default_factory=dict)
    """Per cache rule name: what its cache serves of the run's input."""
    cache_error: str = ""
    grader: GraderTotal | None = None
    refused: bool = False
    """The task refused its arguments or data when built (``error`` says why): the real
    grid stops on it, so the dry run fails too."""
    """The official verdict's calls on the grader role (None: it calls no model)."""

    def cost(self, price: Price | None) -> tuple[float, float] | None:
        if price is None or self.output_high is None:
            return None
        low = self.input[0] * price.input / 1e6
        high = (self.input[1] * price.input + self.output_high * price.output) / 1e6
        return low, high

    def cached_cost(
        self, price: Price | None, rule: CacheRule | None
    ) -> tuple[float, float] | None:
        """:meth:`cost` with the prompt cache of ``rule`` (None without a count)."""
        bounds = self.cost(price)
        served = self.served.get(rule.name) if rule is not None else None
        if bounds is None or price is None or rule is None or served is None:
            return None
        saved = price.input - price.cache_read
        surcharge = (rule.write_factor - 1) * price.input
        (read_low, read_high), (written_low, written_high) = served.read, served.written
        return (
            bounds[0] + (-read_low * saved + written_low * surcharge) / 1e6,
            bounds[1] + (-read_high * saved + written_high * surcharge) / 1e6,
        )


def run_cost(
    declaration: Declaration,
    cost: Cost | None,
    args: Mapping[str, Any],
    limit: int | None,
    max_tokens: int | None,
    rules: Sequence[CacheRule] = (),
    window: int | None = None,
    in_flight: int = 1,
    grader_role: bool = False,
) -> RunCost:
    """The load of one run (one task), what each cache rule's cache serves of it, and the
    official verdict's calls on the grader role (``grader_role``: one is given)."""
    cost = cost or GENERIC
    rendered: list[Prompt] | None = None
    grader: GraderTotal | None = None
    try:
        # built as the real grid builds it (kept for the counts below): a task that refuses
        # its arguments or data is that run's error here too
        task = built(declaration.grid.task, args)
        if cost.loads is None:
            calls = cost.calls(args)
            rendered = rendered_prompts(task, limit)
            loads = [SampleLoad(len(p.tokens), *calls) for p in rendered]
            limit_tokens = (
                task.config.max_tokens if cost.max_tokens is None else cost.max_tokens(args)
            )
            note = "prompts rendered"
        else:
            if max_tokens is None and cost.max_tokens is None:
                raise TypeError("a COST with loads must declare max_tokens")
            limit_tokens = cost.max_tokens(args) if cost.max_tokens is not None else None
            loads = list(cost.loads(args, max_tokens if max_tokens is not None else limit_tokens))
            if limit is not None:
                loads = loads[:limit]
            note = "counted from the records"
        if max_tokens is not None:
            limit_tokens = max_tokens
        follow_up = cost.follow_up(args)
        note = cost.note(args) or note
        if cost.grader is not None:
            grader = grader_total(cost.grader(args, limit_tokens, grader_role), limit)
    except Exception as e:  # one run that cannot be counted never hides the others
        return RunCost(
            dict(args), 0, (0, 0), 0, (0, 0), None, None, error=f"{type(e).__name__}: {e}",
            refused=refusal(e),
        )  # fmt: skip
    input_low = input_high = 0
    for load in loads:
        if load.input_low is None or load.input_high is None:
            filled = conversation_bounds(
                load.prompt, (load.calls_low, load.calls_high), limit_tokens, follow_up
            )
            input_low += filled.input_low or 0
            input_high += filled.input_high or 0
        else:
            input_low += load.input_low
            input_high += load.input_high
    calls = (sum(x.calls_low for x in loads), sum(x.calls_high for x in loads))
    if limit_tokens is None and any(x.calls_high > 1 for x in loads):
        note = f"{note}; input upper bound without the replies (no generation limit)"
    served: dict[str, Cached] = {}
    cache_error = ""
    unique = list({r.name: r for r in rules}.values())
    if unique:
        try:
            if cost.prompts is not None:
                stream: Iterable[Prompt] = islice(cost.prompts(args), limit)
            elif rendered is not None:
                stream = rendered
            else:
                stream = rendered_prompts(built(declaration.grid.task, args), limit)
            shapes: list[tuple[int, bool]] = []

            def shaped(prompts: Iterable[Prompt]) -> Iterable[Prompt]:
                for prompt in prompts:
                    size = len(prompt.tokens)
                    shapes.append((size, size in prompt.points))
                    yield prompt

            counts = serve(shaped(stream), unique, window, in_flight)
            growth = (limit_tokens or 0) + follow_up
            for rule, first in zip(unique, counts, strict=True):
                count = Cached(first)
                for load, (size, marked) in zip(
                    loads if cost.conversation else (), shapes, strict=False
                ):
                    again = _later_read(rule, size, marked)
                    count.later_low += max(0, load.calls_low - 1) * again
                    count.later_high += max(0, load.calls_high - 1) * again
                    if rule.marked and marked and load.calls_high > 1:
                        count.later_written_high += (load.calls_high - 1) * growth
                served[rule.name] = count
        except Exception as e:  # the estimate is missing, the run's count stands
            cache_error = f"{type(e).__name__}: {e}"
    return RunCost(
        args=dict(args),
        samples=len(loads),
        calls=calls,
        prompt=sum(x.prompt for x in loads),
        input=(input_low, input_high),
        max_tokens=limit_tokens,
        output_high=None if limit_tokens is None else calls[1] * limit_tokens,
        note=note,
        served=served,
        cache_error=cache_error,
        grader=grader,
    )


def grader_total(count: GraderCount | None, limit: int | None) -> GraderTotal | None:
    """``count`` summed over the run's samples (the first ``limit``)."""
    if count is None:
        return None
    loads = list(count.loads)[:limit]
    return GraderTotal(
        what=count.what,
        bound=count.bound,
        calls=(sum(x.calls_low for x in loads), sum(x.calls_high for x in loads)),
        input=(sum(x.input_low for x in loads), sum(x.input_high for x in loads)),
        output_high=sum(x.output_high for x in loads),
    )


def _grader_line(run: RunCost, model: str, grader: str | None, price: Price | None) -> str:
    """The run's grader calls under its row (the grader's model: the role's, else the
    evaluated model, which an extractor falls back to)."""
    count = run.grader
    assert count is not None
    who = grader or f"{model} (no grader role)"
    return (
        f"       + {count.what} on the grader role, {who}: {_range(*count.calls)} calls "
        f"({count.bound}) | input {_range(*count.input)} | output bound "
        f"{_n(count.output_high)} | {_money(count.cost(price))}"
    )


def _n(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _range(low: int, high: int) -> str:
    return _n(low) if low == high else f"{_n(low)}-{_n(high)}"


def _money(bounds: tuple[float, float] | None) -> str:
    if bounds is None:
        return "?"
    low, high = bounds
    return f"${low:,.2f}-${high:,.2f}"


def _served(run: RunCost, rule: CacheRule | None) -> str:
    if rule is None:
        return "no cache rule known"
    if run.cache_error:
        return f"not counted ({run.cache_error})"
    served = run.served.get(rule.name)
    if served is None:
        return "?"
    low, high = served.read
    share = low / run.input[0] if run.input[0] else 0.0
    text = f"{_range(low, high)} ({share:.1%})"
    written = served.written
    return text + (f", {_range(*written)} written" if written[1] else "")


def refusal(error: BaseException) -> bool:
    """Whether building a task failed as the real grid's build stops on (a bad argument,
    unusable data), not for a missing prerequisite (a run the grid skips)."""
    from finmath_tasks._inspect_private import PrerequisiteError
    from finmath_tasks.cli.prerequisites import unavailable_reason

    stops = (PrerequisiteError, ValueError, TypeError, LookupError, OSError)
    return isinstance(error, stops) and unavailable_reason(error) is None


def cost_lines(
    declaration: Declaration,
    runs: Sequence[Mapping[str, Any]],
    models: Sequence[str],
    *,
    limit: int | None = None,
    max_tokens: int | None = None,
    price: Price | None = None,
    window: int | None = WINDOW,
    in_flight: int = IN_FLIGHT,
    grader: str | None = None,
    numbers: Sequence[int] | None = None,
    refused: list[str] | None = None,
    batch: Any = None,
) -> list[str]:
    """The dry-run cost table: a line per run and model, then the totals; the prompt
    cache is modelled with ``in_flight`` requests sent at once and a lifetime of
    ``window`` requests (:class:`finmath_tasks.prefix_cache.PrefixCache`). Under a run
    whose official verdict asks a model, its calls on the grader role (``grader``: the
    ``--model-role grader`` model), at the grader's price. ``numbers``: each run's number
    in the grid's list (default 1, 2, ...: runs skipped here leave gaps). ``refused``
    receives ``run N: <error>`` for each run whose task refused its arguments or data.
    ``batch``: Inspect's ``--batch`` as the generation config holds it; when set, each
    model (and the grader) is priced at its batch price where one is known."""
    cost = declared_cost(declaration)
    rules = {model: rule_for(model) for model in models}
    known = [r for r in rules.values() if r is not None]
    role = grader is not None
    counted = [
        run_cost(declaration, cost, args, limit, max_tokens, known, window, in_flight, role)
        for args in runs
    ]
    if refused is not None:
        refused += [
            f"run {i}: {run.error}"
            for i, run in zip(numbers or range(1, len(counted) + 1), counted, strict=True)
            if run.refused
        ]
    grader_price, grader_source = price_for(grader) if grader is not None else (None, "")
    prices: dict[str, tuple[Price | None, str]] = {}
    for model in models:
        prices[model] = (price, "--price") if price is not None else price_for(model)
    if batch:  # --batch: the providers' batch APIs
        prices = {model: batch_price(*found) for model, found in prices.items()}
        if grader is not None:
            grader_price, grader_source = batch_price(grader_price, grader_source)
    lines = [
        "cost (o200k prompt tokens; calls and input tokens of the evaluated model, "
        "low-high for multi-turn solvers; output is an upper bound; cached: input tokens "
        "the provider's prompt cache can serve (share of the low input), first turns in "
        "the task's order, later turns of a conversation re-reading the first, "
        f"{in_flight} requests at once, a prefix kept while one of the last "
        f"{window if window is not None else 'unlimited'} requests uses it; and the cost "
        "with them):"
    ]
    header = (
        "  run | samples | calls | first-turn prompt tokens | input tokens | output bound | cost"
        " | cached | cost with cache"
    )
    totals: dict[str, list[float]] = {}
    for model in models:
        model_price, source = prices[model]
        rule = rules[model]
        lines.append(
            f" model {model}: "
            + (
                f"${model_price.input:g}/M in, ${model_price.output:g}/M out"
                + (
                    f", ${model_price.cache_read:g}/M cached"
                    if model_price.cached_input is not None
                    else ""
                )
                + f" ({source})"
                if model_price
                else f"no price ({source}); give --price IN/OUT"
            )
            + (f"; prompt cache: {rule.source}" if rule else "; no prompt cache rule known")
        )
        lines.append(header)
        total = [0.0] * 13
        unknown_output = False
        uncached = False
        # the grader's model: the role's, else the evaluated model (an extractor's fallback)
        graded_price = grader_price if grader is not None else model_price
        graded = [0, 0, 0, 0, 0, 0.0, 0.0]
        graded_priced = True
        for i, run in zip(numbers or range(1, len(counted) + 1), counted, strict=True):
            if run.error:
                lines.append(f"  {i:3d}. not counted: {run.error}")
                continue
            bounds = run.cost(model_price)
            with_cache = run.cached_cost(model_price, rule)
            served = run.served.get(rule.name) if rule is not None else None
            lines.append(
                f"  {i:3d}. {run.samples:,} | {_range(*run.calls)} | {_n(run.prompt)} | "
                f"{_range(*run.input)} | {_n(run.output_high)}"
                + (f" ({_n(run.max_tokens)}/call)" if run.max_tokens else " (no limit)")
                + f" | {_money(bounds)} | {_served(run, rule)} | {_money(with_cache)}"
                + (f"  [{run.note}]" if run.note else "")
            )
            values = [
                run.samples,
                run.calls[0],
                run.calls[1],
                run.prompt,
                run.input[0],
                run.input[1],
                run.output_high or 0,
                *(bounds or (0.0, 0.0)),
                served.read[0] if served else 0,
                run.input[0] if served else 0,
                *(with_cache or (0.0, 0.0)),
            ]
            total = [a + b for a, b in zip(total, values, strict=True)]
            unknown_output |= run.output_high is None
            uncached |= with_cache is None
            if run.grader is not None:
                lines.append(_grader_line(run, model, grader, graded_price))
                spent = run.grader.cost(graded_price)
                graded_priced &= spent is not None
                graded = [
                    a + b
                    for a, b in zip(
                        graded,
                        [*run.grader.calls, *run.grader.input, run.grader.output_high,
                         *(spent or (0.0, 0.0))],
                        strict=True,
                    )
                ]  # fmt: skip
        totals[model] = total
        priced = model_price is not None and not unknown_output
        money = _money((total[7], total[8])) if priced else "?"
        cached = f"{int(total[9]):,} ({total[9] / total[10]:.1%})" if rule and total[10] else "–"
        lines.append(
            f"  total: {int(total[0]):,} | {_range(int(total[1]), int(total[2]))} | "
            f"{int(total[3]):,} | {_range(int(total[4]), int(total[5]))} | "
            f"{'?' if unknown_output else f'{int(total[6]):,}'} | {money} | {cached} | "
            + (_money((total[11], total[12])) if priced and rule and not uncached else "?")
        )
        if any(run.grader is not None for run in counted if not run.error):
            source = grader_source if grader is not None else "the evaluated model's price"
            lines.append(
                f"  grader total ({grader or model}, {source}): "
                f"{_range(int(graded[0]), int(graded[1]))} calls | input "
                f"{_range(int(graded[2]), int(graded[3]))} | output bound {int(graded[4]):,} | "
                + (_money((graded[5], graded[6])) if graded_priced else "? (no price)")
            )
    if len(models) > 1:
        grand = [sum(t[k] for t in totals.values()) for k in range(13)]
        priced = all(prices[m][0] for m in models) and not any(
            r.output_high is None for r in counted
        )
        lines.append(
            f" all models: {int(grand[1]):,}-{int(grand[2]):,} calls, "
            f"{int(grand[4]):,}-{int(grand[5]):,} input tokens, "
            + (_money((grand[7], grand[8])) if priced else "cost ?")
        )
    return lines
