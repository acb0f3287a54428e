"""The sandbox's one surface for the rest of the package: ``run_program`` -> ``ProgramResult``.

``await run_program(code)`` sends a runner request (``protocol``) to the current
sample's sandbox and returns a :class:`ProgramResult`:
- our ``finmath_bwrap`` and ``finmath_docker`` sandboxes take it on a warm
  worker (``WorkerSandboxEnvironment.run_request``);
- any other sandbox runs the runner as a command, ``python3
  /opt/finmath/runner.py`` with the request on stdin (Inspect's ``docker``
  sandbox with our image), or, in Inspect's ``local`` sandbox (explicit, unsafe
  opt-in), the packaged runner file with the evaluating interpreter.

Anything the program causes (nothing, garbage, a truncated or huge answer, a failed
runner, an exec timeout) becomes a ``ProgramResult`` with ``ok=False`` and a clear
``error``. The sandbox's own failure (a warm worker that died, did not start, hung or
answered garbage; an exec that raised) raises :class:`SandboxFailure`: no verdict on the
program, the sample's error instead. (Errors in looking up the sandbox itself, i.e. no
sandbox configured for the task, propagate too: a configuration error, not a program's.)

Light on purpose: importable without docker, sympy or numpy.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from finmath_tasks.sandbox import RUNNER_ARGV, runner_source_path
from finmath_tasks.sandbox.protocol import (
    DEFAULT_ENTRY,
    DEFAULT_MAX_OUTPUT,
    DEFAULT_TIMEOUT,
    SANDBOX_FAILURE_KEY,
    ProgramResult,
    SandboxFailure,
    parse_response,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "PROGRAM_RESULT_KEY",
    "ProgramResult",
    "SandboxFailure",
    "is_unisolated",
    "run_program",
]

PROGRAM_RESULT_KEY = "finmath_program_result"
"""Sample-store key of a sample's program run, as a solver records it for the scorers:
``ProgramResult.to_dict()`` plus ``program``; with a gold program, ``gold_value`` (None
when it failed), ``gold_value_type`` and ``gold_error``; with other extractions
(``solvers.pot.execute_program(alternatives=)``), ``alternatives``: name -> the run of that
extraction's program, where it differs from ``program``. Here, beside the result it records, so that
solvers (which write it) and scorers (which read it) both import it from below."""

EXEC_MARGIN = 10.0
"""Seconds the sandbox exec may take beyond the program's own timeout (start-up,
cold imports in one-shot sandboxes); the program's timeout is enforced inside.
Our warm-worker sandboxes apply the exec's timeout to the program's run only, never
to the wait for a worker (see ``worker.WorkerPool``)."""


class _InspectLocalType(type):
    """``isinstance(env, _InspectLocal)``: is ``env`` of the sandbox type Inspect registers
    as ``local``? Told by Inspect's public ``registry_info``, so no private class is
    needed on the evaluation's path; ``as_type`` sees through Inspect's sandbox proxy."""

    def __instancecheck__(cls, instance: Any) -> bool:
        from inspect_ai.util import registry_info

        try:
            info = registry_info(type(instance))
        except (ValueError, AttributeError):
            return False
        return info.type == "sandboxenv" and info.name.split("/")[-1] == "local"


class _InspectLocal(metaclass=_InspectLocalType):
    pass


def is_unisolated(sandbox_env: Any) -> bool:
    """Is ``sandbox_env`` Inspect's ``local`` sandbox (programs run WITHOUT isolation)?"""
    try:
        sandbox_env.as_type(_InspectLocal)
    except (TypeError, AttributeError):
        return False
    return True


def runner_command(sandbox_env: Any) -> list[str]:
    """The command that runs the runner in ``sandbox_env``.

    ``RUNNER_ARGV`` everywhere, except in Inspect's ``local`` sandbox, which has
    no /opt/finmath: there, this interpreter runs the packaged runner file
    (``-I``: no user site, no PYTHON* variables, no script-directory imports).
    """
    if is_unisolated(sandbox_env):
        return [sys.executable, "-I", str(runner_source_path())]
    return list(RUNNER_ARGV)


async def run_program(
    code: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    entry: str = DEFAULT_ENTRY,
    max_output: int = DEFAULT_MAX_OUTPUT,
    sandbox_name: str | None = None,
) -> ProgramResult:
    """Run ``code`` (defining ``entry()``; ``timeout`` seconds, 3 as in the reference
    evaluations) in the current sample's sandbox."""
    from inspect_ai.util import OutputLimitExceededError, sandbox

    from finmath_tasks.sandbox.worker import WorkerSandboxEnvironment

    sandbox_env = sandbox(sandbox_name) if sandbox_name else sandbox()
    request = {"code": code, "entry": entry, "timeout": timeout, "max_output": max_output}
    guard = timeout + EXEC_MARGIN
    try:
        warm = sandbox_env.as_type(WorkerSandboxEnvironment)  # type: ignore[type-abstract]
    except TypeError:
        warm = None
    if warm is not None:
        try:
            response = await warm.run_request(request, timeout=math.ceil(guard))
        except TimeoutError:
            return ProgramResult.failure(f"timeout: the sandbox did not finish within {guard:g}s")
        if response.get(SANDBOX_FAILURE_KEY):
            raise SandboxFailure(f"the sandbox failed: {response.get('error')}")
        return parse_response(json.dumps(response))
    try:
        result = await sandbox_env.exec(
            runner_command(sandbox_env),
            input=json.dumps(request),
            timeout=math.ceil(guard),
        )
    except TimeoutError:
        return ProgramResult.failure(f"timeout: the sandbox did not finish within {guard:g}s")
    except OutputLimitExceededError:
        return ProgramResult.failure("the sandbox's output limit was exceeded")
    except UnicodeDecodeError:
        return ProgramResult.failure("the sandbox returned undecodable output")
    except (OSError, RuntimeError) as exc:
        raise SandboxFailure(f"the sandbox failed: {type(exc).__name__}: {exc}") from exc
    if not result.success:
        detail = (result.stderr or result.stdout or "").strip().splitlines()[-3:]
        return ProgramResult.failure(
            f"the program runner failed (exit status {result.returncode}): "
            + (" | ".join(detail) or "no output"),
            stdout=(result.stdout or "")[-4096:],
            stderr=(result.stderr or "")[-4096:],
        )
    return parse_response(result.stdout)
