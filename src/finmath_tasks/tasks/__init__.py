"""One folder per benchmark, and the one list of them.

A benchmark is a subpackage of this package that holds a ``task.py`` and whose name does not
start with ``_``. :func:`benchmarks` finds them on the package's path, so a new folder is a
new benchmark for every command and shared check that asks, with no list to edit. Finding
them reads folder listings only: no benchmark is imported.
"""

from __future__ import annotations

import pkgutil
from pathlib import Path

TASK_MODULE = "task"
"""The module of a benchmark folder that holds its ``@task``."""
UPSTREAM_MANIFEST = "upstream.tsv"
"""A benchmark's list of the authors' files it downloads (repository, commit, path, blob id)."""


def benchmarks() -> list[str]:
    """The benchmark folder names, sorted: the packages under ``tasks/`` with a ``task.py``,
    none starting with ``_``."""
    found = set()
    for info in pkgutil.iter_modules(__path__):
        if not info.ispkg or info.name.startswith("_"):
            continue
        where = getattr(info.module_finder, "path", None)
        if where is not None and (Path(where) / info.name / f"{TASK_MODULE}.py").is_file():
            found.add(info.name)
    return sorted(found)


def benchmark_folder(name: str) -> Path:
    """The folder of benchmark ``name`` (the first on the package's path that holds it)."""
    for where in __path__:
        folder = Path(where) / name
        if (folder / f"{TASK_MODULE}.py").is_file():
            return folder
    raise LookupError(f"no benchmark {name!r}: no tasks/{name}/{TASK_MODULE}.py")


def ships_its_data(name: str) -> bool:
    """Whether benchmark ``name`` carries all of its data as package data: it downloads no
    authors' files (no ``upstream.tsv``), so it has no pinned upstream copy to verify, and
    a benchmark of our own has no paper to link."""
    return not (benchmark_folder(name) / UPSTREAM_MANIFEST).is_file()
