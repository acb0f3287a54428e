"""Each benchmark's ``eval.yaml`` (inspect_evals' metadata): present, shipped as package
data, the task's registered name and version, and sample counts that are the loaders'."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest
import tomllib
import yaml
from inspect_ai.util import registry_info

import finmath_tasks
from finmath_tasks.tasks.finqa.task import PAPER_DEV_QUESTIONS

TASKS_DIR = Path(finmath_tasks.__file__).parent / "tasks"
NAMES = ("knowledgefmath", "sara", "finqa", "tatqa", "mathhay")
REPO = Path(__file__).resolve().parents[2]


def eval_yaml(name: str) -> dict[str, Any]:
    data = yaml.safe_load((TASKS_DIR / name / "eval.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def task_module(name: str) -> Any:
    return importlib.import_module(f"finmath_tasks.tasks.{name}.task")


def test_every_benchmark_folder_has_one() -> None:
    folders = sorted(
        p.name for p in TASKS_DIR.iterdir() if p.is_dir() and (p / "task.py").is_file()
    )
    assert folders == sorted(NAMES)
    assert all((TASKS_DIR / name / "eval.yaml").is_file() for name in NAMES)


def test_eval_yaml_is_package_data() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["finmath_tasks"]
    assert "tasks/*/eval.yaml" in globs


@pytest.mark.parametrize("name", NAMES)
def test_fields_name_and_version(name: str) -> None:
    data = eval_yaml(name)
    for field in ("title", "description", "group", "contributors", "tasks", "version", "paper"):
        assert data.get(field), f"{name}/eval.yaml: {field} is missing or empty"
    # inspect_evals lists contributors as GitHub handles (letters, digits, inner hyphens)
    handle = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$")
    assert isinstance(data["contributors"], list), f"{name}/eval.yaml: contributors is a list"
    for who in data["contributors"]:
        assert handle.match(who), f"{name}/eval.yaml: contributor {who!r} is not a handle"
    module = task_module(name)
    assert data["version"] == module.TASK_VERSION, f"{name}: bump eval.yaml with TASK_VERSION"
    [entry] = data["tasks"]
    assert entry["name"] == name
    # the name Inspect registers the task under (finmath_tasks/<name>)
    assert registry_info(getattr(module, name)).name == f"finmath_tasks/{name}"
    # the default run's count is one of the variants: the first, with the task's defaults
    first = entry["variants"][0]
    assert entry["dataset_samples"] == first["samples"]
    variants = [
        tuple(sorted((k, str(v)) for k, v in row.items() if k != "samples"))
        for row in entry["variants"]
    ]
    assert len(set(variants)) == len(variants), f"{name}: a variant is listed twice"


def variant_cases() -> list[Any]:
    return [
        pytest.param(
            name, row, id=f"{name}-" + "-".join(str(v) for k, v in row.items() if k != "samples")
        )
        for name in NAMES
        if name != "finqa"  # the shared copy holds subsets: see the finqa test below
        for row in eval_yaml(name)["tasks"][0]["variants"]
    ]


@pytest.mark.realdata
@pytest.mark.parametrize(("name", "row"), variant_cases())
def test_sample_counts_are_the_loaders(name: str, row: dict[str, Any], data_dir: Path) -> None:
    args = {k: v for k, v in row.items() if k != "samples"}
    if args.get("split") != "demo":  # the demo split is packaged: no folder is read
        args["data_dir"] = str(data_dir)
    task = getattr(task_module(name), name)(**args)
    assert len(task.dataset) == row["samples"]


def test_the_default_variant_is_the_tasks_default() -> None:
    import inspect

    for name in NAMES:
        signature = inspect.signature(getattr(task_module(name), name))
        first = {
            k: v for k, v in eval_yaml(name)["tasks"][0]["variants"][0].items() if k != "samples"
        }
        for key, value in first.items():
            default = signature.parameters[key].default
            if default is not None:  # finqa's split and mathhay's subset follow other args
                assert default == value, f"{name}: -T {key} defaults to {default!r}"


@pytest.mark.realdata
def test_finqa_counts_are_the_upstream_files(data_dir: Path) -> None:
    """The declared counts are the full upstream files'; the shared copy's subsets are
    smaller, and the agents paper's dev count is the declared dev count."""
    from finmath_tasks.tasks.finqa import finqa

    rows = {row["split"]: row["samples"] for row in eval_yaml("finqa")["tasks"][0]["variants"]}
    assert rows["dev"] == PAPER_DEV_QUESTIONS
    for split, declared in rows.items():
        local = len(finqa(split=split, solver="oracle", data_dir=str(data_dir)).dataset)
        assert 0 < local <= declared
