"""CI and the docker backend: a skipped sandbox test fails where CI requires the
sandboxes (``tests/conftest.py``), and ``scripts/docker-setup.sh`` loads the
base image from its cache instead of rebuilding it."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

SKIPPING = """
import pytest

@pytest.mark.docker
def test_needs_docker():
    pytest.skip("Docker unavailable: no engine answers")

@pytest.mark.bwrap
def test_needs_bwrap():
    pytest.skip("bubblewrap is not usable here")
"""


MARKED_ONLY = """
import pytest

@pytest.fixture
def started():
    raise RuntimeError("the fixture ran")

@pytest.mark.bwrap
def test_marked_bwrap(started):
    pass
"""


def _pytest(
    tmp: Path, required: str | None, hide: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FINMATH_REQUIRE_SANDBOXES"}
    if required is not None:
        env["FINMATH_REQUIRE_SANDBOXES"] = required
    if hide is not None:
        env["FINMATH_HIDE_SANDBOXES"] = hide
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rA",
            f"--rootdir={REPO_ROOT}",
            str(tmp / "test_skipping.py"),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@contextlib.contextmanager
def _test_file(name: str, text: str) -> Iterator[Path]:
    """A folder holding ``test_skipping.py`` with ``text``, under tests/ (to get the hooks
    of tests/conftest.py), removed afterwards."""
    tmp = Path(__file__).parent / f"_tmp_ci_{name}_{os.getpid()}"
    tmp.mkdir()
    try:
        (tmp / "test_skipping.py").write_text(text)
        yield tmp
    finally:
        for path in tmp.iterdir():
            path.unlink()
        tmp.rmdir()


@pytest.mark.slow
def test_a_required_sandbox_that_skips_fails_the_run() -> None:
    with _test_file("required", SKIPPING) as tmp:
        users = _pytest(tmp, None)
        assert users.returncode == 0 and "2 skipped" in users.stdout, users.stdout
        ci = _pytest(tmp, "docker")
        assert ci.returncode == 1, ci.stdout
        assert "1 failed, 1 skipped" in ci.stdout and "requires it" in ci.stdout, ci.stdout
        both = _pytest(tmp, "bwrap,docker")
        assert "2 failed" in both.stdout, both.stdout


@pytest.mark.slow
def test_a_bwrap_test_skips_before_its_fixtures_where_bubblewrap_cannot_run() -> None:
    with _test_file("marked", MARKED_ONLY) as tmp:
        users = _pytest(tmp, None, hide="bwrap")
        assert users.returncode == 0 and "1 skipped" in users.stdout, users.stdout
        assert "bubblewrap is not usable here: bwrap hidden by" in users.stdout, users.stdout
        assert "the fixture ran" not in users.stdout
        ci = _pytest(tmp, "bwrap", hide="bwrap")
        assert ci.returncode == 1 and "1 error" in ci.stdout, ci.stdout  # at setup
        assert "requires it" in ci.stdout, ci.stdout


def test_ci_runs_the_docker_setup_without_tolerating_its_failure() -> None:
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    setup = [line for line in ci.splitlines() if "docker-setup.sh" in line]
    assert setup and "|| {" in setup[0] and "exit 1" in ci.split(setup[0])[1].split("}")[0]
    assert "FINMATH_REQUIRE_SANDBOXES=bwrap,docker" in ci


@pytest.mark.slow
@pytest.mark.docker
def test_setup_loads_the_base_image_from_its_cache(tmp_path: Path) -> None:
    from finmath_tasks.sandbox import docker as backend
    from finmath_tasks.sandbox import docker_image

    ok, reason = backend.docker_available(refresh=True)
    if not ok:
        pytest.skip(f"Docker unavailable: {reason}")
    client = docker_image.docker_client()
    if docker_image.image_id(client, docker_image.LOCAL_BASE_IMAGE) is None:
        pytest.skip(f"no {docker_image.LOCAL_BASE_IMAGE} to cache")
    name = f"finmath-tasks/base:pytest-cache-{os.getpid()}"  # our own tag, removed below
    client.api.tag(docker_image.LOCAL_BASE_IMAGE, name.split(":")[0], name.split(":")[1])
    cache = tmp_path / "cache"
    cache.mkdir()
    subprocess.run(
        [
            "docker",
            "save",
            "-o",
            str(cache / name.replace("/", "_").replace(":", "_")) + ".tar",
            name,
        ],
        check=True,
        timeout=300,
    )
    client.api.remove_image(name)  # the tag only: the image stays under its own name
    env = {
        **os.environ,
        "FINMATH_SANDBOX_BASE_IMAGE": name,
        "FINMATH_DOCKER_CACHE": str(cache),
        "FINMATH_SKIP_SANDBOX_IMAGE": "1",
        "PYTHON": sys.executable,
    }
    try:
        proc = subprocess.run(
            ["bash", str(REPO_ROOT / "scripts" / "docker-setup.sh")],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert f"loaded {name} from {cache}" in proc.stdout, proc.stdout
        assert "debootstrap" not in proc.stdout
        assert docker_image.image_id(client, name) == docker_image.image_id(
            client, docker_image.LOCAL_BASE_IMAGE
        )
    finally:
        if docker_image.image_id(client, name) is not None:
            client.api.remove_image(name)
