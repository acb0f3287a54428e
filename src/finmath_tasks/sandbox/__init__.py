"""Isolated execution of model-written programs.

Kept light on purpose (Inspect imports every extension's registry at start-up):
only constants and pure-path helpers live here; backends are separate modules.
"""

from __future__ import annotations

from pathlib import Path

RUNNER_PATH_IN_SANDBOX = "/opt/finmath/runner.py"
"""Where the runner lives inside every sandbox (Docker image and bwrap bind)."""

RUNNER_ARGV: tuple[str, ...] = ("python3", RUNNER_PATH_IN_SANDBOX)
"""Command that runs one program (JSON request on stdin, JSON response on stdout)."""


def runner_source_path() -> Path:
    """The runner file shipped in this package (copied/bound into sandboxes)."""
    return Path(__file__).with_name("runner.py")


__all__ = ["RUNNER_ARGV", "RUNNER_PATH_IN_SANDBOX", "runner_source_path"]
