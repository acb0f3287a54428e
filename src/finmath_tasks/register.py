"""inspect_evals' metadata for each benchmark, from one source: the task folder's
``eval.yaml`` (package data).

inspect_evals 0.28 reads two shapes (``inspect_evals/metadata.py`` in its wheel): an
eval.yaml of an evaluation kept in its own repository (``InternalEvalMetadata``), and a
register entry, the listing of an evaluation whose code lives elsewhere
(``ExternalEvalMetadata``: ``full_title``, ``common_title``, ``paper_title``, a ``source``
block naming the repository and commit, one task with its ``task_path``). Each folder's
eval.yaml has the first shape; :func:`register_entry` derives the second from it, so the
two cannot disagree: the entry's ``full_title`` is the eval.yaml's ``title``, its
``common_title`` and ``paper_title`` are the eval.yaml's ``metadata.extras``, the task
path is the folder's ``task.py`` (the register runs ``inspect eval <task_path>``), and
the repository and commit are given when the entries are written, since only a published
commit can be listed::

    python -m finmath_tasks.register --out register \\
        --repository-url https://github.com/OWNER/REPO [--commit SHA]

writes ``register/<name>/eval.yaml`` for every benchmark (the commit defaults to the
checkout's ``HEAD``). Our own facts that are not inspect_evals fields (the task's own
version, the samples of each variant) are in ``metadata.extras``, which the register
entry leaves out. Nothing here imports inspect_evals or Inspect; the tests validate
both shapes with inspect_evals' own models (``tests/tasks/test_register_entries.py``).
A tool: the evaluation never imports it.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

TASKS_DIR = Path(__file__).parent / "tasks"
REPO_ROOT = Path(__file__).resolve().parents[2]
"""The checkout's root (``src/finmath_tasks/register.py`` sits two folders below it)."""
TASK_PATH = "src/finmath_tasks/tasks/{name}/task.py"
"""Where a benchmark's ``@task`` is, relative to the repository's root."""
SEMVER = re.compile(r"(\d+)\.(\d+)\.(\d+)")
RUNTIME_FIELDS = ("fast", "sandbox", "requires", "environment", "supports_k8s")
"""inspect_evals' runtime metadata the register entry repeats (``extras`` is ours)."""


class RegisterError(ValueError):
    """An eval.yaml that cannot give its register entry (the message names the file)."""


def benchmarks() -> list[str]:
    """Every task folder with an eval.yaml (a new benchmark needs no list edited)."""
    return sorted(p.parent.name for p in TASKS_DIR.glob("*/eval.yaml"))


def eval_yaml_path(name: str) -> Path:
    return TASKS_DIR / name / "eval.yaml"


def eval_metadata(name: str) -> dict[str, Any]:
    """The folder's eval.yaml as inspect_evals loads it: the mapping, with ``id`` the
    folder's name (inspect_evals injects it the same way)."""
    path = eval_yaml_path(name)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise RegisterError(f"{path}: an eval.yaml is a mapping, not {type(data).__name__}")
    data["id"] = name
    return data


def inspect_evals_version(task_version: str) -> str:
    """inspect_evals' ``N-X`` form of our ``MAJOR.MINOR.PATCH`` task version: N is the
    major version (results not comparable across it), X the minor as a letter (A for
    .0); a patch release changes neither, so it is not shown."""
    found = SEMVER.fullmatch(task_version)
    if found is None:
        raise RegisterError(f"task version {task_version!r} is not MAJOR.MINOR.PATCH")
    major, minor = int(found.group(1)), int(found.group(2))
    if minor > 25:
        raise RegisterError(f"task version {task_version!r}: minor {minor} has no letter")
    return f"{major}-{chr(ord('A') + minor)}"


def _extras(name: str, data: dict[str, Any]) -> dict[str, Any]:
    extras = (data.get("metadata") or {}).get("extras") or {}
    missing = [k for k in ("common_title", "paper_title") if not extras.get(k)]
    if missing:
        raise RegisterError(
            f"{eval_yaml_path(name)}: metadata.extras needs {', '.join(missing)} "
            "for the register entry"
        )
    return dict(extras)


def register_entry(name: str, repository_url: str, commit: str) -> dict[str, Any]:
    """The register entry ``name`` is listed with, from its eval.yaml, with the
    repository and commit its code is published at. Keys in the order inspect_evals'
    submission tool writes them; ``id`` is not written (the entry's folder gives it)."""
    data = eval_metadata(name)
    extras = _extras(name, data)
    tasks = data.get("tasks") or []
    if len(tasks) != 1 or tasks[0].get("name") != name:
        raise RegisterError(
            f"{eval_yaml_path(name)}: a register entry lists one task, named {name!r}"
        )
    task = {k: v for k, v in tasks[0].items() if k != "task_path"}
    task["task_path"] = TASK_PATH.format(name=name)
    runtime = {k: v for k, v in (data.get("metadata") or {}).items() if k in RUNTIME_FIELDS}
    entry: dict[str, Any] = {
        "full_title": data["title"],
        "common_title": extras["common_title"],
        "paper_title": extras["paper_title"],
        "description": data["description"],
        "contributors": list(data["contributors"]),
        "tasks": [task],
        "arxiv": data.get("arxiv"),  # a benchmark of our own has none
        "tags": list(data.get("tags") or []),
        "metadata": runtime,
        "source": {
            "repository_url": repository_url,
            "repository_commit": commit,
            "maintainers": list(data["contributors"]),
        },
    }
    return {k: v for k, v in entry.items() if v not in ([], {}, None)}


def write_register_entries(out: Path, repository_url: str, commit: str) -> list[Path]:
    """``out/<name>/eval.yaml`` for every benchmark; returns the files written."""
    written = []
    for name in benchmarks():
        path = out / name / "eval.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = register_entry(name, repository_url, commit)
        path.write_text(
            # the description on one line, as inspect_evals asks (no hard wrapping)
            yaml.safe_dump(entry, allow_unicode=True, sort_keys=False, width=10_000),
            encoding="utf-8",
        )
        written.append(path)
    return written


def head_commit() -> str:
    """The checkout's ``HEAD`` (the commit the entries list unless one is given)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        raise RegisterError(
            f"{REPO_ROOT} is not a git checkout ({type(exc).__name__}): give --commit"
        ) from exc
    return done.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m finmath_tasks.register",
        description="Write the inspect_evals register entry of every benchmark, "
        "derived from its eval.yaml.",
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for <name>/eval.yaml")
    parser.add_argument(
        "--repository-url", required=True, help="where the code is published (https URL)"
    )
    parser.add_argument("--commit", help="the published commit (default: the checkout's HEAD)")
    args = parser.parse_args(argv)
    try:
        commit = args.commit or head_commit()
        if not re.fullmatch(r"[0-9a-f]{40}", commit):
            raise RegisterError(f"--commit {commit!r} is not a 40-hex-digit commit")
        for path in write_register_entries(args.out, args.repository_url, commit):
            print(path)
    except RegisterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
