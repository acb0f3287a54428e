"""Fixtures of the command-line tests: one set of real logs shared by the report tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai.log import EvalLog

from cli.cli_logs import make_logs
from cli.grid_logs import make_agent_logs, make_mathhay_logs
from finmath_tasks.sandbox.bwrap import bwrap_available

SANDBOXED_FIXTURES = {"scripted_logs"}
"""Fixtures that run a PoT evaluation in the bwrap sandbox: their tests are marked
``bwrap`` (they skip with the reason without bubblewrap; CI's main run requires them)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SANDBOXED_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.bwrap)


@pytest.fixture(scope="session")
def scripted_logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[EvalLog]]:
    """(log directory, logs): both existing tasks, two scripted models, several settings
    (one a PoT run in the bwrap sandbox)."""
    ok, reason = bwrap_available()
    if not ok:
        pytest.skip(f"bubblewrap unavailable: {reason} (these logs include a PoT run)")
    root = tmp_path_factory.mktemp("scripted")
    logs = make_logs(root)
    return root / "logs", logs


@pytest.fixture(scope="session")
def agent_logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[EvalLog]]:
    """(log directory, logs): FinQA and TAT-QA grid runs, two scripted models."""
    root = tmp_path_factory.mktemp("agents")
    return root / "logs", make_agent_logs(root)


@pytest.fixture(scope="session")
def mathhay_logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[EvalLog]]:
    """(log directory, logs): MathHay main-grid and depth-sweep runs, two scripted models."""
    root = tmp_path_factory.mktemp("mathhay")
    return root / "logs", make_mathhay_logs(root)
