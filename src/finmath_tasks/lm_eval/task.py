"""The lm_eval task class our configurations name (``class: !function
finmath_tasks.lm_eval.task.FinmathTask``); needs the ``lm-eval`` extra.

A configuration file is small: the lm_eval task name, this class, and a ``finmath``
mapping: the Inspect task (``task``), its arguments (``args``) and the score names
reported as lm_eval metrics (``metrics``). Everything else (documents, prompts,
generation settings, verdicts) comes from the Inspect task through
:class:`~finmath_tasks.lm_eval.bridge.Bridge`::

    task: finmath_<benchmark>_<solver>
    class: !function finmath_tasks.lm_eval.task.FinmathTask
    finmath:
      task: <benchmark>
      args: {solver: cot}
      metrics:
        - <official score>
        - tolerant

The prompt: with ``--apply_chat_template`` a chat model receives exactly the messages
Inspect sends at the sample's first model call (the system message, exemplar turns where
the task has them, the user message), through the model's own chat template (for API
models: the messages themselves). lm_eval's ``--system_instruction`` goes before our system
message, as lm_eval puts it before a task's description. Without a chat template the
messages' texts are joined by blank lines into one prompt: usable with a base model, but
not what Inspect sends. The exemplars are part of the task's messages: ``num_fewshot``
reports how many there are, and asking for another number is an error.

The documents are light (a sample's id and target); a document's messages are rendered
when lm_eval builds its request, so ``--limit`` renders only the samples it runs, and a
logged sample holds its prompt once (in ``arguments``). The verdict (answer read, program
value or error, deciding rule) is each logged sample's ``filtered_resps``, as JSON text.
"""

from __future__ import annotations

import atexit
import copy
import hashlib
import inspect
import json
import logging
import sys
from collections.abc import Callable, Mapping
from functools import partial
from types import TracebackType
from typing import Any

import datasets
from lm_eval import evaluator
from lm_eval.api.filter import Filter
from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask
from lm_eval.api.utils import maybe_delimit
from lm_eval.caching.cache import load_from_cache, save_to_cache
from lm_eval.utils import simple_parse_args_string

from finmath_tasks.errors import UsageError
from finmath_tasks.lm_eval import classes, config_files
from finmath_tasks.lm_eval.bridge import (
    Bridge,
    BridgeError,
    bridge,
    generation_kwargs,
    task_function,
)
from finmath_tasks.lm_eval.requests import (
    PromptTooLong,
    check_fits,
    context_limit,
    repeat_seeds,
    running_evaluation,
)
from finmath_tasks.lm_eval.settings import (
    SANDBOX,
    VERSION,
    SettingsError,
    for_lm_eval,
    refuse_unhonoured,
    user_settings,
)
from finmath_tasks.sandbox.resolve import SandboxUnavailableError

logger = logging.getLogger(__name__)

classes.register()

NO_SPLIT = "test"
"""The name of the documents' one split for a task that takes no ``split`` argument (its
one set of questions); every other task's is the split it evaluates (``validation``,
``dev``, ``demo``...), which lm_eval's results name as the task's ``test_split``."""


def evaluated_split(settings: Mapping[str, Any]) -> str:
    """The split a task evaluates, from its every argument (defaults filled in)."""
    split = settings.get("split")
    return str(split) if split is not None else NO_SPLIT


class FinmathTaskError(BridgeError):
    """A task of ours cannot be built as asked (a bad setting, unusable data, no sandbox):
    the message, in lm_eval's terms, is printed alone (see :func:`one_line_errors`)."""


def _one_line_hook(
    previous: Callable[[type[BaseException], BaseException, TracebackType | None], Any],
) -> Callable[[type[BaseException], BaseException, TracebackType | None], Any]:
    def hook(
        kind: type[BaseException], error: BaseException, traceback: TracebackType | None
    ) -> Any:
        if isinstance(error, FinmathTaskError):
            print(f"lm_eval: {error}", file=sys.stderr)
            return None
        return previous(kind, error, traceback)

    hook.finmath_one_line = True  # type: ignore[attr-defined]
    return hook


def one_line_errors() -> None:
    """Make an uncaught :class:`FinmathTaskError` print its one-line message (the process
    still exits with status 1); every other exception goes to the hook in place."""
    if not getattr(sys.excepthook, "finmath_one_line", False):
        sys.excepthook = _one_line_hook(sys.excepthook)


def _named(name: str, config: Mapping[str, Any], message: str) -> str:
    """``message`` led by the lm_eval task's name (in place of the benchmark's)."""
    spec = config.get("finmath")
    benchmark = spec.get("task") if isinstance(spec, Mapping) else None
    for lead in (f"{name}: ", f"lm_eval task {name}: ", f"{benchmark}: "):
        if message.startswith(lead):
            message = message[len(lead) :]
            break
    return f"{name}: {message}"


def _lm_eval_call() -> dict[str, Any]:
    """The arguments of the ``simple_evaluate`` call building this task, if any (lm_eval's
    CLI builds tasks inside it): the model's arguments, which lm_eval merges into every
    task's metadata, the ``num_fewshot`` asked for and, under lm_eval's CLI, the user's own
    ``--metadata`` (``given``; None where unknown)."""
    code = inspect.unwrap(evaluator.simple_evaluate).__code__
    found: dict[str, Any] = {"model_args": {}, "num_fewshot": None, "given": None}
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            local = frame.f_locals
            model_args = local.get("model_args")
            if isinstance(model_args, str):
                model_args = simple_parse_args_string(model_args)
            found["model_args"] = dict(model_args or {})
            found["num_fewshot"] = local.get("num_fewshot")
        elif frame.f_code.co_name == "_execute" and frame.f_globals.get("__name__", "").startswith(
            "lm_eval._cli"
        ):
            # lm_eval's CLI: its parsed arguments keep --metadata apart from --model_args
            given = getattr(frame.f_locals.get("args"), "metadata", None)
            found["given"] = dict(given) if isinstance(given, Mapping) else {}
        frame = frame.f_back  # type: ignore[assignment]
    return found


def _spec(
    config: Mapping[str, Any],
    model_args: Mapping[str, Any] | None = None,
    given: Mapping[str, Any] | None = None,
) -> tuple[str, dict[str, Any], list[str], str | None, dict[str, Any]]:
    """The Inspect task of ``config``, its arguments (the config's, then the user's
    ``--metadata`` settings that the task takes), the reported score names, the
    user's ``sandbox`` setting (None: the task's own) and every setting the user gave."""
    name = config.get("task", "?")
    spec = config.get("finmath")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("task"), str):
        raise BridgeError(f"lm_eval task {name}: its config needs finmath: {{task: <benchmark>}}")
    args = dict(spec.get("args") or {})
    metadata = config.get("metadata") or {}
    sandbox = None
    settings: dict[str, Any] = {}
    if isinstance(metadata, Mapping):
        settings = user_settings(name, metadata, model_args or {}, given)
        sandbox = settings.get(SANDBOX)
        # only the arguments this task takes: one --metadata serves a group's tasks
        takes = inspect.signature(task_function(spec["task"])).parameters
        args.update({k: v for k, v in settings.items() if k in takes and k != SANDBOX})
    metrics = list(spec.get("metrics") or [])
    if not metrics:
        raise BridgeError(f"lm_eval task {name}: finmath.metrics lists no score")
    return spec["task"], args, metrics, None if sandbox is None else str(sandbox), settings


def _takers(setting: str) -> list[str]:
    """Our lm_eval tasks that take ``setting`` (a task argument, or ``sandbox``: the
    tasks that run programs)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: None)
    names = []
    for path in config_files():
        config = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)
        spec = config.get("finmath") if isinstance(config, dict) else None
        if not isinstance(spec, dict):
            continue
        if setting == SANDBOX:
            takes = bool(config.get("unsafe_code"))
        else:
            takes = setting in inspect.signature(task_function(spec["task"])).parameters
        if takes:
            names.append(str(config["task"]))
    return sorted(names)


def check_settings_taken(tasks: Mapping[str, Any]) -> None:
    """Stop when a setting the user gave is taken by none of the selected tasks of ours
    (``--metadata '{"split": "test"}'`` with a task that takes no split): the message names
    the tasks that take it."""
    ours = [t for t in tasks.values() if isinstance(t, FinmathTask)]
    asked = sorted({key for task in ours for key in task.settings_given})
    for key in asked:
        if not any(key in task.settings_taken for task in ours):
            takers = _takers(key)
            raise SettingsError(
                f"--metadata {json.dumps(key)}: no selected task takes it "
                f"({', '.join(t.config.task for t in ours)}); "
                + (
                    f"the tasks that do: {', '.join(takers)}"
                    if takers
                    else "none of our tasks does"
                )
            )


_LEFT_OUT: dict[str, str] = {}
"""The tasks of this process whose samples the sandbox's failures left out: what the last
line of an ``lm_eval`` command says of each (see :func:`_say_left_out`)."""


def _say_left_out() -> None:
    """At the end of an ``lm_eval`` command: one last line counting the samples left out
    because the sandbox failed, and why (lm_eval ends with status 0 whatever its tasks
    met, so a reader of a log's end or of a script's output sees it here)."""
    if not _LEFT_OUT:
        return
    sys.stdout.flush()  # after lm_eval's tables, also where both streams are one
    print(f"lm_eval: not every sample was scored: {'; '.join(_LEFT_OUT.values())}", file=sys.stderr)
    sys.stderr.flush()


def _left_out(task: str, failed: Mapping[str, str], run: int) -> None:
    if not _LEFT_OUT:
        atexit.register(_say_left_out)
    first_id, first = next(iter(failed.items()))
    _LEFT_OUT[task] = (
        f"{task}: {len(failed)} of {run} sample{'s' if run != 1 else ''} left out of every "
        f"metric because the sandbox failed, not the program (first, {first_id}: {first}); "
        f"the ids are in results.json (configs.{task}.metadata.sandbox_failures): run "
        f"again to score {'them' if len(failed) != 1 else 'it'}"
    )


class _Verdicts(Filter):
    """The last step of every filter pipeline: each reply (as the user's filters left it)
    through the rest of the Inspect task and its scorers; the result is the verdict as JSON
    text, which lm_eval logs as the sample's ``filtered_resps``.

    Text, not a mapping: lm_eval rebuilds every mapping of a logged sample as a plain dict
    (an API model is marked multimodal, and its samples pass through its image hashing)
    and writes a non-list value as ``str()`` of it, which for a dict is a Python repr
    (``nan``, single quotes) that no JSON reader takes. A string passes through both
    unchanged, on every model type and path (caches, ``--predict_only``)."""

    def __init__(self, bridge: Bridge) -> None:
        super().__init__()
        self.bridge = bridge

    def apply(self, resps: Any, docs: list[dict[str, Any]]) -> list[Any]:
        out: list[Any] = []
        for resp, doc in zip(resps, docs, strict=True):
            if isinstance(resp, list | tuple):
                out.append([self._one(doc, r) for r in resp])
            else:
                out.append(self._one(doc, resp))
        return out

    def _one(self, doc: dict[str, Any], reply: Any) -> str:
        verdict = self.bridge.verdict(doc["id"], reply if isinstance(reply, str) else str(reply))
        return str(verdict)


class FinmathTask(ConfigurableTask):
    """One of our Inspect tasks as an lm_eval ``generate_until`` task."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        config = dict(config or {})
        name = str(config.get("task", "?"))
        try:
            arguments = self._arguments(name, config)
        except (BridgeError, SettingsError, UsageError, SandboxUnavailableError) as exc:
            one_line_errors()
            raise FinmathTaskError(_named(name, config, for_lm_eval(str(exc)))) from None
        super().__init__(config=arguments)
        # after lm_eval's own filters (take_first by default, or the config's pipelines)
        for ensemble in self._filters:
            ensemble.filters.append(partial(_Verdicts, self.bridge))

    def _arguments(self, name: str, config: dict[str, Any]) -> dict[str, Any]:
        """lm_eval's config for the task, from ours and the user's settings (checked)."""
        refuse_unhonoured(name, config)
        call = _lm_eval_call()
        benchmark, args, metrics, sandbox, given = _spec(config, call["model_args"], call["given"])
        self.bridge = bridge(benchmark, args, metrics, sandbox)
        inspect_task = self.bridge.task
        self._under_cli = call["given"] is not None
        """Built by lm_eval's command line (which then ends with our last line, if any)."""
        self.settings_given = dict(given)
        """The settings the user gave (every one, taken by this task or not)."""
        self.settings_taken = {k for k in given if k in args} | (
            {SANDBOX} if inspect_task.sandbox is not None else set()
        )
        """The settings this task applies."""
        metadata = dict(config.get("metadata") or {})
        version = metadata.get(VERSION)
        if version is not None and str(version) != str(inspect_task.version):
            raise SettingsError(
                f"{name}: metadata version {version!r} is not the task's: its version is the "
                f"Inspect task's ({inspect_task.version})"
            )
        # a program-writing task runs programs in the sandbox it chose: started now, so a
        # sandbox that cannot run here stops the run before any model call
        self.bridge.start_sandbox()
        runs_code = inspect_task.sandbox is not None
        if runs_code and config.get("unsafe_code") is False:
            raise SettingsError(
                f"{name}: the task runs model-written programs: unsafe_code cannot be false"
            )
        exemplars = self.bridge.exemplars()
        for asked in (config.get("num_fewshot"), call["num_fewshot"]):
            if asked is not None and asked != exemplars:
                raise SettingsError(
                    f"{name}: num_fewshot {asked} is not what the task sends: its prompt has "
                    f"{exemplars} worked example{'s' if exemplars != 1 else ''}, part of its "
                    "messages (leave --num_fewshot out, or ask for "
                    f"{exemplars})"
                )
        if self.bridge.gold_withheld():
            logger.warning(
                "%s: the %s split has no gold answers (the benchmark's authors withhold "
                "them): every sample is unscored and lm_eval shows no score for it; the "
                "replies are in the samples file (--log_samples)",
                name,
                args.get("split", "chosen"),
            )
        metadata.pop(VERSION, None)
        described = self.bridge.described()
        metadata.update(
            version=inspect_task.version,
            inspect_task=benchmark,
            inspect_args=args,
            **described,
            identity=self.bridge.identity(),
        )
        generation = generation_kwargs(inspect_task.config)
        generation.update(config.get("generation_kwargs") or {})
        return {
            "task": name,
            "task_alias": config.get("task_alias"),
            "tag": config.get("tag"),
            "output_type": "generate_until",
            "test_split": evaluated_split(described["inspect_settings"]),
            "doc_to_text": self._user_turn,
            "doc_to_target": "target",
            "target_delimiter": "",
            "fewshot_delimiter": "",
            "num_fewshot": exemplars,
            "generation_kwargs": generation,
            "repeats": config.get("repeats", 1),
            "filter_list": config.get("filter_list"),
            "unsafe_code": bool(runs_code or config.get("unsafe_code")),
            "process_results": self._process_results,
            "metric_list": [
                *(
                    {"metric": metric, "aggregation": "mean", "higher_is_better": True}
                    for metric in metrics
                ),
                # beside each score, its error classes counted over the documents
                *(
                    {
                        "metric": classes.metric_name(metric),
                        "aggregation": classes.AGGREGATION,
                        "higher_is_better": False,
                    }
                    for metric in metrics
                ),
            ],
            "metadata": metadata,
        }

    # -- documents

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """The documents: each sample's id and target (the prompt is rendered later)."""
        split = str(self.config.test_split)
        self.dataset = datasets.DatasetDict({split: datasets.Dataset.from_list(self.bridge.rows())})

    def fewshot_docs(self) -> None:
        """None: the exemplars are part of each document's messages."""
        return None

    def set_config(self, key: str, value: Any, update: bool = False) -> None:
        if key == "num_fewshot" and value != self.config.num_fewshot:
            one_line_errors()
            raise FinmathTaskError(
                f"{self.config.task}: num_fewshot {value} is not what the task sends: its "
                f"prompt has {self.config.num_fewshot} worked examples, part of its messages"
            )
        super().set_config(key, value, update)

    def _user_turn(self, doc: dict[str, Any]) -> str:
        return self.bridge.turn(doc["id"])[-1]["content"]

    def fewshot_context(
        self,
        doc: dict[str, Any],
        num_fewshot: int,
        system_instruction: str | None = None,
        apply_chat_template: bool = False,
        fewshot_as_multiturn: bool = False,
        chat_template: Callable[..., str] | None = None,
        gen_prefix: str | None = None,
    ) -> str:
        """The document's messages (see the module docstring)."""
        messages = [dict(m) for m in self.bridge.turn(doc["id"])]
        if system_instruction:
            if messages[0]["role"] == "system":
                first = messages[0]["content"]
                messages[0] = {
                    "role": "system",
                    "content": maybe_delimit(system_instruction, first, "\n\n"),
                }
            else:
                messages.insert(0, {"role": "system", "content": system_instruction})
        if apply_chat_template and chat_template is not None:
            return chat_template(messages, add_generation_prompt=True)
        return "\n\n".join(m["content"] for m in messages)

    # -- requests

    def build_all_requests(
        self,
        *,
        limit: int | None = None,
        samples: list[int] | None = None,
        rank: int = 0,
        world_size: int = 1,
        cache_requests: bool = False,
        rewrite_requests_cache: bool = False,
        system_instruction: str | None = None,
        apply_chat_template: bool = False,
        fewshot_as_multiturn: bool = False,
        chat_template: Callable[..., Any] | None = None,
        tokenizer_name: str = "",
    ) -> None:
        """lm_eval's requests, built from the current settings each run.

        Only the documents run are rendered (``--limit N``: N), with ``cache_requests`` too:
        the cache holds each rendered prompt by sample id, under a key that names what is
        evaluated (:meth:`Bridge.identity`: split, data, revision, arguments) and how it is
        rendered (chat template, system instruction, tokenizer), and grows with the
        documents later runs render. The generation settings are never cached: each
        request gets the task's current ``generation_kwargs`` (``--gen_kwargs`` merged).
        With ``repeats: k`` a document is k requests, each with its own seed where the
        model sends one (:func:`repeat_seeds`). Before any request: the settings each
        selected task takes (:func:`check_settings_taken`) and whether every prompt fits
        the model's context with the generation budget (:func:`check_fits`)."""
        running = running_evaluation()
        lm = running.lm if running is not None else None
        self.bridge.sandbox_failures.clear()  # counted per run
        self._failures_said = False
        try:
            if running is not None:
                check_settings_taken(running.tasks)
        except SettingsError as exc:
            one_line_errors()
            raise FinmathTaskError(str(exc)) from None
        if running is not None and not running.log_samples and self.bridge.gold_withheld():
            # nothing is scored and no reply would be kept: every request wasted
            one_line_errors()
            raise FinmathTaskError(
                f"{self.config.task}: the {self.config.test_split} split has no gold answers "
                "(the benchmark's authors withhold them), so nothing is scored and without "
                "--log_samples no reply is kept: run with --log_samples --output_path <dir>, "
                "or choose a split with answers"
            )
        docs = list(
            self.doc_iterator(rank=rank, limit=limit, samples=samples, world_size=world_size)
        )
        if not docs:
            raise ValueError(f"{self.config.task}: no documents to run")
        self._documents_run = len(docs)
        key = "-".join(
            [
                f"finmath-prompts-{self.config.task}-{self.bridge.identity()}",
                f"{self.config.num_fewshot}shot",
                "chat_template" if apply_chat_template else "",
                "fewshot_as_multiturn" if fewshot_as_multiturn else "",
                hashlib.sha256(json.dumps(system_instruction).encode()).hexdigest()[:16],
                f"tokenizer{tokenizer_name}",
            ]
        )
        cached: dict[str, str] = {}
        if cache_requests and not rewrite_requests_cache:
            found = load_from_cache(file_name=key, cache=True)
            cached = found if isinstance(found, dict) else {}
        contexts = []
        rendered = False
        for _, doc in docs:
            context = cached.get(doc["id"])
            if context is None:
                context = self.fewshot_context(
                    doc,
                    self.config.num_fewshot or 0,
                    system_instruction=system_instruction,
                    apply_chat_template=apply_chat_template,
                    fewshot_as_multiturn=fewshot_as_multiturn,
                    chat_template=chat_template,
                )
                cached[doc["id"]] = context
                rendered = True
            contexts.append(context)
        if cache_requests and (rendered or rewrite_requests_cache):
            save_to_cache(file_name=key, obj=cached)
        generation = dict(self.config.generation_kwargs or {})
        fits = context_limit(lm)
        if fits is not None:
            try:
                check_fits(
                    self.config.task,
                    (
                        (doc["id"], context, generation)
                        for (_, doc), context in zip(docs, contexts, strict=True)
                    ),
                    fits,
                )
            except PromptTooLong as exc:
                one_line_errors()
                raise FinmathTaskError(str(exc)) from None
        seeds = repeat_seeds(lm, int(self.config.repeats or 1))
        instances = []
        for (doc_id, doc), context in zip(docs, contexts, strict=True):
            for index, seed in enumerate(seeds):
                kwargs = copy.deepcopy(generation)
                if seed is not None:
                    kwargs["seed"] = seed
                instances.append(
                    Instance(
                        request_type="generate_until",
                        doc=doc,
                        arguments=(context, kwargs),
                        idx=index,
                        metadata=(self.config.task, doc_id, 1),
                    )
                )
        self._instances = instances

    # -- verdicts

    def dump_config(self) -> dict[str, Any]:
        """lm_eval's record of the task (its results file's ``configs.<task>``), asked for
        once the samples are scored: its metadata lists the samples the sandbox's failures
        left out (``sandbox_failures``), and the run says so once, at its end."""
        config = dict(super().dump_config())
        failed = self.bridge.sandbox_failures
        config["metadata"] = {**(config.get("metadata") or {}), "sandbox_failures": list(failed)}
        if failed and not getattr(self, "_failures_said", False):
            self._failures_said = True
            if self._under_cli:
                _left_out(self.config.task, failed, getattr(self, "_documents_run", len(failed)))
            first = next(iter(failed.values()))
            logger.warning(
                "%s: %d sample%s not scored because the sandbox failed, not the program "
                "(first: %s); %s left out of every metric (each one's sandbox_error is in "
                "the samples file, the ids in the results' sandbox_failures): run again to "
                "score %s",
                self.config.task,
                len(failed),
                "s" if len(failed) != 1 else "",
                first,
                "they are" if len(failed) != 1 else "it is",
                "them" if len(failed) != 1 else "it",
            )
        return config

    def _process_results(self, doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
        """The sample's value per score: its verdict's (the mean over its verdicts when
        ``repeats`` leaves several); a score under which it is unscored is left out, so
        lm_eval's mean, like Inspect's, is over the scored samples. Beside each score, its
        classes (:mod:`finmath_tasks.lm_eval.classes`: one per verdict scored)."""
        verdicts: list[Any] = []
        for found in results:  # one per repeat, each a verdict (or a filter's list of them)
            for text in found if isinstance(found, list) else [found]:
                verdicts.append(json.loads(text) if isinstance(text, str) else text)
        values: dict[str, Any] = {}
        for metric in self.bridge.metrics:
            found = classes.document_classes((v for v in verdicts if isinstance(v, dict)), metric)
            if found:
                values[classes.metric_name(metric)] = found
            scored = [
                float(v["scores"][metric])
                for v in verdicts
                if isinstance(v, dict)
                and v["scores"].get(metric) is not None
                # a verdict built here holds NaN where its text holds null
                and v["scores"][metric] == v["scores"][metric]
            ]
            if scored:
                values[metric] = sum(scored) / len(scored)
        return values
