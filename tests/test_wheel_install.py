"""The package as a user installs it: a wheel built from the checkout, installed WITHOUT
``-e`` into a fresh virtual environment, runs the demo, a program-of-thought sample in the
sandbox, ``finmath published`` and ``finmath lm-eval path``.

An editable install reads every file from the checkout, so a data file left out of the
wheel (a prompt, the demo split, a published table, the sandbox's runner or compose file,
an lm-eval configuration) goes unnoticed until a user installs the wheel: here the
package's files come from the wheel alone. The new environment gets its dependencies from
the environment running the tests (a path line in a ``.pth`` file: no download, and that
environment's own install of this package, editable or not, stays out of reach).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "finmath_tasks"


@dataclass(frozen=True)
class Installed:
    checkout: Path
    wheel: Path
    venv: Path
    env: dict[str, str]
    workdir: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args),
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.workdir,
            timeout=timeout,
        )


def _checkout_copy(target: Path) -> None:
    """The files a clean clone holds (git's list when there is one), nothing built."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "src", "pyproject.toml", "README.md"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    files = [f for f in listed.stdout.split("\0") if f] if listed.returncode == 0 else []
    if not files:  # no git: the source tree without caches and build leftovers
        files = [
            str(p.relative_to(REPO))
            for p in (REPO / "src").rglob("*")
            if p.is_file()
            and "__pycache__" not in p.parts
            and not any(part.endswith(".egg-info") for part in p.parts)
        ] + ["pyproject.toml", "README.md"]
    for name in files:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target / name)


def _build_requirements_met() -> bool:
    """Does this environment hold ``[build-system] requires`` (setuptools' floor, ...)?"""
    import importlib.metadata

    import tomllib
    from packaging.requirements import Requirement

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    for line in pyproject["build-system"]["requires"]:
        requirement = Requirement(line)
        try:
            installed = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            return False
        if not requirement.specifier.contains(installed, prereleases=True):
            return False
    return True


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("wheel")
    checkout, dist, venv, workdir = (root / n for n in ("checkout", "dist", "venv", "work"))
    for folder in (checkout, dist, workdir):
        folder.mkdir()
    _checkout_copy(checkout)
    # nothing from the caller's PYTHONPATH (a source tree) may stand in for the wheel
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    python = [sys.executable, "-m", "pip"]
    # offline when this environment has the build backend pyproject asks for; else pip
    # fetches it into an isolated build environment (CI has PyPI)
    isolation = [] if not _build_requirements_met() else ["--no-build-isolation"]
    build = subprocess.run(
        [*python, "wheel", "--no-deps", *isolation, "-w", dist, checkout],
        capture_output=True,
        text=True,
        env=env,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    [wheel] = dist.glob("finmath_tasks-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, env=env)
    new_python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(new_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        ).stdout.strip()
    )
    install = subprocess.run(
        [*python, "--python", str(new_python), "install", "--no-deps", "--no-index", wheel],
        capture_output=True,
        text=True,
        env=env,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    # then the dependencies (after the install: pip would take this environment's copy of
    # the package for the wheel's): this environment's site-packages, after the new one's own
    paths = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "zz_dependencies.pth").write_text("\n".join(paths) + "\n", encoding="utf-8")
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env.pop("FINMATH_DATA_DIR", None)  # the demo and the tables need no benchmark data
    where = subprocess.run(
        [str(new_python), "-c", f"import {PACKAGE}; print({PACKAGE}.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=workdir,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(site), f"{PACKAGE} imported from {where}, not the wheel"
    return Installed(checkout, wheel, venv, env, workdir)


def test_the_wheel_carries_every_file_of_the_package(installed: Installed) -> None:
    source = installed.checkout / "src"
    expected = {
        str(p.relative_to(source))
        for p in (source / PACKAGE).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    with zipfile.ZipFile(installed.wheel) as wheel:
        carried = {n for n in wheel.namelist() if n.startswith(f"{PACKAGE}/")}
    assert not expected - carried, "not in the wheel (package-data in pyproject.toml):\n" + (
        "\n".join(sorted(expected - carried))
    )
    # the kinds of file the tasks and tools read, each present (so the set above is real)
    for needed in (
        "finmath_tasks/tasks/knowledgefmath/data/demo.json",
        "finmath_tasks/tasks/knowledgefmath/published.tsv",
        "finmath_tasks/sandbox/compose.yaml",
        "finmath_tasks/sandbox/runner.py",
    ):
        assert needed in carried, needed
    assert any(n.startswith("finmath_tasks/tasks/") and "/prompts/" in n for n in carried)
    assert any("/lm_eval/" in n and n.endswith(".yaml") for n in carried)


def _one_log(log_dir: Path) -> tuple[str, dict[str, float]]:
    [info] = list_eval_logs(str(log_dir))
    log = read_eval_log(info)
    assert log.results is not None, log.error
    return log.status, {s.name: s.metrics["accuracy"].value for s in log.results.scores}


def test_the_demo_runs_from_the_wheel(installed: Installed, tmp_path: Path) -> None:
    proc = installed.run(
        str(installed.bin / "python"), "-m", "inspect_ai", "eval",
        "finmath_tasks/knowledgefmath", "-T", "split=demo", "-T", "solver=oracle",
        "--model", "mockllm/model", "--log-dir", str(tmp_path), "--display", "none",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    status, accuracy = _one_log(tmp_path)
    assert status == "success"
    assert accuracy == {"financemath": 1.0, "knowledgefmath2023": 1.0, "tolerant": 1.0}


@pytest.mark.bwrap
def test_a_pot_oracle_sample_runs_in_the_sandbox_from_the_wheel(
    installed: Installed, tmp_path: Path
) -> None:
    proc = installed.run(
        str(installed.bin / "python"), "-m", "inspect_ai", "eval",
        "finmath_tasks/knowledgefmath", "-T", "split=demo", "-T", "solver=oracle_pot",
        "--sandbox", "finmath_bwrap", "--limit", "1",
        "--model", "mockllm/model", "--log-dir", str(tmp_path), "--display", "none",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    status, accuracy = _one_log(tmp_path)
    assert status == "success"
    assert accuracy == {
        "financemath": 1.0,
        "knowledgefmath2023": 1.0,
        "tolerant": 1.0,
        "execution_rate": 1.0,  # the gold program ran in the sandbox
        "strict_execution_rate": 1.0,
    }


def test_finmath_published_from_the_wheel(installed: Installed) -> None:
    proc = installed.run(str(installed.bin / "finmath"), "published")
    assert proc.returncode == 0, proc.stderr[-3000:]
    from finmath_tasks.cli.published import benchmarks_with_published

    declared = benchmarks_with_published()  # from the source tree: the wheel must ship them
    assert declared
    for benchmark in declared:
        assert f"# {benchmark}: published results" in proc.stdout, benchmark
    assert proc.stdout.count("\n| ") > 50  # table rows, read from the wheel's TSV files


def test_finmath_lm_eval_path_from_the_wheel(installed: Installed, tmp_path: Path) -> None:
    pytest.importorskip("lm_eval", reason="needs the lm-eval extra (pip install -e '.[lm-eval]')")
    env = {**installed.env, "FINMATH_LM_EVAL_CONFIGS": str(tmp_path)}
    proc = subprocess.run(
        [str(installed.bin / "finmath"), "lm-eval", "path"],
        capture_output=True,
        text=True,
        env=env,
        cwd=installed.workdir,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    folder = Path(proc.stdout.strip())
    assert folder.is_relative_to(tmp_path), folder
    with zipfile.ZipFile(installed.wheel) as wheel:
        shipped = sorted(
            "/".join(n.split("/")[-3::2])  # <benchmark>/<name>.yaml
            for n in wheel.namelist()
            if "/lm_eval/" in n and n.startswith(f"{PACKAGE}/tasks/") and n.endswith(".yaml")
        )
    copied = sorted(str(p.relative_to(folder)) for p in folder.rglob("*.yaml"))
    assert shipped and copied == shipped
