"""A new benchmark folder is covered by the shared checks with no list edited.

A copy of the source tree (``src/``, ``tests/``, ``docs/``, the README and the project
files) gets ``tasks/toyfin/``, built from ``tests/benchmark_template/toyfin/`` (a tiny
benchmark whose data is package data only), with its ``_registry.py`` line and its row in
the README's table of tasks, as docs/architecture.md ("Adding a benchmark") asks. The shared
checks then run in the copy, in a subprocess (the real tree is never changed):

- those that judge a benchmark from its own folder pass for it (its eval.yaml, README,
  registration, parameters, its task file run by ``inspect eval``, its scorers on bad model
  outputs), and the upstream checks skip with the reason (as the no-setup download check
  and the grid's resume check, toyfin having no ``grid.py``);
- those that keep hand entries for the benchmarks whose values they assert (re-scoring, the
  report's identities) pass too: with no entry, toyfin runs its task at its defaults,
  answered with each sample's target (``tests/benchmark_list.py``);
- with its ``eval.yaml``, ``README.md`` and data file removed and its registry line left
  out, the checks fail naming it and what is missing (a task that does not build: what to
  declare in its own folder).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.realdata]  # the shared checks read the data

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = Path(__file__).resolve().parent / "benchmark_template" / "toyfin"
COPIED = ("src", "tests", "docs", "scripts", ".ci", "README.md", "pyproject.toml")
IGNORED = shutil.ignore_patterns("__pycache__", "*.egg-info", ".pytest_cache", "*.pyc")
REGISTRY_LINE = "from finmath_tasks.tasks.toyfin import toyfin\n"
README_ROW = (
    "| `toyfin` | none (a template of our own) | four finance questions shipped with the "
    "package | [README](src/finmath_tasks/tasks/toyfin/README.md) |\n"
)

SHARED_CHECKS = [
    "tests/tasks/test_eval_yaml.py",
    "tests/test_docs.py",
    "tests/test_identity.py",
    "tests/test_unused_settings.py",
    "tests/test_layout.py",
    "tests/test_task_files.py",
    "tests/cli/test_cli_published.py",
    "tests/scorers/test_task_scorers_bad_outputs.py",
    "tests/scorers/test_rescore.py",
    "tests/cli/test_cli_report_identity.py",
    "tests/cli/test_cli_resume_tasks.py",
    "tests/test_no_setup.py",
]
"""Test modules that run over the benchmarks; in the copy only their tests that are about
toyfin or about every benchmark at once run (``-k``)."""
ABOUT_TOYFIN = (
    "toyfin or every_benchmark_folder_has_one or readme_lists_every_benchmark or "
    "registered_tasks_are_the_benchmarks or rules_name_parameters or "
    "each_benchmark_is_a_folder or declares_its_papers_numbers"
)


@dataclass(frozen=True)
class Outcome:
    test: str
    result: str
    """passed, failed, error or skipped."""
    message: str


def _copy_tree(root: Path) -> Path:
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=IGNORED)
        else:
            shutil.copy2(source, root / name)
    return root


def _add_toyfin(root: Path, *, registered: bool = True, drop: tuple[str, ...] = ()) -> Path:
    folder = root / "src" / "finmath_tasks" / "tasks" / "toyfin"
    shutil.copytree(TEMPLATE, folder, ignore=IGNORED)
    for name in drop:
        (folder / name).unlink()
    if registered:
        registry = root / "src" / "finmath_tasks" / "_registry.py"
        registry.write_text(registry.read_text(encoding="utf-8") + REGISTRY_LINE)
    readme = root / "README.md"
    lines = readme.read_text(encoding="utf-8").splitlines(keepends=True)
    last_row = max(i for i, line in enumerate(lines) if line.startswith("| `"))
    readme.write_text("".join([*lines[: last_row + 1], README_ROW, *lines[last_row + 1 :]]))
    return folder


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(root / "src")  # before the editable install's path
    return env


def _run_checks(root: Path) -> dict[str, Outcome]:
    report = root / "report.xml"
    command = [sys.executable, "-m", "pytest", *SHARED_CHECKS, "-k", ABOUT_TOYFIN, "-q",
               "-p", "no:cacheprovider", f"--junitxml={report}"]  # fmt: skip
    done = subprocess.run(
        command, cwd=root, env=_env(root), capture_output=True, text=True, timeout=900
    )
    assert report.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    outcomes = {}
    for case in ET.parse(report).iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        result, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            found = case.find(kind)
            if found is not None:
                result = "failed" if kind == "failure" else kind
                message = f"{found.get('message') or ''}\n{found.text or ''}"
        outcomes[test] = Outcome(test, result, message)
    assert outcomes, done.stdout[-3000:] + done.stderr[-3000:]
    return outcomes


def _only(outcomes: dict[str, Outcome], part: str) -> list[Outcome]:
    found = [o for t, o in outcomes.items() if part in t]
    assert found, f"no test matching {part!r} ran: {sorted(outcomes)}"
    return found


def test_the_copy_imports_the_package_from_the_copy(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    _add_toyfin(root)
    done = subprocess.run(
        [sys.executable, "-c", "import finmath_tasks.tasks as t; print(t.__file__, t.benchmarks())"],
        env=_env(root), capture_output=True, text=True, timeout=120, cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    where, names = done.stdout.split(" ", 1)
    assert Path(where).is_relative_to(root)
    assert "'toyfin'" in names and "'knowledgefmath'" in names
    assert not (REPO / "src" / "finmath_tasks" / "tasks" / "toyfin").exists()


def test_a_new_folder_is_covered_by_the_shared_checks(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    _add_toyfin(root)
    outcomes = _run_checks(root)
    # judged from its own folder: passes
    for part in (
        "test_eval_yaml::test_every_benchmark_folder_has_one",
        "test_eval_yaml::test_fields_name_and_version[toyfin]",
        "test_eval_yaml::test_sample_counts_are_the_loaders[toyfin-demo]",
        "test_docs::test_readme_lists_every_benchmark_with_its_readme",
        "test_docs::test_task_readme_follows_the_template[toyfin]",
        "test_docs::test_task_readme_parameters_table_names_every_parameter[toyfin]",
        "test_identity::test_the_registered_tasks_are_the_benchmarks",
        "test_identity::test_every_parameter_is_identity_or_listed_with_its_reason[finmath_tasks/toyfin]",
        "test_unused_settings::test_the_rules_name_parameters_of_their_task",
        "test_layout::test_each_benchmark_is_a_folder_with_its_parts",
        "test_task_files::test_a_task_runs_from_its_task_file[toyfin]",
        "test_cli_published::test_every_benchmark_declares_its_papers_numbers",
        "test_task_scorers_bad_outputs::test_a_bad_model_output_never_raises_from_a_tasks_scorers[toyfin]",
    ):  # fmt: skip
        for outcome in _only(outcomes, part):
            assert outcome.result == "passed", (outcome.test, outcome.message[-2000:])
    # the authors' files: none, so the check skips and says why
    [assets] = _only(outcomes, "test_external_assets_are_the_pinned_upstream_files[toyfin]")
    assert assets.result == "skipped" and "toyfin ships its data" in assets.message
    [download] = _only(
        outcomes, "test_no_setup_run_equals_the_data_folder_run_and_then_runs_offline[toyfin]"
    )
    assert download.result == "skipped" and "toyfin ships its data" in download.message
    # no grid.py (optional): finmath grid does not run it, and its resume check says so
    [grid] = _only(outcomes, "test_finmath_grid_twice_makes_no_model_call_the_second_time[toyfin]")
    assert grid.result == "skipped" and "toyfin declares no grid" in grid.message, grid
    # the checks that keep hand entries for the other benchmarks: toyfin, with none, runs
    # at its defaults answered with its targets, and passes
    for part in (
        "test_rescore::test_inspect_score_rebuilds_every_scorer_and_reproduces_every_metric[toyfin]",
        "test_cli_report_identity::test_each_setting_is_its_own_run_labelled_by_its_difference[toyfin]",
        "test_cli_report_identity::test_paired_rows_only_on_the_same_data_unless_asked[toyfin]",
    ):  # fmt: skip
        for outcome in _only(outcomes, part):
            assert outcome.result == "passed", (outcome.test, outcome.message[-2000:])
    # no report layout (no grid.py): finmath report's generic table still labels each run
    # (repeat 1/2, other settings, other data) and gives the mean of the repeats
    [tables] = _only(outcomes, "test_the_tables_keep_every_run_and_give_the_repeats_mean[toyfin]")
    assert tables.result == "passed", (tables.test, tables.message[-2000:])


def test_a_new_folder_missing_its_parts_fails_the_checks_naming_it(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    _add_toyfin(root, registered=False, drop=("eval.yaml", "README.md", "data/demo.json"))
    outcomes = _run_checks(root)
    expected = {
        "test_eval_yaml::test_every_benchmark_folder_has_one": "no eval.yaml in tasks/toyfin",
        "test_layout::test_each_benchmark_is_a_folder_with_its_parts": "toyfin/README.md is missing",
        "test_docs::test_task_readme_follows_the_template[toyfin]": "toyfin/README.md",
        "test_identity::test_the_registered_tasks_are_the_benchmarks": "['toyfin']",
        # no data: no generic run can be built, and the failure says what to declare
        "test_rescore::test_inspect_score_rebuilds_every_scorer_and_reproduces_every_metric[toyfin]":
            "no re-scoring run for benchmark toyfin: its task does not build",
        "test_rescore::test_inspect_score_rebuilds_every_scorer_and_reproduces_every_metric[toyfin] ":
            "SHARED_TEST_ARGS in tasks/toyfin/task.py",
    }  # fmt: skip
    for part, says in expected.items():
        [outcome] = _only(outcomes, part.strip())
        assert outcome.result in ("failed", "error"), outcome
        assert says in outcome.message, (part, outcome.message[-2000:])
