"""Fixtures of the command-line tests: one set of real logs shared by the report tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai.log import EvalLog

from cli.cli_logs import make_logs


@pytest.fixture(scope="session")
def scripted_logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[EvalLog]]:
    """(log directory, logs): both existing tasks, two scripted models, several settings."""
    root = tmp_path_factory.mktemp("scripted")
    logs = make_logs(root)
    return root / "logs", logs
