"""The package's shape: shared modules name no benchmark; each benchmark is one folder."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import finmath_tasks
from benchmark_list import BENCHMARKS

PACKAGE = Path(finmath_tasks.__file__).parent
TASKS = PACKAGE / "tasks"

# Names and constants of one paper's data that shared code must not carry.
BENCHMARK_WORDS = re.compile(
    r"financemath|knowledgefmath|fmath|yale-nlp|python_solution|question_id|ground_truth"
    r"|finqa|tatqa|tat-qa|mathhay|\bsara\b"
    + "".join(rf"|\b{re.escape(name)}\b" for name in BENCHMARKS),  # and every folder's name
    re.IGNORECASE,
)


def shared_sources() -> list[Path]:
    return [
        p
        for p in PACKAGE.rglob("*")
        if p.is_file()
        and p.suffix in {".py", ".txt", ".yaml"}
        and TASKS not in p.parents
        and p.name != "_registry.py"  # one import line per benchmark, by design
    ]


def test_shared_modules_name_no_benchmark() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}"
        for path in shared_sources()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if BENCHMARK_WORDS.search(line)
    ]
    assert not offenders, "\n".join(offenders)


def test_the_check_sees_the_shared_modules() -> None:
    names = {p.name for p in shared_sources()}
    assert {"numeric.py", "comparisons.py", "extraction.py", "pot.py", "client.py"} <= names


def test_each_benchmark_is_a_folder_with_its_parts() -> None:
    folders = [p for p in TASKS.iterdir() if p.is_dir() and not p.name.startswith("_")]
    assert folders
    registry = (PACKAGE / "_registry.py").read_text()
    for folder in folders:
        if folder.name == "__pycache__":
            continue
        for part in ("__init__.py", "task.py", "dataset.py", "README.md"):
            assert (folder / part).is_file(), f"{folder.name}/{part} is missing"
        assert f"from finmath_tasks.tasks.{folder.name} import" in registry


MAX_MODULE_LINES = 800
WHOLE_FILES = {
    "sandbox/runner.py": (
        "copied or bound into every sandbox as one file and run there as a script with no "
        "import path of its own (its module docstring says why and lists its parts in order)"
    ),
}
"""Modules allowed over MAX_MODULE_LINES, with the reason they cannot be split."""


def module_lines() -> dict[str, int]:
    return {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }


def test_no_module_is_over_800_lines() -> None:
    lines = module_lines()
    assert lines, "no module found"
    over = {
        name: count
        for name, count in lines.items()
        if count > MAX_MODULE_LINES and name not in WHOLE_FILES
    }
    assert not over, f"split these by role (at most {MAX_MODULE_LINES} lines each): {over}"
    assert set(WHOLE_FILES) <= set(lines), "an exception names a module that no longer exists"


def test_the_runner_that_stays_whole_is_one_self_contained_file() -> None:
    """The reason the runner may stay whole holds: it imports nothing but the standard
    library (no sibling module it would need in the sandbox), and says so, with its parts."""
    source = (PACKAGE / "sandbox" / "runner.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"relative import in the runner (line {node.lineno})"
            imported.add((node.module or "").split(".")[0])
    assert imported and imported <= set(sys.stdlib_module_names), imported - set(
        sys.stdlib_module_names
    )
    doc = ast.get_docstring(tree) or ""
    assert "One file on purpose" in doc and "Its parts, in order" in doc
