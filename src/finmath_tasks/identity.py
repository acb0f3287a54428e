"""A run's identity: everything its log records that can change its scores.

Two logs with equal identities measured the same thing. The report keys its rows, its
repeats and its pairs by it, and the grid decides with it whether a run is already done
(:func:`run_identity` reads a log; :func:`identity_of` builds the same parts from what a
run is given before it starts).

The identity is made of named parts, each a canonical text:

- ``task`` and ``version``;
- ``arg.<name>`` for every parameter of the task, its default filled in where the log
  does not name it (nothing hidden: ``max_prompt_tokens`` is a part like ``solver``);
- ``data``: the fingerprint of the data files read (the task's metadata
  :data:`finmath_tasks.loading.PROVENANCE_KEY`), ``data.origin`` for a fresh variant
  (the fingerprint of the data it was instantiated from) and ``data.variant`` (its name and
  seed as its provenance records them), and ``content.<key>`` for other content
  a task records the hash of (:data:`CONTENT_KEYS`);
- ``samples`` (the ids evaluated) and ``epochs`` (with ``epochs_reducer`` when set);
- ``model`` (with ``model_base_url`` and ``model_args`` when set) and ``role.<name>`` for
  every model role (one normalisation, :func:`role_text`, of a role whatever its form: a
  planned run's roles are first resolved to the models Inspect will run,
  :func:`resolve_role`, so their base URLs and settings are named as the log names them);
- ``generation.<field>`` for every generation setting the run set, and ``eval.<limit>``
  for each per-sample limit set (messages, tokens, time...); ``solver`` when the eval
  replaced the task's solver.

What cannot change a score is left out, each with its reason, in one place:
:data:`NOT_IDENTITY`.
"""

from __future__ import annotations

import hashlib
import inspect as pyinspect
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inspect_ai.log import EvalLog
from inspect_ai.model import GenerateConfig, Model, get_model
from pydantic import ValidationError

from finmath_tasks.loading import PROVENANCE_KEY

TASK_PREFIX = "finmath_tasks/"


@dataclass(frozen=True)
class NotIdentity:
    """A recorded setting left out of the identity: why it cannot change a score, and
    (``stands_for``) the part that records what it read: the setting is left out only
    when the log records that part (an older log without it keeps the setting)."""

    reason: str
    stands_for: str = ""


NOT_IDENTITY: Mapping[str, NotIdentity] = {
    "arg.data_dir": NotIdentity(
        "where the data files were read from; the files' contents are the data fingerprint",
        stands_for="data",
    ),
    "arg.revision": NotIdentity(
        "which copy of the data (a Hub revision) was read; its contents are the data fingerprint",
        stands_for="data",
    ),
    "arg.knowledge_bank": NotIdentity(
        "the path of the knowledge bank file; its contents are the bank's hash the task records",
        stands_for="content.knowledge_bank_hash",
    ),
    "arg.sandbox": NotIdentity(
        "where model-written programs run (their isolation), not what they compute; a task "
        "argument of older logs only (now Inspect's --sandbox)"
    ),
    "arg.order": NotIdentity(
        "the order the samples are sent in, not their answers (a parameter of older logs)"
    ),
    "arg.in_flight": NotIdentity(
        "how many requests were in flight when the prompt order was chosen: only cache "
        "reads change (a parameter of older logs)"
    ),
    "model_args.custom_outputs": NotIdentity(
        "the scripted replies of Inspect's mockllm test model: they stand for the replies a "
        "real model would sample, so runs with other scripts are repeats, not other settings"
    ),
    **{
        f"generation.{name}": NotIdentity(reason)
        for name, reason in {
            "max_retries": "retries of a failed request: the answer is the model's either way",
            "timeout": "how long a request may take before it is retried",
            "attempt_timeout": "how long one attempt may take before it is retried",
            "stream_idle_timeout": "how long a stream may be silent before it is retried",
            "max_connections": "how many requests run at once",
            "adaptive_connections": "how the number of requests at once adapts",
            "cache": "whether replies are cached: a cached reply is the same reply",
            "batch": "whether requests are sent through a provider's batch API",
            "extra_headers": "HTTP headers of the request (routing, tracing)",
        }.items()
    },
}
"""Identity part -> why the recorded setting cannot change a score (the only settings a
log records that are not part of a run's identity)."""

CONTENT_KEYS = ("knowledge_bank_hash",)
"""Task metadata keys holding the hash of content a task reads besides its data files
(the identity part ``content.<key>``)."""

EVAL_LIMITS = (
    "message_limit", "token_limit", "token_limit_type", "turn_limit", "time_limit",
    "working_limit", "cost_limit",
)  # fmt: skip
"""Per-sample limits of an eval: a sample stopped by one is scored as it stands."""


def registered_tasks() -> dict[str, Callable[..., Any]]:
    """Registry name (``finmath_tasks/<name>``) -> the task function, for every task the
    package registers with Inspect."""
    import finmath_tasks._registry as registry

    return {
        TASK_PREFIX + obj.__name__: obj
        for obj in vars(registry).values()
        if callable(obj) and getattr(obj, "__module__", "").startswith("finmath_tasks.tasks.")
    }


def task_defaults(task: str) -> dict[str, Any]:
    """Parameter -> default of the registered task ``task`` (empty for another task)."""
    function = registered_tasks().get(task) or registered_tasks().get(TASK_PREFIX + task)
    if function is None:
        return {}
    try:
        parameters = pyinspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in parameters if p.default is not pyinspect.Parameter.empty}


def _text(value: Any) -> str:
    """A canonical text of a value (lists as lists, mappings with sorted keys)."""
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


@dataclass(frozen=True)
class Identity:
    """The named parts of a run's identity (see the module's documentation)."""

    parts: tuple[tuple[str, str], ...]

    def get(self, name: str) -> str | None:
        return dict(self.parts).get(name)

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.parts]

    @property
    def key(self) -> str:
        """A short id of the whole identity (equal identities, equal keys)."""
        return hashlib.sha256(_text(self.parts).encode()).hexdigest()[:16]

    def args(self) -> dict[str, Any]:
        """The task arguments of the identity (``arg.<name>`` parts), decoded."""
        return {name[4:]: json.loads(text) for name, text in self.parts if name.startswith("arg.")}

    def matches(self, other: Identity, unknown: Iterable[str] = ()) -> bool:
        """Whether ``other`` is the same run: every part equal, except that a part named
        in ``unknown`` and absent here is not compared (a run planned before it starts may
        not know its sample ids when Inspect draws them at random)."""
        mine, theirs = dict(self.parts), dict(other.parts)
        skip = {n for n in unknown if n not in mine}
        return all(mine.get(n) == theirs.get(n) for n in {*mine, *theirs} - skip)


def identity_of(
    *,
    task: str,
    version: Any,
    args: Mapping[str, Any],
    metadata: Mapping[str, Any] | None,
    sample_ids: Sequence[Any] | None,
    epochs: int,
    model: str,
    roles: Mapping[str, Any] | None = None,
    generation: Mapping[str, Any] | None = None,
    eval_config: Mapping[str, Any] | None = None,
    model_base_url: str | None = None,
    model_args: Mapping[str, Any] | None = None,
    solver: str | None = None,
) -> Identity:
    """The identity of a run from its parts (:func:`run_identity` reads them from a log).

    ``sample_ids`` None: not known (a run planned with a random sample); ``metadata``: the
    task's metadata (where the data fingerprint is).
    """
    meta = dict(metadata or {})
    parts: dict[str, Any] = {"task": task, "version": version, "model": model}
    for name, value in {**task_defaults(task), **dict(args)}.items():
        parts[f"arg.{name}"] = value
    provenance = meta.get(PROVENANCE_KEY)
    if isinstance(provenance, Mapping) and provenance.get("fingerprint"):
        parts["data"] = str(provenance["fingerprint"])
        variant = provenance.get("variant")
        if isinstance(variant, Mapping) and variant.get("original_fingerprint"):
            # the data a fresh variant was drawn from (what it may be compared with)
            parts["data.origin"] = str(variant["original_fingerprint"])
        if isinstance(variant, Mapping) and isinstance(variant.get("seed"), int):
            # the variant the questions are, as the data says (its task arguments may not)
            parts["data.variant"] = {"name": str(variant.get("name")), "seed": variant["seed"]}
    for key in CONTENT_KEYS:
        if meta.get(key):
            parts[f"content.{key}"] = meta[key]
    if sample_ids is not None:
        parts["samples"] = sorted(str(i) for i in sample_ids)
    parts["epochs"] = int(epochs or 1)
    for name, value in (eval_config or {}).items():
        if value is not None and (name in EVAL_LIMITS or name == "epochs_reducer"):
            parts[f"eval.{name}"] = value
    if model_base_url:
        parts["model_base_url"] = model_base_url
    shown_args = {
        k: v for k, v in (model_args or {}).items() if f"model_args.{k}" not in NOT_IDENTITY
    }
    if shown_args:
        parts["model_args"] = shown_args
    for role, played in (roles or {}).items():
        parts[f"role.{role}"] = played
    for name, value in (generation or {}).items():
        if value is not None:
            parts[f"generation.{name}"] = value
    if solver:
        parts["solver"] = solver
    kept = {
        name: value
        for name, value in parts.items()
        if name not in NOT_IDENTITY
        or (NOT_IDENTITY[name].stands_for and NOT_IDENTITY[name].stands_for not in parts)
    }
    return Identity(tuple(sorted((name, _text(value)) for name, value in kept.items())))


def role_text(config: Any) -> Any:
    """What a model role records that can change a score: its model, and its generation
    settings, base URL and model arguments when set.

    The one normalisation of a model role, whatever form it takes: a log's record of it
    (Inspect's ``ModelConfig``), the ``Model`` Inspect builds from ``--model-role`` (see
    :func:`resolve_role`), a list of either (several models for one role; a list of one
    is its model, as Inspect records it). A name alone (a ``str``) is taken as it is: it
    leaves out the base URL, generation settings and arguments Inspect resolves it to, so
    a planned run resolves its roles first (:func:`resolve_role`).
    """
    if isinstance(config, (list, tuple)):
        texts = [role_text(c) for c in config]
        return texts[0] if len(texts) == 1 else texts
    if isinstance(config, str):
        return config
    if isinstance(config, Model):
        model: Any = str(config)
        base_url = config.api.base_url
        args = {
            k: v
            for k, v in config.model_args.items()
            if k != "api_key" and not k.startswith("aws_") and not _is_iterator(v)
        }  # what Inspect writes of a role's arguments into the log
    else:
        model = getattr(config, "model", None) or str(config)
        base_url = getattr(config, "base_url", None)
        args = dict(getattr(config, "args", None) or {})
    extra: dict[str, Any] = {}
    generate = getattr(config, "config", None)
    if generate is not None:
        extra.update(
            {
                k: v
                for k, v in generate.model_dump(exclude_none=True).items()
                if f"generation.{k}" not in NOT_IDENTITY
            }
        )
    if base_url:
        extra["base_url"] = base_url
    role_args = {k: v for k, v in args.items() if f"model_args.{k}" not in NOT_IDENTITY}
    if role_args:
        extra["args"] = role_args
    return {"model": model, **extra} if extra else model


def _is_iterator(value: Any) -> bool:
    return pyinspect.isgenerator(value) or isinstance(value, Iterator)


RoleValue = str | Mapping[str, Any] | Sequence[str | Mapping[str, Any]]
"""A model role as a user gives it (``--model-role``): a model name, a role config (a
YAML/JSON mapping of ``model``, optional ``base_url`` and ``model_args``, and generation
settings) or a list of these (several models for one role)."""


def role_name(value: Any) -> str:
    """The model name(s) of a model role, whatever its form (a name, a role config, a
    log's record, a list of them: names joined by commas)."""
    if isinstance(value, (list, tuple)):
        return ",".join(role_name(v) for v in value)
    if isinstance(value, Mapping):
        return str(value.get("model", value))
    if isinstance(value, str):
        return value
    return str(getattr(value, "model", None) or value)


def resolve_role(role: str, value: RoleValue | Model) -> Model | list[Model]:
    """The model(s) Inspect builds for model role ``role`` from ``value`` (as its
    ``--model-role`` does: each role its own instance; a list of one is its model), so
    that a run planned before it starts names the role as its log will (base URL
    resolved from the provider's environment, generation settings, model arguments).

    Raises ``ValueError`` (naming the role) for a value that is not a model."""
    if isinstance(value, Model):
        return value
    if isinstance(value, str):
        return get_model(value, memoize=False)
    if isinstance(value, Mapping):
        params = dict(value)
        name = params.pop("model", None)
        if not isinstance(name, str) or not name:
            raise ValueError(f"model role {role}: a role config needs a model name ({value})")
        model_args = params.pop("model_args", None) or {}
        base_url = params.pop("base_url", None)
        if not isinstance(model_args, Mapping):
            raise ValueError(f"model role {role}: model_args must be a mapping ({value})")
        try:
            config = GenerateConfig(**params)
        except ValidationError as e:
            raise ValueError(f"model role {role}: {' '.join(str(e).split())}") from e
        return get_model(name, config=config, base_url=base_url, memoize=False, **dict(model_args))
    if isinstance(value, Sequence) and value:
        models = [resolve_role(role, v) for v in value if v != ""]
        flat = [m for m in models if isinstance(m, Model)]
        if len(flat) != len(models) or not flat:
            raise ValueError(f"model role {role}: a list of models may not nest ({value})")
        return flat if len(flat) > 1 else flat[0]
    raise ValueError(f"model role {role}: not a model name, role config or list ({value!r})")


def run_identity(log: EvalLog) -> Identity:
    """The identity of the run a log records (its header is enough)."""
    spec = log.eval
    config = log.plan.config if log.plan else None
    return identity_of(
        task=spec.task_registry_name or spec.task,
        version=spec.task_version,
        args=dict(spec.task_args or {}),
        metadata=spec.metadata,
        sample_ids=list(spec.dataset.sample_ids or []),
        epochs=int(spec.config.epochs or 1),
        model=spec.model,
        roles={str(role): role_text(c) for role, c in (spec.model_roles or {}).items()},
        generation=config.model_dump(exclude_none=True) if config is not None else {},
        eval_config=spec.config.model_dump(exclude_none=True),
        model_base_url=spec.model_base_url,
        model_args=spec.model_args,
        solver=_solver(spec.solver, spec.solver_args),
    )


def _solver(name: str | None, args: Mapping[str, Any] | None) -> str | None:
    if not name:
        return None
    return name + (f" {_text(dict(args))}" if args else "")


def difference(a: Identity, b: Identity) -> list[str]:
    """The names of the parts in which two identities differ (in name order)."""
    first, second = dict(a.parts), dict(b.parts)
    return sorted(n for n in {*first, *second} if first.get(n) != second.get(n))


def differing(identities: Iterable[Identity]) -> list[str]:
    """The names of the parts whose values are not all equal among ``identities``."""
    found = list(identities)
    names = sorted({n for i in found for n in i.names})
    return [n for n in names if len({i.get(n) for i in found}) > 1]


def part_text(identity: Identity, name: str) -> str:
    """One part as a row label names it: ``max_prompt_tokens=1000``, ``temperature=0.5``,
    ``data 93b433f8``, ``40 samples #a1b2c3``."""
    text = identity.get(name)
    if text is None:
        return f"{_short_name(name)} unset"
    value = json.loads(text)
    if name == "samples":
        digest = hashlib.sha256(text.encode()).hexdigest()[:6]
        return f"{len(value)} samples #{digest}"
    if name == "data":
        return f"data {str(value)[:8]}"
    if name == "data.origin":
        return f"drawn from data {str(value)[:8]}"
    if name == "data.variant" and isinstance(value, dict):
        return f"data of variant {value.get('name')} seed {value.get('seed')}"
    if name.startswith("content."):
        return f"{name[8:]} {str(value)[:8]}"
    if name in ("task", "model"):
        return str(value)
    if name == "version":
        return f"version {value}"
    if isinstance(value, dict):
        shown = ",".join(f"{k}={v}" for k, v in value.items())
        return f"{_short_name(name)}={shown}"
    return f"{_short_name(name)}={value}"


def _short_name(name: str) -> str:
    return name.split(".", 1)[1] if "." in name else name


def describe(identity: Identity, names: Iterable[str]) -> str:
    """The parts ``names`` of ``identity`` as a label (a run's difference from others)."""
    return " ".join(part_text(identity, n) for n in names)
