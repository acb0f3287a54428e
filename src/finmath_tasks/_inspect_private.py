"""The one place that imports names from Inspect's private modules (``inspect_ai._*``,
``inspect_ai.<pkg>._*``).

Each name below has no public equivalent in Inspect (checked against
``inspect_ai.util``, ``inspect_ai.model``, ``inspect_ai.log`` and Inspect's
reference docs); the public ones we used to take from private modules
(``model_roles``, ``registry_info``) now come from ``inspect_ai.model`` and
``inspect_ai.util``. A private name may move or change in any Inspect release:
``tests/test_inspect_private.py`` has one test per name that says which of our
features broke, and ``tests/test_layout.py`` fails if any other module of the
package imports a private Inspect name. Add a name here (and its test), never
elsewhere.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

# Tests only: Inspect's own end-of-run score summary, rendered at a given width, to check
# that every metric label of every task prints whole at 100 columns.
from inspect_ai._display.core.results import task_scores

# `finmath grid --plan/--worker`: Inspect's runner protocol for eval sets (capture
# the tasks of an eval set, run a selection of them, match logs to tasks).
from inspect_ai._eval.eval_set_manifest import INSPECT_EVAL_SET_CAPTURE, task_args_hash
from inspect_ai._eval.eval_set_selection import (
    EVAL_SET_SELECTION_VERSION,
    INSPECT_EVAL_SET_SELECTION,
)

# `finmath grid -T k=v`: task arguments parsed exactly as `inspect eval -T` does.
from inspect_ai._util.config import parse_cli_args

# `inspect eval` prints a PrerequisiteError's message alone (no traceback): our
# UsageError (a bad -T value, unusable data) derives from it.
from inspect_ai._util.error import PrerequisiteError

# `finmath grid --plan/--worker`: plan files and log directories on local or remote
# (s3://) storage, through the same filesystem layer Inspect writes logs with.
from inspect_ai._util.file import file, filesystem

# `finmath grid --dry-run` (the prompts rendered the slow way, which the cheap counts are
# tested against): a task's solvers run outside an eval need the active model eval sets.
from inspect_ai.model._model import init_active_model

# The lm-eval bridge: a scorer's metrics (each lm-eval metric is aggregated by the first
# metric the Inspect scorer reports).
from inspect_ai.scorer._scorer import scorer_metrics

# The lm-eval bridge runs a sample's solvers outside an eval: the sandboxes it starts are
# made the ones Inspect's `sandbox()` returns, as Inspect does for a sample of an eval.
from inspect_ai.util._sandbox.context import (
    sandbox_default_context_var,
    sandbox_environments_context_var,
    sandbox_with_environments_context_var,
)

# PoT warns (in every affected sample's transcript) when model-written programs run
# in Inspect's `local` sandbox, without isolation: the class tells that sandbox apart.
from inspect_ai.util._sandbox.local import LocalSandboxEnvironment

# A sandbox type registered by name (`--sandbox finmath_bwrap`) is found (tests; the
# lm-eval bridge starts the sandbox a task chose by its type name).
from inspect_ai.util._sandbox.registry import registry_find_sandboxenv


def register_scorer_name(
    factory: Callable[..., Any], name: str, qualified: str, metadata: dict[str, Any]
) -> None:
    """Register a scorer factory under ``qualified`` (``finmath_tasks/<name>``) and under
    ``name`` alone: Inspect records a scorer without its package prefix and ``inspect
    score`` looks that name up again. Where Inspect has a scorer of its own by that name,
    the unprefixed entry builds Inspect's unless it is given a ``task`` (ours always
    are). Inspect's public API adds to its registry only through decorators, which
    always prefix the package: the private ``registry_add`` does it, imported here when
    a key is registered. Without it (a later Inspect) the tasks run as before and only
    ``inspect score`` without ``--scorer finmath_tasks/<name>`` cannot find the scorer:
    a warning says so."""
    try:
        from inspect_ai._util.registry import registry_add, registry_lookup
        from inspect_ai.scorer import Scorer
        from inspect_ai.util import RegistryInfo
    except ImportError as e:  # pragma: no cover - depends on the Inspect release
        _warn_once(
            f"finmath_tasks: this Inspect release has no registry_add ({e}): `inspect score` "
            "finds our scorers only as --scorer finmath_tasks/<name>"
        )
        return

    def prefixed(*args: Any, **kwargs: Any) -> Any:
        return factory(*args, **kwargs)

    inspect_own = registry_lookup("scorer", f"inspect_ai/{name}")

    def unprefixed(*args: Any, **kwargs: Any) -> Any:
        if inspect_own is not None and "task" not in kwargs:
            return inspect_own(*args, **kwargs)  # type: ignore[operator]
        return factory(*args, **kwargs)

    for obj, registered in ((prefixed, qualified), (unprefixed, name)):
        obj.__name__ = obj.__qualname__ = name
        obj.__annotations__ = {"return": Scorer}
        registry_add(obj, RegistryInfo(type="scorer", name=registered, metadata=dict(metadata)))


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        logging.getLogger(__name__).warning(message)


def set_sample_sandboxes(environments: dict[str, Any]) -> None:
    """Make ``environments`` (a sandbox type's ``sample_init`` result) the current sample's
    sandboxes in this context, the first the default: what Inspect's
    ``init_sandbox_environments_sample`` sets before a sample's solvers run."""
    sandbox_environments_context_var.set(environments)
    sandbox_with_environments_context_var.set({})
    sandbox_default_context_var.set(next(iter(environments)))


__all__ = [
    "EVAL_SET_SELECTION_VERSION",
    "INSPECT_EVAL_SET_CAPTURE",
    "INSPECT_EVAL_SET_SELECTION",
    "LocalSandboxEnvironment",
    "PrerequisiteError",
    "file",
    "filesystem",
    "init_active_model",
    "parse_cli_args",
    "register_scorer_name",
    "registry_find_sandboxenv",
    "scorer_metrics",
    "set_sample_sandboxes",
    "task_args_hash",
    "task_scores",
]
