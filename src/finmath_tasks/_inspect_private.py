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
    "registry_find_sandboxenv",
    "scorer_metrics",
    "set_sample_sandboxes",
    "task_args_hash",
    "task_scores",
]
