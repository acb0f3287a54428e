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
from benchmark_list import BENCHMARKS, ships_its_data
from finmath_tasks.tasks.finqa.task import PAPER_DEV_QUESTIONS

TASKS_DIR = Path(finmath_tasks.__file__).parent / "tasks"
NAMES = BENCHMARKS
REPO = Path(__file__).resolve().parents[2]
REGISTER_FIELDS = {
    "title", "description", "arxiv", "group", "contributors", "version", "tasks", "tags",
    "metadata", "external_assets", "dependency",
}  # fmt: skip
"""Top-level fields of an eval.yaml in inspect_evals 0.28 (``inspect_evals.metadata``)."""


def eval_yaml(name: str) -> dict[str, Any]:
    data = yaml.safe_load((TASKS_DIR / name / "eval.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def task_module(name: str) -> Any:
    return importlib.import_module(f"finmath_tasks.tasks.{name}.task")


def test_every_benchmark_folder_has_one() -> None:
    folders = sorted(
        p.name
        for p in TASKS_DIR.iterdir()
        if p.is_dir() and (p / "task.py").is_file() and not p.name.startswith("_")
    )
    assert folders == sorted(NAMES)
    missing = [name for name in NAMES if not (TASKS_DIR / name / "eval.yaml").is_file()]
    assert not missing, f"no eval.yaml in tasks/{', tasks/'.join(missing)}"


def test_eval_yaml_is_package_data() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["finmath_tasks"]
    assert "tasks/*/eval.yaml" in globs


@pytest.mark.parametrize("name", NAMES)
def test_fields_name_and_version(name: str) -> None:
    data = eval_yaml(name)
    # a benchmark whose data is its own (no upstream.tsv) may have no paper, so no arxiv link
    paper = () if ships_its_data(name) else ("arxiv",)
    for field in ("title", "description", "group", "contributors", "tasks", "version", *paper):
        assert data.get(field), f"{name}/eval.yaml: {field} is missing or empty"
    # the fields inspect_evals' register reads (its metadata model forbids others)
    assert set(data) <= REGISTER_FIELDS, sorted(set(data) - REGISTER_FIELDS)
    if "arxiv" in data or paper:
        arxiv = data["arxiv"]
        assert re.fullmatch(r"https://arxiv\.org/abs/\d{4}\.\d{4,5}", arxiv), arxiv
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


@pytest.mark.parametrize("name", NAMES)
def test_external_assets_are_the_pinned_upstream_files(name: str) -> None:
    """Every repository and commit the task downloads from (its ``upstream.tsv``, where
    each file's git blob id is pinned) is listed as a pinned direct-URL asset, as
    inspect_evals lists data fetched at run time; nothing else is listed as pinned."""
    if ships_its_data(name):
        assets = eval_yaml(name).get("external_assets") or []
        assert not [a for a in assets if a.get("state") == "pinned"], f"{name}: nothing fetched"
        pytest.skip(f"{name} ships its data in the package: no upstream.tsv, nothing downloaded")
    rows = [
        line.split("\t")
        for line in (TASKS_DIR / name / "upstream.tsv").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ][1:]
    fetched = {f"https://raw.githubusercontent.com/{r[0]}/{r[1]}/" for r in rows}
    assets = eval_yaml(name)["external_assets"]
    pinned = {a["source"] for a in assets if a["state"] == "pinned"}
    assert pinned == fetched
    for asset in assets:
        assert set(asset) <= {"type", "source", "fetch_method", "state", "comment", "gated"}
        if asset["state"] == "pinned":
            assert asset["type"] == "direct_url"
            assert asset["fetch_method"] == "download_and_verify"
            assert re.search(r"/[0-9a-f]{40}/$", asset["source"]), asset["source"]
            assert f"tasks/{name}/upstream.tsv" in asset["comment"]
