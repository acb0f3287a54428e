"""Isolated execution of model-written programs.

Kept light on purpose (Inspect imports every extension's registry at start-up):
only constants and pure-path helpers live here; backends are separate modules.
"""

from __future__ import annotations

import os
from pathlib import Path

RUNNER_PATH_IN_SANDBOX = "/opt/finmath/runner.py"
"""Where the runner lives inside every sandbox (Docker image and bwrap bind)."""

RUNNER_ARGV: tuple[str, ...] = ("python3", RUNNER_PATH_IN_SANDBOX)
"""Command that runs one program (JSON request on stdin, JSON response on stdout)."""


def runner_source_path() -> Path:
    """The runner file shipped in this package (copied/bound into sandboxes)."""
    return Path(__file__).with_name("runner.py")


HIDE_SANDBOXES_ENV = "FINMATH_HIDE_SANDBOXES"
"""``FINMATH_HIDE_SANDBOXES=bwrap,docker``: treat these sandboxes as absent, as on a
machine without bubblewrap or a Docker engine (how CI checks that every test needing
one skips with the reason there). Unset: nothing is hidden."""


def hidden_sandbox(name: str) -> bool:
    """Is sandbox ``name`` (``bwrap``, ``docker``) hidden by ``FINMATH_HIDE_SANDBOXES``?"""
    names = os.environ.get(HIDE_SANDBOXES_ENV, "")
    return name in {n.strip() for n in names.split(",")}


__all__ = [
    "HIDE_SANDBOXES_ENV",
    "RUNNER_ARGV",
    "RUNNER_PATH_IN_SANDBOX",
    "hidden_sandbox",
    "runner_source_path",
]
