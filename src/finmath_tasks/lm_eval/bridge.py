"""An Inspect task seen from outside an Inspect eval: its prompts, and its verdict on a reply.

:class:`Bridge` builds one of our Inspect tasks (its ``@task`` function, with the given
arguments) and serves what lm-evaluation-harness needs, through the task's own pieces:

- :meth:`Bridge.rows`: one light row per sample (its id and target); :meth:`Bridge.turn`
  renders a sample's messages (system, exemplar turns, user) when it is asked for, by
  running the task's solver chain up to its first model call (so retrieval, haystacks and
  prompt renderers are the task's own, and ``--limit 2`` renders two samples);
- :meth:`Bridge.verdict`: a reply goes through the rest of the same chain (a program runs
  in the sandbox the task chose, or the user's ``sandbox`` setting), then through the task's scorers: the values per score
  name are what Inspect's log holds for that sample, with the extracted answer, the
  program's value or error and the rule that decided; an error while scoring one sample
  scores it as failed, with the reason;
- every reported score is aggregated by a mean (Inspect's ``accuracy``), checked when the
  bridge is built, so lm_eval's own ``mean`` (and its standard error) applies.

A solver that needs more than one model call (critics, calculators, a judge, a model
extractor, knowledge written by the model) stops with :class:`BridgeError`: those run
under Inspect only. Nothing here imports lm_eval.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import hashlib
import importlib
import inspect
import json
import logging
import math
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

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
from finmath_tasks.lm_eval.settings import SANDBOX, metadata_setting
from finmath_tasks.loading import PROVENANCE_KEY
from finmath_tasks.sandbox.client import PROGRAM_RESULT_KEY, SandboxFailure
from finmath_tasks.sandbox.resolve import check_sandbox, resolve_sandbox
from finmath_tasks.scorers.causes import ERROR_CAUSE_KEY, ERROR_EVIDENCE_KEY
from finmath_tasks.scorers.error_classes import ERROR_CLASS_KEY
from finmath_tasks.solvers.first_call import first_call, sample_state

logger = logging.getLogger(__name__)

TASKS_PACKAGE = "finmath_tasks.tasks"

SANDBOX_TASK_NAME = "lm_eval"
"""The task name our sandboxes see (Inspect gives them the task's name)."""


class BridgeError(RuntimeError):
    """The Inspect task cannot run this way (it needs Inspect itself); the message says why."""


T = TypeVar("T")
P = ParamSpec("P")


def keep_excepthook(function: Callable[P, T]) -> Callable[P, T]:
    """Run ``function`` and put back the process's exception hook: building a model or a
    task makes Inspect install its own (made for ``inspect eval``: it ends the process
    silently on Ctrl-C), which is not ours to set in lm_eval's process."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        hook = sys.excepthook
        try:
            return function(*args, **kwargs)
        finally:
            sys.excepthook = hook

    return wrapper


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
    try:
        await env_type.task_init(SANDBOX_TASK_NAME, spec.config)
    except Exception as exc:
        said = str(exc)
        raise BridgeError(
            said if spec.type in said else f"the {spec.type} sandbox cannot start here: {said}"
        ) from exc
    _STARTED[key] = (env_type, spec)
    return env_type


@asynccontextmanager
async def _sample_sandbox(spec: SandboxEnvironmentSpec | None) -> Any:
    """The sample's sandboxes, as Inspect's ``sandbox()`` returns them inside an eval."""
    if spec is None:
        yield None
        return
    env_type = await _task_sandbox(spec)
    try:
        environments = await env_type.sample_init(SANDBOX_TASK_NAME, spec.config, {})
    except Exception as exc:
        raise SandboxFailure(
            f"the {spec.type} sandbox failed to start: {type(exc).__name__}: {exc}"
        ) from exc
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
    metric, else its first entry."""
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


MEAN_PROBE = (1.0, 0.0, 0.0, 1.0, 0.5, 0.25)
"""Values a score's Inspect metric is checked on: a mean gives their average."""


def is_a_mean(metric: Metric) -> bool:
    """Does ``metric`` aggregate a score's values by their plain mean (``accuracy``,
    ``mean``)? Checked on :data:`MEAN_PROBE`."""
    compute = cast(Callable[[list[SampleScore]], Any], metric)
    scores = [SampleScore(score=Score(value=v), sample_id=i) for i, v in enumerate(MEAN_PROBE)]
    try:
        value = metric_value(compute(scores))
    except Exception:
        return False
    return math.isclose(value, sum(MEAN_PROBE) / len(MEAN_PROBE))


NO_ANSWER = "no answer"
"""How our scorers' ``answer`` begins when nothing was read from the reply."""


class Verdict(dict[str, Any]):
    """What one reply was scored as: ``scores`` (score name -> value, NaN where the sample
    is unscored), ``answer`` (what was read from the reply; None, with ``no_answer`` saying
    why, where nothing was), ``rules`` (score name -> the rule that decided), ``error_classes``
    (score name -> why its answer is wrong, :mod:`finmath_tasks.scorers.error_classes`;
    absent where every score is correct), ``program`` (PoT: the program's value or error), ``explanation``
    and, when scoring raised, ``error`` (the sample then scores 0 under every score) or
    ``sandbox_error`` (the sandbox itself failed: the sample is left out of every score).

    Its text (what lm_eval writes as the sample's ``filtered_resps``) is JSON, with
    ``null`` for an unscored value or no answer."""

    def __str__(self) -> str:
        return json.dumps(_json_ready(self), ensure_ascii=False, default=str)

    __repr__ = __str__


def _json_ready(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    return value


class Bridge:
    """One Inspect task (``benchmark`` with ``args``) for lm_eval; ``metrics`` are the score
    names it reports there (each must be one of the task's scorers)."""

    RENDERED = 8
    """Rendered turns kept (lm_eval asks for a sample's messages once or twice in a row)."""

    @keep_excepthook
    def __init__(
        self,
        benchmark: str,
        args: Mapping[str, Any],
        metrics: Sequence[str],
        sandbox: str | None = None,
    ) -> None:
        """``sandbox``: the user's ``sandbox`` setting (a name of
        ``sandbox.resolve.resolve_sandbox``), for a task that runs programs; None: auto."""
        setting = functools.partial(metadata_setting, SANDBOX)
        if sandbox is not None:
            try:
                check_sandbox(sandbox, setting)
            except ValueError as exc:
                raise BridgeError(f"{benchmark}: {exc}") from None
        self.benchmark = benchmark
        self.args = dict(args)
        self.task: Task = task_function(benchmark)(**self.args)
        if self.task.sandbox is not None:
            # where its programs run, as `inspect eval --sandbox` would choose it: a choice
            # that cannot run here (auto finding nothing) stops now, before any request
            self.task.sandbox = resolve_sandbox(sandbox or "auto", setting)
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
        not_means = [m for m in self.metrics if not is_a_mean(self._sources[m][2])]
        if not_means:
            raise BridgeError(
                f"{benchmark}: the Inspect metric of {', '.join(not_means)} is not a mean of "
                "the samples' values: lm_eval's mean would report another number"
            )
        self.sandbox_failures: dict[str, str] = {}
        """Samples left unscored because the sandbox failed (id -> why), this process."""
        self._rendered: OrderedDict[str, Turn] = OrderedDict()
        self.last_state: TaskState | None = None
        """The last scored sample's final state (its messages, its store: a program's run)."""

    # -- what is evaluated

    def identity(self) -> str:
        """A digest of what this bridge evaluates: the benchmark, its arguments, the task's
        version, the data folder the task reads by default (``$FINMATH_DATA_DIR``), the
        data it read (its provenance: the files and their contents' fingerprint, so a file
        edited in place is other data) and the samples' ids and targets. Two bridges with
        the same digest send the same prompts."""
        ids = hashlib.sha256()
        for key, sample in self.samples.items():
            ids.update(f"{key}\x00{_target(sample)}\x01".encode())
        described = json.dumps(
            [
                self.benchmark,
                sorted(self.args.items()),
                str(self.task.version),
                os.environ.get("FINMATH_DATA_DIR"),
                (self.task.metadata or {}).get(PROVENANCE_KEY),
                ids.hexdigest(),
            ],
            default=str,
            sort_keys=True,
        )
        return hashlib.sha256(described.encode()).hexdigest()[:16]

    def gold_withheld(self) -> bool:
        """No sample has a gold answer (a split whose answers the authors keep)."""
        return bool(self.samples) and not any(_target(s) for s in self.samples.values())

    def described(self) -> dict[str, Any]:
        """What a results file records of this bridge: the task's every argument (its
        defaults filled in), where its data came from (source, files, fingerprint: what
        the Inspect log's task metadata holds) and the sandbox its programs run in."""
        bound = inspect.signature(task_function(self.benchmark)).bind_partial(**self.args)
        bound.apply_defaults()
        spec = self.task.sandbox
        sandbox = None
        if spec is not None:
            config = spec.config
            if hasattr(config, "model_dump"):
                config = config.model_dump()
            sandbox = {"type": spec.type, "config": config}
        return {
            "inspect_settings": _json_ready(dict(bound.arguments)),
            "data": (self.task.metadata or {}).get(PROVENANCE_KEY),
            "sandbox": sandbox,
        }

    def start_sandbox(self) -> None:
        """Start the sandbox the task chose (as Inspect does when a task starts): a sandbox
        that cannot run here stops the run before any model call."""
        if self.task.sandbox is not None:
            _LOOP.run(_task_sandbox(self.task.sandbox))

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

    @keep_excepthook
    def render(self, keys: Sequence[str] | None = None) -> list[Turn]:
        """The first turn of each sample (all, in the dataset's order, by default)."""
        return _LOOP.run(self._render(list(self.samples) if keys is None else keys))

    def turn(self, key: str) -> Turn:
        """The messages of sample ``key``'s first model call (the last few are kept)."""
        if key not in self.samples:
            raise BridgeError(f"{self.benchmark}: no sample {key!r}")
        found = self._rendered.get(key)
        if found is None:
            [found] = self.render([key])
            self._rendered[key] = found
            while len(self._rendered) > self.RENDERED:
                self._rendered.popitem(last=False)
        return found

    def exemplars(self) -> int:
        """The worked examples the task sends before the question: the assistant turns of
        the first sample's messages (the same for every sample of our tasks)."""
        first = self.turn(next(iter(self.samples)))
        return sum(1 for m in first if m["role"] == "assistant")

    def rows(self) -> list[dict[str, str]]:
        """lm_eval's documents, light: each sample's id and its target as text. The
        messages are rendered when lm_eval asks for a document's prompt (:meth:`turn`)."""
        return [{"id": key, "target": _target(s)} for key, s in self.samples.items()]

    def documents(self) -> list[dict[str, str]]:
        """Every sample with its messages rendered (JSON) and its user turn: for checks."""
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
        self.last_state = None
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

    @keep_excepthook
    def verdicts(self, key: str, reply: str) -> dict[str, Score]:
        """Every score of the task for the sample ``key`` answered with ``reply``."""
        if key not in self.samples:
            raise BridgeError(f"{self.benchmark}: no sample {key!r}")
        return _LOOP.run(self._score(key, reply))

    def values(self, scores: Mapping[str, Score]) -> dict[str, float]:
        """The reported scores' values (NaN: unscored) among a sample's ``scores``."""
        to_float = value_to_float()
        values: dict[str, float] = {}
        for name in self.metrics:
            scorer, entry, _ = self._sources[name]
            value = scores[scorer_name(scorer)].value
            if entry is not None:
                value = value.get(entry, math.nan) if isinstance(value, dict) else math.nan
            values[name] = to_float(value)
        return values

    def score(self, key: str, reply: str) -> dict[str, float]:
        """The reported scores (:attr:`metrics`) of the sample answered with ``reply``."""
        return self.values(self.verdicts(key, reply))

    def verdict(self, key: str, reply: str) -> Verdict:
        """The sample answered with ``reply``, scored, with what decided (see
        :data:`Verdict`). An error while scoring (a scorer's bug, a sandbox that failed on
        this program) scores the sample 0 with the reason, and the run goes on: our
        scorers let such an exception through (under Inspect it is the sample's error,
        counted by ``fail_on_error``), and lm_eval has no ``fail_on_error``, so this is
        the boundary that catches it; a :class:`BridgeError` (the configuration cannot
        run under lm_eval) stops it. The sandbox's own failure (:class:`SandboxFailure`: a
        worker that died or did not start) is no verdict on the reply: the sample is left
        out of every score (NaN) and counted in :attr:`sandbox_failures`."""
        try:
            scores = self.verdicts(key, reply)
        except BridgeError:
            raise
        except SandboxFailure as exc:
            self.sandbox_failures[key] = str(exc)
            logger.warning("%s: sample %s is not scored: %s", self.benchmark, key, exc)
            return Verdict(scores=dict.fromkeys(self.metrics, math.nan), sandbox_error=str(exc))
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            logger.warning("%s: sample %s could not be scored: %s", self.benchmark, key, reason)
            return Verdict(scores=dict.fromkeys(self.metrics, 0.0), error=reason)
        verdict = Verdict(scores=self.values(scores))
        first = scores[scorer_name(self._sources[self.metrics[0]][0])]
        # keyed scorers record what they read once, on the first score of the sample
        main = next((s for s in scores.values() if s.metadata), first)
        answer = first.answer if first.answer is not None else main.answer
        if isinstance(answer, str) and answer.startswith(NO_ANSWER):
            # what Inspect's samples list shows in place of an answer: null here, and why
            verdict["answer"], verdict["no_answer"] = None, answer[len(NO_ANSWER) :].lstrip(": ")
        else:
            verdict["answer"] = answer
        rules: dict[str, Any] = {}
        for name in self.metrics:
            score = scores[scorer_name(self._sources[name][0])]
            rule = _rule(score, name) if score.metadata else _rule(main, name)
            if rule is not None:
                rules[name] = rule
        if rules:
            verdict["rules"] = rules
        classes = _error_classes(scores, self.metrics, self._sources)
        if classes:
            verdict["error_classes"] = classes
        causes = _error_classes(scores, self.metrics, self._sources, ERROR_CAUSE_KEY)
        if causes:  # why each wrong score is wrong, and the evidence (scorers.causes)
            verdict["error_causes"] = causes
            verdict["error_evidence"] = _error_classes(
                scores, self.metrics, self._sources, ERROR_EVIDENCE_KEY
            )
        program = _program(self.last_state, main)
        if program is not None:
            verdict["program"] = program
        verdict["explanation"] = first.explanation or main.explanation
        return verdict

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


def _error_classes(
    scores: Mapping[str, Score],
    names: Sequence[str],
    sources: Mapping[str, Any],
    key: str = ERROR_CLASS_KEY,
) -> dict[str, Any]:
    """Score name -> the error class its scorer gave a wrong answer (none when correct);
    with ``key`` ``error_cause`` its cause, ``error_evidence`` the cause's evidence."""
    found: dict[str, Any] = {}
    for name in names:
        scorer, entry, _ = sources[name]
        metadata = scores[scorer_name(scorer)].metadata or {}
        cls = metadata.get(key)
        if isinstance(cls, dict) and (key != ERROR_EVIDENCE_KEY or "why" not in cls):
            cls = cls.get(entry or name)  # a scorer of several scores: one per score
        if isinstance(cls, str) or (key == ERROR_EVIDENCE_KEY and isinstance(cls, dict)):
            found[name] = cls
    return found


def _rule(score: Score, name: str) -> Any:
    """The rule that decided score ``name``, as the scorer recorded it in its metadata."""
    metadata = score.metadata or {}
    rules = metadata.get("rules")
    if isinstance(rules, dict) and name in rules:
        return rules[name]
    for key in (f"{name}_rule", "rule", "matched", "method"):
        if key in metadata:
            return metadata[key]
    return None


def _program(state: TaskState | None, score: Score) -> dict[str, Any] | None:
    """The program the sample's reply gave, run: what it returned, or its error."""
    metadata = score.metadata or {}
    record = state.store.get(PROGRAM_RESULT_KEY) if state is not None else None
    if not isinstance(record, dict):
        record = metadata.get("program")
    if isinstance(record, dict):
        return {k: record.get(k) for k in ("ok", "value", "error") if k in record}
    if "executed_value" in metadata or "execution_error" in metadata:
        # a program in a benchmark's own domain language that its scorer ran
        return {"value": metadata.get("executed_value"), "error": metadata.get("execution_error")}
    return None


def _target(sample: Sample) -> str:
    target = sample.target
    return "\n".join(target) if isinstance(target, list) else str(target)


_BRIDGES: dict[str, Bridge] = {}
_READ: dict[str, tuple[Any, ...]] = {}
"""Each kept bridge's local data files as they were when it read them (see
:func:`data_files_state`)."""


def data_files_state(task: Task) -> tuple[Any, ...]:
    """The local data files ``task`` read (its provenance's ``files`` under its ``path``),
    each with its size and modification time now: a file edited in place changes it.
    Empty for data that cannot change under the same arguments (files fetched at a pinned
    commit and checked against their blob ids, a Hub revision, packaged files)."""
    provenance = (task.metadata or {}).get(PROVENANCE_KEY)
    if not isinstance(provenance, dict) or provenance.get("source") != "local":
        return ()
    folder = Path(str(provenance.get("path") or provenance.get("location") or "."))
    state: list[Any] = []
    for name in provenance.get("files") or {}:
        path = Path(name) if Path(name).is_absolute() else folder / name
        try:
            stat = path.stat()
            state.append((str(path), stat.st_size, stat.st_mtime_ns))
        except OSError:  # a content that is no file of its own, or one removed since
            state.append((str(path), None, None))
    return tuple(state)


def bridge(
    benchmark: str, args: Mapping[str, Any], metrics: Sequence[str], sandbox: str | None = None
) -> Bridge:
    """The process's :class:`Bridge` for these arguments (built once: loading and rendering
    a benchmark is not free). ``$FINMATH_DATA_DIR`` is part of the key; a kept bridge whose
    local data files changed since it read them (edited in place) is built again."""
    key = repr(
        (
            benchmark,
            sorted(args.items()),
            list(metrics),
            sandbox,
            os.environ.get("FINMATH_DATA_DIR"),
        )
    )
    found = _BRIDGES.get(key)
    if found is None or data_files_state(found.task) != _READ.get(key):
        found = _BRIDGES[key] = Bridge(benchmark, args, metrics, sandbox)
        _READ[key] = data_files_state(found.task)
    return found
