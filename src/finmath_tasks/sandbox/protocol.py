"""The request/response protocol between the host and the program runner: its one home.

The in-sandbox side is ``runner.py`` (standard library only, copied into every
sandbox; its module docstring describes what it enforces per program). It
defines the protocol's constants and builds responses; this module is the
host's side of the same protocol, used by the warm-worker backends
(``worker.py``) and by :func:`finmath_tasks.sandbox.client.run_program`, and it
defines :class:`ProgramResult`, the only thing the rest of the package sees.

* A request is a JSON object ``{"code", "entry", "timeout", "max_output"}``,
  sent as one line to a warm worker (:func:`encode_request`) or as the stdin
  of a one-shot runner.
* A response is a JSON object of the runner's schema (:func:`valid_response`):
  ``ok``, ``value`` (a finite number when ok), ``value_type``, ``error``,
  ``stdout``, ``stderr``, ``duration_ms``, and ``returned`` / ``float_text``
  (the entry function returned without an exception; ``float()`` of a refused
  str/bool/int/float result, see ``runner.py``); a warm worker adds ``worker_seq``,
  the number of requests it has been sent (:func:`read_response`). Failures on
  the host side are answered in the same schema (:func:`error_result`).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Any

from finmath_tasks.sandbox.runner import (
    DEFAULT_ENTRY,
    DEFAULT_MAX_OUTPUT,
    DEFAULT_TIMEOUT,
    EXIT_RECYCLE,
    MAX_FLOAT_TEXT,
    MAX_TIMEOUT,
    SANDBOX_UID,
    error_response,
)

__all__ = [
    "DEFAULT_ENTRY",
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_TIMEOUT",
    "EXIT_RECYCLE",
    "MAX_RESPONSE_CHARS",
    "MAX_TIMEOUT",
    "SANDBOX_FAILURE_KEY",
    "SANDBOX_UID",
    "ProgramResult",
    "SandboxFailure",
    "encode_request",
    "error_result",
    "parse_response",
    "read_response",
    "request_timeout",
    "valid_response",
]

MAX_RESPONSE_CHARS = 8 << 20
"""A runner response longer than this is refused."""


SANDBOX_FAILURE_KEY = "sandbox_failure"
"""Set (True) on a host-side response when the sandbox itself failed (its worker died,
did not start, hung or answered garbage): no verdict on the program, which
``client.run_program`` raises as :class:`SandboxFailure`."""


class SandboxFailure(RuntimeError):
    """The sandbox failed while running a program (not the program): the sample cannot be
    scored. Under Inspect it is the sample's error (``--retry-on-error`` and ``inspect
    eval-retry`` run it again); never a wrong answer."""


def error_result(error: str, *, sandbox_failure: bool = False) -> dict[str, Any]:
    """A response in the runner's schema for failures on the host side; ``sandbox_failure``
    marks the sandbox's own failure (see :data:`SANDBOX_FAILURE_KEY`)."""
    response = error_response(error)
    if sandbox_failure:
        response[SANDBOX_FAILURE_KEY] = True
    return response


def request_timeout(request: Any) -> float:
    """A request's program timeout as the runner reads it (for the host's guard)."""
    value = request.get("timeout") if isinstance(request, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(min(value, MAX_TIMEOUT))
    return DEFAULT_TIMEOUT


def encode_request(request: dict[str, Any]) -> bytes:
    """One protocol line (raises TypeError/ValueError if not JSON-serialisable)."""
    return (json.dumps(request) + "\n").encode()


def valid_response(obj: Any) -> bool:
    """Has ``obj`` the shape of a runner response?"""
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("ok"), bool)
        and (obj.get("error") is None or isinstance(obj.get("error"), str))
        and all(
            isinstance(obj.get(k, ""), str)
            for k in ("stdout", "stderr", "value_type", "float_text")
        )
        and isinstance(obj.get("returned", False), bool)
    )


def read_response(line: bytes, seq: int) -> dict[str, Any] | None:
    """The worker's answer to its ``seq``-th request; None if it is not one."""
    try:
        response = json.loads(line)
    except ValueError:
        return None
    if not valid_response(response) or response.get("worker_seq") != seq:
        return None
    assert isinstance(response, dict)
    return response


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
    returned: bool = False
    """The entry function returned without an exception (whatever it returned)."""
    float_text: str = ""
    """``repr(float(result))`` when ``ok`` is False because the program returned a
    str, bool, int or float that the runner refuses but ``float()`` reads (e.g. the
    string "-8184.0", or NaN): for benchmarks whose reference reads results that way.
    Never the program's value in our own reading."""

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
    returned = obj.get("returned") is True
    float_text = _float_text(obj.get("float_text"))
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
        return ProgramResult(True, number, value_type, None, stdout, stderr, duration_ms, True)
    error = obj.get("error")
    if not isinstance(error, str) or not error:
        error = "program failed (no reason given)"
    return ProgramResult(
        False,
        None,
        value_type,
        error[:2000],
        stdout,
        stderr,
        duration_ms,
        returned,
        float_text if returned else "",
    )


def _float_text(value: Any) -> str:
    """A runner's ``float_text`` if it is the text of a float, else ""."""
    if not isinstance(value, str) or not value or len(value) > MAX_FLOAT_TEXT:
        return ""
    try:
        float(value)
    except ValueError:
        return ""
    return value
