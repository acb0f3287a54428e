"""Evidence from a gold Python program for the causes of a wrong answer (benchmark-neutral).

Given the gold program (a function ``entry()`` returning the answer), the numbers its
document writes and the answers to explain, :func:`gold_findings` runs ONE probe program in
the sandbox (never in this process) that runs the gold again many times and reports only
what equals an answer:

- ``misread``: the gold with one numeric literal (an input) replaced by another number the
  document writes (as written, as a percent's fraction, with its scale word) gives the
  answer: which input (its line and text), which number;
- ``unit``: the gold with one input rescaled by a power of ten (10^-6 .. 10^6) gives it;
- ``partial``: an intermediate value of the gold (an operation's or a call's result, in the
  order computed) equals it: which step;
- ``precision``: the gold with every intermediate value rounded to 2 to 5 significant
  digits gives it (and the exact gold does not);
- ``gold_suspect``: a literal of the gold is written nowhere in the document in any form
  (:func:`is_written`: not even as a percent without its sign, basis points, 1 +/- a rate,
  or a sum, difference, product or ratio of two written numbers) and is no usual constant
  (:data:`USUAL_CONSTANTS`, small whole numbers): an assumed figure.
- ``method``: (CoT) the reply's stated calculations all hold and every operand is a number
  of the document, a usual constant or an earlier stated result; (PoT) the model's program ran and every literal it writes is written in the
  document or a usual constant.

"Equals" is the shared rule (:func:`finmath_tasks.scorers.causes.agreement`): at the
answer's written precision, the re-run as is or times 100 or /100 (a percent and its
fraction). The probe returns every re-run's value by kind, and each re-run finding carries
the expected number of chance agreements among the re-runs of its kind
(:func:`finmath_tasks.scorers.causes.chance_hits`; for a misread whose number the reply
writes, among the misreads reading a number the reply writes): the causes take a finding
over :data:`finmath_tasks.scorers.causes.CHANCE_MAX` as a candidate only, as for the golds
evaluated in process (:mod:`finmath_tasks.scorers.causes_expression`). A usual constant (a
whole number up to 12, 100, 1000, ...) is never a misread's replacement: it would mimic a
step or a rescaling. A rescaling that matches for two
exponents of the same input is no evidence (the gold saturates: a weight times 10^2 and
10^3 both give the heavier term) and is dropped. The literals, their replacements and the rewritten
sources are made here by parsing and string edits only; every execution is the probe's.
The probe runs on a warm bubblewrap pool kept for the process (:func:`run_probe`), with
the ``finmath_bwrap`` sandbox's isolation.
"""

from __future__ import annotations

import ast
import asyncio
import atexit
import contextlib
import json
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from finmath_tasks.scorers.causes import (
    GOLD_SUSPECT,
    METHOD,
    MISREAD,
    PARTIAL,
    PRECISION,
    UNIT,
    CauseInput,
    Finding,
    agreement,
    evidence,
    partial_finding,
    precision_finding,
    with_chance,
)
from finmath_tasks.scorers.causes_arithmetic import check_arithmetic, operands_of

UNIT_EXPONENTS = (-6, -3, -2, -1, 1, 2, 3, 6)
ROUNDED_DIGITS = (2, 3, 4, 5)
MAX_CANDIDATES = 400
"""Re-runs per probe (literals x document numbers, then rescalings)."""
MAX_PARTIAL = 10
"""Intermediate values of the gold named as an answer's ``partial`` (a loop repeats them)."""
FACTORS = (1.0, 100.0, 0.01)
"""A re-run equals an answer as is, or as a percent of a fraction, or the reverse."""
PROBE_TIMEOUT = 20.0
PROBE_MARK = "@@cause-probe@@"
USUAL_CONSTANTS = frozenset(
    {0.5, 0.25, 100.0, 1000.0, 252.0, 360.0, 365.0, 10000.0, 1e6, 1e9}
    | {1.28, 1.282, 1.645, 1.65, 1.96, 2.33, 2.326, 2.575, 2.576, 2.58}
)
"""Numbers a program or a reply may use that no document writes: units, day counts, the
standard normal quantiles; besides every whole number from 0 to 12 (periods, counts written
in words)."""

CONVENTIONS = frozenset({0.0, 1.0, 100.0, 1000.0, 252.0, 360.0, 365.0, 10000.0})
"""Gold literals that are units or day counts (x100 for a percent): never replaced or
rescaled, since no reading of the document stands behind them."""

_PROBE = """
import json as _json, math as _math
_GOLD = {gold!r}
_TRACED = {traced!r}
_CANDIDATES = {candidates!r}
_ENTRY = {entry!r}
_DIGITS = {digits!r}

def _number(v):
    try:
        v = float(v)
    except Exception:
        return None
    return v if _math.isfinite(v) else None

def _run(src, rounding=None):
    ns = {{"_fm_round": rounding}}
    exec(compile(src, "<gold>", "exec"), ns)
    return _number(ns[_ENTRY]())

def {entry}():
    out = {{"values": [], "trace": [], "rounded": [], "gold": None}}
    try:
        out["gold"] = _run(_GOLD)
    except Exception as e:
        out["error"] = type(e).__name__
        print("{mark} " + _json.dumps(out))
        return 0.0
    for src in _CANDIDATES:
        try:
            out["values"].append(_run(src))
        except Exception:
            out["values"].append(None)
    values = out["trace"]
    def _record(v):
        if isinstance(v, (int, float)) and not isinstance(v, bool) and len(values) < {limit}:
            n = _number(v)
            if n is not None:
                values.append(n)
        return v
    try:
        _run(_TRACED, _record)
    except Exception:
        pass
    for d in _DIGITS:
        def _r(v, d=d):
            if isinstance(v, float) and v and _math.isfinite(v):
                return round(v, d - 1 - int(_math.floor(_math.log10(abs(v)))))
            return v
        try:
            out["rounded"].append([d, _run(_TRACED, _r)])
        except Exception:
            continue
    print("{mark} " + _json.dumps(out))
    return 0.0
"""
"""The probe only runs: the gold, each candidate re-run, the gold traced (every value it
computes, in order) and the gold with its values rounded; what equals an answer is decided
here, by the shared rule."""

TRACE_VALUES = 2000
"""Intermediate values of the gold the probe reports (a loop may compute many more)."""
PROBE_OUTPUT = 1 << 18
"""Bytes of the probe's report: every re-run's value, the trace."""


class _Trace(ast.NodeTransformer):
    """Every operation's and call's result passes through ``_fm_round`` (a recorder or a
    rounding) when one is given."""

    def _wrap(self, node: ast.expr) -> ast.expr:
        return ast.Call(func=ast.Name("_fm_v", ast.Load()), args=[node], keywords=[])

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        self.generic_visit(node)
        return self._wrap(node)

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        return self._wrap(node)


_TRACE_PRELUDE = "def _fm_v(value):\n    return _fm_round(value) if _fm_round else value\n"


def traced(program: str) -> str:
    """``program`` with every intermediate value passed through ``_fm_round``."""
    tree = _Trace().visit(ast.parse(program))
    ast.fix_missing_locations(tree)
    return _TRACE_PRELUDE + ast.unparse(tree)


def program_literals(program: str) -> list[tuple[int, int, int, float, str]]:
    """The program's numeric literals: (line, start, end, value, text), in source order."""
    lines = program.splitlines()
    found = []
    for node in ast.walk(ast.parse(program)):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)
            and node.end_lineno == node.lineno
            and node.end_col_offset is not None
        ):
            line = lines[node.lineno - 1]
            text = line.encode()[node.col_offset : node.end_col_offset].decode()
            found.append(
                (node.lineno, node.col_offset, node.end_col_offset, float(node.value), text)
            )
    return sorted(found)


def _rescaled(a: float, b: float) -> bool:
    """Whether ``a`` is ``b`` times a power of ten (10^0 too): a unit, never a misread."""
    if a == 0 or b == 0:
        return a == b
    exponent = math.log10(abs(a / b))
    return abs(exponent - round(exponent)) < 1e-9 and round(exponent) in (0, *UNIT_EXPONENTS)


def _replace(program: str, literal: tuple[int, int, int, float, str], value: float) -> str:
    lines = program.splitlines()
    line, start, end = literal[0], literal[1], literal[2]
    raw = lines[line - 1].encode()
    lines[line - 1] = (raw[:start] + repr(float(value)).encode() + raw[end:]).decode()
    return "\n".join(lines)


def written_forms(numbers: Iterable[Any]) -> list[tuple[float, str]]:
    """Each document number (a :class:`finmath_tasks.variants.Written`) in the forms a
    program reads it: as written, a percent's fraction, with its scale word."""
    forms: dict[float, str] = {}
    for w in numbers:
        forms.setdefault(float(w.value), w.text)
        if w.percent:
            forms.setdefault(float(w.value) / 100, f"{w.text}%")
        if w.scale != 1.0:
            forms.setdefault(float(w.value) * w.scale, f"{w.text} (x{w.scale:g})")
    return list(forms.items())


def is_usual(value: float) -> bool:
    return (float(value).is_integer() and 0 <= value <= 12) or value in USUAL_CONSTANTS


def _close(a: float, b: float) -> bool:
    return a == b or (b != 0 and abs(a - b) <= 1e-9 * abs(b))


def _reads(value: float, written: float) -> bool:
    """Whether ``value`` is ``written`` as a program reads it: the number or its negative,
    a percent or basis points as a fraction (written without its sign, in a table under a
    "%" header), 1 + or 1 - a rate."""
    v, w = value, written
    return any(_close(abs(v), abs(x)) for x in (w, w / 100, w / 10000, w * 100)) or any(
        _close(v, 1 + x) or _close(v, 1 - x) for x in (w, w / 100)
    )


def is_written(value: float, forms: Sequence[tuple[float, str]]) -> bool:
    """Whether a program's or a reply's number is the document's (:func:`_reads`), a sum,
    difference, product or ratio of two of its numbers (a figure worked out beforehand), or
    a usual constant: a number written nowhere in none of these forms is an assumption."""
    if is_usual(abs(value)):
        return True
    values = [v for v, _ in forms]
    if any(_reads(value, v) for v in values):
        return True
    for i, a in enumerate(values):
        for b in values[i:]:
            combos = [a + b, a - b, b - a, a * b] + [x / y for x, y in ((a, b), (b, a)) if y]
            if any(_reads(value, c) for c in combos):
                return True
    return False


# --- the sandbox pool kept for the process -----------------------------------------------

_LOCK = threading.Lock()
_LOOP: asyncio.AbstractEventLoop | None = None
_POOL: Any = None


def _loop() -> tuple[asyncio.AbstractEventLoop, Any]:
    global _LOOP, _POOL
    with _LOCK:
        if _LOOP is None:
            from finmath_tasks.errors import Unavailable
            from finmath_tasks.sandbox.bwrap import bwrap_available
            from finmath_tasks.sandbox.bwrap_worker import BwrapPool

            ok, reason = bwrap_available()
            if not ok:
                raise Unavailable(f"the gold program cannot run in the sandbox: {reason}")
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, daemon=True, name="finmath-causes").start()

            async def make() -> Any:
                return BwrapPool(1)

            _POOL = asyncio.run_coroutine_threadsafe(make(), loop).result()
            _LOOP = loop
            atexit.register(_close_pool)
        return _LOOP, _POOL


def _close_pool() -> None:
    if _POOL is not None:
        with contextlib.suppress(Exception):  # the process is ending
            _POOL.kill()


async def run_probe(
    code: str, entry: str, timeout: float = PROBE_TIMEOUT, max_output: int = 16384
) -> str:
    """Run ``code`` (defining ``entry()``) on the process's warm bubblewrap pool; its stdout."""
    loop, pool = _loop()
    request = {"code": code, "entry": entry, "timeout": timeout, "max_output": max_output}
    future: Future[Any] = asyncio.run_coroutine_threadsafe(pool.run(request, timeout + 10.0), loop)
    response = await asyncio.wrap_future(future)
    if not isinstance(response, Mapping):
        raise RuntimeError("the probe's sandbox answered no record")
    stdout = str(response.get("stdout") or "")
    if PROBE_MARK not in stdout:
        raise RuntimeError(f"the probe printed no result ({response.get('error')})")
    return stdout


def _probe_result(stdout: str) -> dict[str, Any]:
    for line in reversed(stdout.splitlines()):
        if line.startswith(PROBE_MARK):
            found = json.loads(line[len(PROBE_MARK) :])
            if isinstance(found, dict):
                return found
    raise RuntimeError("the probe printed no result")


async def gold_findings(
    data: CauseInput,
    gold_program: str,
    document: str,
    entry: str = "solution",
    model_program: str | None = None,
) -> list[Finding]:
    """The findings of the gold ``gold_program`` for ``data``'s answers (see the module)."""
    from finmath_tasks.variants import find_numbers

    if not gold_program.strip():
        return []
    forms = written_forms(find_numbers(document))
    literals = program_literals(gold_program)
    candidates: list[tuple[str, list[Any]]] = []
    varied = [i for i, lit in enumerate(literals) if abs(lit[3]) not in CONVENTIONS]
    for i in varied:
        lit = literals[i]
        for value, text in forms:
            if _rescaled(value, lit[3]) or is_usual(abs(value)):
                continue  # a rescaling is a unit; 1, 100 or 1000 would mimic one, or a step
            if len(candidates) < MAX_CANDIDATES:
                candidates.append((_replace(gold_program, lit, value), [MISREAD, i, value, text]))
    for i in varied:
        lit = literals[i]
        for k in UNIT_EXPONENTS:
            if len(candidates) < MAX_CANDIDATES:
                new = lit[3] * 10.0**k
                candidates.append((_replace(gold_program, lit, new), [UNIT, i, k, new]))
    code = _PROBE.format(
        gold=gold_program,
        traced=traced(gold_program),
        candidates=[src for src, _ in candidates],
        entry=entry,
        digits=list(ROUNDED_DIGITS),
        limit=TRACE_VALUES,
        mark=PROBE_MARK,
    )
    result = _probe_result(await run_probe(code, entry, max_output=PROBE_OUTPUT))
    if result.get("error"):
        raise RuntimeError(f"the gold program raised {result['error']} in the probe")
    gold_value = result.get("gold")
    if not isinstance(gold_value, int | float):
        raise RuntimeError("the gold program returned no number in the probe")
    values = [float(v) if isinstance(v, int | float) else None for v in result.get("values") or []]
    trace = [float(v) for v in result.get("trace") or [] if isinstance(v, int | float)]
    steps = trace if len(trace) >= TRACE_VALUES else trace[:-1]  # the last is the answer
    rounded = [
        (int(d), float(v)) for d, v in result.get("rounded") or [] if isinstance(v, int | float)
    ]
    unexplained = [a for a in data.answers if agreement(gold_value, a, FACTORS) is None]
    stated = {
        round(w.value * f, 9) for w in find_numbers(data.output) for f in (1.0, 0.01, w.scale)
    }
    # each kind's re-run values: the chance neighbourhood of a finding of that kind
    tried: dict[str, list[float]] = {MISREAD: [], "stated": [], UNIT: [], PRECISION: []}
    tried[PARTIAL] = steps
    tried[PRECISION] = [v for _, v in rounded]
    misreads: list[tuple[float, int, float, str, float, str]] = []
    units: dict[tuple[int, float], list[tuple[int, float]]] = {}
    for (_, (kind, i, detail, extra)), ran in zip(candidates, values, strict=False):
        if ran is None:
            continue
        value = ran
        if kind == MISREAD:
            tried[MISREAD].append(value)
            if round(float(detail), 9) in stated:
                tried["stated"].append(value)
        else:
            tried[UNIT].append(value)
        for answer in unexplained:
            if kind == UNIT:
                if agreement(value, answer) is not None:  # a rescaling compared as is
                    units.setdefault((int(i), answer), []).append((int(detail), value))
                continue
            form = agreement(value, answer, FACTORS)
            if form is not None:
                misreads.append((answer, int(i), float(detail), str(extra), value, form))

    def stated_first(m: tuple[float, int, float, str, float, str]) -> int:
        uses = round(m[2], 9) in stated  # the reply writes the number read
        drops = round(literals[m[1]][3], 9) not in stated  # and not the input it replaces
        return 2 - uses - drops

    misreads.sort(key=stated_first)
    readings = [f"{literals[m[1]][4]} as {m[3]}" for m in misreads]
    findings: list[Finding] = []
    for answer, i, number, written, value, form in misreads:
        lit = literals[i]
        findings.append(
            Finding(
                MISREAD,
                evidence(
                    f"the gold with its input {lit[4]} (line {lit[0]}) read as {written} "
                    f"gives {value:g}, the answer",
                    input=lit[4],
                    line=lit[0],
                    number=number,
                    written=written,
                    rerun_value=value,
                    form=form,
                    stated_in_reply=round(number, 9) in stated,
                    replaced_in_reply=round(abs(lit[3]), 9) in stated,
                    readings=readings[:6],
                    gold_value=gold_value,
                ),
                value=answer,
            )
        )
    for (i, answer), matched in units.items():
        if len(matched) != 1:
            continue  # the gold saturates in this input: no evidence
        (k, value), lit = matched[0], literals[i]
        findings.append(
            Finding(
                UNIT,
                evidence(
                    f"the gold with its input {lit[4]} (line {lit[0]}) times 10^{k} "
                    f"gives {value:g}, the answer",
                    input=lit[4],
                    line=lit[0],
                    exponent=k,
                    rerun_value=value,
                    form="as is",
                    gold_value=gold_value,
                ),
                value=answer,
            )
        )
    for answer in unexplained:
        parts = 0
        for step, value in enumerate(steps, 1):
            form = agreement(value, answer, FACTORS)
            if form is not None and parts < MAX_PARTIAL:
                parts += 1
                findings.append(partial_finding(answer, step, value, form, gold_value))
        for digits, value in rounded:
            form = agreement(value, answer, FACTORS)
            if form is not None:
                findings.append(precision_finding(answer, digits, value, form, gold_value))
    findings = [with_chance(f, tried, FACTORS) for f in findings]
    unwritten = [lit for lit in literals if not is_written(lit[3], forms)]
    if unwritten:
        lit = unwritten[0]
        findings.append(
            Finding(
                GOLD_SUSPECT,
                evidence(
                    f"the gold uses {lit[4]} (line {lit[0]}), a number the question and "
                    "tables write nowhere and no usual constant",
                    input=lit[4],
                    line=lit[0],
                    unwritten=[x[4] for x in unwritten],
                ),
            )
        )
    method = _method(data, forms, model_program)
    if method is not None:
        findings.append(method)
    return findings


def _method(
    data: CauseInput,
    forms: Sequence[tuple[float, str]],
    model_program: str | None,
) -> Finding | None:
    """``method`` where the reply's (or program's) every input is accounted for."""
    if model_program is not None:
        if not (data.program or {}).get("ok"):
            return None
        try:
            used = program_literals(model_program)
        except (SyntaxError, ValueError):
            return None
        if not used or any(not is_written(lit[3], forms) for lit in used):
            return None
        return Finding(
            METHOD,
            evidence(
                "the program ran and every number it writes is the document's or a usual "
                "constant, yet its answer differs: the formula or concept",
                inputs=sorted({lit[4] for lit in used})[:12],
            ),
        )
    arithmetic = data.arithmetic or check_arithmetic(data.output)
    if arithmetic.wrong is not None or arithmetic.checked == 0:
        return None
    operands, results = operands_of(data.output)
    unaccounted = [
        v for v in operands if not is_written(v, forms) and not any(_close(v, r) for r in results)
    ]
    if unaccounted:
        return None
    return Finding(
        METHOD,
        evidence(
            f"the reply's {arithmetic.checked} stated calculations hold and every number they "
            "use is the document's, a usual constant or an earlier result, yet the answer "
            "differs: the formula or concept",
            steps_checked=arithmetic.checked,
            inputs=sorted(set(operands))[:12],
        ),
    )
