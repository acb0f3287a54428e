"""Every benchmark's eval.yaml and the register entry derived from it
(``finmath_tasks.register``) validate with inspect_evals' own metadata models, the ones
its listing and register read (``inspect_evals.metadata`` of inspect_evals 0.28.0).

inspect_evals is not a dependency of ours, and installing it into the environment the
evals run in would make every ``inspect eval`` import its registry of tasks (an
``inspect_ai`` entry point). So these tests skip where it cannot be imported, and
``.ci/run``'s lint stage installs it on its own, with ``--no-deps --target``, and runs
this file with that folder on ``PYTHONPATH``:

    pip install --no-deps --target .ci-inspect-evals inspect_evals==0.28.0
    PYTHONPATH=.ci-inspect-evals python -m pytest tests/tasks/test_register_entries.py
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

from finmath_tasks.register import (
    REPO_ROOT,
    TASK_PATH,
    TASKS_DIR,
    benchmarks,
    eval_metadata,
    eval_yaml_path,
    head_commit,
    inspect_evals_version,
    main,
    register_entry,
)

INSPECT_EVALS = "0.28.0"
REQUIRED = "FINMATH_REQUIRE_INSPECT_EVALS"
"""Set (to 1) by CI's lint stage: a missing or other inspect_evals fails instead of skipping."""
CI = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def metadata() -> Any:
    """``inspect_evals.metadata`` of inspect_evals 0.28.0 (skips where it is not installed,
    unless $FINMATH_REQUIRE_INSPECT_EVALS is set)."""
    try:
        with warnings.catch_warnings():
            # its TaskVersion validates the pydantic 1 way, which pydantic 2 deprecates
            warnings.filterwarnings(
                "ignore", "`__get_validators__` is deprecated", DeprecationWarning
            )
            models = importlib.import_module("inspect_evals.metadata")
        version = importlib.metadata.version("inspect_evals")
    except ImportError:
        if os.environ.get(REQUIRED):
            raise
        pytest.skip(
            f"inspect_evals is not installed (CI's lint stage installs {INSPECT_EVALS} with "
            "--no-deps --target .ci-inspect-evals and runs this file with "
            "PYTHONPATH=.ci-inspect-evals)"
        )
    if version != INSPECT_EVALS:
        message = (
            f"inspect_evals {version} is installed: these tests check {INSPECT_EVALS}'s models"
        )
        if os.environ.get(REQUIRED):
            pytest.fail(message)
        pytest.skip(message)
    return models


EXAMPLE_REPOSITORY = "https://github.com/finmath-dev/finmath-tasks"
"""A repository URL for the entries (the real one is given when they are written)."""
NAMES = benchmarks()


def task_module(name: str) -> Any:
    return importlib.import_module(f"finmath_tasks.tasks.{name}.task")


@pytest.fixture(scope="module")
def commit() -> str:
    if shutil.which("git") is None or not (REPO_ROOT / ".git").exists():
        pytest.skip(f"{REPO_ROOT} is not a git checkout: the entries list a commit")
    return head_commit()


def test_every_task_folder_is_covered() -> None:
    folders = sorted(p.parent.name for p in TASKS_DIR.glob("*/task.py"))
    assert folders == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_eval_yaml_is_inspect_evals_metadata(name: str, metadata: Any) -> None:
    model = metadata.InternalEvalMetadata(**eval_metadata(name))
    assert model.id == name
    assert [t.name for t in model.tasks] == [name]
    assert str(model.version) == inspect_evals_version(task_module(name).TASK_VERSION)
    runtime = model.runtime_metadata
    assert runtime is not None and runtime.requires is not None
    assert runtime.requires.internet is False
    assert runtime.extras["task_version"] == task_module(name).TASK_VERSION
    assert runtime.extras["variants"], f"{name}: metadata.extras.variants is empty"
    # inspect_evals renders the description into one README line
    assert "\n" not in model.description
    assert all(a.state == metadata.AssetState.PINNED for a in model.external_assets)


@pytest.mark.parametrize("name", NAMES)
def test_register_entry_is_inspect_evals_register_metadata(
    name: str, commit: str, metadata: Any
) -> None:
    entry = register_entry(name, EXAMPLE_REPOSITORY, commit)
    model = metadata.ExternalEvalMetadata(id=name, **entry)
    data = eval_metadata(name)
    extras = data["metadata"]["extras"]
    assert (model.full_title, model.title) == (data["title"], data["title"])
    assert (model.common_title, model.paper_title) == (
        extras["common_title"],
        extras["paper_title"],
    )
    assert (str(model.arxiv) if model.arxiv else None) == data.get("arxiv")
    assert model.description == data["description"]
    # the register's description is at most 80 words
    assert len(model.description.split()) <= 80, name
    assert model.source.repository_commit == commit
    assert model.source.maintainers == data["contributors"]
    assert model.package == "finmath-tasks"
    # one task per entry, its @task function in the file the register runs
    [task] = model.tasks
    assert task.name == name and task.task_path == TASK_PATH.format(name=name)
    assert task.dataset_samples == data["tasks"][0]["dataset_samples"]
    tree = ast.parse((REPO_ROOT / task.task_path).read_text(encoding="utf-8"))
    [function] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    assert "task" in {ast.unparse(d).split("(")[0] for d in function.decorator_list}
    assert model.runtime_metadata is not None
    assert model.runtime_metadata.extras == {}  # our own facts stay in the eval.yaml
    assert model.runtime_metadata.sandbox == data["metadata"].get("sandbox")


def test_the_written_entries_load_as_inspect_evals_listing(
    tmp_path: Path, commit: str, metadata: Any
) -> None:
    """The files ``python -m finmath_tasks.register`` writes, read back by inspect_evals'
    own listing loader beside the eval.yaml files laid out as its internal evals."""
    package = tmp_path / "src" / "inspect_evals"
    for name in NAMES:
        (package / name).mkdir(parents=True)
        shutil.copy(eval_yaml_path(name), package / name / "eval.yaml")
    out = tmp_path / "register"
    assert main(["--out", str(out), "--repository-url", EXAMPLE_REPOSITORY]) == 0
    assert sorted(p.parent.name for p in out.glob("*/eval.yaml")) == NAMES
    for name in NAMES:  # the description is one line of the file too (no hard wrapping)
        lines = (out / name / "eval.yaml").read_text(encoding="utf-8").splitlines()
        [line] = [line for line in lines if line.startswith("description: ")]
        assert yaml.safe_load(line) == {"description": eval_metadata(name)["description"]}
    listing, errors = metadata.load_listing_safe(package)
    assert errors == []
    assert [e.id for e in listing.internal_evals] == NAMES
    assert [e.id for e in listing.external_evals] == NAMES
    for external in listing.external_evals:
        assert external.source.repository_commit == commit
        assert external.path == EXAMPLE_REPOSITORY
        written = yaml.safe_load((out / external.id / "eval.yaml").read_text(encoding="utf-8"))
        assert written == register_entry(external.id, EXAMPLE_REPOSITORY, commit)


def test_no_entry_takes_the_name_of_an_inspect_evals_eval(metadata: Any) -> None:
    own = {p.parent.name for p in Path(metadata.__file__).parent.glob("*/eval.yaml")}
    assert len(own) > 100  # the package's own evals are there to compare with
    assert own.isdisjoint(NAMES)


def test_the_models_refuse_the_old_shape(metadata: Any) -> None:
    """What the eval.yaml files said before (a semantic version, variants in the task,
    ``requires_internet``) is refused by the models, so the tests above check something."""
    good = eval_metadata("finqa")
    metadata.InternalEvalMetadata(**good)
    extras = good["metadata"]["extras"]
    for change in (
        {"version": extras["task_version"]},
        {"tasks": [{**good["tasks"][0], "variants": extras["variants"]}]},
        {"metadata": {"sandbox": ["solver"], "requires_internet": False}},
    ):
        with pytest.raises(metadata.ValidationError):
            metadata.InternalEvalMetadata(**{**good, **change})
    entry = register_entry("finqa", EXAMPLE_REPOSITORY, "0" * 40)
    for missing in ("common_title", "source"):
        with pytest.raises(metadata.ValidationError):
            metadata.ExternalEvalMetadata(
                id="finqa", **{k: v for k, v in entry.items() if k != missing}
            )
    task = {k: v for k, v in entry["tasks"][0].items() if k != "task_path"}
    with pytest.raises(ValueError, match="task_path"):
        metadata.ExternalEvalMetadata(id="finqa", **{**entry, "tasks": [task]})


def test_the_command_refuses_a_commit_that_is_not_one(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--out", "unused", "--repository-url", EXAMPLE_REPOSITORY, "--commit", "main"]
    assert main(args) == 2
    assert capsys.readouterr().err == "error: --commit 'main' is not a 40-hex-digit commit\n"


def test_the_module_runs_as_a_script(tmp_path: Path, commit: str) -> None:
    done = subprocess.run(
        [
            *(sys.executable, "-m", "finmath_tasks.register", "--out", str(tmp_path)),
            *("--repository-url", EXAMPLE_REPOSITORY, "--commit", commit),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == [str(tmp_path / n / "eval.yaml") for n in NAMES]


def test_ci_validates_with_inspect_evals_on_its_own() -> None:
    """.ci/run's lint stage installs inspect_evals 0.28.0 afresh into a folder of its own
    (no dependency of ours changes; no other command sees its entry point) and runs this
    file with it, where a skip would be a failure."""
    lint = CI.split("== lint and types", 1)[1].split('echo "== tests', 1)[0]
    assert "rm -rf .ci-inspect-evals\n" in lint
    install = f"--no-deps --target .ci-inspect-evals inspect_evals=={INSPECT_EVALS}"
    assert f"python -m pip install -q {install}\n" in lint
    run = f'{REQUIRED}=1 PYTHONPATH="$PWD/.ci-inspect-evals" python -m pytest tests/tasks/test_register_entries.py'
    assert run in lint
