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

"Equals" is within half a unit of the answer's last significant digit, relative, between
:data:`MIN_MATCH_TOL` and :data:`MAX_MATCH_TOL` (:func:`answer_tolerance`), the answer as
given or times 100 or /100 (a percent and its fraction). A rescaling that matches for two
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
    UNIT,
    CauseInput,
    Finding,
    evidence,
    partial_finding,
    precision_finding,
)
from finmath_tasks.scorers.causes_arithmetic import check_arithmetic, operands_of

MIN_MATCH_TOL = 5e-4
MAX_MATCH_TOL = 5e-3
UNIT_EXPONENTS = (-6, -3, -2, -1, 1, 2, 3, 6)
ROUNDED_DIGITS = (2, 3, 4, 5)
MAX_CANDIDATES = 400
"""Re-runs per probe (literals x document numbers, then rescalings)."""
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
_ANSWERS = {answers!r}
_TOL = {tol!r}
_ENTRY = {entry!r}
_DIGITS = {digits!r}

def _same(v, a):
    try:
        v = float(v)
    except Exception:
        return None
    if not _math.isfinite(v):
        return None
    tol = _TOL.get(repr(a), 5e-4)
    for form, f in (("as is", 1.0), ("x100", 100.0), ("/100", 0.01)):
        w = v * f
        if a == w or (a != 0 and abs(w - a) <= tol * abs(a)):
            return form
    return None

def _run(src, rounding=None):
    ns = {{"_fm_round": rounding}}
    exec(compile(src, "<gold>", "exec"), ns)
    return ns[_ENTRY]()

def {entry}():
    out = {{"matches": [], "partial": [], "precision": [], "gold": None}}
    try:
        gold = float(_run(_GOLD))
        out["gold"] = gold
    except Exception as e:
        out["error"] = type(e).__name__
        print("{mark} " + _json.dumps(out))
        return 0.0
    for index, src in enumerate(_CANDIDATES):
        try:
            value = _run(src)
        except Exception:
            continue
        for a in _ANSWERS:
            form = _same(value, a)
            if form and _same(gold, a) is None:
                out["matches"].append([index, a, float(value), form])
        if len(out["matches"]) > 30:
            break
    values = []
    def _record(v):
        if isinstance(v, (int, float)) and not isinstance(v, bool) and len(values) < 5000:
            values.append(float(v))
        return v
    try:
        _run(_TRACED, _record)
    except Exception:
        pass
    for step, v in enumerate(values[:-1], 1):
        for a in _ANSWERS:
            form = _same(v, a)
            if form and _same(gold, a) is None and [a, step, v, form] not in out["partial"]:
                out["partial"].append([a, step, v, form])
        if len(out["partial"]) > 10:
            break
    for d in _DIGITS:
        def _r(v, d=d):
            if isinstance(v, float) and v and _math.isfinite(v):
                return round(v, d - 1 - int(_math.floor(_math.log10(abs(v)))))
            return v
        try:
            value = _run(_TRACED, _r)
        except Exception:
            continue
        for a in _ANSWERS:
            form = _same(value, a)
            if form and _same(gold, a) is None:
                out["precision"].append([a, d, float(value), form])
    print("{mark} " + _json.dumps(out))
    return 0.0
"""


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


def answer_tolerance(answer: float) -> float:
    """Half a unit of the answer's last significant digit, relative (within bounds)."""
    if answer == 0 or not math.isfinite(answer):
        return MIN_MATCH_TOL
    digits = f"{abs(answer):.12g}".split("e")[0].replace(".", "").strip("0")
    rel = 0.5 * 10.0 ** (1 - max(len(digits), 1))
    return min(max(rel, MIN_MATCH_TOL), MAX_MATCH_TOL)


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


async def run_probe(code: str, entry: str, timeout: float = PROBE_TIMEOUT) -> str:
    """Run ``code`` (defining ``entry()``) on the process's warm bubblewrap pool; its stdout."""
    loop, pool = _loop()
    request = {"code": code, "entry": entry, "timeout": timeout, "max_output": 16384}
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
            if not _rescaled(value, lit[3]) and len(candidates) < MAX_CANDIDATES:
                candidates.append((_replace(gold_program, lit, value), ["misread", i, value, text]))
    for i in varied:
        lit = literals[i]
        for k in UNIT_EXPONENTS:
            if len(candidates) < MAX_CANDIDATES:
                new = lit[3] * 10.0**k
                candidates.append((_replace(gold_program, lit, new), ["unit", i, k, new]))
    code = _PROBE.format(
        gold=gold_program,
        traced=traced(gold_program),
        candidates=[src for src, _ in candidates],
        answers=list(data.answers),
        tol={repr(a): answer_tolerance(a) for a in data.answers},
        entry=entry,
        digits=list(ROUNDED_DIGITS),
        mark=PROBE_MARK,
    )
    result = _probe_result(await run_probe(code, entry))
    if result.get("error"):
        raise RuntimeError(f"the gold program raised {result['error']} in the probe")
    findings: list[Finding] = []
    matches = [  # a rescaled input compared as is (the percent forms are rescalings too)
        m
        for m in result.get("matches") or []
        if candidates[int(m[0])][1][0] != "unit" or m[3] == "as is"
    ]
    rescaled: dict[tuple[Any, ...], int] = {}
    for index, answer, _, _ in matches:
        kind, i = candidates[int(index)][1][:2]
        rescaled[(kind, i, answer)] = rescaled.get((kind, i, answer), 0) + 1
    # where several readings give the answer, the first named is one whose number the reply
    # itself writes and whose replaced input it does not (it computed with the one, not the
    # other); the others are listed beside it
    stated = {
        round(w.value * f, 9) for w in find_numbers(data.output) for f in (1.0, 0.01, w.scale)
    }

    def stated_first(m: list[Any]) -> tuple[int, int]:
        kind, i, detail = candidates[int(m[0])][1][:3]
        if kind != "misread":
            return (2, int(m[0]))
        uses = round(float(detail), 9) in stated  # the reply writes the number read
        drops = round(literals[int(i)][3], 9) not in stated  # and not the input it replaces
        return (2 - uses - drops, int(m[0]))

    matches.sort(key=stated_first)
    readings = [
        f"{literals[int(candidates[int(m[0])][1][1])][4]} as {candidates[int(m[0])][1][3]}"
        for m in matches
        if candidates[int(m[0])][1][0] == "misread"
    ]
    for index, answer, value, form in matches:
        kind, i, detail, extra = candidates[int(index)][1]
        if kind == "unit" and rescaled[(kind, i, answer)] > 1:
            continue  # the gold saturates in this input: no evidence
        lit = literals[int(i)]
        where = {"input": lit[4], "line": lit[0], "gold_value": result.get("gold")}
        if kind == "misread":
            findings.append(
                Finding(
                    MISREAD,
                    evidence(
                        f"the gold with its input {lit[4]} (line {lit[0]}) read as {extra} "
                        f"gives {value:g}, the answer",
                        number=detail,
                        written=extra,
                        rerun_value=value,
                        form=form,
                        stated_in_reply=round(float(detail), 9) in stated,
                        readings=readings[:6],
                        **where,
                    ),
                    value=float(answer),
                )
            )
        else:
            findings.append(
                Finding(
                    UNIT,
                    evidence(
                        f"the gold with its input {lit[4]} (line {lit[0]}) times 10^{detail} "
                        f"gives {value:g}, the answer",
                        exponent=detail,
                        rerun_value=value,
                        form=form,
                        **where,
                    ),
                    value=float(answer),
                )
            )
    for answer, step, value, form in result.get("partial") or []:
        findings.append(partial_finding(float(answer), step, value, form, result.get("gold")))
    for answer, digits, value, form in result.get("precision") or []:
        findings.append(precision_finding(float(answer), digits, value, form, result.get("gold")))
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
    method = _method(data, forms, result, model_program)
    if method is not None:
        findings.append(method)
    return findings


def _method(
    data: CauseInput,
    forms: Sequence[tuple[float, str]],
    result: Mapping[str, Any],
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
