"""Shared fixtures.

Our tasks provision the offline tiktoken encodings that Inspect's mockllm
needs; tests that build their own tasks get them here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import finmath_tasks._registry  # noqa: F401
from finmath_tasks.tiktoken_offline import ensure_tiktoken_encodings

ensure_tiktoken_encodings()

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"


def real_data_dir() -> Path | None:
    """FINMATH_DATA_DIR, else ../shared/data beside the repository; None when absent."""
    chosen = os.environ.get("FINMATH_DATA_DIR")
    path = Path(chosen) if chosen else DEFAULT_DATA_DIR
    return path if path.is_dir() else None


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
