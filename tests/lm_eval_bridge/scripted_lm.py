"""A scripted lm_eval model, and the runs of one task through lm_eval and through Inspect."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
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
from openai_server import ScriptedServer, scripted_server  # noqa: F401 (the bridge tests import it here)

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
        self.calls = 0

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
            self.calls += 1
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
        # our configs only: indexing lm_eval's own thousands takes about 10 s here
        _MANAGERS[key] = TaskManager(
            include_path=str(config_dir()), include_defaults=False, metadata=metadata
        )
    return _MANAGERS[key]


def run_lm_eval(
    task: str,
    reply: Reply,
    limit: int,
    metadata: dict[str, Any] | None = None,
    **options: Any,
) -> tuple[dict[str, Any], ScriptedLM]:
    """lm_eval's own evaluator on ``task`` (first ``limit`` documents, chat template on);
    ``options`` go to ``simple_evaluate``."""
    model = ScriptedLM(reply)
    # the PoT tasks are marked unsafe_code: a test confirms it (the programs run in our sandbox)
    settings: dict[str, Any] = {
        "bootstrap_iters": 0,
        "task_manager": task_manager(metadata),
        "confirm_run_unsafe_code": True,
    }
    settings.update(options)
    results = simple_evaluate(
        model=model,
        tasks=[task],
        limit=limit,
        apply_chat_template=True,
        log_samples=True,
        **settings,
    )
    assert results is not None
    return results, model


def config_path(name: str) -> Path:
    [path] = [p for p in config_dir().glob("*/*.yaml") if f"task: {name}\n" in p.read_text()]
    return path


HIDE_TORCH = """
import importlib.machinery, sys

class _WithoutTorch(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname == "torch" or fullname.startswith("torch."):
            return None
        return super().find_spec(fullname, path, target)

sys.meta_path[sys.meta_path.index(importlib.machinery.PathFinder)] = _WithoutTorch
"""
"""Python code that makes torch not found by the import system, as where it is not
installed: ``importlib.util.find_spec("torch")`` is None and ``import torch`` fails."""

WITHOUT_TORCH = (
    HIDE_TORCH
    + "import runpy; sys.argv[0] = 'lm_eval'; runpy.run_module('lm_eval', run_name='__main__')"
)
"""``python -m lm_eval`` as where torch is not installed: the ``lm-eval`` extra installs
none, but lm_eval imports torch wherever it finds it (to seed it and to describe the
environment in its results), which costs about 560 MiB here, where torch is installed for
another extra (``dense``). Only torch is hidden; every other package, ours included, is
imported as usual, and anything that needs torch fails the run."""


PEAK_MARK = "finmath-peak-kib"

PEAK_OF = f"""
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(child.pid, 0)
print("{PEAK_MARK}", usage.ru_maxrss, file=sys.stderr)
sys.exit(os.waitstatus_to_exitcode(status) & 255)
"""
"""A small launcher: runs the command given as its arguments and prints that process's
peak resident memory (``ru_maxrss``, KiB). A process's ``ru_maxrss`` also counts the
process that started it when that one was larger (the kernel carries the starter's peak
over at ``exec``), so it is read in a launcher of about 15 MiB, not in a test process
that may have grown to 1 GB."""


def peak_kib(stderr: str) -> int:
    """The peak :data:`PEAK_OF` printed (0 if none)."""
    found = [line.split()[1] for line in stderr.splitlines() if line.startswith(PEAK_MARK)]
    return int(found[-1]) if found else 0


CHAT = "local-chat-completions"
COMPLETIONS = "local-completions"


def model_arguments(server: ScriptedServer, model: str = CHAT) -> str:
    """``--model_args`` for lm_eval's OpenAI-compatible client ``model`` against ``server``:
    the chat client sends the messages as text; the completions client (a base model's
    path) tokenizes each prompt with tiktoken's o200k_base and sends the token ids."""
    if model == CHAT:
        return (
            f"model=scripted,base_url={server.base_url},num_concurrent=1,max_retries=1,"
            "tokenized_requests=False"
        )
    base_url = server.base_url.replace("/chat/completions", "/completions")
    return (
        f"model=gpt-4o,base_url={base_url},tokenizer_backend=tiktoken,"
        "tokenized_requests=True,num_concurrent=1,max_retries=1"
    )


def lm_eval_cli(
    server: ScriptedServer,
    task: str,
    *extra: str,
    model_args: str = "",
    env: dict[str, str] | None = None,
    without_torch: bool = False,
    model: str = CHAT,
    include_path: str | None = None,
    prelude: str = "",
) -> CliRun:
    """``lm_eval run`` as a user runs it: our configs (or ``include_path``), lm_eval's
    OpenAI-compatible client ``model`` against ``server``, the chat template on for the chat
    client; ``env`` added to the environment. ``prelude``: Python run in lm_eval's process
    before lm_eval itself (to break its sandbox from inside, as an OOM killer would)."""
    args = model_arguments(server, model) + (f",{model_args}" if model_args else "")
    if prelude:
        program = prelude + (
            WITHOUT_TORCH
            if without_torch
            else "\nimport runpy, sys; sys.argv[0] = 'lm_eval'; "
            "runpy.run_module('lm_eval', run_name='__main__')"
        )
        launch = ["-c", program]
    else:
        launch = ["-c", WITHOUT_TORCH] if without_torch else ["-m", "lm_eval"]
    command = [
        sys.executable,
        "-c",
        PEAK_OF,
        sys.executable,
        *launch,
        "run",
        "--model",
        model,
        "--model_args",
        args,
        "--include_path",
        include_path or str(config_dir()),
        "--tasks",
        task,
        *(["--apply_chat_template"] if model == CHAT else []),
        *extra,
    ]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.run(
            command, stdout=out, stderr=err, text=True, env={**os.environ, **(env or {})}
        )
        out.seek(0)
        err.seek(0)
        stderr = err.read()
        # the launcher's line last; the process's own output as it wrote it
        own = "".join(
            line for line in stderr.splitlines(keepends=True) if not line.startswith(PEAK_MARK)
        )
        return CliRun(process.returncode, out.read(), own, peak_kib(stderr))


@dataclass
class CliRun:
    """A finished ``lm_eval`` process: its status, output and peak resident memory (KiB,
    its ``ru_maxrss``: see :data:`PEAK_OF`)."""

    returncode: int
    stdout: str
    stderr: str
    peak_kb: int


def logged_verdict_of(text: Any) -> dict[str, Any]:
    """A verdict as lm_eval's ``--log_samples`` wrote it in ``filtered_resps``: lm_eval
    writes a dict response as JSON text (``null`` for None), some versions as its repr."""
    if not isinstance(text, str):
        return dict(text)
    try:
        found = json.loads(text)
    except json.JSONDecodeError:
        import ast

        found = ast.literal_eval(text)
    return dict(found)
