"""The lm-evaluation-harness bridge (optional extra ``lm-eval``): our Inspect tasks, run by lm_eval.

Not a second implementation: each lm-eval task builds the Inspect task it names (the same
``@task`` function with the same arguments) and uses its pieces as they are:

- the documents are the Inspect task's samples (same loader, same errors for missing,
  gated or malformed data), each with the messages our solver chain sends at its first
  model call, rendered by running that chain (retrieval, haystacks, prompt renderers);
- a model's reply goes back through the rest of the same solver chain (a program-of-thought
  program runs in the sandbox the Inspect task chose) and is scored by the task's own
  scorers; each lm-eval metric is the Inspect score of that name, aggregated by the
  Inspect metric the task reports first for it (``accuracy`` for most).

The configurations live in one folder that holds nothing else (``configs/<benchmark>/*.yaml``):
:func:`config_dir` returns it (``finmath lm-eval path``), for lm_eval's ``--include_path``.
This module imports nothing from lm_eval, so the CLI can tell users without the extra what
to install.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

INSTALL_HINT = 'pip install "finmath-tasks[lm-eval]"'
"""What a user without the extra installs to run our tasks under lm-evaluation-harness."""


def lm_eval_installed() -> bool:
    """Is lm-evaluation-harness importable here?"""
    return importlib.util.find_spec("lm_eval") is not None


def config_dir() -> Path:
    """The folder to give lm_eval as ``--include_path``: every benchmark's lm_eval configs
    (``<benchmark>/*.yaml``, tasks and groups) and nothing else, so lm_eval's recursive search
    finds only our tasks there."""
    return Path(__file__).resolve().parent / "configs"


def config_files() -> list[Path]:
    """Every lm-eval configuration file of the package (tasks and groups)."""
    return sorted(config_dir().glob("*/*.yaml"))
