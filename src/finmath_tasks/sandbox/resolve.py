"""The ``sandbox`` task parameter: which isolated environment runs model-written programs.

| value            | Inspect sandbox type | isolation                                          |
|------------------|----------------------|----------------------------------------------------|
| ``auto``         | first that works of: ``finmath_docker``, ``finmath_bwrap``; else an error |
| ``docker``       | ``finmath_docker``   | our container backend (docker SDK, warm worker)     |
| ``bwrap``        | ``finmath_bwrap``    | bubblewrap namespaces (warm worker)                 |
| ``inspect_docker`` | ``docker`` + our ``compose.yaml`` | Inspect's built-in Docker sandbox (Compose v2) |
| ``local``        | ``local``            | NONE: programs run as the evaluating user; explicit opt-in, warned |
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal, get_args

from inspect_ai.util import SandboxEnvironmentSpec

from finmath_tasks.errors import Unavailable

logger = logging.getLogger(__name__)

SandboxChoice = Literal["auto", "docker", "bwrap", "inspect_docker", "local"]
SANDBOX_CHOICES: tuple[str, ...] = get_args(SandboxChoice)
COMPOSE_FILE = Path(__file__).parent / "compose.yaml"

UNISOLATED_WARNING = (
    "sandbox=local: model-written programs will run WITHOUT isolation, as the user running "
    "the evaluation, with access to its files, network and environment variables."
)


class SandboxUnavailableError(Unavailable, RuntimeError):
    """No isolated sandbox can run here; the message lists the options (``inspect eval``
    prints it without a traceback)."""


def _docker() -> tuple[bool, str]:
    from finmath_tasks.sandbox.docker import docker_available

    return docker_available()


def _bwrap() -> tuple[bool, str]:
    from finmath_tasks.sandbox.bwrap import bwrap_available

    return bwrap_available()


def check_sandbox(choice: str) -> str:
    if choice not in SANDBOX_CHOICES:
        raise ValueError(f"-T sandbox={choice!r} is not one of {', '.join(SANDBOX_CHOICES)}")
    return choice


def resolve_sandbox(choice: str) -> SandboxEnvironmentSpec:
    """The Inspect sandbox spec for a ``-T sandbox=`` value."""
    check_sandbox(choice)
    if choice == "docker":
        return SandboxEnvironmentSpec("finmath_docker")
    if choice == "bwrap":
        return SandboxEnvironmentSpec("finmath_bwrap")
    if choice == "inspect_docker":
        return SandboxEnvironmentSpec("docker", str(COMPOSE_FILE))
    if choice == "local":
        logger.warning(UNISOLATED_WARNING)
        return SandboxEnvironmentSpec("local")
    docker_ok, docker_reason = _docker()
    if docker_ok:
        return SandboxEnvironmentSpec("finmath_docker")
    bwrap_ok, bwrap_reason = _bwrap()
    if bwrap_ok:
        return SandboxEnvironmentSpec("finmath_bwrap")
    raise SandboxUnavailableError(
        "No isolated sandbox is available to run model-written programs:\n"
        f"  - docker: {docker_reason} (install Docker Engine and start it)\n"
        f"  - bwrap: {bwrap_reason} (on Linux: apt-get install bubblewrap)\n"
        "Choose one with -T sandbox=docker|bwrap|inspect_docker, or -T sandbox=local to run "
        "programs WITHOUT isolation (not recommended)."
    )
