"""Evidence from a gold expression that is evaluated in this process (benchmark-neutral).

Some benchmarks give their gold as arithmetic over the document's numbers, not as code: a
program in a small DSL, a written derivation. Such a gold is no model code, so it is
evaluated here, by the benchmark's own evaluator, wrapped as a :class:`GoldExpression`: its
inputs (the numbers it reads, as it writes them) and a ``run`` that evaluates it with some
inputs replaced and, optionally, every intermediate value rounded. :func:`expression_findings`
then gives the findings :mod:`finmath_tasks.scorers.causes` reads:

- ``misread``: the gold with one input replaced by another number the document writes (as
  written, a percent's fraction, with its scale word) gives the answer: which input, which
  number (the reading whose number the reply itself writes is named first); a usual
  constant (a whole number up to 12, 100, 1000, ...) is never the replacement: dividing by
  100 or by 1 would give an intermediate value or a rescaling, which is not a misreading;
- ``unit``: the gold with one input times 10^k (:data:`UNIT_EXPONENTS`) gives it; an input
  that matches for two exponents (the gold saturates in it) is no evidence;
- ``partial``: an intermediate value of the gold (an operation's result, in order) is it;
- ``precision``: the gold with its intermediate values rounded to 2 to 5 significant digits
  gives it (and the exact gold does not);
- ``gold_suspect``: an input is written nowhere in the document in any form a reader takes
  it in, nor a usual constant (:func:`finmath_tasks.scorers.causes_gold.is_written`);
- ``method``: the reply's stated calculations all hold and every operand is the document's,
  a usual constant or an earlier result; or the reply's own program (a model program that
  ran, or a program the reply states and that evaluates) writes only such numbers.

:func:`reply_findings` adds what the reply's own inputs say beside the re-runs
(:mod:`finmath_tasks.scorers.causes_inputs`): an input (a text reply's stated operand that
no earlier step produced, or a number it posits; a model program's literal) accounted for by
no document number, usual constant or gold value is invented, ``misread`` with
``invented`` evidence, which decides only where no re-run does; and for a model program
that ran (PoT), its trace against the gold (the program alone is traced, in the sandbox;
the gold's side is its inputs and its intermediate values, from ``run``), attached to the
``method`` finding's evidence. Without a sandbox the trace is absent and the rest is
unchanged.

"Equals" is the shared rule (:func:`finmath_tasks.scorers.causes.agreement`): at the answer's
written precision, the re-run as is or times one of ``factors`` (x100 and /100 by default: a
percent and its fraction). The re-runs of a finding's kind tried for the sample (for a
misread whose number the reply writes: the misreads reading a number the reply writes)
count in the answer's neighbourhood, and each finding carries the expected number of chance agreements
(``chance_hits``, :func:`finmath_tasks.scorers.causes.chance_hits`): the causes take a
finding over :data:`finmath_tasks.scorers.causes.CHANCE_MAX` as a candidate only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
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
from finmath_tasks.scorers.causes_gold import (
    CONVENTIONS,
    ROUNDED_DIGITS,
    UNIT_EXPONENTS,
    is_usual,
    is_written,
    program_literals,
    written_forms,
)
from finmath_tasks.scorers.causes_inputs import (
    GoldValues,
    Known,
    compare_trace,
    invented_finding,
    invented_inputs,
    run_trace,
    with_trace,
)

MAX_RUNS = 4000
"""Re-runs per sample (inputs x document numbers, then rescalings): an expression of a few
steps evaluates in microseconds, so this bounds the work on a long document."""
FACTORS = (1.0, 100.0, 0.01)
"""A re-run equals an answer as is, or as a percent of a fraction, or the reverse."""

Rounding = Callable[[float], float]
Run = Callable[[Mapping[int, float], Rounding | None], tuple[float, Sequence[float]]]
"""``run(replaced, rounding)``: the gold's value and its intermediate values in the order
computed (the value last), with input ``i`` replaced by ``replaced[i]`` and every
intermediate value but the last passed through ``rounding``; raises where the gold does not evaluate."""


@dataclass(frozen=True)
class GoldInput:
    """A number the gold reads: as it writes it, and the value it computes with."""

    text: str
    value: float
    where: str
    """Where the gold reads it (``step 2``, ``characters 4-9``)."""


@dataclass(frozen=True)
class GoldExpression:
    inputs: Sequence[GoldInput]
    run: Run
    describe: str = ""
    """The gold as written (shown in the evidence)."""


def _rescaled(a: float, b: float) -> bool:
    """``a`` is ``b`` times a power of ten that a rescaling tries (10^0 too)."""
    if a == 0 or b == 0:
        return a == b
    exponent = math.log10(abs(a / b))
    return abs(exponent - round(exponent)) < 1e-9 and round(exponent) in (0, *UNIT_EXPONENTS)


def _close(a: float, b: float) -> bool:
    return a == b or (b != 0 and abs(a - b) <= 1e-9 * abs(b))


def _round_to(digits: int) -> Rounding:
    def rounded(value: float) -> float:
        if value and math.isfinite(value):
            return round(value, digits - 1 - math.floor(math.log10(abs(value))))
        return value

    return rounded


class _Matcher:
    def __init__(self, answers: Sequence[float], factors: Sequence[float]) -> None:
        self.answers = list(answers)
        self.factors = tuple(factors)

    def form(self, value: float, answer: float) -> str | None:
        return agreement(value, answer, self.factors)


def _safe(gold: GoldExpression, replaced: Mapping[int, float], rounding: Rounding | None = None):
    try:
        value, steps = gold.run(replaced, rounding)
        value = float(value)
    except (ArithmeticError, ValueError, TypeError, IndexError, KeyError):
        return None
    return (value, [float(s) for s in steps]) if math.isfinite(value) else None


def expression_findings(
    data: CauseInput,
    gold: GoldExpression,
    numbers: Iterable[Any],
    *,
    factors: Sequence[float] = FACTORS,
    stated_program: Sequence[float] | None = None,
    conventions: frozenset[float] = CONVENTIONS,
) -> list[Finding]:
    """The findings of ``gold`` for ``data``'s answers (see the module docstring).

    ``numbers``: the document's written numbers (:class:`finmath_tasks.variants.Written`);
    ``stated_program``: the numbers of a program the reply states that evaluates (a DSL
    program line), for ``method``; ``conventions``: inputs never replaced or rescaled (units
    and day counts; a gold whose constants are apart from its inputs passes none)."""
    forms = written_forms(numbers)
    base = _safe(gold, {})
    if base is None:
        return []
    gold_value, trace = base
    match = _Matcher(data.answers, factors)
    unexplained = [a for a in data.answers if match.form(gold_value, a) is None]
    findings: list[Finding] = []
    varied = [i for i, x in enumerate(gold.inputs) if abs(x.value) not in conventions]
    runs = 0
    stated = {
        round(w.value * f, 9) for w in _reply_numbers(data.output) for f in (1.0, 0.01, w.scale)
    }
    # each kind's re-run values: the chance neighbourhood of a finding of that kind
    tried: dict[str, list[float]] = {MISREAD: [], "stated": [], UNIT: [], PRECISION: []}
    tried[PARTIAL] = list(trace[:-1])
    misreads: list[tuple[float, int, float, str, float, str]] = []
    for i in varied:
        original = gold.inputs[i].value
        for value, text in forms:
            if runs >= MAX_RUNS:
                break
            if _rescaled(value, original) or is_usual(abs(value)):
                continue  # a rescaling is a unit; 1, 100 or 1000 would mimic one, or a step
            runs += 1
            signed = -value if original < 0 < value else value
            found = _safe(gold, {i: signed})
            if found is None:
                continue
            tried[MISREAD].append(found[0])
            if round(value, 9) in stated:
                tried["stated"].append(found[0])
            for answer in unexplained:
                form = match.form(found[0], answer)
                if form is not None:
                    misreads.append((answer, i, value, text, found[0], form))

    def stated_first(m: tuple[float, int, float, str, float, str]) -> int:
        uses = round(m[2], 9) in stated
        drops = round(abs(gold.inputs[m[1]].value), 9) not in stated
        return 2 - uses - drops

    misreads.sort(key=stated_first)
    readings = [f"{gold.inputs[m[1]].text} as {m[3]}" for m in misreads]
    for answer, i, value, text, rerun, form in misreads:
        x = gold.inputs[i]
        findings.append(
            Finding(
                MISREAD,
                evidence(
                    f"the gold with its input {x.text} ({x.where}) read as {text} gives "
                    f"{rerun:g}, the answer",
                    input=x.text,
                    where=x.where,
                    number=value,
                    written=text,
                    rerun_value=rerun,
                    form=form,
                    stated_in_reply=round(value, 9) in stated,
                    replaced_in_reply=round(abs(x.value), 9) in stated,
                    readings=readings[:6],
                    gold_value=gold_value,
                ),
                value=answer,
            )
        )
    for i in varied:
        x = gold.inputs[i]
        hits: dict[float, list[tuple[int, float]]] = {}
        for k in UNIT_EXPONENTS:
            found = _safe(gold, {i: x.value * 10.0**k})
            if found is None:
                continue
            tried[UNIT].append(found[0])
            for answer in unexplained:
                if match.form(found[0], answer) == "as is":
                    hits.setdefault(answer, []).append((k, found[0]))
        for answer, matched in hits.items():
            if len(matched) != 1:
                continue  # the gold saturates in this input: no evidence
            k, rerun = matched[0]
            findings.append(
                Finding(
                    UNIT,
                    evidence(
                        f"the gold with its input {x.text} ({x.where}) times 10^{k} gives "
                        f"{rerun:g}, the answer",
                        input=x.text,
                        where=x.where,
                        exponent=k,
                        rerun_value=rerun,
                        gold_value=gold_value,
                    ),
                    value=answer,
                )
            )
    for step, value in enumerate(trace[:-1], 1):
        for answer in unexplained:
            form = match.form(value, answer)
            if form is not None:
                findings.append(partial_finding(answer, step, value, form, gold_value))
    for digits in ROUNDED_DIGITS:
        found = _safe(gold, {}, _round_to(digits))
        if found is None:
            continue
        tried[PRECISION].append(found[0])
        for answer in unexplained:
            form = match.form(found[0], answer)
            if form is not None:
                findings.append(precision_finding(answer, digits, found[0], form, gold_value))
    findings = [with_chance(f, tried, match.factors) for f in findings]
    unwritten = [x for x in gold.inputs if not is_written(x.value, forms)]
    if unwritten:
        x = unwritten[0]
        findings.append(
            Finding(
                GOLD_SUSPECT,
                evidence(
                    f"the gold uses {x.text} ({x.where}), a number the document writes "
                    "nowhere and no usual constant",
                    input=x.text,
                    where=x.where,
                    unwritten=[u.text for u in unwritten],
                    gold=gold.describe,
                ),
            )
        )
    method = method_finding(data, forms, stated_program)
    if method is not None:
        findings.append(method)
    return findings


def _reply_numbers(text: str) -> list[Any]:
    from finmath_tasks.variants import find_numbers

    return list(find_numbers(text or ""))


def method_finding(
    data: CauseInput,
    forms: Sequence[tuple[float, str]],
    stated_program: Sequence[float] | None = None,
) -> Finding | None:
    """``method`` where every input of the reply (or of its program) is accounted for."""
    if data.program is not None:  # the model's own program ran: its literals are its inputs
        source = data.program.get("program")
        if not data.program.get("ok") or not isinstance(source, str):
            return None
        try:
            used = [lit[3] for lit in program_literals(source)]
        except (SyntaxError, ValueError):
            return None
        if not used or any(not is_written(v, forms) for v in used):
            return None
        return Finding(
            METHOD,
            evidence(
                "the program ran and every number it writes is the document's or a usual "
                "constant, yet its answer differs: the formula or concept",
                inputs=sorted(set(used))[:12],
            ),
        )
    arithmetic = data.arithmetic or check_arithmetic(data.output)
    if arithmetic.wrong is not None:
        return None
    if stated_program:
        if all(is_written(v, forms) for v in stated_program):
            return Finding(
                METHOD,
                evidence(
                    "the reply's program evaluates and every number it uses is the "
                    "document's or a usual constant, yet the answer differs: the formula "
                    "or concept",
                    inputs=sorted(set(stated_program))[:12],
                    steps_checked=arithmetic.checked,
                ),
            )
        return None
    if arithmetic.checked == 0:
        return None
    operands, results = operands_of(data.output)
    if any(not is_written(v, forms) and not any(_close(v, r) for r in results) for v in operands):
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


async def reply_findings(
    data: CauseInput,
    gold: GoldExpression,
    numbers: Iterable[Any],
    findings: Sequence[Finding],
    entry: str = "solution",
    conventions: frozenset[float] = CONVENTIONS,
) -> list[Finding]:
    """``findings`` (:func:`expression_findings`'s) with what the reply's own inputs say: an
    invented input as ``misread`` (a text reply's stated operands, a model program's
    literals, as :func:`finmath_tasks.scorers.causes_inputs.invented_inputs` reads them),
    and for a model program that ran (``data.program``) its trace against ``gold`` on the
    ``method`` finding (``conventions``: numbers that are no input on either side, as
    :func:`expression_findings` takes them). Never raises for a sandbox that cannot run the
    trace."""
    record = data.program
    source = (record or {}).get("program")
    base = _safe(gold, {})
    ran = record is not None and bool(record.get("ok")) and isinstance(source, str)
    if base is None or (record is not None and not ran):
        return list(findings)  # no gold value, or a program that failed: nothing to read
    program = str(source) if ran else None
    steps = base[1]
    gold_inputs = [x.value for x in gold.inputs]
    try:
        known = Known.of(written_forms(numbers), gold_inputs, steps)
        candidates = invented_inputs(data, known, program)
    except ArithmeticError:  # a number the factors cannot take: no inventions claimed
        candidates = []
    compared: dict[str, Any] | None = None
    if program is not None and (candidates or any(f.cause == METHOD for f in findings)):
        try:
            trace = await run_trace(None, program, entry)
            values = GoldValues([(x.value, x.text) for x in gold.inputs], steps, conventions)
            compared = compare_trace(values, program, trace)
        except Exception:  # no sandbox, or a probe that gave no record: the trace is absent
            compared = None
    out = list(findings)
    if candidates:
        out.append(invented_finding(candidates, "program" if ran else "reply", compared))
    return with_trace(out, compared)
