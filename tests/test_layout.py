"""The package's shape: shared modules name no benchmark; each benchmark is one folder."""

from __future__ import annotations

import re
from pathlib import Path

import finmath_tasks

PACKAGE = Path(finmath_tasks.__file__).parent
TASKS = PACKAGE / "tasks"

# Names and constants of one paper's data that shared code must not carry.
BENCHMARK_WORDS = re.compile(
    r"financemath|knowledgefmath|fmath|yale-nlp|python_solution|question_id|ground_truth"
    r"|finqa|tatqa|tat-qa|mathhay|\bsara\b",
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
