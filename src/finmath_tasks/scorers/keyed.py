"""One scalar scorer per score key, each one Inspect can rebuild from a log.

A scorer whose ``Score.value`` is a dict with per-key metrics gets, in Inspect,
metric names ``<metric registry name>_<entry>`` (``finmath_tasks/flag_counts_unreadable``):
the package prefix stays for our own metrics and Inspect's summary cuts them. A
scorer with a scalar value and a list of metrics takes the other path: a metric is
named by its unqualified name and the entries of a dict-valued metric by their own
keys (``accuracy``, ``ci90_lower``, ``category=SSSD``).

A task's scoring is a :class:`Scoring` (a multi-key inner scorer and each key's
metrics) made by a builder registered here under the task's name with
:func:`scoring`, from plain arguments (strings, numbers, booleans). The task attaches
:func:`keyed_scorers`: one scalar scorer per key, named by the key (the official
comparison's name, ``tolerant``, ...), then, where the data has samples without a gold
answer, :data:`UNSCORED_KEY` (:mod:`finmath_tasks.scorers.unscored`). Each of them is
made by a scorer factory registered at import under the key's name, whose arguments
are the builder's name and its arguments (``task="<task>", profile="tolerant", ...``):
the log records them, so ``inspect score LOG`` (and ``inspect score LOG --scorer
<key> -S task=<task> -S <argument>=<value>``) rebuilds the same scorer in a fresh
process. Inspect records a scorer by its name without the package prefix and looks
that name up again; the factories are registered under both names
(``finmath_tasks/<key>`` and ``<key>``; :mod:`finmath_tasks._inspect_private`). Where
a key's name is also one of Inspect's own scorers (``exact``), the unprefixed name
keeps building Inspect's scorer unless it is given a ``task``.

Inspect runs a sample's scorers in order: the first key's scorer runs the inner scorer
once and keeps its dict score for the sample, the others read it, the last drops it
(the scorers a task attaches share that record; scorers Inspect rebuilds one by one
share one per builder and arguments). The first key's score carries the inner score's whole
metadata; the others carry only the metadata ``shared`` names (what their metrics
read), so the log does not hold the same metadata per key. The inner score's error
classes (``error_class``: ``{key: class}``, :mod:`finmath_tasks.scorers.error_classes`)
are split the same way: each key's score carries its own class as a string, so a
reader of one score (Inspect View, ``finmath report``, lm_eval's samples) finds the class
of that score without knowing the task's other keys. The causes (``error_cause``: ``{key:
cause}``, ``error_evidence``: ``{key: evidence}``, :mod:`finmath_tasks.scorers.causes`) are
split with them: a wrong key's score carries its cause (a string) and evidence (a dict).

Errors: a bad model output (empty, enormous, hostile, an odd number, a judge's
nonsense) is the inner scorer's to handle, as a wrong or unscored sample with the
reason. An exception raised by the inner scorer is a bug in our own code: it is not
caught here but reaches Inspect, which records it as that sample's ``error`` (with
the traceback) and counts it against ``fail_on_error``; every task sets
``continue_on_fail=True``, so the other samples still run and are scored, and the
log ends ``error`` unless the user accepts some errors (``--fail-on-error 0.05``,
``--no-fail-on-error``). ``--retry-on-error`` and ``inspect eval-retry`` rerun such
samples as for any Inspect task.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from inspect_ai.scorer import Metric, Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState
from inspect_ai.util import registry_info

from finmath_tasks._inspect_private import register_scorer_name
from finmath_tasks.errors import UsageError
from finmath_tasks.scorers.causes import ERROR_CAUSE_KEY, ERROR_EVIDENCE_KEY
from finmath_tasks.scorers.error_classes import ERROR_CLASS_KEY
from finmath_tasks.scorers.unscored import UNSCORED_KEY, unscored, unscored_value


@dataclass(frozen=True)
class Scoring:
    """A task's scoring: a scorer whose value is a dict holding every key (NaN where a
    key does not apply; a scalar NaN, ``Score.unscored``, leaves the sample unscored
    under every key) and each key's metrics, the official key first."""

    inner: Scorer
    metrics: Mapping[str, Sequence[Metric]]
    shared: Sequence[str] = ()


ScoringBuilder = Callable[..., Scoring]
B = TypeVar("B", bound=ScoringBuilder)

_BUILDERS: dict[str, ScoringBuilder] = {}
_DECLARED: dict[str, set[str]] = {}
_FACTORIES: dict[str, Callable[..., Scorer]] = {}


def scoring(name: str, keys: Iterable[str]) -> Callable[[B], B]:
    """Register a task's scoring builder under ``name`` (at import, module level).

    ``keys``: every score key the builder may give, whatever its arguments: a scorer
    factory is registered under each, so that a fresh process rebuilds them by name.
    """
    declared = list(keys)

    def register(builder: B) -> B:
        _BUILDERS[name] = builder
        _DECLARED[name] = set(declared)
        for key in [*declared, UNSCORED_KEY]:
            _key_factory(key)
        return builder

    return register


class _Runner:
    """The inner scorer of one scoring and its per-sample record, shared by its keys."""

    def __init__(self, name: str, built: Scoring) -> None:
        keys = list(built.metrics)
        if not keys:
            raise ValueError(f"scoring {name!r} gave no score keys")
        undeclared = sorted(set(keys) - _DECLARED[name])
        if undeclared:
            raise ValueError(
                f"scoring {name!r} gave keys it does not declare: {', '.join(undeclared)}"
            )
        self.name = name
        self.built = built
        self.keys = [*keys, UNSCORED_KEY]
        self.cache: dict[str, Score] = {}
        self.attached: list[str] = []

    def metrics(self, key: str) -> list[Metric]:
        if key == UNSCORED_KEY:
            return [unscored()]
        return list(self.built.metrics[key])

    def attach(self, key: str) -> None:
        if key not in self.keys:
            raise ValueError(
                f"scorer {key!r}: scoring {self.name!r} with these arguments has no score "
                f"{key!r} (its scores: {', '.join(self.keys)})"
            )
        if key not in self.attached:
            self.attached.append(key)
            self.attached.sort(key=self.keys.index)

    async def whole(self, state: TaskState, target: Target, key: str) -> Score:
        uuid = state.uuid
        result = self.cache.get(uuid)
        if result is None:
            result = await self.built.inner(state, target)
            if result is None:
                result = Score.unscored(reason="no_score", explanation="the scorer gave no score")
            self.cache[uuid] = result
        if key == self.attached[-1]:
            self.cache.pop(uuid, None)
        return result


_RUNNERS: dict[str, _Runner] = {}
MAX_RUNNERS = 64
"""Scorings kept for sharing between the keys created after them (a bounded record)."""
_OWN: ContextVar[tuple[str, _Runner] | None] = ContextVar("finmath_keyed_runner", default=None)
"""The runner :func:`keyed_scorers` makes for the scorers of one task (their own)."""


def _ident(task: str, options: Mapping[str, Any]) -> str:
    if task not in _BUILDERS:
        known = ", ".join(sorted(_BUILDERS)) or "none"
        raise ValueError(f"no scoring named {task!r} (known: {known})")
    try:
        return json.dumps([task, dict(options)], sort_keys=True)
    except TypeError as e:
        raise ValueError(
            f"scoring {task!r}: its arguments must be plain values (strings, numbers, "
            f"booleans, lists): {e}"
        ) from e


def _runner(task: str, options: Mapping[str, Any]) -> _Runner:
    """The runner of a scoring: the one :func:`keyed_scorers` is making scorers with, else
    the one shared by the keys created separately with the same arguments (Inspect
    rebuilding a log's scorers one by one)."""
    ident = _ident(task, options)
    own = _OWN.get()
    if own is not None and own[0] == ident:
        return own[1]
    runner = _RUNNERS.get(ident)
    if runner is None:
        if len(_RUNNERS) >= MAX_RUNNERS:
            _RUNNERS.clear()  # scorers already made keep their own runner
        runner = _RUNNERS[ident] = _Runner(task, _BUILDERS[task](**options))
    return runner


def _key_factory(key: str) -> Callable[..., Scorer]:
    """The scorer factory of ``key``, registered (once) under the key's name."""
    existing = _FACTORIES.get(key)
    if existing is not None:
        return existing

    def keyed(task: str, **options: Any) -> Scorer:
        runner = _runner(task, options)
        runner.attach(key)
        first = key == runner.keys[0]
        shared = runner.built.shared

        async def score(state: TaskState, target: Target) -> Score:
            whole = await runner.whole(state, target, key)
            if key == UNSCORED_KEY:
                return Score(value=unscored_value(whole), reason=whole.reason)
            return key_score(whole, key, first=first, shared=shared)

        return score

    keyed.__name__ = keyed.__qualname__ = key
    decorated = scorer(metrics=[], name=key)(keyed)

    def create(task: str | None = None, **options: Any) -> Scorer:
        if task is None:
            # `--scorer <key>` without `-S task=`, or a log written before the scorers
            # recorded their arguments: the missing argument is named first
            raise UsageError(
                f"scorer {key!r}: missing argument task (-S task=<task>, one of "
                f"{', '.join(tasks_scoring(key))}) and the task's scoring arguments; "
                "a log that records no scoring arguments (finmath-tasks versions before "
                f"the scorers Inspect can rebuild) is re-scored with --scorer {key} "
                "-S task=<task>, or run again"
            )
        instance = decorated(task=task, **options)
        # the key's metrics depend on the scoring's arguments: set on this instance
        # (a fresh dict per instance), as Inspect sets a task's metrics on its scorers
        registry_info(instance).metadata["metrics"] = _runner(task, options).metrics(key)
        return instance

    create.__name__ = create.__qualname__ = key
    register_scorer_name(
        create, key, qualified=registry_info(decorated).name, metadata={"metrics": []}
    )
    _FACTORIES[key] = create
    return create


def tasks_scoring(key: str) -> list[str]:
    """The scorings that may give ``key`` (every scoring for the unscored count)."""
    return sorted(name for name, keys in _DECLARED.items() if key == UNSCORED_KEY or key in keys)


def keyed_scorers(task: str, *, count_unscored: bool, **options: Any) -> list[Scorer]:
    """The scorers a task attaches: one scalar scorer per key of the scoring registered
    as ``task`` with these arguments (official key first), then, with
    ``count_unscored`` (the data has samples without a gold answer), :data:`UNSCORED_KEY`.

    ``options`` are the builder's arguments: plain values, recorded in the log.
    """
    ident = _ident(task, options)
    runner = _Runner(task, _BUILDERS[task](**options))  # this task's own
    keys = runner.keys if count_unscored else runner.keys[:-1]
    token = _OWN.set((ident, runner))
    try:
        return [_key_factory(key)(task=task, **options) for key in keys]
    finally:
        _OWN.reset(token)


def key_score(whole: Score, key: str, first: bool, shared: Sequence[str] = ()) -> Score:
    """The scalar score of ``key`` from a dict-valued score."""
    value = whole.value
    number: Any = value.get(key, math.nan) if isinstance(value, dict) else math.nan
    if isinstance(number, bool):
        number = float(number)
    metadata = dict(whole.metadata or {})
    classes = metadata.pop(ERROR_CLASS_KEY, None)
    causes = metadata.pop(ERROR_CAUSE_KEY, None)
    evidences = metadata.pop(ERROR_EVIDENCE_KEY, None)
    if not first:
        metadata = {k: metadata[k] for k in shared if k in metadata}
    # each key's score carries its own error class (a string; none when correct)
    own = classes.get(key) if isinstance(classes, dict) else None
    wrong = not (isinstance(number, int | float) and number >= 1)
    if isinstance(own, str) and wrong:
        metadata[ERROR_CLASS_KEY] = own
        # and its cause with the evidence that decided it (scorers.causes)
        cause = causes.get(key) if isinstance(causes, dict) else None
        if isinstance(cause, str):
            metadata[ERROR_CAUSE_KEY] = cause
            found = evidences.get(key) if isinstance(evidences, dict) else None
            if isinstance(found, dict):
                metadata[ERROR_EVIDENCE_KEY] = found
    return Score(
        value=number,
        reason=whole.reason,
        answer=whole.answer,
        explanation=whole.explanation,
        metadata=metadata or None,
    )
