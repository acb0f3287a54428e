"""The paths CI keeps true besides its main run: a machine without sandboxes or data
(``FINMATH_HIDE_SANDBOXES``) and the declared Inspect floor."""

from __future__ import annotations

import re
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


def test_ci_runs_the_quick_tests_with_sandboxes_and_data_hidden() -> None:
    [line] = [x for x in CI.splitlines() if x.startswith(f"{HIDE_SANDBOXES_ENV}=bwrap,docker")]
    assert "FINMATH_DATA_DIR=" in line and ".ci-empty-data" in line
    following = CI.split(line, 1)[1].lstrip()
    assert following.startswith('python -m pytest -m "not slow"')
    assert "FINMATH_REQUIRE_SANDBOXES" not in line


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
