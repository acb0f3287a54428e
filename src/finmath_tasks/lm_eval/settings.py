"""What an lm_eval user may set on our tasks, and our messages in lm_eval's terms.

lm_eval hands a task one ``metadata`` mapping: the config's own ``metadata``, the user's
``--metadata`` and, merged in by lm_eval, every ``--model_args`` entry (``revision=main``
of an ``hf`` model arrives beside ``--metadata '{"revision": ...}'``). The bridge reads
only :data:`USER_SETTABLE` from it, a model argument never on its own (see
:func:`user_settings`), and refuses any other key.
Nothing here imports lm_eval.
"""

from __future__ import annotations

import ast
import json
import logging
import re
from collections.abc import Mapping
from typing import Any

logger = logging.getLogger(__name__)

USER_SETTABLE = (
    "split",
    "data_dir",
    "revision",
    "variant",
    "variant_seed",
    SANDBOX := "sandbox",
)
"""What a user may set through lm_eval's ``--metadata`` (a JSON object), e.g.
``--metadata '{"sandbox": "bwrap", "data_dir": "/data"}'``; the others are the config's.
``split``, ``data_dir``, ``revision``, ``variant`` and ``variant_seed`` (a fresh variant:
``{"variant": "fresh", "variant_seed": 1}``) are task arguments; a task that takes no
such argument ignores it (one ``--metadata`` serves a group's tasks), but a setting that
no selected task takes is an error. ``sandbox`` (auto, docker, bwrap, inspect_docker,
local: ``sandbox.resolve.resolve_sandbox``) is where a task that runs programs runs them,
in place of the sandbox the task declares (what ``inspect eval --sandbox`` does); a task
that runs none ignores it."""

LM_EVAL_METADATA = ("config_source",)
"""Entries lm_eval itself puts in a task's metadata."""

VERSION = "version"
"""The metadata entry lm_eval reports as the task's version: the Inspect task's."""

HONOURED = (
    "generation_kwargs",
    "repeats",
    "filter_list",
    "num_fewshot",
    "unsafe_code",
    "task_alias",
    "tag",
    "metadata",
)
"""Config keys an including config (or a group's entry) may set on our tasks:
``generation_kwargs`` (merged over the task's), ``repeats`` (each reply scored, the
sample's value their mean), ``filter_list`` (each pipeline's output is what the task
scores), ``num_fewshot`` (must be the number of exemplars the task sends),
``unsafe_code``, ``task_alias``, ``tag``, ``metadata`` (see :func:`user_settings`)."""

OURS = ("task", "class", "finmath")
"""The keys of our own configs (the task's name, its class, the Inspect task it runs)."""

SET_BY_LM_EVAL = {"output_type": "generate_until"}
"""Keys lm_eval may pass with a value we accept only as it is."""


class SettingsError(ValueError):
    """A user's setting the bridge cannot honour; the message says which and why."""


MODEL_ARGUMENT_TOO = ("revision",)
"""Settings that are model arguments as well (an ``hf`` model's ``revision``): given in
``--model_args`` alone they are the model's; the others given there are an error."""


def user_settings(
    task: str,
    metadata: Mapping[str, Any],
    model_args: Mapping[str, Any],
    given: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The settings a user gave ``task`` through ``--metadata``.

    ``metadata`` is what lm_eval passes (config, ``--metadata`` and ``--model_args``
    merged); ``model_args`` the model's arguments lm_eval merged in; ``given`` the user's
    own ``--metadata`` where it is known (lm_eval's CLI keeps it), else None. A key in
    both ``--metadata`` and ``--model_args`` is the task's setting with ``--metadata``'s
    value (the run says so); a key in ``--model_args`` alone is the model's, except a
    setting no model takes (``split``, ``data_dir``, ``sandbox``), which is an error
    saying to give it with ``--metadata``. Where ``given`` is unknown, a key whose value
    equals the model argument's is taken for the model's. Any other key outside
    :data:`USER_SETTABLE` is an error listing the settable ones."""
    settings: dict[str, Any] = {}
    unknown = []
    misplaced = []
    for key, value in metadata.items():
        if key in LM_EVAL_METADATA or key == VERSION:
            continue
        if key in model_args:
            asked = key in given if given is not None else model_args[key] != value
            if not asked:
                if key in USER_SETTABLE and key not in MODEL_ARGUMENT_TOO:
                    misplaced.append(key)
                continue  # lm_eval copied the model's argument into the task's metadata
            if key in USER_SETTABLE:
                logger.warning(
                    "%s: %s is %s, from --metadata (the model argument %s=%s is the model's)",
                    task,
                    key,
                    json.dumps(value),
                    key,
                    model_args[key],
                )
        if key in USER_SETTABLE:
            if value is not None:
                settings[key] = value
        else:
            unknown.append(key)
    if misplaced:
        shown = ", ".join(misplaced)
        raise SettingsError(
            f"{task}: --model_args {shown}: "
            f"{'is a task setting' if len(misplaced) == 1 else 'are task settings'}, not "
            "model arguments (a model argument never sets a task): give "
            f"{'it' if len(misplaced) == 1 else 'them'} with --metadata "
            f"'{json.dumps({k: metadata[k] for k in misplaced})}'"
        )
    if unknown:
        raise SettingsError(
            f"{task}: --metadata {', '.join(repr(k) for k in sorted(unknown))} "
            f"{'is not a setting' if len(unknown) == 1 else 'are not settings'} of our "
            f"tasks; the settings are {', '.join(USER_SETTABLE)}, e.g. --metadata "
            '\'{"split": "dev", "data_dir": "/data", "sandbox": "bwrap"}\' (the rest is '
            "fixed by the task's config)"
        )
    return settings


def unhonoured_keys(config: Mapping[str, Any]) -> list[str]:
    """The keys of a task config the bridge would not apply (see :data:`HONOURED`)."""
    refused = []
    for key, value in config.items():
        if key in OURS or key in HONOURED:
            continue
        if key in SET_BY_LM_EVAL and value == SET_BY_LM_EVAL[key]:
            continue
        refused.append(key)
    return refused


def refuse_unhonoured(task: str, config: Mapping[str, Any]) -> None:
    """Stop on config keys the bridge would otherwise drop without a word."""
    refused = unhonoured_keys(config)
    if refused:
        raise SettingsError(
            f"{task}: the config sets {', '.join(sorted(refused))}, which our tasks do not "
            "take (their documents, prompts and scores are the Inspect task's); a config may "
            f"set {', '.join(HONOURED)}"
        )


_T_SETTING = re.compile(
    # a bare value ends before a colon that ends it ("-T data_dir=/x: no such directory")
    r"-T (\w+)(?:=('[^']*'|\"[^\"]*\"|<[^>]*>|[^\s,;)]+?(?=:?(?:[\s,;)]|$))))?"
)


def _metadata_setting(match: re.Match[str]) -> str:
    name, raw = match.group(1), match.group(2)
    if name not in USER_SETTABLE:
        shown = f"{name}: {raw}" if raw is not None else name
        return f"finmath.args {{{shown}}} in the task's config"
    if raw is None:
        return f"--metadata '{{\"{name}\": ...}}'"
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return f"--metadata '{{\"{name}\": {json.dumps(value)}}}'"


def metadata_setting(name: str, value: Any) -> str:
    """How a user gives ``name`` the value ``value`` under lm_eval."""
    return f"--metadata '{json.dumps({name: value})}'"


_PLACEHOLDER_RANGE = re.compile(r"-T (\w+)=([A-Z]) with \2 from (-?\d+) to (-?\d+)")
"""``-T variant_seed=N with N from 1 to 2147483647``: a placeholder and its integer range."""


def _range_example(match: re.Match[str]) -> str:
    name, low, high = match.group(1), match.group(3), match.group(4)
    return f"-T {name}={low} (an integer from {low} to {high})"


def for_lm_eval(message: str) -> str:
    """A task's message in lm_eval's terms: ``-T split='x'`` (Inspect's task argument)
    becomes ``--metadata '{"split": "x"}'``; an argument no user sets under lm_eval is
    named as the config's ``finmath.args``; the message is made one line. A placeholder
    with its integer range (``-T variant_seed=N with N from 1 to 9``) becomes a setting
    that can be given as written, the range's first value (``--metadata
    '{"variant_seed": 1}' (an integer from 1 to 9)``), not the text ``"N"``."""
    text = _PLACEHOLDER_RANGE.sub(_range_example, message)
    text = _T_SETTING.sub(_metadata_setting, text)
    return " ".join(line.strip() for line in text.splitlines() if line.strip())
