"""A scripted lm_eval model, and the runs of one task through lm_eval and through Inspect."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

# lm_eval 0.4.13 fills its model registry lazily, only while the registry is empty:
# registering ours first would hide its own models (local-chat-completions) from get_model
import lm_eval.models  # noqa: F401
from lm_eval import simple_evaluate
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model
from lm_eval.tasks import TaskManager

from finmath_tasks.lm_eval import config_dir

Reply = Callable[[dict[str, Any]], str]
"""The scripted reply to an lm_eval document (its id, messages and target)."""


@register_model("finmath-scripted")
class ScriptedLM(LM):
    """Answers each request with ``reply(doc)``; records what it was sent.

    Under ``apply_chat_template`` lm_eval hands the model the messages through
    :meth:`apply_chat_template`: they are kept as JSON, as API models send them."""

    def __init__(self, reply: Reply | None = None, **kwargs: Any) -> None:
        super().__init__()
        self.reply = reply or (lambda doc: "")
        self.sent: dict[str, list[dict[str, str]]] = {}
        self.gen_kwargs: dict[str, dict[str, Any]] = {}

    @property
    def tokenizer_name(self) -> str:
        return "finmath-scripted"

    def apply_chat_template(
        self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> str:
        return json.dumps(chat_history)

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        out = []
        for request in requests:
            context, gen_kwargs = request.args
            doc = request.doc
            self.sent[doc["id"]] = json.loads(context)
            self.gen_kwargs[doc["id"]] = dict(gen_kwargs)
            out.append(self.reply(doc))
        return out

    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[Any]:
        raise NotImplementedError

    def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[Any]:
        raise NotImplementedError


_MANAGERS: dict[str, TaskManager] = {}


def task_manager(metadata: dict[str, Any] | None = None) -> TaskManager:
    """lm_eval's task index with our configurations (built once per ``metadata``: indexing
    lm_eval's own thousands of configurations takes about 10 s here)."""
    key = json.dumps(metadata, sort_keys=True)
    if key not in _MANAGERS:
        _MANAGERS[key] = TaskManager(include_path=str(config_dir()), metadata=metadata)
    return _MANAGERS[key]


def run_lm_eval(
    task: str, reply: Reply, limit: int, metadata: dict[str, Any] | None = None
) -> tuple[dict[str, Any], ScriptedLM]:
    """lm_eval's own evaluator on ``task`` (first ``limit`` documents, chat template on)."""
    model = ScriptedLM(reply)
    results = simple_evaluate(
        model=model,
        tasks=[task],
        limit=limit,
        apply_chat_template=True,
        log_samples=True,
        task_manager=task_manager(metadata),
        bootstrap_iters=0,
    )
    assert results is not None
    return results, model


def config_path(name: str) -> Path:
    [path] = [
        p for p in config_dir().glob("*/lm_eval/*.yaml") if f"task: {name}\n" in p.read_text()
    ]
    return path
