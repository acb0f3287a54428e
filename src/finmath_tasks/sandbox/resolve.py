"""Which isolated environment runs model-written programs.

A task whose solver runs programs declares :func:`default_sandbox`: the first isolated
sandbox that works here (``finmath_docker``, else ``finmath_bwrap``). The user picks
another with Inspect's own option, which replaces the task's choice for the whole run:

| ``inspect eval ... --sandbox`` | isolation                                              |
|--------------------------------|--------------------------------------------------------|
| ``finmath_docker``             | our container backend (docker SDK, warm worker)        |
| ``finmath_bwrap``              | bubblewrap namespaces (warm worker)                    |
| ``docker:<compose.yaml>``      | Inspect's built-in Docker sandbox with our compose file |
|                                | (``finmath sandbox compose-path`` prints its path)     |
| ``local``                      | NONE: programs run as the evaluating user (warned)     |

When no isolated sandbox works, the task still builds (so that ``--sandbox`` can name
one) and declares ``finmath_unavailable``, whose ``task_init`` (run by Inspect before any
sample starts, so before the first model call) stops the run with the options.

Tools that choose a sandbox by a short name (the lm-eval bridge's ``sandbox`` setting,
a benchmark's build pipeline) map it with :func:`resolve_sandbox`:

| name             | Inspect sandbox type                   |
|------------------|----------------------------------------|
| ``auto``         | :func:`default_sandbox`; an error when nothing isolated works |
| ``docker``       | ``finmath_docker``                     |
| ``bwrap``        | ``finmath_bwrap``                      |
| ``inspect_docker`` | ``docker`` + our ``compose.yaml``    |
| ``local``        | ``local`` (warned)                     |
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, get_args

from inspect_ai.util import (
    ExecResult,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentSpec,
    sandboxenv,
)

from finmath_tasks.errors import Unavailable

logger = logging.getLogger(__name__)

SandboxChoice = Literal["auto", "docker", "bwrap", "inspect_docker", "local"]
SANDBOX_CHOICES: tuple[str, ...] = get_args(SandboxChoice)
COMPOSE_FILE = Path(__file__).parent / "compose.yaml"

UNAVAILABLE = "finmath_unavailable"
"""The sandbox type a program-running task declares when no isolated sandbox works here."""

UNISOLATED_WARNING = (
    "sandbox local: model-written programs run WITHOUT isolation, as the user running "
    "the evaluation, with access to its files, network and environment variables."
)

INSPECT_OPTIONS = (
    "Choose one with Inspect's --sandbox: finmath_docker, finmath_bwrap, or "
    "docker:$(finmath sandbox compose-path) (Inspect's own Docker sandbox with our compose "
    "file); or --sandbox local to run programs WITHOUT isolation (not recommended)."
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


def _isolated() -> tuple[SandboxEnvironmentSpec | None, str]:
    """The first isolated sandbox that works here, else None and why each does not."""
    docker_ok, docker_reason = _docker()
    if docker_ok:
        return SandboxEnvironmentSpec("finmath_docker"), ""
    bwrap_ok, bwrap_reason = _bwrap()
    if bwrap_ok:
        return SandboxEnvironmentSpec("finmath_bwrap"), ""
    bwrap_hint = "" if "apt-get" in bwrap_reason else " (on Linux: apt-get install bubblewrap)"
    return None, (
        "No isolated sandbox is available to run model-written programs:\n"
        f"  - docker: {docker_reason} (install Docker Engine and start it)\n"
        f"  - bwrap: {bwrap_reason}{bwrap_hint}\n"
    )


def default_sandbox() -> SandboxEnvironmentSpec:
    """The sandbox a program-running task declares: ``finmath_docker`` if an engine answers
    with the image or its base, else ``finmath_bwrap`` if it works, else
    ``finmath_unavailable`` (the run stops when it starts, unless ``--sandbox`` names
    another). Never raises: Inspect's ``--sandbox`` replaces it."""
    found, _ = _isolated()
    return found if found is not None else SandboxEnvironmentSpec(UNAVAILABLE)


def _setting(choice: str) -> str:
    return f"sandbox={choice}"


def check_sandbox(choice: str, setting: Callable[[str], str] = _setting) -> str:
    """``choice`` if it is one of :data:`SANDBOX_CHOICES`; ``setting`` shows how the
    caller's user wrote it (the message names it)."""
    if choice not in SANDBOX_CHOICES:
        raise ValueError(f"{setting(choice)} is not one of {', '.join(SANDBOX_CHOICES)}")
    return choice


def resolve_sandbox(
    choice: str, setting: Callable[[str], str] = _setting
) -> SandboxEnvironmentSpec:
    """The Inspect sandbox spec for a short name (see the module's second table);
    ``setting`` shows how the caller's user writes a choice (messages name it)."""
    check_sandbox(choice, setting)
    if choice == "docker":
        return SandboxEnvironmentSpec("finmath_docker")
    if choice == "bwrap":
        return SandboxEnvironmentSpec("finmath_bwrap")
    if choice == "inspect_docker":
        return SandboxEnvironmentSpec("docker", str(COMPOSE_FILE))
    if choice == "local":
        logger.warning(UNISOLATED_WARNING)
        return SandboxEnvironmentSpec("local")
    found, reasons = _isolated()
    if found is None:
        others = ", ".join(setting(c) for c in ("docker", "bwrap", "inspect_docker"))
        raise SandboxUnavailableError(
            f"{reasons}Choose one with {others}, or {setting('local')} to run programs "
            "WITHOUT isolation (not recommended)."
        )
    return found


@sandboxenv(name=UNAVAILABLE)
class UnavailableSandboxEnvironment(SandboxEnvironment):
    """Declared by a program-running task built where no isolated sandbox works: Inspect
    starts a task's sandbox before any of its samples, so the run stops there, before the
    first model call, with what each sandbox lacks and the ``--sandbox`` options. Never
    runs anything."""

    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        found, reasons = _isolated()
        if found is not None:  # one became usable after the task was built
            reasons = (
                f"No isolated sandbox was available when the task was built; {found.type} "
                "works now: run again, or name it with --sandbox.\n"
            )
        raise SandboxUnavailableError(reasons + INSPECT_OPTIONS)

    @classmethod
    async def sample_init(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, metadata: dict[str, str]
    ) -> dict[str, SandboxEnvironment]:
        raise SandboxUnavailableError(_isolated()[1] + INSPECT_OPTIONS)

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        return None

    async def exec(self, *args: Any, **kwargs: Any) -> ExecResult[str]:
        raise SandboxUnavailableError(INSPECT_OPTIONS)

    async def write_file(self, file: str, contents: str | bytes) -> None:
        raise SandboxUnavailableError(INSPECT_OPTIONS)

    async def read_file(self, file: str, text: bool = True) -> Any:
        raise SandboxUnavailableError(INSPECT_OPTIONS)
