"""Each benchmark's ``eval.yaml`` (inspect_evals' metadata): present, shipped as package
data, the task's registered name and version, and sample counts that are the loaders'.
Its shape is validated with inspect_evals' own models in test_register_entries.py."""

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
from finmath_tasks.register import inspect_evals_version
from finmath_tasks.retrieval.dense import DEFAULT_EMBEDDING_MODEL, DEFAULT_EMBEDDING_REVISION
from finmath_tasks.tasks.finqa.task import PAPER_DEV_QUESTIONS

TASKS_DIR = Path(finmath_tasks.__file__).parent / "tasks"
NAMES = BENCHMARKS
REPO = Path(__file__).resolve().parents[2]


def eval_yaml(name: str) -> dict[str, Any]:
    data = yaml.safe_load((TASKS_DIR / name / "eval.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def variants(name: str) -> list[dict[str, Any]]:
    """The samples of each -T combination (ours: inspect_evals' metadata.extras)."""
    rows = eval_yaml(name)["metadata"]["extras"]["variants"]
    assert isinstance(rows, list)
    return rows


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
    if "arxiv" in data or paper:
        arxiv = data["arxiv"]
        assert re.fullmatch(r"https://arxiv\.org/abs/\d{4}\.\d{4,5}", arxiv), arxiv
    # inspect_evals lists contributors as GitHub handles (letters, digits, inner hyphens)
    handle = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$")
    assert isinstance(data["contributors"], list), f"{name}/eval.yaml: contributors is a list"
    for who in data["contributors"]:
        assert handle.match(who), f"{name}/eval.yaml: contributor {who!r} is not a handle"
    module = task_module(name)
    version = module.TASK_VERSION
    assert data["metadata"]["extras"]["task_version"] == version, (
        f"{name}: TASK_VERSION is {version}: eval.yaml's metadata.extras.task_version too"
    )
    assert data["version"] == inspect_evals_version(version), (
        f"{name}: TASK_VERSION {version} is version {inspect_evals_version(version)!r} "
        "in eval.yaml (inspect_evals' form: major, then the minor as a letter)"
    )
    [entry] = data["tasks"]
    assert entry["name"] == name
    # the name Inspect registers the task under (finmath_tasks/<name>)
    assert registry_info(getattr(module, name)).name == f"finmath_tasks/{name}"
    # the default run's count is one of the variants: the first, with the task's defaults
    first = variants(name)[0]
    assert entry["dataset_samples"] == first["samples"]
    combinations = [
        tuple(sorted((k, str(v)) for k, v in row.items() if k != "samples"))
        for row in variants(name)
    ]
    assert len(set(combinations)) == len(combinations), f"{name}: a variant is listed twice"


def variant_cases() -> list[Any]:
    return [
        pytest.param(
            name, row, id=f"{name}-" + "-".join(str(v) for k, v in row.items() if k != "samples")
        )
        for name in NAMES
        if name != "finqa"  # the shared copy holds subsets: see the finqa test below
        # a folder without one fails test_every_benchmark_folder_has_one, named
        and (TASKS_DIR / name / "eval.yaml").is_file()
        for row in variants(name)
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
        first = {k: v for k, v in variants(name)[0].items() if k != "samples"}
        for key, value in first.items():
            default = signature.parameters[key].default
            if default is not None:  # finqa's split and mathhay's subset follow other args
                assert default == value, f"{name}: -T {key} defaults to {default!r}"


@pytest.mark.realdata
def test_finqa_counts_are_the_upstream_files(data_dir: Path) -> None:
    """The declared counts are the full upstream files'; the shared copy's subsets are
    smaller, and the agents paper's dev count is the declared dev count."""
    from finmath_tasks.tasks.finqa import finqa

    rows = {row["split"]: row["samples"] for row in variants("finqa")}
    assert rows["dev"] == PAPER_DEV_QUESTIONS
    for split, declared in rows.items():
        local = len(finqa(split=split, solver="oracle", data_dir=str(data_dir)).dataset)
        assert 0 < local <= declared


@pytest.mark.parametrize("name", NAMES)
def test_external_assets_are_the_pinned_upstream_files(name: str) -> None:
    """Every repository and commit the task downloads from (its ``upstream.tsv``, where
    each file's git blob id is pinned) is listed as a pinned direct-URL asset, as
    inspect_evals lists data fetched at run time; the only other pinned asset is the dense
    model, at the revision retrieval/dense.py loads; nothing floats."""
    if ships_its_data(name):
        assets = eval_yaml(name).get("external_assets") or []
        assert not [a for a in assets if a["type"] == "direct_url"], f"{name}: nothing fetched"
        pytest.skip(f"{name} ships its data in the package: no upstream.tsv, nothing downloaded")
    rows = [
        line.split("\t")
        for line in (TASKS_DIR / name / "upstream.tsv").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ][1:]
    fetched = {f"https://raw.githubusercontent.com/{r[0]}/{r[1]}/" for r in rows}
    assets = eval_yaml(name)["external_assets"]
    urls = {a["source"] for a in assets if a["type"] == "direct_url"}
    assert urls == fetched
    models = [a["source"] for a in assets if a["type"] == "huggingface"]
    assert models == ([DEFAULT_EMBEDDING_MODEL] if name == "knowledgefmath" else [])
    for asset in assets:
        assert asset["state"] == "pinned", asset
        if asset["type"] == "huggingface":
            assert (name, asset["source"]) == ("knowledgefmath", DEFAULT_EMBEDDING_MODEL)
            assert asset["fetch_method"] == "snapshot_download"
            assert f"revision {DEFAULT_EMBEDDING_REVISION}" in asset["comment"]
            assert "DEFAULT_EMBEDDING_FILES" in asset["comment"]
        else:
            assert asset["type"] == "direct_url"
            assert asset["fetch_method"] == "download_and_verify"
            assert re.search(r"/[0-9a-f]{40}/$", asset["source"]), asset["source"]
            assert f"tasks/{name}/upstream.tsv" in asset["comment"]
