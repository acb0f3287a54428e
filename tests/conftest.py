"""Shared fixtures and hooks.

Inspect's mockllm counts tokens with tiktoken, which downloads its encodings: the suite
points TIKTOKEN_CACHE_DIR (for itself and its ``inspect eval`` subprocesses) at a fresh
folder holding the bundled copies (``finmath_tasks.tiktoken_offline.write_cache``).

``FINMATH_REQUIRE_SANDBOXES=bwrap,docker`` (set by ``.ci/run``'s main run): a test
marked with one of these sandboxes (``@pytest.mark.bwrap``/``docker``) that skips (no
engine, no image, no bubblewrap) fails instead, so CI cannot pass with a sandbox
untested. Unset (users, CI's runs through ``scripts/without-sandboxes.sh``), they
skip with the reason.

The suite runs on several workers (pytest-xdist, ``-n auto --dist loadgroup``): every
test that starts Docker containers, and every test of the sandboxes themselves, runs on
one worker, one after another, because some of them look at all of our containers or
processes (a cleanup test removes every container of ours, a load test counts them).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

import finmath_tasks._registry  # noqa: F401
from finmath_tasks.tiktoken_offline import write_cache

# The suite never reaches the real internet: a task that would download its benchmark
# files asks a closed local port (the discard port) instead of raw.githubusercontent.com,
# and keeps what it gets in a fresh folder, not the user's cache. Tests that serve the
# files themselves set their own mirror (tests/upstream_mirror.py). Set here, at import,
# so that `inspect eval` subprocesses inherit it.
os.environ["FINMATH_DATA_MIRROR"] = "http://127.0.0.1:9"
os.environ["FINMATH_CACHE_DIR"] = tempfile.mkdtemp(prefix="finmath-test-cache-")
atexit.register(shutil.rmtree, os.environ["FINMATH_CACHE_DIR"], ignore_errors=True)
os.environ["TIKTOKEN_CACHE_DIR"] = tempfile.mkdtemp(prefix="finmath-test-tiktoken-")
atexit.register(shutil.rmtree, os.environ["TIKTOKEN_CACHE_DIR"], ignore_errors=True)
write_cache(Path(os.environ["TIKTOKEN_CACHE_DIR"]))

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"


def real_data_dir() -> Path | None:
    """FINMATH_DATA_DIR, else ../shared/data beside the repository; None when absent."""
    chosen = os.environ.get("FINMATH_DATA_DIR")
    path = Path(chosen) if chosen else DEFAULT_DATA_DIR
    # an empty directory is no data either (a placeholder, or FINMATH_DATA_DIR set to one)
    return path if path.is_dir() and any(path.iterdir()) else None


def _required_data_dir() -> Path:
    path = real_data_dir()
    if path is None:
        pytest.skip(
            "real benchmark data not found: set FINMATH_DATA_DIR or place it at ../shared/data"
        )
    return path


@pytest.fixture
def data_dir() -> Path:
    """The real benchmark data (tests using it are marked ``realdata``)."""
    return _required_data_dir()


@pytest.fixture(scope="session")
def session_data_dir() -> Path:
    """``data_dir`` for module- and session-scoped fixtures (test modules cannot import
    from ``conftest``: several conftest modules share that name in one run)."""
    return _required_data_dir()


@pytest.fixture
def no_data_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests that must not pick up FINMATH_DATA_DIR from the environment."""
    monkeypatch.delenv("FINMATH_DATA_DIR", raising=False)


REQUIRED = {
    name.strip() for name in os.environ.get("FINMATH_REQUIRE_SANDBOXES", "").split(",") if name
}


def _required_skip(report: Any, names: set[str]) -> bool:
    return bool(report.skipped and not hasattr(report, "wasxfail") and REQUIRED & names)


def _fail(report: Any) -> None:
    report.outcome = "failed"
    report.longrepr = (
        f"skipped, but FINMATH_REQUIRE_SANDBOXES={','.join(sorted(REQUIRED))} requires it: "
        f"{report.longrepr}"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``bwrap`` skips, with the reason, where bubblewrap cannot run a
    sandboxed command, before any of its fixtures starts (one check for every such test;
    under ``FINMATH_REQUIRE_SANDBOXES=bwrap`` the skip is a failure)."""
    if item.get_closest_marker("bwrap"):
        from finmath_tasks.sandbox.bwrap import bwrap_available

        ok, reason = bwrap_available()
        if not ok:
            pytest.skip(f"bubblewrap is not usable here: {reason}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if _required_skip(report, {mark.name for mark in item.iter_markers()}):
        _fail(report)


SANDBOX_TESTS = Path(__file__).resolve().parent / "sandbox"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Docker tests and the sandbox tests share one xdist worker (see the module doc)."""
    for item in items:
        if item.get_closest_marker("docker") or SANDBOX_TESTS in item.path.parents:
            item.add_marker(pytest.mark.xdist_group("sandboxes"))


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    """A whole module skipped at import (``allow_module_level``): its name tells the
    sandbox (``test_bwrap_*``, ``test_docker_*``)."""
    outcome = yield
    report = outcome.get_result()
    names = {n for n in REQUIRED if n in collector.path.name}
    if isinstance(collector, pytest.Module) and _required_skip(report, names):
        _fail(report)
