"""The one place that imports names from Inspect's private modules (``inspect_ai._*``,
``inspect_ai.<pkg>._*``).

Each name below has no public equivalent in Inspect (checked against
``inspect_ai.util``, ``inspect_ai.model``, ``inspect_ai.log`` and Inspect's
reference docs). A private name may move or change in any Inspect release, so none is
bound when this module is imported: each is imported on first use (module
``__getattr__``), so a name that only a tool or a test needs cannot stop a task from
loading. The one name the evaluation itself uses (``PrerequisiteError``, the base of
our ``UsageError``) has a fallback; any other missing name raises
``InspectPrivateNameMissing``, one line naming the name, the installed inspect-ai
version and the feature that needs it.

``tests/test_inspect_private.py`` has one test per name that says which of our
features broke, and a test that runs the demo with each name removed in turn;
``tests/test_layout.py`` fails if any other module of the package imports a private
Inspect name. Add a name here (and its test), never elsewhere.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # the same names, statically, for type checkers (never run)
    from inspect_ai._cli.eval import eval_set, eval_set_command
    from inspect_ai._display.core.results import task_scores
    from inspect_ai._eval.eval_set_manifest import INSPECT_EVAL_SET_CAPTURE, task_args_hash
    from inspect_ai._eval.eval_set_selection import (
        EVAL_SET_SELECTION_VERSION,
        INSPECT_EVAL_SET_SELECTION,
    )
    from inspect_ai._util.config import parse_cli_args
    from inspect_ai._util.constants import get_deserializing_context
    from inspect_ai._util.error import PrerequisiteError
    from inspect_ai._util.file import file, filesystem
    from inspect_ai.model._model import init_active_model, init_model_roles
    from inspect_ai.scorer._scorer import scorer_metrics
    from inspect_ai.util._sandbox.context import (
        sandbox_default_context_var,
        sandbox_environments_context_var,
        sandbox_with_environments_context_var,
    )
    from inspect_ai.util._sandbox.local import LocalSandboxEnvironment
    from inspect_ai.util._sandbox.registry import registry_find_sandboxenv


class Private(NamedTuple):
    module: str
    feature: str
    """What of ours needs the name (said when it is missing)."""


_GRID_PROTOCOL = "`finmath grid --plan/--worker` (Inspect's eval-set capture and selection)"
_GRID_OPTIONS = "`finmath grid`'s Inspect options (every option of `inspect eval-set`)"
_BRIDGE_SANDBOX = "the lm-eval bridge's program-of-thought tasks (their sandbox)"
_BARE_SCORERS = (
    "`inspect score LOG` finding our scorers by the bare names logs record "
    "(the fallback: --scorer finmath_tasks/<key> -S task=<task>)"
)

NAMES: dict[str, Private] = {
    # Tests only: Inspect's own end-of-run score summary, rendered at a given width, to
    # check that every metric label of every task prints whole at 100 columns.
    "task_scores": Private(
        "inspect_ai._display.core.results", "the test of metric labels in Inspect's summary"
    ),
    # `finmath grid --plan/--worker`: Inspect's runner protocol for eval sets (capture the
    # tasks of an eval set, run a selection of them, match logs to tasks).
    "INSPECT_EVAL_SET_CAPTURE": Private("inspect_ai._eval.eval_set_manifest", _GRID_PROTOCOL),
    "task_args_hash": Private("inspect_ai._eval.eval_set_manifest", _GRID_PROTOCOL),
    "EVAL_SET_SELECTION_VERSION": Private("inspect_ai._eval.eval_set_selection", _GRID_PROTOCOL),
    "INSPECT_EVAL_SET_SELECTION": Private("inspect_ai._eval.eval_set_selection", _GRID_PROTOCOL),
    # `finmath grid` takes every option of `inspect eval-set`: Inspect's click command
    # parses them, and the keyword arguments its body would hand to `eval_set` are read
    # (the call itself is replaced for that moment): Inspect has no public function that
    # turns command-line options into `eval_set` arguments.
    "eval_set_command": Private("inspect_ai._cli.eval", _GRID_OPTIONS),
    "eval_set": Private("inspect_ai._cli.eval", _GRID_OPTIONS),
    # `finmath grid -T k=v`: task arguments parsed exactly as `inspect eval -T` does.
    "parse_cli_args": Private("inspect_ai._util.config", "`finmath grid -T k=v`"),
    # The evaluation: `inspect eval` prints a PrerequisiteError's message alone (no
    # traceback); our UsageError (a bad -T value, unusable data) derives from it.
    "PrerequisiteError": Private("inspect_ai._util.error", "our -T and data errors"),
    # `finmath grid --plan/--worker`: plan files and log directories on local or remote
    # (s3://) storage, through the same filesystem layer Inspect writes logs with.
    "file": Private("inspect_ai._util.file", "`finmath grid` plan files"),
    "filesystem": Private("inspect_ai._util.file", "`finmath grid`/`report` log directories"),
    # `finmath grid --dry-run` and the lm-eval bridge: a task's solvers run outside an
    # eval need the active model an eval sets.
    "init_active_model": Private(
        "inspect_ai.model._model", "`finmath grid --dry-run` and the lm-eval bridge"
    ),
    # `finmath grid` builds its runs' tasks with the grid's roles bound, as `inspect eval`
    # does before it builds a task (so a task refuses a role its run never calls).
    "init_model_roles": Private("inspect_ai.model._model", "`finmath grid --model-role`"),
    # The lm-eval bridge: a scorer's metrics (each lm-eval metric is aggregated by the
    # first metric the Inspect scorer reports).
    "scorer_metrics": Private("inspect_ai.scorer._scorer", "the lm-eval bridge's metrics"),
    # The lm-eval bridge runs a sample's solvers outside an eval: the sandboxes it starts
    # are made the ones Inspect's `sandbox()` returns, as Inspect does in an eval.
    "sandbox_default_context_var": Private("inspect_ai.util._sandbox.context", _BRIDGE_SANDBOX),
    "sandbox_environments_context_var": Private(
        "inspect_ai.util._sandbox.context", _BRIDGE_SANDBOX
    ),
    "sandbox_with_environments_context_var": Private(
        "inspect_ai.util._sandbox.context", _BRIDGE_SANDBOX
    ),
    # Tests: Inspect's `local` sandbox, constructed directly (PoT itself tells it apart
    # through the public registry_info, sandbox/client.py).
    "LocalSandboxEnvironment": Private(
        "inspect_ai.util._sandbox.local", "the tests of Inspect's local sandbox"
    ),
    # `inspect score LOG` rebuilds a scorer by the bare name the log records: our scorer
    # keys are added to Inspect's registry under that name too (the public decorators
    # always prefix the package), and Inspect's own scorer of that name is looked up so
    # that it still builds unchanged without our `task` argument.
    "registry_add": Private("inspect_ai._util.registry", _BARE_SCORERS),
    "registry_lookup": Private("inspect_ai._util.registry", _BARE_SCORERS),
    # A sandbox type registered by name (`--sandbox finmath_bwrap`) is found (tests; the
    # lm-eval bridge starts the sandbox a task chose by its type name).
    "registry_find_sandboxenv": Private("inspect_ai.util._sandbox.registry", _BRIDGE_SANDBOX),
    # `inspect eval-retry` (and an eval-set resume) of a fresh variant: the one place where
    # Inspect holds both the log resumed from and the rebuilt dataset, before any sample is
    # kept; Inspect's public API shows neither to a task before its samples run.
    # `finmath report` reads a local .eval log's header and samples from the zip itself
    # (one open, only the fields it reads), validated with Inspect's models in the context
    # Inspect reads logs back with; without it, through Inspect's (slower) readers.
    "get_deserializing_context": Private(
        "inspect_ai._util.constants", "`finmath report`'s fast reading of .eval logs"
    ),
    "eval_log_sample_source": Private(
        "inspect_ai._eval.loader",
        "the refusal to resume a fresh-variant log whose kept samples are another draw's",
    ),
}


class InspectPrivateNameMissing(ImportError):
    """A private Inspect name we use is gone from the installed inspect-ai."""


class _PrerequisiteErrorFallback(Exception):
    """Stands in for Inspect's ``PrerequisiteError`` when a release removes it: our errors
    keep their ``message``; ``inspect eval`` then prints a traceback above it."""

    def __init__(self, message: Any) -> None:
        super().__init__(message)
        self.message = message


FALLBACKS: dict[str, Any] = {"PrerequisiteError": _PrerequisiteErrorFallback}
"""Names on the evaluation's own path, and what stands in for them when they are gone."""


def inspect_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("inspect-ai")
    except PackageNotFoundError:
        return "unknown"


def __getattr__(name: str) -> Any:
    private = NAMES.get(name)
    if private is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(private.module), name)
    except (ImportError, AttributeError):
        if name not in FALLBACKS:
            raise InspectPrivateNameMissing(
                f"{name} is not in {private.module} of the installed inspect-ai "
                f"{inspect_version()}: {private.feature} cannot work with this Inspect "
                "(finmath_tasks/_inspect_private.py)"
            ) from None
        value = FALLBACKS[name]
    globals()[name] = value
    return value


def _load(name: str) -> Any:
    """``name``, loaded on first use (what ``from ... import name`` gives elsewhere)."""
    return globals()[name] if name in globals() else __getattr__(name)


def register_scorer_name(
    factory: Callable[..., Any], name: str, qualified: str, metadata: dict[str, Any]
) -> None:
    """Register a scorer factory under ``qualified`` (``finmath_tasks/<name>``) and under
    ``name`` alone: Inspect records a scorer without its package prefix and ``inspect
    score`` looks that name up again. Where Inspect has a scorer of its own by that name,
    the unprefixed entry builds Inspect's unless it is given a ``task`` (ours always
    are). Inspect's public API adds to its registry only through decorators, which
    always prefix the package: the private ``registry_add`` does it, imported here when
    a key is registered (one of the table's names). Without it (a later Inspect) the tasks
    run as before and only ``inspect score`` without ``--scorer finmath_tasks/<key> -S
    task=<task>`` cannot find the scorer: a warning says so, once."""
    from inspect_ai.scorer import Scorer
    from inspect_ai.util import RegistryInfo

    try:
        registry_add, registry_lookup = _load("registry_add"), _load("registry_lookup")
    except InspectPrivateNameMissing as e:
        _warn_once(
            f"finmath_tasks: {e}; `inspect score` finds our scorers only as "
            "--scorer finmath_tasks/<key> -S task=<task>"
        )
        return

    def prefixed(*args: Any, **kwargs: Any) -> Any:
        return factory(*args, **kwargs)

    inspect_own = registry_lookup("scorer", f"inspect_ai/{name}")

    def unprefixed(*args: Any, **kwargs: Any) -> Any:
        if inspect_own is not None and "task" not in kwargs:
            return inspect_own(*args, **kwargs)
        return factory(*args, **kwargs)

    for obj, registered in ((prefixed, qualified), (unprefixed, name)):
        obj.__name__ = obj.__qualname__ = name
        obj.__annotations__ = {"return": Scorer}
        registry_add(obj, RegistryInfo(type="scorer", name=registered, metadata=dict(metadata)))


_prior_sample_checks: list[Callable[[Any, Any, Any], None]] = []


def check_prior_samples(check: Callable[[Any, Any, Any], None]) -> bool:
    """Run ``check(prior_log, prior_log_info, dataset)`` each time Inspect resumes a task
    it rebuilt from a log (``inspect eval-retry``, an eval-set resume), before it keeps any
    of the log's samples: ``prior_log`` is the ``EvalLog`` resumed from (with its samples
    for eval-retry, the header for an eval-set), ``prior_log_info`` its ``EvalLogInfo`` or
    None, ``dataset`` the rebuilt task's whole dataset. An exception from ``check`` (a
    ``UsageError``) stops the resume before it starts, printed as Inspect prints it.

    Inspect's loader hands the three to ``eval_log_sample_source``, which decides what is
    reused; the name is wrapped in the loader's module (once, whatever the checks).
    Without it (another Inspect) nothing is checked: a warning says so, once; False."""
    if check not in _prior_sample_checks:
        _prior_sample_checks.append(check)
    name = "eval_log_sample_source"
    module = importlib.import_module(NAMES[name].module)
    try:
        current = getattr(module, name)
    except AttributeError:
        _warn_once(
            f"finmath_tasks: {name} is not in {module.__name__} of the "
            f"installed inspect-ai {inspect_version()}: a resumed fresh-variant log is kept "
            "without comparing its samples with the variant rebuilt"
        )
        return False
    if getattr(current, "_finmath_checked", False):
        return True

    def checked(eval_log: Any, eval_log_info: Any, dataset: Any, *args: Any, **kw: Any) -> Any:
        if eval_log is not None:
            for each in list(_prior_sample_checks):
                each(eval_log, eval_log_info, dataset)
        return current(eval_log, eval_log_info, dataset, *args, **kw)

    checked._finmath_checked = True  # type: ignore[attr-defined]
    checked.__wrapped__ = current  # type: ignore[attr-defined]
    setattr(module, name, checked)
    return True


def eval_set_call(run: Callable[[], Any]) -> dict[str, Any]:
    """The keyword arguments Inspect's ``inspect eval-set`` command (``run()`` invokes
    it) passes to ``eval_set``, with ``eval_set`` itself not called: the name the command's
    module calls is replaced while ``run()`` runs (this thread only: a CLI, one call at a
    time), then restored. The command's ``ctx.exit`` at its end is expected."""
    import click

    name = "eval_set"
    module = importlib.import_module(NAMES[name].module)
    original = _load(name)
    captured: dict[str, Any] = {}

    def capture(**params: Any) -> tuple[bool, list[Any]]:
        captured.update(params)
        return True, []

    setattr(module, name, capture)
    try:
        run()
    except click.exceptions.Exit:
        pass
    finally:
        setattr(module, name, original)
    if not captured:
        raise InspectPrivateNameMissing(
            f"inspect eval-set of the installed inspect-ai {inspect_version()} did not call "
            f"{module.__name__}.{name}: {_GRID_OPTIONS} cannot work with this Inspect "
            "(finmath_tasks/_inspect_private.py)"
        )
    return captured


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        logging.getLogger(__name__).warning(message)


def set_sample_sandboxes(environments: dict[str, Any]) -> None:
    """Make ``environments`` (a sandbox type's ``sample_init`` result) the current sample's
    sandboxes in this context, the first the default: what Inspect's
    ``init_sandbox_environments_sample`` sets before a sample's solvers run."""
    _load("sandbox_environments_context_var").set(environments)
    _load("sandbox_with_environments_context_var").set({})
    _load("sandbox_default_context_var").set(next(iter(environments)))


__all__ = [
    "EVAL_SET_SELECTION_VERSION",
    "FALLBACKS",
    "INSPECT_EVAL_SET_CAPTURE",
    "INSPECT_EVAL_SET_SELECTION",
    "NAMES",
    "InspectPrivateNameMissing",
    "LocalSandboxEnvironment",
    "PrerequisiteError",
    "check_prior_samples",
    "eval_set",
    "eval_set_call",
    "eval_set_command",
    "file",
    "filesystem",
    "get_deserializing_context",
    "init_active_model",
    "init_model_roles",
    "parse_cli_args",
    "register_scorer_name",
    "registry_find_sandboxenv",
    "sandbox_default_context_var",
    "sandbox_environments_context_var",
    "sandbox_with_environments_context_var",
    "scorer_metrics",
    "set_sample_sandboxes",
    "task_args_hash",
    "task_scores",
]
