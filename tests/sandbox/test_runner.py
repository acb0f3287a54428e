"""The in-sandbox runner: value rules, error reasons, request validation, modes.

The value rules are tested twice: in-process on ``convert_value`` (exact and
fast) and end to end through the warm bwrap worker (what solvers really get).
The one-shot mode is exercised with benign programs only, as it runs without
isolation on the test host.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sympy
from attacks import GOLD, GOLD_VALUE
from eval_programs import eval_programs

from finmath_tasks.sandbox import RUNNER_ARGV, runner, runner_source_path
from finmath_tasks.sandbox.client import runner_command
from finmath_tasks.sandbox.protocol import ProgramResult, parse_response

# --------------------------------------------------------------------------- #
# convert_value (in-process)
# --------------------------------------------------------------------------- #


class _FloatSub(float):
    pass


class _IntSub(int):
    pass


class _Float64Sub(np.float64):
    pass


class _Hostile:
    """Every conversion hook records that it was called."""

    calls: list[str] = []  # noqa: RUF012 - test bookkeeping

    def __float__(self) -> float:
        self.calls.append("__float__")
        return 1.0

    def __index__(self) -> int:
        self.calls.append("__index__")
        return 1

    def __int__(self) -> int:
        self.calls.append("__int__")
        return 1

    def __reduce__(self) -> Any:
        self.calls.append("__reduce__")
        return (print, ("pwned",))

    def __repr__(self) -> str:
        self.calls.append("__repr__")
        return "1.0"


ACCEPTED = [
    (3, 3.0, "int"),
    (-2.5, -2.5, "float"),
    (np.float64(1.25), 1.25, "numpy.float64"),
    (np.float32(0.5), 0.5, "numpy.float32"),
    (np.int64(-7), -7.0, "numpy.int64"),
    (np.uint8(200), 200.0, "numpy.uint8"),
    (np.longdouble(2.5), 2.5, "numpy.longdouble"),
    (sympy.Integer(12), 12.0, "sympy.core.numbers.Integer"),
    (sympy.Integer(0), 0.0, "sympy.core.numbers.Zero"),
    (sympy.Integer(-1), -1.0, "sympy.core.numbers.NegativeOne"),
    (sympy.Rational(1, 2), 0.5, "sympy.core.numbers.Half"),
    (sympy.Rational(1, 3), 1 / 3, "sympy.core.numbers.Rational"),
    (sympy.Float("1.5"), 1.5, "sympy.core.numbers.Float"),
    (10**300, 1e300, "int"),
]


@pytest.mark.parametrize(("value", "expected", "tname"), ACCEPTED)
def test_convert_accepts_exact_number_types(value: object, expected: float, tname: str) -> None:
    result = runner.convert_value(value)
    assert result["ok"] is True, result
    assert result["value"] == pytest.approx(expected, rel=1e-15)
    assert type(result["value"]) is float
    assert result["value_type"] == tname
    assert result["error"] is None


REJECTED = [
    ("12", "returned str, not a number"),
    (None, "returned NoneType, not a number"),
    ([1.0], "returned list, not a number"),
    ((1.0,), "returned tuple, not a number"),
    ({"a": 1}, "returned dict, not a number"),
    (True, "returned bool, not a number"),
    (np.bool_(True), "returned numpy.bool, not a number"),
    (1 + 2j, "returned complex, not a number"),
    (np.complex128(1), "returned numpy.complex128, not a number"),
    (np.array(3.0), "returned numpy.ndarray, not a number"),
    (np.array([1.0, 2.0]), "returned numpy.ndarray, not a number"),
    (Fraction(1, 3), "returned fractions.Fraction, not a number"),
    (_FloatSub(1.5), "_FloatSub, not a number"),
    (_IntSub(2), "_IntSub, not a number"),
    (_Float64Sub(1.5), "_Float64Sub, not a number"),
    (sympy.sqrt(2), "returned sympy.core.power.Pow, not a number"),
    (sympy.pi, "returned sympy.core.numbers.Pi, not a number"),
    (sympy.Symbol("x"), "not a number"),
    (math.nan, "returned NaN"),
    (math.inf, "infinite value"),
    (-math.inf, "infinite value"),
    (np.float64("nan"), "returned NaN"),
    (np.longdouble("1e400"), "infinite value"),
    (sympy.oo, "not a number"),
    (sympy.nan, "not a number"),
    (sympy.zoo, "not a number"),
    (10**400, "int too large to convert to float"),
    (sympy.Integer(10**400), "too large to convert to float"),
    (sympy.Rational(10**400, 3), "too large to convert to float"),
]


@pytest.mark.parametrize(("value", "reason"), REJECTED)
def test_convert_rejects_everything_else_with_a_reason(value: object, reason: str) -> None:
    result = runner.convert_value(value)
    assert result["ok"] is False
    assert result["value"] is None
    assert reason in result["error"]


@pytest.mark.parametrize(
    ("value", "float_text"),
    [
        ("-8184.0", "-8184.0"),  # read with float() by references that do so
        (" 12.5 ", "12.5"),
        ("abc", ""),
        (True, "1.0"),
        (math.nan, "nan"),
        (-math.inf, "-inf"),
        (10**400, ""),
        (np.float64("nan"), ""),  # not an exact builtin: never converted
        ([1.0], ""),
        (None, ""),
        ("1" * 5000, ""),  # too long to read
    ],
)
def test_refused_results_carry_their_float_text(value: object, float_text: str) -> None:
    result = runner.convert_value(value)
    assert result["ok"] is False and result["value"] is None
    assert result["returned"] is True and result["float_text"] == float_text


def test_convert_never_calls_methods_of_unknown_objects() -> None:
    _Hostile.calls.clear()
    result = runner.convert_value(_Hostile())
    assert result["ok"] is False
    assert "not a number" in result["error"]
    assert _Hostile.calls == []


def test_convert_ignores_a_hostile_metaclass() -> None:
    calls: list[str] = []

    class Meta(type):
        def __getattribute__(cls, name: str) -> Any:
            calls.append(name)
            return super().__getattribute__(name)

        def __hash__(cls) -> int:
            calls.append("__hash__")
            return 1

        def __eq__(cls, other: object) -> bool:
            calls.append("__eq__")
            return True

    class Weird(metaclass=Meta):
        pass

    calls.clear()
    result = runner.convert_value(Weird())
    assert result["ok"] is False and "Weird (defined by" not in result["error"]
    assert "Weird" in result["error"]
    assert calls == []


def test_convert_sympy_classes_must_be_the_real_ones() -> None:
    class FakeInteger:
        p, q = 5, 1

    fake = {FakeInteger: "int"}  # as if sys.modules had been tampered with
    assert runner.convert_value(FakeInteger(), fake)["ok"] is True  # trusts what it is given
    assert runner.convert_value(FakeInteger())["ok"] is False  # the real classes by default


def test_describe_exception_reasons() -> None:
    assert runner.describe_exception(NameError("name 'x' is not defined")) == (
        "NameError: name 'x' is not defined"
    )
    assert runner.describe_exception(MemoryError()) == "memory limit exceeded (MemoryError)"
    assert runner.describe_exception(ZeroDivisionError("division by zero")).startswith(
        "ZeroDivisionError"
    )

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise ValueError("no")

    assert "<unprintable exception>" in runner.describe_exception(Unprintable())
    assert len(runner.describe_exception(ValueError("x" * 10_000))) <= runner.MAX_ERROR_CHARS


# --------------------------------------------------------------------------- #
# request validation and the parent's view of the child's result
# --------------------------------------------------------------------------- #


def test_parse_request_defaults_and_errors() -> None:
    req = runner.parse_request({"code": "x"})
    assert req == {"code": "x", "entry": "solution", "timeout": 3.0, "max_output": 8192}
    assert runner.parse_request({"code": "x", "max_output": 10**9})["max_output"] == (
        runner.MAX_MAX_OUTPUT
    )
    for bad, reason in [
        ([], "JSON object"),
        ({}, "'code'"),
        ({"code": 1}, "'code'"),
        ({"code": "", "entry": "a b"}, "identifier"),
        ({"code": "", "entry": "import os"}, "identifier"),
        ({"code": "", "timeout": "3"}, "timeout"),
        ({"code": "", "timeout": True}, "timeout"),
        ({"code": "", "timeout": 0}, "timeout"),
        ({"code": "", "timeout": 10_000}, "timeout"),
        ({"code": "", "max_output": -1}, "max_output"),
    ]:
        with pytest.raises(runner.BadRequest, match=reason):
            runner.parse_request(bad)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"garbage",
        b"[]",
        b'{"ok": true}',
        b'{"ok": true, "value": "1"}',
        b'{"ok": true, "value": true}',
        b'{"ok": true, "value": NaN}',
        b'{"ok": true, "value": 1e999}',
        b'{"ok": "yes", "value": 1}',
        b'{"ok": false}',
        b'{"ok": true, "value": 1}' + b" " * runner.MAX_RESULT_BYTES,
    ],
)
def test_validate_child_result_rejects_malformed(raw: bytes) -> None:
    assert runner.validate_child_result(raw) is None


def test_validate_child_result_accepts_schema() -> None:
    ok = runner.validate_child_result(b'{"ok": true, "value": 2, "value_type": "int"}')
    assert ok == {
        "ok": True,
        "value": 2.0,
        "value_type": "int",
        "error": None,
        "returned": True,
        "float_text": "",
    }
    # a refused result that returned: float_text passes only as the text of a float
    for text, kept in (("-8184.0", "-8184.0"), ("nan", "nan"), ("1; rm -rf", ""), ("9" * 99, "")):
        raw = json.dumps(
            {"ok": False, "error": "e", "value_type": "str", "returned": True, "float_text": text}
        ).encode()
        refused = runner.validate_child_result(raw)
        assert refused is not None and refused["returned"] is True
        assert refused["float_text"] == kept and refused["value"] is None
    bad = runner.validate_child_result(b'{"ok": false, "error": "' + b"e" * 5000 + b'"}')
    assert bad is not None and len(bad["error"]) <= runner.MAX_ERROR_CHARS


def test_tail_keeps_the_end_and_counts_the_rest() -> None:
    tail = runner._Tail(10)
    for _ in range(1000):
        tail.add(b"0123456789abc")
    text = tail.text()
    assert text.endswith("456789abc") and len(text.splitlines()[-1]) == 10
    assert text.startswith(f"[... {13 * 1000 - 10} bytes truncated ...]")
    assert runner._Tail(0).text() == ""


# --------------------------------------------------------------------------- #
# client-side parsing (bad/empty/huge output never raises)
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (None, "no output"),
        ("", "no output"),
        ("   \n", "no output"),
        ("Traceback (most recent call last):", "invalid runner response"),
        ('{"ok": true, "value": 1', "invalid runner response"),
        ("[1, 2]", "wrong shape"),
        ('{"ok": 1}', "wrong shape"),
        ('{"ok": true, "value": "3"}', "without a numeric value"),
        ('{"ok": true, "value": 1e999}', "non-finite"),
        ("x" * (9 << 20), "oversized"),
        ('{"ok": false}', "no reason given"),
    ],
)
def test_client_parse_response_failures(text: str | None, reason: str) -> None:
    result = parse_response(text)
    assert isinstance(result, ProgramResult)
    assert result.ok is False and result.value is None
    assert reason in (result.error or "")


def test_client_parse_response_success() -> None:
    result = parse_response(
        json.dumps({"ok": True, "value": 2, "value_type": "int", "error": None,
                    "stdout": "hi\n", "stderr": "", "duration_ms": 4.5})
    )  # fmt: skip
    assert result == ProgramResult(True, 2.0, "int", None, "hi\n", "", 4.5, returned=True)
    # a refused result: returned, its float_text kept only when it is the text of a float
    for text, kept in (("-8184.0", "-8184.0"), ("x", "")):
        refused = parse_response(
            json.dumps({"ok": False, "value": None, "value_type": "str", "error": "e",
                        "returned": True, "float_text": text})
        )  # fmt: skip
        assert (refused.ok, refused.value, refused.returned, refused.float_text) == (
            False, None, True, kept
        )  # fmt: skip


def test_runner_constants_and_local_command() -> None:
    assert runner_source_path().is_file()
    assert runner_command(object()) == list(RUNNER_ARGV)
    from finmath_tasks._inspect_private import LocalSandboxEnvironment

    local = LocalSandboxEnvironment()
    try:
        assert runner_command(local) == [sys.executable, "-I", str(runner_source_path())]
    finally:
        local.directory.cleanup()


def test_runner_module_is_stdlib_only() -> None:
    path = str(runner_source_path())
    code = (
        f"import runpy, sys\nrunpy.run_path({path!r}, run_name='finmath_runner')\n"
        "print(sorted(m for m in ('numpy', 'sympy', 'scipy', 'finmath_tasks', 'inspect_ai')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- #
# one-shot mode (cold subprocess, benign programs only: no isolation here)
# --------------------------------------------------------------------------- #


def _oneshot(request: Any, *args: str) -> dict[str, Any]:
    data = request if isinstance(request, bytes) else json.dumps(request).encode()
    proc = subprocess.run(
        [sys.executable, str(runner_source_path()), *args],
        input=data,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_oneshot_runs_a_gold_program() -> None:
    resp = _oneshot({"code": GOLD})
    assert resp["ok"] is True and resp["value"] == GOLD_VALUE
    assert set(resp) == {
        "ok",
        "value",
        "value_type",
        "error",
        "stdout",
        "stderr",
        "duration_ms",
        "returned",
        "float_text",
    }
    assert resp["returned"] is True and resp["float_text"] == ""
    refused = _oneshot({"code": 'def solution():\n    return "-8184.0"\n'})
    assert refused["ok"] is False and refused["value"] is None
    assert (refused["returned"], refused["float_text"]) == (True, "-8184.0")
    raised = _oneshot({"code": "def solution():\n    raise ValueError\n"})
    assert (raised["returned"], raised["float_text"]) == (False, "")


def test_oneshot_reports_errors_and_bad_requests() -> None:
    resp = _oneshot({"code": "def solution():\n    return missing_name\n"})
    assert resp["ok"] is False
    assert resp["error"] == "NameError: name 'missing_name' is not defined"
    assert "line 2, in solution" in resp["stderr"]
    assert _oneshot(b"{not json")["error"].startswith("bad request: invalid JSON")
    assert _oneshot({"code": 5})["error"] == "bad request: 'code' must be a string"


def test_oneshot_timeout_and_sympy_import_inside_program() -> None:
    resp = _oneshot({"code": "def solution():\n    while True: pass", "timeout": 0.5})
    assert resp == {**resp, "ok": False, "error": "timeout after 0.5s"}
    code = "import sympy\ndef solution():\n    return sympy.Rational(3, 4)"
    resp = _oneshot({"code": code, "timeout": 30})
    assert resp["ok"] is True and resp["value"] == 0.75


def test_oneshot_ignores_modules_shadowing_the_stdlib(tmp_path: Path) -> None:
    # Run as a script, Python would import a sibling select.py/json.py instead of
    # the standard library's (the package itself ships a select.py).
    (tmp_path / "runner.py").write_bytes(runner_source_path().read_bytes())
    for name in ("select", "json", "signal"):
        (tmp_path / f"{name}.py").write_text("raise ImportError('shadowed stdlib module')\n")
    proc = subprocess.run(
        [sys.executable, str(tmp_path / "runner.py")],
        input=json.dumps({"code": GOLD}).encode(),
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["value"] == GOLD_VALUE


def test_run_program_with_inspects_local_sandbox(tmp_path: Path) -> None:
    """The explicit, unsafe ``local`` sandbox runs the packaged runner (benign code)."""
    samples = [(GOLD, repr(GOLD_VALUE)), ("def solution():\n    return 'x'", "error:str")]
    eval_programs(samples, "local", tmp_path)


# --------------------------------------------------------------------------- #
# end to end through the warm bwrap worker
# --------------------------------------------------------------------------- #


@pytest.fixture(scope="module")
def warm() -> Iterator[Any]:
    from finmath_tasks.sandbox.bwrap_worker import BwrapWorker

    loop = asyncio.new_event_loop()
    worker = BwrapWorker()
    loop.run_until_complete(worker.start())

    def run(code: str, **extra: Any) -> dict[str, Any]:
        return loop.run_until_complete(worker.run({"code": code, **extra}))

    yield run
    loop.run_until_complete(worker.close())
    loop.close()


WORKER_CASES = [
    (GOLD, True, GOLD_VALUE, "float"),
    ("import numpy as np\ndef solution():\n    return np.float64(2.5)", True, 2.5, "numpy.float64"),
    ("import numpy as np\ndef solution():\n    return np.sum([1, 2])", True, 3.0, "numpy.int64"),
    ("import numpy_financial as npf\ndef solution():\n    return npf.npv(0.1, [-100, 60, 60])",
     True, -100 + 60 / 1.1 + 60 / 1.21, "numpy.float64"),
    ("import sympy\ndef solution():\n    return sympy.Rational(1, 8)", True, 0.125,
     "sympy.core.numbers.Rational"),
    ("import sympy as sp\ndef solution():\n    x = sp.Symbol('x')\n"
     "    return sp.solve(sp.Eq(2 * x, 3), x)[0]", True, 1.5, "sympy.core.numbers.Rational"),
    ("from scipy import stats, optimize\ndef solution():\n"
     "    return optimize.brentq(lambda r: r - stats.norm.cdf(0), 0, 1)", True, 0.5, "float"),
    ("def solution():\n    return '12'", False, None, "solution() returned str, not a number"),
    ("def solution():\n    return None", False, None, "returned NoneType, not a number"),
    ("def solution():\n    return float('nan')", False, None, "solution() returned NaN"),
    ("def solution():\n    return 10 ** 400", False, None, "int too large to convert to float"),
    ("def solution():\n    return True", False, None, "solution() returned bool, not a number"),
    ("import sympy\ndef solution():\n    return sympy.sqrt(2)", False, None, "sympy.core.power.Pow"),
    ("def answer():\n    return 1", False, None, "no function named 'solution'"),
    ("solution = 3", False, None, "'solution' is not a function but int"),
    ("def solution(:\n    pass", False, None, "SyntaxError"),
    ("def solution():\n    return 1 / 0", False, None, "ZeroDivisionError: division by zero"),
    ("import sys\ndef solution():\n    sys.exit(3)", False, None, "SystemExit: 3"),
    ("import os\ndef solution():\n    os._exit(4)", False, None,
     "program exited with status 4 before returning a result"),
    ("def solution():\n    return solution()", False, None, "RecursionError"),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.bwrap
@pytest.mark.parametrize(("code", "ok", "value", "detail"), WORKER_CASES)
def test_worker_value_rules(warm: Any, code: str, ok: bool, value: float, detail: str) -> None:
    resp = warm(code)
    assert resp["ok"] is ok, resp
    if ok:
        assert resp["value"] == pytest.approx(value, rel=1e-12)
        assert resp["value_type"] == detail
        assert resp["error"] is None
    else:
        assert resp["value"] is None
        assert detail in resp["error"], resp


@pytest.mark.bwrap
def test_worker_entry_and_output_capture(warm: Any) -> None:
    code = (
        "import sys\ndef main():\n    print('to stdout')\n"
        "    print('to stderr', file=sys.stderr)\n    return 7"
    )
    resp = warm(code, entry="main")
    assert resp["ok"] is True and resp["value"] == 7.0
    assert resp["stdout"] == "to stdout\n" and resp["stderr"] == "to stderr\n"
    resp = warm("def solution():\n    print('x' * 5000)\n    return 1", max_output=100)
    assert resp["stdout"].startswith("[... 4901 bytes truncated ...]\n")
    assert resp["stdout"].endswith("x" * 99 + "\n")


@pytest.mark.bwrap
def test_worker_bad_request_keeps_worker(warm: Any) -> None:
    resp = warm("x", timeout="soon")
    assert resp["ok"] is False and resp["error"].startswith("bad request:")
    assert warm(GOLD)["value"] == GOLD_VALUE


@pytest.mark.skipif(os.geteuid() != 0, reason="programs' processes are set up as root")
def test_worker_start_check_of_fresh_namespaces(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker sets up one program's process at start: where fresh namespaces
    are impossible, it says why (and does not start) instead of failing every program."""
    import shutil
    import tempfile

    root = tempfile.mkdtemp(dir="/tmp")  # reachable by uid 65534
    try:
        os.chmod(root, 0o755)
        args = runner.build_arg_parser().parse_args(
            ["--worker", "--require-drop", "--fresh-namespaces", f"--tmp-root={root}"]
        )
        cfg = runner.Config(args)
        assert runner._check_fresh_namespaces(cfg) == ""  # possible on this host
        assert os.listdir(root) == []

        def refuse(workdir: str) -> None:
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(runner, "_enter_fresh_namespaces", refuse)
        problem = runner._check_fresh_namespaces(cfg)
        assert problem == "PermissionError: [Errno 1] Operation not permitted"
    finally:
        shutil.rmtree(root)
