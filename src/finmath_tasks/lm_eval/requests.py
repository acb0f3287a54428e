"""What the bridge checks and sets on lm_eval's requests before any is sent.

- :func:`called_model`: the model inside lm_eval's wrappers (``--use_cache``), from
  which the two checks below decide;
- :func:`context_limit`: where lm_eval would cut a prompt to fit the model's context
  (a model that counts tokens itself: the tokenized API path, ``hf``, ``vllm``), how it
  counts a prompt's tokens, its context and whether the user allowed cutting;
  :func:`check_fits` stops with one line when a prompt plus the generation budget does
  not fit (lm_eval would otherwise cut the prompt's start and send the rest);
- :func:`repeat_seeds`: with ``repeats: k``, one seed per repeat where the model sends
  one (API models and vLLM), so k requests can differ;
- :func:`running_evaluation`: the model and the tasks of the ``evaluate`` call building
  our requests (lm_eval passes a task neither).

Needs the ``lm-eval`` extra.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lm_eval import evaluator


@dataclass
class RunningEvaluation:
    """The ``evaluate`` call in progress: its model, its tasks (by name) and whether it
    keeps each sample's reply (``log_samples``: ``--log_samples``, or ``--predict_only``)."""

    lm: Any
    tasks: dict[str, Any]
    log_samples: bool = True


def running_evaluation() -> RunningEvaluation | None:
    """The ``evaluate`` call on the stack (lm_eval builds every task's requests inside
    it, after all tasks are built and before any request is sent), or None."""
    import inspect

    code = inspect.unwrap(evaluator.evaluate).__code__
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            local = frame.f_locals
            return RunningEvaluation(
                local.get("lm"),
                dict(local.get("eval_tasks") or {}),
                bool(local.get("log_samples", True)),
            )
        frame = frame.f_back  # type: ignore[assignment]
    return None


@dataclass
class ContextLimit:
    """How a model fits a prompt in its context: ``count`` gives a prompt's tokens,
    ``length`` is what lm_eval fits prompt and budget in, ``budget`` the model's default
    generation budget, ``truncate_allowed`` the user's explicit consent to cut,
    ``option`` the model argument that sets the context."""

    count: Callable[[str], int]
    length: int
    budget: int
    truncate_allowed: bool
    option: str = "max_length"
    allow: str | None = "--model_args truncate=True"
    """How the user allows cutting (None: this model has no such setting)."""


def _forwards(lm: Any) -> bool:
    """Does ``lm``'s class pass unknown attributes on (``__getattr__``), as a wrapper does?"""
    return any("__getattr__" in vars(c) for c in type(lm).__mro__ if c is not object)


def called_model(lm: Any) -> Any:
    """The model lm_eval will call through ``lm``: ``lm`` itself, or the model inside the
    wrappers lm_eval puts around it (``--use_cache``'s ``CachingLM`` holds it as ``lm``
    and forwards every other attribute to it, so the wrapper answers ``tok_encode`` and
    ``max_length`` without being a model that counts tokens). A wrapper is an object
    that is no model of lm_eval's (an ``LM``), or whose class forwards attributes, and
    that holds one model or wrapper in its own attributes; unwrapped until none is left."""
    from lm_eval.api.model import LM

    seen: set[int] = set()
    while lm is not None and id(lm) not in seen:
        seen.add(id(lm))
        if isinstance(lm, LM) and not _forwards(lm):
            return lm
        own = getattr(lm, "__dict__", None)
        held = [v for v in (own or {}).values() if v is not lm]
        # a model of lm_eval's first; else another wrapper (one that forwards attributes)
        inner = [v for v in held if isinstance(v, LM)] or [v for v in held if _forwards(v)]
        if len(inner) != 1:
            return lm
        lm = inner[0]
    return lm


def _is_api(lm: Any) -> bool:
    return any(c.__name__ == "TemplateAPI" for c in type(lm).__mro__)


def context_limit(lm: Any) -> ContextLimit | None:
    """Where lm_eval left-cuts a prompt to fit ``lm``'s context, or None (the model sends
    text that its server counts, as chat APIs and ``tokenized_requests=False`` do).
    Decided from the model lm_eval calls (:func:`called_model`), whatever wraps it."""
    lm = called_model(lm)
    if lm is None:
        return None
    if _is_api(lm):
        if not getattr(lm, "tokenized_requests", False) or lm.tokenizer is None:
            return None
        add_bos = bool(getattr(lm, "add_bos_token", False))

        def count_api(text: str) -> int:
            return len(lm.tok_encode(text, add_special_tokens=add_bos))

        # lm_eval keeps one token of max_length for generation (its max_length is one less)
        return ContextLimit(
            count_api, int(lm.max_length), int(lm._max_gen_toks), bool(lm._truncate)
        )
    encode = getattr(lm, "tok_encode", None)
    try:
        length = getattr(lm, "max_length", None)
    except Exception:  # a model whose context cannot be read: nothing to check against
        return None
    if not callable(encode) or not isinstance(length, int):
        return None

    def count(text: str) -> int:
        return len(encode(text))

    budget = getattr(lm, "max_gen_toks", 256)
    # hf's ``truncation`` is the user's consent to cut; other models take none
    consent = hasattr(lm, "truncation")
    return ContextLimit(
        count,
        length,
        int(budget) if isinstance(budget, int) else 256,
        bool(getattr(lm, "truncation", False)),
        allow="--model_args truncation=True" if consent else None,
    )


class PromptTooLong(ValueError):
    """A prompt plus its generation budget exceeds the model's context."""


def check_fits(
    task: str,
    prompts: Iterable[tuple[str, str, Mapping[str, Any]]],
    limit: ContextLimit,
) -> None:
    """Stop when any ``(sample id, prompt, gen_kwargs)`` does not fit ``limit`` (unless the
    user allowed cutting): one line naming the task, the longest prompt's tokens, the
    budget, the context and the options that change them."""
    worst: tuple[int, int, str, int] | None = None
    too_long = 0
    for key, prompt, gen_kwargs in prompts:
        budget = int(gen_kwargs.get("max_gen_toks", limit.budget))
        tokens = limit.count(prompt)
        if tokens + budget > limit.length:
            too_long += 1
            if worst is None or tokens + budget > worst[0] + worst[1]:
                worst = (tokens, budget, key, tokens + budget - limit.length)
    if worst is None or limit.truncate_allowed:
        return
    tokens, budget, key, over = worst
    others = f" ({too_long} prompts in all)" if too_long > 1 else ""
    raise PromptTooLong(
        f"{task}: sample {key}'s prompt is {tokens:,} tokens and the generation budget "
        f"{budget:,} (max_gen_toks), {over:,} more than the model's context of "
        f"{limit.length:,} tokens{others}: lm_eval would cut the prompt's start; give the "
        f"model's context with --model_args {limit.option}=<tokens> (lm_eval counts one "
        "less), or a smaller budget with --gen_kwargs max_gen_toks=<tokens>"
        + (f", or allow cutting with {limit.allow}" if limit.allow else "")
    )


def repeat_seeds(lm: Any, repeats: int) -> list[int | None]:
    """One seed per repeat: the model's own seed plus the repeat's index where the model
    sends a seed with each request (API models, vLLM), so that a server honouring seeds
    samples k replies; None where it sends none (``hf`` samples from torch's generator,
    which moves on between requests), and for one repeat (the model's own setting).
    Read from the model lm_eval calls (:func:`called_model`), whatever wraps it."""
    lm = called_model(lm)
    if repeats <= 1 or lm is None:
        return [None] * max(repeats, 1)
    if _is_api(lm):
        base = getattr(lm, "_seed", None)
    elif type(lm).__module__.endswith("vllm_causallms"):
        base = (getattr(lm, "model_args", None) or {}).get("seed")
    else:
        base = None
    if not isinstance(base, int):
        return [None] * repeats
    return [base + index for index in range(repeats)]
