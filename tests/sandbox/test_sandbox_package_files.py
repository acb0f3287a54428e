"""No file of the finmath_tasks package can be read from inside a sandbox, whatever the install.

A wheel puts the package (with its data: the demo split and its golds, prompts, tables) into the
site-packages directory that also holds numpy; the bwrap sandbox used to bind that directory
whole, so a program could read the golds. Now the sandbox sees only the libraries programs
import (and the runner, bound alone): a program that walks every readable path from ``/``
(``package_scan.py``) finds no path named after the package and no file with the content of
one of its data files, through a real ``inspect eval`` on each backend (bwrap; Docker where
an engine is up) in an editable install and in a wheel install that shares numpy's
site-packages. In bwrap, every site directory of the sandbox's Python holds only the
promised libraries. The control: the same scan over the host's install finds the data.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log
from package_scan import ALLOWED_SITE_ENTRIES, PACKAGE_DIR, fingerprints, scan_program

from finmath_tasks.sandbox import RUNNER_PATH_IN_SANDBOX, bwrap_command, runner_source_path

SCAN_TASK = Path(__file__).with_name("scan_task.py")
REPO = Path(__file__).resolve().parents[2]
BACKENDS = [
    pytest.param("finmath_bwrap", marks=pytest.mark.bwrap, id="bwrap"),
    pytest.param("finmath_docker", marks=pytest.mark.docker, id="docker"),
]


def _wheel_venv(root: Path) -> tuple[Path, dict[str, str]]:
    """A venv with the package installed from a wheel into the same site-packages as the
    sandbox's libraries (hard links of this environment's copies), as ``pip install`` of
    the package gives; the rest of the dependencies from this environment, after it."""
    from test_wheel_install import _build_requirements_met, _checkout_copy

    checkout, dist, venv = root / "checkout", root / "dist", root / "venv"
    checkout.mkdir()
    _checkout_copy(checkout)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    isolation = ["--no-build-isolation"] if _build_requirements_met() else []
    pip = [sys.executable, "-m", "pip"]
    built = subprocess.run(
        [*pip, "wheel", "--no-deps", *isolation, "-w", dist, checkout],
        capture_output=True,
        text=True,
        env=env,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = dist.glob("finmath_tasks-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, env=env)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    install = subprocess.run(
        [*pip, "--python", python, "install", "--no-deps", "--no-index", wheel],
        capture_output=True,
        text=True,
        env=env,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    for ours, entries in bwrap_command.python_binds().sites:
        for entry in entries:
            subprocess.run(["cp", "-al", os.path.join(ours, entry), site], check=True)
    paths = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "zz_dependencies.pth").write_text("\n".join(paths) + "\n", encoding="utf-8")
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    where = subprocess.run(
        [
            python,
            "-c",
            "import finmath_tasks, numpy; print(finmath_tasks.__file__, numpy.__file__)",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        check=True,
    ).stdout.split()
    assert all(Path(p).is_relative_to(site) for p in where), where  # one site holds both
    assert (site / "finmath_tasks/tasks/knowledgefmath/data/demo.json").is_file()
    return python, env


@pytest.fixture(scope="module", params=["editable", "wheel"])
def install(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    if request.param == "editable":
        return Path(sys.executable), dict(os.environ)
    return _wheel_venv(tmp_path_factory.mktemp("wheel-install"))


def _docker_or_skip() -> None:
    from finmath_tasks.sandbox import docker as backend
    from finmath_tasks.sandbox import docker_image

    ok, reason = backend.docker_available(refresh=True)
    if not ok:
        pytest.skip(f"Docker unavailable: {reason}")
    try:
        docker_image.ensure_image(docker_image.docker_client(), log=lambda _line: None)
    except docker_image.DockerSandboxError as exc:
        pytest.skip(f"no sandbox image: {exc}")


def scan_in_sandbox(
    install: tuple[Path, dict[str, str]], backend: str, tmp_path: Path
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The scan, as one sample of a real ``inspect eval`` in ``backend``: (result, summary)."""
    python, env = install
    program = tmp_path / "scan.py"
    program.write_text(scan_program(90.0, ALLOWED_SITE_ENTRIES), encoding="utf-8")
    logs = tmp_path / "logs"
    shutil.copy(SCAN_TASK, tmp_path / SCAN_TASK.name)  # Inspect takes a task file under cwd
    done = subprocess.run(
        [str(python), "-m", "inspect_ai", "eval", SCAN_TASK.name, "-T", f"program={program}",
         "--sandbox", backend, "--model", "mockllm/model", "--log-dir", str(logs),
         "--display", "plain"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    [info] = list_eval_logs(str(logs))
    log = read_eval_log(info)
    assert log.status == "success", log.error
    assert log.samples is not None
    [sample] = log.samples
    assert sample.scores is not None
    result = next(iter(sample.scores.values())).metadata or {}
    assert result.get("ok") is True, result
    return result, json.loads(result["stdout"])


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_program_in_the_sandbox_finds_no_file_of_the_package(
    install: tuple[Path, dict[str, str]], backend: str, tmp_path: Path
) -> None:
    if backend == "finmath_docker":
        _docker_or_skip()
    result, summary = scan_in_sandbox(install, backend, tmp_path)
    assert summary["complete"], summary  # the whole tree was walked within the time bound
    assert summary["seen"]["files"] > 1000 and summary["seen"]["read"] > 0, summary
    assert summary["hits"] == [] and result["value"] == 0, summary
    if backend == "finmath_bwrap":  # its Python's site directories: the libraries alone
        view = bwrap_command.python_binds()
        own = {*view.masked, *(site for site, _ in view.sites)}
        assert [f for f in summary["foreign"] if f[0] in own] == [], summary["foreign"]


def test_the_scan_finds_the_package_data_on_the_host() -> None:
    """The control: run outside a sandbox over the package's folder, the same scan finds
    each of its data files (by name and by content), e.g. the demo split with its golds."""
    namespace: dict[str, Any] = {}
    exec(scan_program(), namespace)  # our own program, on the host
    found = namespace["scan"]([str(PACKAGE_DIR.parent)], 60.0)
    demo = PACKAGE_DIR / "tasks" / "knowledgefmath" / "data" / "demo.json"
    assert found["complete"] and str(demo) in found["hits"]
    assert len(fingerprints()) >= 20


def test_the_bwrap_command_binds_nothing_of_the_package() -> None:
    """No bind but the runner's (one file, at its own path) names the package; every site
    directory the sandbox's Python would read is masked or made, with only the libraries
    bound into it."""
    argv = bwrap_command.bwrap_base_argv(bwrap_command.BwrapOptions(), bwrap_command.WORKER_CAPS)
    binds = [argv[i + 1 : i + 3] for i, arg in enumerate(argv) if arg == "--ro-bind"]
    runner = [str(runner_source_path()), RUNNER_PATH_IN_SANDBOX]
    assert runner in binds
    ours = [b for b in binds if b != runner and any("finmath_tasks" in p for p in b)]
    assert len(binds) > 5 and ours == [], binds
    view = bwrap_command.python_binds()
    assert view.sites, "no library found to bind"
    for site, entries in view.sites:
        assert {e.split("-")[0].split(".")[0] for e in entries} <= set(ALLOWED_SITE_ENTRIES)
        if any(bwrap_command.under(site, root) for root in view.roots):
            assert site in view.masked
    pairs = set(itertools.pairwise(argv))
    for masked in view.masked:
        assert ("--tmpfs", masked) in pairs and ("--remount-ro", masked) in pairs, masked
