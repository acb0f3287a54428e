"""The lm-evaluation-harness bridge (optional extra ``lm-eval``): our Inspect tasks, run by lm_eval.

Not a second implementation: each lm-eval task builds the Inspect task it names (the same
``@task`` function with the same arguments) and uses its pieces as they are:

- the documents are the Inspect task's samples (same loader, same errors for missing,
  gated or malformed data), each with the messages our solver chain sends at its first
  model call, rendered by running that chain (retrieval, haystacks, prompt renderers);
- a model's reply goes back through the rest of the same solver chain (a program-of-thought
  program runs in the sandbox the Inspect task chose) and is scored by the task's own
  scorers; each lm-eval metric is the Inspect score of that name, aggregated by the
  Inspect metric the task reports first for it (``accuracy`` for most), and beside it
  ``<score>_error_classes``, its error classes counted over the documents
  (:mod:`finmath_tasks.lm_eval.classes`).

The configurations live beside each benchmark (``tasks/<name>/lm_eval/*.yaml``);
:func:`config_dir` (``finmath lm-eval path``) gives lm_eval's ``--include_path`` a folder
that holds them and nothing else. This module imports nothing from lm_eval, so the CLI can
tell users without the extra what to install.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

INSTALL_HINT = (
    'pip install -e ".[lm-eval]" in a checkout of finmath-tasks, or '
    'pip install "finmath-tasks[lm-eval] @ git+<repository URL>@<tag>"'
)
"""What a user without the extra installs to run our tasks under lm-evaluation-harness: the
package is on no package index, so the extra comes with a checkout or a git URL (README)."""


def lm_eval_installed() -> bool:
    """Is lm-evaluation-harness importable here?"""
    return importlib.util.find_spec("lm_eval") is not None


CONFIG_DIR_ENV = "FINMATH_LM_EVAL_CONFIGS"
"""Where :func:`config_dir` writes the folder of configs (default: the user's cache)."""


def config_files() -> list[Path]:
    """Every lm-eval configuration file of the package (tasks and groups), as each
    benchmark keeps them: ``tasks/<benchmark>/lm_eval/*.yaml``."""
    tasks = Path(__file__).resolve().parent.parent / "tasks"
    return sorted(tasks.glob("*/lm_eval/*.yaml"))


def config_dir() -> Path:
    """The folder to give lm_eval as ``--include_path``: a copy of every benchmark's lm_eval
    configs (``<benchmark>/<name>.yaml``) and nothing else, so lm_eval's recursive search
    finds only our tasks there (the benchmarks' own folders hold other YAML files, which it
    would read as tasks or groups).

    Written once per set of configs, in a folder named by their digest under
    ``$FINMATH_LM_EVAL_CONFIGS`` (default ``~/.cache/finmath-tasks``, else the temporary
    directory): an upgrade never reads an older copy."""
    files = config_files()
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.parent.parent.name}/{path.name}\0".encode())
        digest.update(path.read_bytes())
    name = f"lm-eval-configs-{digest.hexdigest()[:16]}"
    errors = []
    for root in _roots():
        folder = root / name
        if folder.is_dir():
            return folder
        try:
            root.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
            for path in files:
                target = staging / path.parent.parent.name / path.name
                target.parent.mkdir(exist_ok=True)
                shutil.copyfile(path, target)
            try:
                staging.rename(folder)
            except OSError:  # another process wrote it first
                shutil.rmtree(staging, ignore_errors=True)
            if folder.is_dir():
                return folder
        except OSError as exc:
            errors.append(f"{root}: {exc}")
    raise OSError(f"cannot write the lm_eval configs folder ({'; '.join(errors)})")


def _roots() -> list[Path]:
    chosen = os.environ.get(CONFIG_DIR_ENV)
    if chosen:
        return [Path(chosen)]
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return [Path(cache) / "finmath-tasks", Path(tempfile.gettempdir()) / "finmath-tasks"]
