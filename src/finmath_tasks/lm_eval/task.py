"""The lm_eval task class our configurations name (``class: !function
finmath_tasks.lm_eval.task.FinmathTask``); needs the ``lm-eval`` extra.

A configuration file is small: the lm_eval task name, this class, and a ``finmath``
mapping: the Inspect task (``task``), its arguments (``args``) and the score names
reported as lm_eval metrics (``metrics``). Everything else (documents, prompts,
generation settings, verdicts, aggregation) comes from the Inspect task through
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
not what Inspect sends. The documents carry no lm_eval few-shot examples: exemplars are
part of the task's messages (``--num_fewshot`` does not apply).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import datasets
from lm_eval.api.task import ConfigurableTask
from lm_eval.api.utils import maybe_delimit

from finmath_tasks.lm_eval.bridge import (
    USER_SETTABLE,
    Bridge,
    BridgeError,
    bridge,
    generation_kwargs,
    task_function,
)

SPLIT = "test"
"""The one split of our documents in lm_eval: the Inspect task's split (``args``) is in it."""


def _spec(config: Mapping[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
    name = config.get("task", "?")
    spec = config.get("finmath")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("task"), str):
        raise BridgeError(f"lm_eval task {name}: its config needs finmath: {{task: <benchmark>}}")
    args = dict(spec.get("args") or {})
    metadata = config.get("metadata") or {}
    if isinstance(metadata, Mapping):
        # only the arguments this task takes: one --metadata serves a group's tasks
        takes = inspect.signature(task_function(spec["task"])).parameters
        args.update(
            {k: metadata[k] for k in USER_SETTABLE if k in takes and metadata.get(k) is not None}
        )
    metrics = list(spec.get("metrics") or [])
    if not metrics:
        raise BridgeError(f"lm_eval task {name}: finmath.metrics lists no score")
    return spec["task"], args, metrics


def _documents(task: Bridge, **_: Any) -> datasets.DatasetDict:
    return datasets.DatasetDict({SPLIT: datasets.Dataset.from_list(task.documents())})


def _aggregation(task: Bridge, name: str) -> Callable[[list[float]], float]:
    def aggregate(values: list[float]) -> float:
        return task.aggregate(name, values)

    aggregate.__name__ = f"inspect_{name}"
    return aggregate


class FinmathTask(ConfigurableTask):
    """One of our Inspect tasks as an lm_eval ``generate_until`` task."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        config = dict(config or {})
        benchmark, args, metrics = _spec(config)
        self.bridge = bridge(benchmark, args, metrics)
        inspect_task = self.bridge.task
        metadata = dict(config.get("metadata") or {})
        metadata.update(
            version=inspect_task.version,
            inspect_task=benchmark,
            inspect_args=args,
        )
        super().__init__(
            config={
                "task": config["task"],
                "tag": config.get("tag"),
                "output_type": "generate_until",
                "custom_dataset": partial(_documents, self.bridge),
                "test_split": SPLIT,
                "doc_to_text": "prompt",
                "doc_to_target": "target",
                "target_delimiter": "",
                "fewshot_delimiter": "",
                "num_fewshot": 0,
                "generation_kwargs": generation_kwargs(inspect_task.config),
                "process_results": self._process_results,
                "metric_list": [
                    {
                        "metric": name,
                        "aggregation": _aggregation(self.bridge, name),
                        "higher_is_better": True,
                    }
                    for name in metrics
                ],
                "metadata": metadata,
            }
        )

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
        messages = json.loads(doc["messages"])
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

    def _process_results(self, doc: dict[str, Any], results: list[str]) -> dict[str, float]:
        reply = results[0] if results else ""
        return self.bridge.score(doc["id"], reply if isinstance(reply, str) else "")
