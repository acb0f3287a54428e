"""``finmath grid`` takes every option of ``inspect eval-set``, read by Inspect's own parser.

The grid declares only its own options (``cli/main.py``). Every other option on its
command line is Inspect's: :func:`split` sets them apart by the option names of Inspect's
``eval-set`` click command, and :func:`read` has that command parse them (its types,
callbacks and defaults, its environment variables) and run its own conversion into
``eval_set`` keyword arguments (the generation config, epochs, limits, retries, ...),
with ``eval_set`` itself not called (``_inspect_private.eval_set_call``). The grid then
replaces the arguments it decides itself (:data:`GRID_DECIDES`) and passes the rest on
unchanged, so an option Inspect adds reaches the grid's runs with no change here.

A plan (``--plan``) records the Inspect options as they were typed; each worker reads
them again the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import click
from click.core import ParameterSource

from finmath_tasks._inspect_private import PrerequisiteError, eval_set_call, eval_set_command
from finmath_tasks.cli.selection import SELECTIONS

GRID_DECIDES = (
    "tasks", "model", "log_dir", "task_args", "model_roles", "sandbox", "limit",
    "sample_shuffle", "eval_set_id",
)  # fmt: skip
"""``eval_set`` arguments the grid gives itself: its tasks, models and log directory;
``-T`` (and ``--task-config``) merged into each run's arguments; the roles the tasks are
built with; ``--sandbox`` only for the runs that execute programs; ``--limit`` spread
over the benchmark's strata; the eval-set id of a plan. Each is read from Inspect's
parse first."""

REFUSED = {
    "json_output": "--json: finmath grid prints its own summary of the grid's runs",
    "detach": "--detach: run finmath grid in the background with your shell (nohup, &)",
    "model_spec": "--model-spec: give each model of the grid with --model (repeatable)",
}
"""Options of ``inspect eval-set`` that change how the command itself runs, not the runs."""


class InspectOptionError(ValueError):
    """An option ``inspect eval-set`` refuses (or the grid cannot take): one line."""


@lru_cache(maxsize=1)
def _arity() -> dict[str, str]:
    """Each option string of ``inspect eval-set`` -> ``flag``, ``value`` or ``optional``
    (a value only when the next word is not an option: ``--batch``, ``--batch 1000``)."""
    found: dict[str, str] = {}
    for param in eval_set_command.params:
        if not isinstance(param, click.Option):
            continue
        if param.is_flag or param.count:
            kind = "flag"
        elif getattr(param, "_flag_needs_value", False):
            kind = "optional"
        else:
            kind = "value"
        for opt in param.opts:
            found[opt] = kind
        for opt in param.secondary_opts:
            found[opt] = "flag"
    return found


def inspect_option_names() -> list[str]:
    """The option strings of ``inspect eval-set`` a grid takes (for ``finmath grid
    --help``): all but those of :data:`REFUSED`."""
    refused = {
        opt
        for param in eval_set_command.params
        if param.name in REFUSED and isinstance(param, click.Option)
        for opt in (*param.opts, *param.secondary_opts)
    }
    return sorted(set(_arity()) - refused, key=lambda s: s.lstrip("-").lower())


def split(argv: Sequence[str], own: dict[str, bool]) -> tuple[list[str], list[str]]:
    """``argv`` (after ``grid``) as (the grid's own words, Inspect's options).

    ``own``: each of the grid's option strings -> whether it takes a value; the grid's own
    win where both name one (``--model``, ``-h``). A word that is neither's option is
    refused, one line naming it."""
    inspect = _arity()
    mine: list[str] = []
    theirs: list[str] = []
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--" or not word.startswith("-") or _is_number(word):
            mine.append(word)
            i += 1
            continue
        if word.startswith("--"):
            name, eq, _ = word.partition("=")  # --limit=2
            attached = ""
        else:
            name, eq, attached = word[:2], "", word[2:]  # -Tsplit=demo
        if name in own:
            takes = own[name] and not eq and not attached
            mine.extend(words[i : i + 1 + int(takes)])
            i += 1 + int(takes)
            continue
        kind = inspect.get(name)
        if kind is None:
            raise InspectOptionError(
                f"{name}: no such option of finmath grid nor of inspect eval-set "
                "(finmath grid --help lists both)"
            )
        taken = 0
        if not eq and not attached and i + 1 < len(words):
            following = words[i + 1]
            if kind == "value" or (kind == "optional" and not following.startswith("-")):
                taken = 1
        theirs.extend(words[i : i + 1 + taken])
        i += 1 + taken
    return mine, theirs


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


@dataclass
class InspectOptions:
    """Inspect's options of a grid, read by ``inspect eval-set``'s own parser."""

    kwargs: dict[str, Any]
    """What ``inspect eval-set`` would pass to ``eval_set`` (the grid replaces
    :data:`GRID_DECIDES`)."""
    raw: dict[str, Any] = field(default_factory=dict)
    """The command's parameters as parsed (before its conversion)."""
    typed: set[str] = field(default_factory=set)
    """Parameters given on the command line or in the environment (not defaults)."""

    def passed_on(self) -> dict[str, Any]:
        """The ``eval_set`` arguments the grid passes on unchanged."""
        return {k: v for k, v in self.kwargs.items() if k not in GRID_DECIDES}

    def generation(self) -> dict[str, Any]:
        """The generation settings the options set, as a log's ``GenerateConfig`` records
        them (plain values)."""
        from inspect_ai.model import GenerateConfig

        names = set(GenerateConfig.model_fields)
        config = GenerateConfig(**{k: v for k, v in self.kwargs.items() if k in names})
        return config.model_dump(exclude_none=True)

    def given(self, name: str) -> bool:
        return name in self.typed


def read(args: Sequence[str]) -> InspectOptions:
    """``args`` (Inspect's options only) as ``inspect eval-set`` reads them; a refused
    option raises :class:`InspectOptionError` (one line)."""
    return _read(tuple(args))


@lru_cache(maxsize=32)
def _read_cached(args: tuple[str, ...]) -> InspectOptions:
    return _read(args)


def read_cached(args: Sequence[str]) -> InspectOptions:
    """:func:`read`, once per list of options in this process (do not modify the result)."""
    return _read_cached(tuple(args))


def _read(args: tuple[str, ...]) -> InspectOptions:
    command = eval_set_command
    try:
        ctx = command.make_context("finmath grid", list(args), resilient_parsing=False)
    except click.ClickException as e:
        raise InspectOptionError(_one_line(e.format_message())) from None
    typed = {
        name
        for name in ctx.params
        if ctx.get_parameter_source(name)
        in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
    }
    for name, reason in REFUSED.items():
        if name in typed and ctx.params.get(name):
            raise InspectOptionError(f"{reason} (not an option of finmath grid)")
    limit = ctx.params.get("limit")
    if isinstance(limit, str) and limit.lstrip("-").isdigit() and int(limit) < 1:
        # Inspect reads "-1" as a broken range (a message that names no option)
        raise InspectOptionError(f"--limit {limit}: must be at least 1")
    try:
        with ctx:
            kwargs = eval_set_call(lambda: command.invoke(ctx))
    except click.ClickException as e:
        raise InspectOptionError(_one_line(e.format_message())) from None
    except (PrerequisiteError, ValueError, TypeError) as e:
        raise InspectOptionError(_one_line(str(getattr(e, "message", e)))) from None
    return InspectOptions(kwargs=kwargs, raw=dict(ctx.params), typed=typed)


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    for tag in ("[bold]", "[/bold]", "ERROR: "):
        text = text.replace(tag, "")
    return text


def check_numbers(options: Any) -> str | None:
    """A message for the first numeric option of a grid (``cli.grid.GridOptions``, which
    imports this module) out of its range (before anything runs): Inspect's parser takes
    any number."""
    generation = options.generation()
    kwargs = options.inspect().kwargs
    bounds: list[tuple[str, float | int | None, float, float | None]] = [
        ("--limit", options.limit, 1, None),
        ("--max-samples", options.max_samples, 1, None),
        ("--max-tokens", generation.get("max_tokens"), 1, None),
        ("--retry-attempts", kwargs.get("retry_attempts"), 0, None),
        ("--epochs", options.epochs, 1, None),
        ("--temperature", generation.get("temperature"), 0, None),
        ("--top-p", generation.get("top_p"), 0, 1),
    ]
    for flag, value, low, high in bounds:
        if value is None:
            continue
        if value < low or (high is not None and value > high):
            wanted = f"from {low:g} to {high:g}" if high is not None else f"at least {low:g}"
            return f"{flag} {value:g}: must be {wanted}"
    if options.selection not in SELECTIONS:
        return f"--selection {options.selection}: not one of {', '.join(SELECTIONS)}"
    if options.sample_shuffle is not None and options.limit is None:
        return "--sample-shuffle chooses which samples --limit runs: give --limit N as well"
    return None
