"""An Inspect task seen from outside an Inspect eval: its prompts, and its verdict on a reply.

:class:`Bridge` builds one of our Inspect tasks (its ``@task`` function, with the given
arguments) and serves what lm-evaluation-harness needs, through the task's own pieces:

- :meth:`Bridge.documents`: one row per sample, with the messages (system, exemplar
  turns, user) the task's solver chain sends at its first model call (rendered by
  running that chain, so retrieval, haystacks and prompt renderers are the task's own);
- :meth:`Bridge.score`: a reply goes through the rest of the same chain (a program runs
  in the sandbox the task chose), then through the task's scorers; the values per score
  name are what Inspect's log holds for that sample;
- :meth:`Bridge.aggregate`: the values of one score name aggregated by the first metric
  the task reports for it (``accuracy`` for most), as Inspect's summary shows it.

A solver that needs more than one model call (critics, calculators, a judge, a model
extractor, knowledge written by the model) stops with :class:`BridgeError`: those run
under Inspect only. Nothing here imports lm_eval.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib
import json
import logging
import math
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar, cast

from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    Model,
    ModelName,
    ModelOutput,
    get_model,
)
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, value_to_float
from inspect_ai.solver import TaskState
from inspect_ai.util import SandboxEnvironmentSpec, registry_info

from finmath_tasks._inspect_private import (
    init_active_model,
    registry_find_sandboxenv,
    scorer_metrics,
    set_sample_sandboxes,
)
from finmath_tasks.solvers.first_call import first_call, sample_state

logger = logging.getLogger(__name__)

TASKS_PACKAGE = "finmath_tasks.tasks"

USER_SETTABLE = ("split", "data_dir", "revision", "sandbox")
"""Task arguments a user may set through lm_eval's ``--metadata`` (a JSON object), e.g.
``--metadata '{"sandbox": "bwrap", "data_dir": "/data"}'``; the others are the config's."""

SANDBOX_TASK_NAME = "lm_eval"
"""The task name our sandboxes see (Inspect gives them the task's name)."""


class BridgeError(RuntimeError):
    """The Inspect task cannot run this way (it needs Inspect itself); the message says why."""


T = TypeVar("T")


# --- one event loop for the process's sandbox work ----------------------------------------


class _Loop:
    """A private event loop in a daemon thread. A sandbox's warm workers belong to the loop
    that started them, so every sample of the process runs on this one loop, whatever
    loop (if any) lm_eval itself runs when it calls us."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(
                    target=self._loop.run_forever, name="finmath-lm-eval", daemon=True
                ).start()
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(coro, loop).result()


_LOOP = _Loop()
_STARTED: dict[str, tuple[type[Any], SandboxEnvironmentSpec]] = {}
"""Sandboxes whose task_init ran, by spec: cleaned up once, at exit."""


def _close_sandboxes() -> None:
    for env_type, spec in list(_STARTED.values()):
        try:
            _LOOP.run(env_type.task_cleanup(SANDBOX_TASK_NAME, spec.config, True))
        except Exception as exc:  # at exit: report, never raise
            logger.warning("sandbox clean-up failed: %s: %s", type(exc).__name__, exc)
    _STARTED.clear()


# before the interpreter shuts down its thread pools (a sandbox's clean-up uses them):
# threading's exit hooks run first, the latest registered first; atexit's run too late
_register_exit = getattr(threading, "_register_atexit", None)
if _register_exit is not None:
    _register_exit(_close_sandboxes)
else:  # pragma: no cover - every CPython we support has it
    atexit.register(_close_sandboxes)


async def _task_sandbox(spec: SandboxEnvironmentSpec) -> type[Any]:
    key = repr((spec.type, spec.config))
    started = _STARTED.get(key)
    if started is not None:
        return started[0]
    env_type: type[Any] = registry_find_sandboxenv(spec.type)
    await env_type.task_init(SANDBOX_TASK_NAME, spec.config)
    _STARTED[key] = (env_type, spec)
    return env_type


@asynccontextmanager
async def _sample_sandbox(spec: SandboxEnvironmentSpec | None) -> Any:
    """The sample's sandboxes, as Inspect's ``sandbox()`` returns them inside an eval."""
    if spec is None:
        yield None
        return
    env_type = await _task_sandbox(spec)
    environments = await env_type.sample_init(SANDBOX_TASK_NAME, spec.config, {})
    try:
        set_sample_sandboxes(environments)
        yield environments
    finally:
        await env_type.sample_cleanup(SANDBOX_TASK_NAME, spec.config, environments, False)


# --- the task -------------------------------------------------------------------------------


def _no_more_calls() -> Iterator[ModelOutput]:
    raise BridgeError(
        "this configuration calls a model beyond the evaluated model's one reply (a judge, "
        "an extractor, an agent's later turns): it runs under Inspect only"
    )
    yield  # a generator, so mockllm calls it lazily


def _stand_in() -> Model:
    """The model the task's solvers see: every call to it is refused (the evaluated model's
    one reply comes from lm_eval, through the generate the bridge passes in)."""
    return get_model("mockllm/model", custom_outputs=_no_more_calls(), memoize=False)


def task_function(benchmark: str) -> Any:
    """The ``@task`` function of a benchmark folder (``tasks/<benchmark>/task.py``)."""
    module = importlib.import_module(f"{TASKS_PACKAGE}.{benchmark}.task")
    function = getattr(module, benchmark, None)
    if function is None:
        raise BridgeError(f"{module.__name__} has no task function {benchmark!r}")
    return function


def scorer_name(scorer: Scorer) -> str:
    return registry_info(scorer).name.split("/")[-1]


def _first(metrics: Sequence[Any], where: str) -> Metric:
    first = metrics[0] if metrics else None
    if first is None or isinstance(first, dict):
        raise BridgeError(f"{where}: the first metric is not a single metric")
    return cast(Metric, first)


def score_sources(task: Task) -> dict[str, tuple[Scorer, str | None, Metric]]:
    """Each score name of ``task`` (as Inspect's summary names it): its scorer, the key of
    the scorer's dict value it reads (None: the value itself) and its first metric.

    A scorer with a metric list is one score, named by the scorer; a scorer with metrics
    per key of its dict value (``Task(metrics={key: [...]})`` or the scorer's own) is one
    score per key."""
    sources: dict[str, tuple[Scorer, str | None, Metric]] = {}
    for scorer in task.scorer or []:
        name = scorer_name(scorer)
        metrics = task.metrics if task.metrics is not None else scorer_metrics(scorer)
        if isinstance(metrics, dict):
            for key, listed in metrics.items():
                sources[key] = (scorer, key, _first(listed, f"{name}: score {key}"))
        else:
            sources[name] = (scorer, None, _first(metrics, f"scorer {name}"))
    return sources


def metric_value(value: Any) -> float:
    """A metric's result as one number: itself, or the ``accuracy`` entry of a dict-valued
    metric (``accuracy_ci``), else its first entry."""
    if isinstance(value, dict):
        value = value["accuracy"] if "accuracy" in value else next(iter(value.values()))
    return float(value)


UNSET_MAX_TOKENS = 4096
"""lm_eval always sends a token limit (its own default is 256, which would cut chains of
thought short): where the Inspect task sets none (the provider's default applies there),
this one is sent."""


def generation_kwargs(config: GenerateConfig) -> dict[str, Any]:
    """The task's generation settings in lm_eval's ``generation_kwargs``: no stop strings
    (Inspect sends none; lm_eval's default would stop at a blank line), the task's
    temperature and top_p where it sets them (else lm_eval's defaults: greedy), its token
    limit or :data:`UNSET_MAX_TOKENS`."""
    kwargs: dict[str, Any] = {"until": []}
    if config.temperature is not None:
        kwargs["temperature"] = config.temperature
        kwargs["do_sample"] = config.temperature > 0
    if config.top_p is not None:
        kwargs["top_p"] = config.top_p
    kwargs["max_gen_toks"] = (
        config.max_tokens if config.max_tokens is not None else UNSET_MAX_TOKENS
    )
    return kwargs


Turn = list[dict[str, str]]
"""The messages of a sample's first model call, as chat messages ``{"role", "content"}``."""


def first_turn(messages: Sequence[ChatMessage]) -> Turn:
    """``messages`` as text chat messages; they must end with the user's turn."""
    if not messages or messages[-1].role != "user":
        raise BridgeError("the first model call does not end with a user message")
    return [{"role": m.role, "content": _text(m)} for m in messages]


def _text(message: ChatMessage) -> str:
    if not isinstance(message.content, str):
        raise BridgeError(f"a {message.role} message with non-text content")
    return message.content


class Bridge:
    """One Inspect task (``benchmark`` with ``args``) for lm_eval; ``metrics`` are the score
    names it reports there (each must be one of the task's scorers)."""

    def __init__(self, benchmark: str, args: Mapping[str, Any], metrics: Sequence[str]) -> None:
        self.benchmark = benchmark
        self.args = dict(args)
        self.task: Task = task_function(benchmark)(**self.args)
        self.samples: dict[str, Sample] = {}
        for index, sample in enumerate(self.task.dataset):
            key = str(sample.id if sample.id is not None else index)
            self.samples[key] = sample
        self.scorers: dict[str, Scorer] = {scorer_name(s): s for s in self.task.scorer or []}
        sources = score_sources(self.task)
        unknown = [m for m in metrics if m not in sources]
        if unknown:
            raise BridgeError(
                f"{benchmark}: no score named {', '.join(unknown)} "
                f"(the task's scores: {', '.join(sources)})"
            )
        self.metrics = list(metrics)
        self._sources = {m: sources[m] for m in self.metrics}
        self.last_state: TaskState | None = None
        """The last scored sample's final state (its messages, its store: a program's run)."""

    # -- prompts

    async def _render(self, keys: Sequence[str]) -> list[Turn]:
        model = _stand_in()
        init_active_model(model, GenerateConfig())
        turns = []
        for key in keys:
            messages, called = await first_call(self.task, self.samples[key], model, key)
            if not called:
                raise BridgeError(f"{self.benchmark}: sample {key} made no model call")
            turns.append(first_turn(messages))
        return turns

    def render(self, keys: Sequence[str] | None = None) -> list[Turn]:
        """The first turn of each sample (all, in the dataset's order, by default)."""
        return _LOOP.run(self._render(list(self.samples) if keys is None else keys))

    def documents(self) -> list[dict[str, str]]:
        """lm_eval's documents: the sample's id, the messages of its first model call (JSON),
        the last of them (the user's turn, as text) and its target, as text."""
        keys = list(self.samples)
        return [
            {
                "id": key,
                "messages": json.dumps(turn, ensure_ascii=False),
                "prompt": turn[-1]["content"],
                "target": _target(sample),
            }
            for key, turn, sample in zip(
                keys, self.render(keys), self.samples.values(), strict=True
            )
        ]

    # -- verdicts

    async def _score(self, key: str, reply: str) -> dict[str, Score]:
        sample = self.samples[key]
        model = _stand_in()
        init_active_model(model, GenerateConfig())
        calls = 0

        async def generate(state: TaskState, *args: Any, **kwargs: Any) -> TaskState:
            nonlocal calls
            calls += 1
            if calls > 1:
                raise BridgeError(
                    f"{self.benchmark}: this solver calls the model more than once: it runs "
                    "under Inspect only"
                )
            state.output = ModelOutput.from_content(str(ModelName(model)), reply)
            state.messages.append(state.output.message)
            return state

        state = sample_state(sample, model, key)
        async with _sample_sandbox(self.task.sandbox):
            state = await self.task.solver(state, generate)
            if calls == 0:
                raise BridgeError(f"{self.benchmark}: sample {key} made no model call")
            target = Target(sample.target)
            scores: dict[str, Score] = {}
            for name, scorer in self.scorers.items():  # in order: keyed scorers share one score
                score = await scorer(state, target)
                if score is None:
                    score = Score.unscored(reason="scorer_error", explanation="no score")
                scores[name] = score
        self.last_state = state
        return scores

    def verdicts(self, key: str, reply: str) -> dict[str, Score]:
        """Every score of the task for the sample ``key`` answered with ``reply``."""
        if key not in self.samples:
            raise BridgeError(f"{self.benchmark}: no sample {key!r}")
        return _LOOP.run(self._score(key, reply))

    def score(self, key: str, reply: str) -> dict[str, float]:
        """The reported scores (:attr:`metrics`) of the sample answered with ``reply``."""
        scores = self.verdicts(key, reply)
        to_float = value_to_float()
        values: dict[str, float] = {}
        for name in self.metrics:
            scorer, entry, _ = self._sources[name]
            value = scores[scorer_name(scorer)].value
            if entry is not None:
                value = value.get(entry, math.nan) if isinstance(value, dict) else math.nan
            values[name] = to_float(value)
        return values

    def aggregate(self, name: str, values: Sequence[float]) -> float:
        """The Inspect metric of score ``name`` over the samples' values."""
        metric = self._sources[name][2]
        sample_scores = [
            SampleScore(score=Score(value=value), sample_id=index)
            for index, value in enumerate(values)
        ]
        # Inspect's Metric type is a union with a deprecated list[Score] protocol; every
        # metric of ours and Inspect's current ones take SampleScores
        compute = cast(Callable[[list[SampleScore]], Any], metric)
        return metric_value(compute(sample_scores))


def _target(sample: Sample) -> str:
    target = sample.target
    return "\n".join(target) if isinstance(target, list) else str(target)


_BRIDGES: dict[str, Bridge] = {}


def bridge(benchmark: str, args: Mapping[str, Any], metrics: Sequence[str]) -> Bridge:
    """The process's :class:`Bridge` for these arguments (built once: loading and rendering
    a benchmark is not free). ``$FINMATH_DATA_DIR`` is part of the key."""
    import os

    key = repr((benchmark, sorted(args.items()), list(metrics), os.environ.get("FINMATH_DATA_DIR")))
    found = _BRIDGES.get(key)
    if found is None:
        found = _BRIDGES[key] = Bridge(benchmark, args, metrics)
    return found
