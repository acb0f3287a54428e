"""Host-side helper for solvers: run one program in the current sample's sandbox.

``await run_program(code)`` sends a runner request (see ``runner.py``) through
``inspect_ai.util.sandbox().exec`` and parses the JSON answer into a
:class:`ProgramResult`. It works with every sandbox that has the runner at
``/opt/finmath/runner.py`` (our ``finmath_bwrap`` and ``finmath_docker``
sandboxes, Inspect's ``docker`` sandbox with our image) and with Inspect's
``local`` sandbox (explicit, unsafe opt-in), where the packaged runner file is
run with the evaluating interpreter instead.

Anything the sandbox sends back that is not a well-formed response (nothing,
garbage, a truncated or huge answer, a failed command, an exec timeout) becomes
a ``ProgramResult`` with ``ok=False`` and a clear ``error``; it never raises
for that. (A response has the shape the backends' hosts accept,
``worker.valid_response``.) (Errors in looking up the sandbox itself, i.e. no sandbox configured
for the task, do propagate: that is a configuration error, not a program's.)

Light on purpose: importable without docker, sympy or numpy.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass
from typing import Any

from finmath_tasks.sandbox import RUNNER_ARGV, runner, runner_source_path
from finmath_tasks.sandbox.worker import valid_response

DEFAULT_TIMEOUT = runner.DEFAULT_TIMEOUT
"""Per-program timeout in seconds (a 3 s alarm, as in the reference evaluations)."""
DEFAULT_MAX_OUTPUT = runner.DEFAULT_MAX_OUTPUT
EXEC_MARGIN = 10.0
"""Seconds the sandbox exec may take beyond the program's own timeout (start-up,
cold imports in one-shot sandboxes); the program's timeout is enforced inside.
Our warm-worker sandboxes apply the exec's timeout to the program's run only, never
to the wait for a worker (see ``worker.WorkerPool``)."""
MAX_RESPONSE_CHARS = 8 << 20


@dataclass(frozen=True)
class ProgramResult:
    """Outcome of one program run (mirrors the runner's JSON response)."""

    ok: bool
    value: float | None
    value_type: str = ""
    error: str | None = None
    stdout: str = ""
    stderr: str = ""
    duration_ms: float = 0.0

    @classmethod
    def failure(cls, error: str, *, stdout: str = "", stderr: str = "") -> ProgramResult:
        return cls(ok=False, value=None, error=error, stdout=stdout, stderr=stderr)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _text(obj: dict[str, Any], key: str, limit: int = 1 << 20) -> str:
    value = obj.get(key)
    return value[-limit:] if isinstance(value, str) else ""


def parse_response(text: str | bytes | None) -> ProgramResult:
    """Parse the runner's JSON answer; never raises."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not text or not text.strip():
        return ProgramResult.failure("sandbox returned no output from the program runner")
    if len(text) > MAX_RESPONSE_CHARS:
        return ProgramResult.failure(
            f"sandbox returned an oversized runner response ({len(text)} characters)"
        )
    try:
        obj = json.loads(text)
    except ValueError:
        snippet = text.strip()[:200]
        return ProgramResult.failure(f"sandbox returned an invalid runner response: {snippet!r}")
    if not valid_response(obj):
        return ProgramResult.failure("sandbox returned a runner response of the wrong shape")
    stdout, stderr = _text(obj, "stdout"), _text(obj, "stderr")
    duration = obj.get("duration_ms")
    duration_ms = float(duration) if isinstance(duration, (int, float)) else 0.0
    value_type = _text(obj, "value_type", 200)
    if obj["ok"]:
        value = obj.get("value")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return ProgramResult.failure(
                "sandbox returned ok without a numeric value", stdout=stdout, stderr=stderr
            )
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            return ProgramResult.failure(
                "sandbox returned a non-finite value", stdout=stdout, stderr=stderr
            )
        return ProgramResult(True, number, value_type, None, stdout, stderr, duration_ms)
    error = obj.get("error")
    if not isinstance(error, str) or not error:
        error = "program failed (no reason given)"
    return ProgramResult(False, None, value_type, error[:2000], stdout, stderr, duration_ms)


def is_unisolated(sandbox_env: Any) -> bool:
    """Is ``sandbox_env`` Inspect's ``local`` sandbox (programs run WITHOUT isolation)?"""
    try:
        from inspect_ai.util._sandbox.local import LocalSandboxEnvironment
    except ImportError:  # pragma: no cover - other Inspect versions
        return False
    try:
        sandbox_env.as_type(LocalSandboxEnvironment)
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
    entry: str = runner.DEFAULT_ENTRY,
    max_output: int = DEFAULT_MAX_OUTPUT,
    sandbox_name: str | None = None,
) -> ProgramResult:
    """Run ``code`` (defining ``entry()``) in the current sample's sandbox."""
    from inspect_ai.util import OutputLimitExceededError, sandbox

    sandbox_env = sandbox(sandbox_name) if sandbox_name else sandbox()
    request = {"code": code, "entry": entry, "timeout": timeout, "max_output": max_output}
    try:
        result = await sandbox_env.exec(
            runner_command(sandbox_env),
            input=json.dumps(request),
            timeout=math.ceil(timeout + EXEC_MARGIN),
        )
    except TimeoutError:
        return ProgramResult.failure(
            f"timeout: the sandbox did not finish within {timeout + EXEC_MARGIN:g}s"
        )
    except OutputLimitExceededError:
        return ProgramResult.failure("the sandbox's output limit was exceeded")
    except UnicodeDecodeError:
        return ProgramResult.failure("the sandbox returned undecodable output")
    except (OSError, RuntimeError) as exc:
        return ProgramResult.failure(f"sandbox error: {type(exc).__name__}: {exc}")
    if not result.success:
        detail = (result.stderr or result.stdout or "").strip().splitlines()[-3:]
        return ProgramResult.failure(
            f"the program runner failed (exit status {result.returncode}): "
            + (" | ".join(detail) or "no output"),
            stdout=(result.stdout or "")[-4096:],
            stderr=(result.stderr or "")[-4096:],
        )
    return parse_response(result.stdout)
