"""The inputs a wrong answer computed with: invented numbers, and a program traced against
the gold (benchmark-neutral).

- **Invented data** (``misread``): the reply's inputs are the operands of its stated
  calculations that no earlier step produced (:attr:`ArithmeticCheck.inputs`); a model
  program's are its numeric literals. An input is accounted for (:func:`accounted`) when it
  is a usual constant; the document's number in a form a program reads it (as written, a
  percent's fraction, basis points, 1 +/- a rate; within the input's shown digits); a sum,
  difference, product or ratio of two document numbers; a literal or an intermediate value
  of the gold (a discount factor the gold computes too); an earlier result of the reply
  (as it stated it); or a compound factor of a document rate (``(1+r)^n``, its inverse, the
  annuity factors, per period ``r/m``). The first input accounted for in none of these
  ways is invented: the evidence names it and its step (or line).
- **A program traced as the gold is** (PoT): one probe in the sandbox runs the gold and the
  model's program with every operation's and call's value recorded; their inputs (the
  literals) are set against each other (the gold's inputs the program leaves out, the
  numbers it uses the gold does not) and the first step of the program whose value no step
  of the gold computes is where they part (its expression, its value). That trace is
  attached to a ``method`` finding's evidence, and to an invented input's. A gold that is
  no program (arithmetic evaluated in process) is given as its values instead
  (:class:`GoldValues`: its inputs and intermediate values); the probe then runs the
  model's program only.

Every execution is the probe's, on the warm bubblewrap pool of
:mod:`finmath_tasks.scorers.causes_gold`; this module parses and compares.
"""

from __future__ import annotations

import ast
import bisect
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from finmath_tasks.scorers.causes import METHOD, MISREAD, CauseInput, Finding, evidence
from finmath_tasks.scorers.causes_arithmetic import EXACT_DIGITS, _significant, check_arithmetic
from finmath_tasks.scorers.causes_gold import (
    CONVENTIONS,
    PROBE_MARK,
    _probe_result,
    is_usual,
    is_written,
    program_literals,
    run_probe,
    written_forms,
)

PERIODS = (*range(1, 121), 180, 240, 360)
"""Exponents of the compound factors a rate may be raised to."""
PER_YEAR = (1.0, 2.0, 4.0, 12.0, 52.0, 360.0, 365.0)
"""Periods a year a rate may be divided into."""
TRACE_LIMIT = 150
"""Distinct values recorded per program in the trace probe."""
TRACE_TIMEOUT = 10.0
SAME_REL = 1e-6
"""Two traced values are the same quantity within this relative difference."""
PROBE_ENTRY = "_fm_trace_probe"
NEAR_REL = 0.01
"""An input within this relative distance of a number the reply stated before, or of one
of its powers, is no invented one (a value worked out in the head, with a slip: 1.0834 for
1.0208^4)."""

_TRACE_PROBE = """
import json as _json, math as _math
_SOURCES = {sources!r}
_ENTRY = {entry!r}

def _run(src, sink):
    def _fm_t(value, label):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and len(sink) < 20000:
            v = float(value)
            if _math.isfinite(v):
                sink.append((label, v))
        return value
    ns = {{"_fm_t": _fm_t, "__name__": "__traced__"}}
    exec(compile(src, "<program>", "exec"), ns)
    return ns[_ENTRY]()

def {probe}():
    out = {{}}
    for key, src in _SOURCES.items():
        sink = []
        try:
            value = _run(src, sink)
            out[key + "_value"] = float(value)
        except Exception as e:
            out[key + "_error"] = type(e).__name__
        seen, kept = set(), []
        for label, v in sink:
            r = float("%.12g" % v)
            if (label, r) not in seen:
                seen.add((label, r))
                kept.append([label, r])
            if len(kept) >= {limit}:
                break
        out[key] = kept
    print("{mark} " + _json.dumps(out))
    return 0.0
"""


class _Label(ast.NodeTransformer):
    """Every operation's and call's value passes through ``_fm_t(value, label)``; the labels
    are the original expressions' source."""

    def __init__(self) -> None:
        self.labels: list[str] = []

    def _wrap(self, node: ast.expr) -> ast.expr:
        self.labels.append(ast.unparse(node))
        label = ast.Constant(len(self.labels) - 1)
        return ast.Call(func=ast.Name("_fm_t", ast.Load()), args=[node, label], keywords=[])

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        text = ast.unparse(node)
        self.generic_visit(node)
        wrapped = self._wrap(node)
        self.labels[-1] = text
        return wrapped

    def visit_Call(self, node: ast.Call) -> Any:
        text = ast.unparse(node)
        self.generic_visit(node)
        wrapped = self._wrap(node)
        self.labels[-1] = text
        return wrapped


def labelled(program: str) -> tuple[str, list[str]]:
    """``program`` with each operation and call recorded under a label, and the labels'
    expressions (their source, as parsed)."""
    transformer = _Label()
    tree = transformer.visit(ast.parse(program))
    ast.fix_missing_locations(tree)
    return ast.unparse(tree), transformer.labels


@dataclass(frozen=True)
class GoldValues:
    """A gold given as its values, not as a program: the numbers it reads (value, as it
    writes them) and the values it computes, in order (its own value last)."""

    inputs: Sequence[tuple[float, str]]
    steps: Sequence[float]
    conventions: frozenset[float] = CONVENTIONS
    """Numbers that are no input on either side (units, day counts: the gold's own choice)."""


@dataclass(frozen=True)
class Trace:
    """The gold's and the model program's recorded values (label index, value), in order
    (the gold's empty where the gold is no program)."""

    gold: list[tuple[int, float]]
    model: list[tuple[int, float]]
    gold_labels: list[str]
    model_labels: list[str]
    model_value: float | None
    gold_value: float | None


async def run_trace(gold_program: str | None, model_program: str | None, entry: str) -> Trace:
    """Run the gold and the model's program (each if given), traced, in one sandbox probe."""
    sources: dict[str, str] = {}
    gold_labels: list[str] = []
    if gold_program is not None:
        sources["gold"], gold_labels = labelled(gold_program)
    model_labels: list[str] = []
    if model_program is not None:
        model_src, model_labels = labelled(model_program)
        sources["model"] = model_src
    code = _TRACE_PROBE.format(
        sources=sources, entry=entry, probe=PROBE_ENTRY, limit=TRACE_LIMIT, mark=PROBE_MARK
    )
    result = _probe_result(await run_probe(code, PROBE_ENTRY, timeout=TRACE_TIMEOUT))

    def values(key: str) -> list[tuple[int, float]]:
        return [(int(a), float(b)) for a, b in result.get(key) or []]

    def final(key: str) -> float | None:
        v = result.get(f"{key}_value")
        return float(v) if isinstance(v, int | float) else None

    return Trace(
        values("gold"),
        values("model"),
        gold_labels,
        model_labels,
        final("model"),
        final("gold"),
    )


# --- what accounts for an input -----------------------------------------------------------


def _shown_unit(text: str, value: float) -> float:
    """Half a unit of ``text``'s last written digit (scaled as ``value`` is to it), or 0
    for a number taken as exact: whole, or of at most :data:`EXACT_DIGITS` significant
    digits (as the arithmetic check takes them: "0.05" is 0.05, not 0.048 rounded)."""
    digits = text.strip().rstrip("%").replace(",", "").replace("_", "").lstrip("+-$")
    try:
        written = float(digits)
    except ValueError:
        return 0.0
    decimals = len(digits.split(".")[1]) if "." in digits and "e" not in digits.lower() else 0
    if not decimals or not written or _significant(digits) <= EXACT_DIGITS:
        return 0.0
    return 0.5 * 10.0**-decimals * abs(value / written)


class _Values:
    """Sorted numbers with a tolerant membership test."""

    def __init__(self, values: Iterable[float]) -> None:
        self.sorted = sorted({float(v) for v in values if math.isfinite(float(v))})

    def has(self, x: float, tol: float) -> bool:
        pad = tol + 1e-9 * abs(x)
        i = bisect.bisect_left(self.sorted, x - pad)
        return i < len(self.sorted) and self.sorted[i] <= x + pad


def compound_factors(rates: Iterable[float]) -> list[float]:
    """Each rate per period of a year (``r/m``, ``1 + r/m``) and its compound and annuity
    factors."""
    out: list[float] = []
    for rate in rates:
        for m in PER_YEAR:
            r = rate / m
            if not 0 < abs(r) < 1:
                continue
            out += [r, 1 + r, 1 - r]
            for n in PERIODS:
                f = (1 + r) ** n
                if not 1e-300 < f < 1e300:
                    break  # a rate near -100% (or far above) underflows or overflows
                out += [f, 1 / f, (f - 1) / r, (1 - 1 / f) / r]
            out += [math.exp(rate), math.exp(-rate)]
    return out


@dataclass
class Known:
    """The numbers an input may come from, besides usual constants and earlier results."""

    forms: Sequence[tuple[float, str]]
    """The document's numbers (:func:`written_forms`)."""
    direct: _Values
    """Document numbers in every reading, gold literals and intermediates, factors."""

    @classmethod
    def of(
        cls,
        forms: Sequence[tuple[float, str]],
        gold_literals: Iterable[float] = (),
        gold_values: Iterable[float] = (),
    ) -> Known:
        doc = [v for v, _ in forms]
        readings = [
            x
            for w in doc
            for x in (w, -w, w / 100, w / 10000, w * 100, 1 + w, 1 - w, 1 + w / 100, 1 - w / 100)
        ]
        rates = {w / 100 for w in doc if 0 < abs(w) < 100} | {w for w in doc if 0 < abs(w) < 1}
        gold = [*gold_literals, *gold_values]
        direct = [*readings, *gold, *(-g for g in gold), *compound_factors(rates)]
        return cls(forms, _Values(direct))

    def accounts(
        self, value: float, text: str, earlier: Iterable[float] = (), near: float = 0.0
    ) -> bool:
        """Whether an input written ``text`` (value ``value``) is accounted for: within its
        shown digits, or within ``near`` (relative) of an ``earlier`` number of the reply."""
        v = float(value)
        if is_usual(abs(v)) or is_written(v, self.forms):
            return True
        shown = _shown_unit(text, v)
        if any(
            self.direct.has(x, shown * abs(x / v) if v else shown) for x in (v, v * 100, v / 100)
        ):
            return True
        tol = max(shown, near * abs(v))
        results = _Values(earlier)
        return any(
            results.has(x, max(tol * abs(x / v) if v else tol, 1e-6 * abs(x)))
            for x in (v, -v, v * 100, v / 100)
        )


def invented_inputs(
    data: CauseInput, known: Known, model_program: str | None
) -> list[dict[str, Any]]:
    """The inputs accounted for in none of the ways :class:`Known` knows, in order: each
    ``{"number", "where"}`` (the reply's step, or the program's line)."""
    if model_program is not None:
        try:
            literals = program_literals(model_program)
        except (SyntaxError, ValueError):
            return []
        lines = model_program.splitlines()
        return [
            {"number": lit[4], "where": lines[lit[0] - 1].strip(), "line": lit[0]}
            for lit in literals
            if not known.accounts(lit[3], lit[4])
        ]
    arithmetic = data.arithmetic or check_arithmetic(data.output)
    if arithmetic.wrong is not None:
        return []
    lines = data.output.splitlines()
    found: list[tuple[int, float, dict[str, Any]]] = []

    def worked_out(line: int, value: float, text: str, earlier: Sequence[float]) -> bool:
        stated = stated_before(lines[: max(line - 1, 0)])
        powers = [(1 + x) ** n for x in stated if 0 < abs(x) < 1 for n in PERIODS[:120]]
        near = [*earlier, *stated, *powers, *(1 / p for p in powers)]
        return known.accounts(value, text, near, NEAR_REL)

    for op in arithmetic.inputs:
        if known.accounts(op.value, op.text, op.earlier):
            continue
        if not worked_out(op.line, op.value, op.text, op.earlier):
            found.append((op.line, op.value, {"number": op.text, "where": op.step}))
    for line, value, text in assumed(lines):
        if is_usual(abs(value)) or known.accounts(value, text):
            continue
        if not worked_out(line, value, text, ()):
            found.append((line, value, {"number": text, "where": lines[line - 1].strip()[:200]}))
    out: list[dict[str, Any]] = []
    seen: list[float] = []
    for _, value, entry in sorted(found, key=lambda x: x[0]):
        if not any(abs(value - v) <= 1e-9 * max(abs(v), 1e-12) for v in seen):  # used again
            out.append(entry)
            seen.append(value)
    return out


_STATED_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(%?)")


_STATES = re.compile(
    r"=|≈|\\approx|\b(?:equals?|equal to|comes? to|amounts? to|results? in|gives?)\b", re.I
)


_ASSUMES = re.compile(
    r"\b(?:assum(?:e|es|ed|ing|ption)|suppose|supposing|let(?!'s|\s+us)|we take)\b", re.I
)
_OPERATION = re.compile(r"\d\s*[%)]?\s*(?:[×*/+^x÷]|-\s*[\d(])", re.I)


def assumed(lines: Sequence[str]) -> list[tuple[int, float, str]]:
    """The numbers the reply posits: each number after "assume", "let", "suppose" (and the
    like) on a line that computes nothing (no operator between numbers), as (line, value,
    text), a percent as its fraction. "Assume r = 3%" sets an input, not a result: it must
    be accounted for as any input is."""
    out = []
    for n, line in enumerate(lines, 1):
        found = _ASSUMES.search(line)
        if found is None or _OPERATION.search(line) is not None:
            continue
        for m in _STATED_NUMBER.finditer(line[found.end() :]):
            value = float(m.group(1).replace(",", ""))
            out.append((n, value / 100 if m.group(2) else value, m.group(0)))
    return out


def stated_before(lines: Sequence[str]) -> list[float]:
    """The numbers ``lines`` write after an ``=``, ``≈`` or "equals" (and the like): results
    the reply stated, in a calculation the check could not read ("15 units @ $5.20 + 20
    units @ $5.50 = $155.50") or in words ("= 0.071 or 7.1%", "which equals £162,500"); a
    percent as its fraction too. A line that posits its numbers (:func:`assumed`: "assume
    r = 3%") states no result."""
    out: list[float] = []
    for line in lines:
        found = _STATES.search(line)
        if found is None or (_ASSUMES.search(line) and not _OPERATION.search(line)):
            continue
        for m in _STATED_NUMBER.finditer(line[found.end() :]):
            value = float(m.group(1).replace(",", ""))
            out += [value, value / 100] if m.group(2) else [value]
    return out


# --- the program set against the gold ----------------------------------------------------


def _same_input(m: float, g: float) -> bool:
    def close(a: float, b: float) -> bool:
        return a == b or (b != 0 and abs(a - b) <= 1e-9 * abs(b))

    return any(close(m, g * f) for f in (1.0, 100.0, 0.01)) or close(m, 1 + g) or close(m, 1 - g)


def _shared(value: float, gold: _Values) -> bool:
    return any(gold.has(x, SAME_REL * abs(x)) for x in (value, value * 100, value / 100))


def compare_trace(gold: str | GoldValues, model_program: str, trace: Trace) -> dict[str, Any]:
    """The program's inputs against the gold's and the first step where they part; ``gold``:
    the gold program (its values are ``trace.gold``), or the gold's values."""
    if isinstance(gold, GoldValues):
        conventions = gold.conventions
        gold_inputs = [(v, t) for v, t in gold.inputs if abs(v) not in conventions]
        computed = [float(v) for v in gold.steps]
    else:
        conventions = CONVENTIONS
        gold_inputs = [
            (lit[3], lit[4]) for lit in program_literals(gold) if abs(lit[3]) not in conventions
        ]
        computed = [v for _, v in trace.gold]
    model_inputs = [
        lit for lit in program_literals(model_program) if abs(lit[3]) not in conventions
    ]
    missing = list(
        dict.fromkeys(
            g[1] for g in gold_inputs if not any(_same_input(m[3], g[0]) for m in model_inputs)
        )
    )
    gold_values = _Values(computed + [g[0] for g in gold_inputs] + [0.0, 1.0])
    # a number the gold computes, written as a literal (72 for 6 * 12), is not an extra input
    extra = [
        m[4]
        for m in model_inputs
        if not is_usual(abs(m[3]))
        and not any(_same_input(m[3], g[0]) for g in gold_inputs)
        and not _shared(m[3], gold_values)
    ]
    found: dict[str, Any] = {
        "inputs_match": not missing and not extra,
        "missing_inputs": missing[:8],
        "extra_inputs": extra[:8],
    }
    shared = 0
    for step, (label, value) in enumerate(trace.model, 1):
        if is_usual(abs(value)) and float(value).is_integer():
            continue  # a count or an index
        if _shared(value, gold_values):
            shared += 1
            continue
        found.update(
            parts_at=step,
            expression=trace.model_labels[label] if label < len(trace.model_labels) else "?",
            value=value,
            steps_shared=shared,
        )
        return found
    found.update(parts_at=None, steps_shared=shared)
    return found


def trace_sentence(found: Mapping[str, Any]) -> str:
    """The trace's comparison in words."""
    if found.get("inputs_match"):
        inputs = "its inputs are the gold's"
    else:
        parts = []
        if found.get("missing_inputs"):
            parts.append(f"leaves out the gold's {', '.join(found['missing_inputs'][:4])}")
        if found.get("extra_inputs"):
            parts.append(f"uses {', '.join(found['extra_inputs'][:4])}, which the gold does not")
        inputs = "it " + " and ".join(parts)
    if found.get("parts_at") is None:
        where = "every value it computes is one the gold computes"
    else:
        where = (
            f"it parts from the gold at step {found['parts_at']}: {found['expression']} = "
            f"{found['value']:g}, which no step of the gold computes"
        )
    return f"{inputs}; {where}"


async def input_findings(
    data: CauseInput,
    gold_program: str,
    document: str,
    findings: Sequence[Finding],
    entry: str = "solution",
    model_program: str | None = None,
) -> list[Finding]:
    """``findings`` (the gold's) with an invented input added (``misread``) and a PoT
    ``method`` finding's evidence carrying the program's trace against the gold."""
    from finmath_tasks.variants import find_numbers

    out = list(findings)
    if not gold_program.strip():
        return out
    forms = written_forms(find_numbers(document))
    gold_literals = [lit[3] for lit in program_literals(gold_program)]
    ran = model_program is not None and bool((data.program or {}).get("ok"))
    known = Known.of(forms, gold_literals)
    candidates = invented_inputs(data, known, model_program if ran else None)
    if model_program is not None and not ran:
        return out  # a program that did not run: program_failed or format decides
    trace: Trace | None = None
    compared: dict[str, Any] | None = None
    if candidates or ran:
        trace = await run_trace(gold_program, model_program if ran else None, entry)
        known = Known.of(forms, gold_literals, [v for _, v in trace.gold])
        candidates = invented_inputs(data, known, model_program if ran else None)
        if ran and model_program is not None:
            compared = compare_trace(gold_program, model_program, trace)
    if candidates:
        out.append(invented_finding(candidates, "program" if ran else "reply", compared))
    return with_trace(out, compared)


def invented_finding(
    candidates: Sequence[Mapping[str, Any]], what: str, compared: Mapping[str, Any] | None
) -> Finding:
    """``misread`` for the first invented input of ``candidates`` (:func:`invented_inputs`)
    of the ``what`` (``program`` or ``reply``), with the program's trace if any."""
    first = candidates[0]
    where = f"line {first['line']}: {first['where']}" if "line" in first else first["where"]
    return Finding(
        MISREAD,
        evidence(
            f"the {what} uses {first['number']} as an input ({where}), a number "
            "written nowhere in the question or tables, no usual constant and no "
            "value derived from them: invented data",
            number=first["number"],
            step=first["where"],
            invented=[c["number"] for c in candidates[:8]],
            **({"trace": dict(compared)} if compared is not None else {}),
        ),
    )


def with_trace(findings: Sequence[Finding], compared: Mapping[str, Any] | None) -> list[Finding]:
    """``findings`` with each ``method`` finding's evidence carrying the trace's comparison
    (:func:`compare_trace`; its sentence appended to ``why``)."""
    if compared is None:
        return list(findings)
    return [
        Finding(
            METHOD,
            evidence(
                f"{f.evidence.get('why')}; {trace_sentence(compared)}",
                **{k: v for k, v in f.evidence.items() if k != "why"},
                **compared,
            ),
            f.value,
        )
        if f.cause == METHOD
        else f
        for f in findings
    ]
