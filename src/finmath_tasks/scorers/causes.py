"""Why a wrong answer is wrong, from evidence: one cause per wrong score, beside its class.

Interface (stable: the report's tables and lm_eval's samples read it):

- A wrong score's metadata holds :data:`ERROR_CAUSE_KEY` (``"error_cause"``), one of
  :data:`CAUSES` as a string, and :data:`ERROR_EVIDENCE_KEY` (``"error_evidence"``), a small
  JSON-able dict saying what decided it (the step, the numbers, which input; always a
  ``"why"`` sentence). A correct score has neither. As for the error classes, a keyed
  task's inner score records ``{score key: cause}`` and ``{score key: evidence}``, and each
  key's own score in the log carries its own cause (a string) and evidence (a dict)
  (:func:`finmath_tasks.scorers.keyed.key_score`).
- The causes are exclusive: the first that applies, in the order of :data:`CAUSES`:

  ``truncated``      the reply was stopped at its length limit (class ``no_answer:truncated``);
  ``no_answer``      no final answer: none, a refusal, two answers (other ``no_answer:*``);
  ``over_budget``    the prompt did not fit (``no_answer:over_budget``);
  ``format``         the output holds an answer or a program that runs, which the key's
                     official reading could not read (``harness:*``): the harness;
  ``program_failed`` the model's own program raised, timed out or returned nothing;
  ``arithmetic``     the reply states a calculation whose result is wrong beyond its shown
                     precision (the first such step: :mod:`~finmath_tasks.scorers.causes_arithmetic`);
  ``misread``        the answer is the gold re-run with one input replaced by another number
                     of the question or table, or the reply/program uses as an input a
                     number written nowhere and no usual constant (invented data);
  ``unit``           the gold re-run with one input rescaled by a power of ten, or the answer
                     itself in another unit where the key does not credit it (class ``scale``);
  ``partial``        the answer is an intermediate value of the gold (another quantity);
  ``precision``      the gold re-run with its intermediate values rounded gives the answer;
  ``retrieval``      evidence the gold needs was not in the prompt;
  ``gold_suspect``   the gold uses a number written nowhere in the question or table and no
                     usual constant: an annotation error is likely;
  ``method``         every input the reply uses is in the document or a usual constant, its
                     stated arithmetic checks, and the answer still differs: formula/concept;
  ``unexplained``    the evidence does not decide (no gold program, a reply naming no
                     numbers, a check that could not run). A cause is never a guess.

- A re-run of the gold (``misread``, ``unit``, ``partial``, ``precision``) explains an answer
  only by one rule, shared by every benchmark's check (:func:`agreement`,
  :func:`chance_hits`): it agrees with the answer at the answer's written precision (half
  a unit of its last significant digit; never tighter than :data:`MIN_MATCH_TOL`), and so
  few of the sample's other re-runs fall near the answer that a chance agreement is
  unlikely (the expected number of re-runs agreeing by chance, ``chance_hits`` in the
  evidence, at most :data:`CHANCE_MAX`). Where re-runs of different kinds, or misreads of
  different inputs, explain the same answer, the cause is decided only when the reply
  singles one out (it writes the number read and not the input replaced) or only one is
  the answer as is (the others through a percent's x100 or /100); otherwise the
  cause is ``unexplained`` with the candidates in its evidence. Re-runs of one kind on
  several inputs (a rescaling of either factor of a product) or steps decide that kind,
  their candidates listed.
- :func:`explain` computes every wrong key's cause; it never raises: an exception inside
  the cause code gives ``unexplained`` with the reason in the evidence, so one bad sample
  never ends an eval.
- A benchmark adds its evidence through a :data:`GoldCheck`: an async callable given the
  :class:`CauseInput` that returns :class:`Finding` s (``misread``, ``unit``, ``partial``,
  ``precision``, ``retrieval``, ``gold_suspect``, ``method`` with its evidence). The shared
  code decides the causes read from the class and the stated arithmetic; it accepts
  ``method`` only where the arithmetic check found no wrong step.

No score's value changes with the causes: they are metadata.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from finmath_tasks.scorers.causes_arithmetic import ArithmeticCheck, check_arithmetic
from finmath_tasks.scorers.error_classes import (
    HARNESS,
    NO_ANSWER,
    PROGRAM_FAILED,
    SCALE,
)

ERROR_CAUSE_KEY = "error_cause"
"""Score metadata key: the cause of a wrong answer (absent when the answer is correct)."""
ERROR_EVIDENCE_KEY = "error_evidence"
"""Score metadata key: the evidence that decided the cause (a JSON-able dict)."""

TRUNCATED = "truncated"
NO_ANSWER_CAUSE = "no_answer"
OVER_BUDGET = "over_budget"
FORMAT = "format"
PROGRAM_FAILED_CAUSE = "program_failed"
ARITHMETIC = "arithmetic"
MISREAD = "misread"
UNIT = "unit"
PARTIAL = "partial"
PRECISION = "precision"
RETRIEVAL = "retrieval"
GOLD_SUSPECT = "gold_suspect"
METHOD = "method"
UNEXPLAINED = "unexplained"

CAUSES = (
    TRUNCATED,
    NO_ANSWER_CAUSE,
    OVER_BUDGET,
    FORMAT,
    PROGRAM_FAILED_CAUSE,
    ARITHMETIC,
    MISREAD,
    UNIT,
    PARTIAL,
    PRECISION,
    RETRIEVAL,
    GOLD_SUSPECT,
    METHOD,
    UNEXPLAINED,
)
"""Every cause, in the order they are tested (the first that applies)."""

FINDING_CAUSES = frozenset({MISREAD, UNIT, PARTIAL, PRECISION, RETRIEVAL, GOLD_SUSPECT, METHOD})
"""The causes a benchmark's :data:`GoldCheck` may find."""

MAX_EVIDENCE_TEXT = 300
"""A string in the evidence is cut to this length."""


@dataclass(frozen=True)
class Finding:
    """What a benchmark's check found: a cause and its evidence (``why`` plus details).

    ``value``: the answer the finding concerns (a misread re-run equals this number); None:
    any answer of the sample (a gold that uses an unwritten number, inputs all written)."""

    cause: str
    evidence: Mapping[str, Any]
    value: float | None = None

    def __post_init__(self) -> None:
        if self.cause not in FINDING_CAUSES:
            raise ValueError(f"a finding's cause must be one of {sorted(FINDING_CAUSES)}")


@dataclass(frozen=True)
class CauseInput:
    """What the cause checks may look at for one sample."""

    output: str
    """The model's reply (a PoT reply holds its program)."""
    gold: float
    answers: tuple[float, ...] = ()
    """The distinct finite numbers the wrong keys compared with the gold."""
    program: Mapping[str, Any] | None = None
    """The model's program run (PoT), the sandbox record."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """The sample's metadata (the document, the gold program)."""
    arithmetic: ArithmeticCheck | None = None
    """The stated calculations of the reply, checked (CoT; None for a program answer)."""


GoldCheck = Callable[[CauseInput], Awaitable[Sequence[Finding]]]
"""A benchmark's evidence from its gold (program, derivation) and document."""


def _small(value: Any, depth: int = 0) -> Any:
    """``value`` as small JSON-able data (strings cut, floats finite or their text)."""
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return value[:MAX_EVIDENCE_TEXT]
    if depth > 3:
        return str(value)[:MAX_EVIDENCE_TEXT]
    if isinstance(value, Mapping):
        return {str(k): _small(v, depth + 1) for k, v in list(value.items())[:20]}
    if isinstance(value, list | tuple):
        return [_small(v, depth + 1) for v in list(value)[:20]]
    return str(value)[:MAX_EVIDENCE_TEXT]


def _finite(value: Any) -> Any:
    """``value`` with every float that is not finite written as its text ('-inf'): a
    benchmark's finding may carry one, and JSON (the log, lm_eval's samples) has none."""
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def evidence(why: str, **details: Any) -> dict[str, Any]:
    """A small JSON-able evidence dict: the sentence ``why`` and the details."""
    return _small({"why": why, **details})


def partial_finding(answer: float, step: int, value: float, form: str, gold: Any) -> Finding:
    """The answer is the gold's intermediate value ``step`` (``value``, read as ``form``)."""
    return Finding(
        PARTIAL,
        evidence(
            f"the answer is intermediate value {step} of the gold ({value:g}), "
            "another quantity than the one asked",
            step=step,
            intermediate=value,
            form=form,
            gold_value=gold,
        ),
        value=answer,
    )


def precision_finding(answer: float, digits: int, value: float, form: str, gold: Any) -> Finding:
    """The gold with its intermediate values rounded to ``digits`` gives the answer."""
    return Finding(
        PRECISION,
        evidence(
            f"the gold with its intermediate values rounded to {digits} significant "
            f"digits gives {value:g}, the answer",
            digits=digits,
            rerun_value=value,
            form=form,
            gold_value=gold,
        ),
        value=answer,
    )


RERUN_CAUSES = (MISREAD, UNIT, PARTIAL, PRECISION)
"""The findings that are a re-run of the gold equal to the answer (in the order decided)."""
MIN_MATCH_TOL = 5e-4
"""A re-run agrees with an answer written to many digits within this relative tolerance
(a reply's own rounding of its intermediate values)."""
NEAR_UNITS = 50
"""The neighbourhood of an answer, in its windows: re-runs within NEAR_UNITS windows of it,
outside its own window, estimate how many land in the window by chance."""
CHANCE_MAX = 0.1
"""A re-run explains an answer only where the expected number of chance agreements is at
most this: up to four other re-runs among its 49 neighbouring windows (measured on real
dev records by benchmarks/cause_chance.py: a random wrong answer gets a re-run cause 0-2%
of the time, was 2-10% under a fixed relative tolerance)."""


def answer_window(answer: float) -> float:
    """The answer's written precision: half a unit of its last decimal (its shortest form:
    0.25 -> 0.005; a whole number to its units: 350 -> 0.5), absolute, and at least
    MIN_MATCH_TOL relative (1.5 billion is not read to the unit). A zero has no
    precision to read a re-run at (0 is as much "nothing" as a rounded figure): only an
    exact zero agrees with it."""
    if not math.isfinite(answer) or answer == 0:
        return 0.0
    try:
        written = Decimal(f"{abs(answer):.12g}").normalize().as_tuple().exponent
    except InvalidOperation:
        written = 0
    exponent = min(written, 0) if isinstance(written, int) else 0
    half = 0.5 * 10.0**exponent
    return max(half, MIN_MATCH_TOL * abs(answer))


def agreement(value: float, answer: float, factors: Sequence[float] = (1.0,)) -> str | None:
    """How re-run ``value`` agrees with ``answer`` at its written precision: ``"as is"`` or
    ``"x<factor>"`` (a percent and its fraction); None where it does not."""
    if not math.isfinite(value) or not math.isfinite(answer):
        return None
    window = answer_window(answer) * (1 + 1e-9)
    for factor in factors:
        w = value * factor
        if answer == w or abs(w - answer) <= window:
            return "as is" if factor == 1.0 else f"x{factor:g}"
    return None


def chance_hits(values: Iterable[float], answer: float, factors: Sequence[float] = (1.0,)) -> float:
    """The expected number of ``values`` (every re-run tried for a sample, in each form of
    ``factors``) that agree with ``answer`` by chance: those in its neighbourhood outside
    its window, over the neighbourhood's other windows."""
    window = answer_window(answer)
    if window == 0:
        return 0.0
    near = 0
    for value in values:
        if not math.isfinite(value):
            continue
        for factor in factors:
            distance = abs(value * factor - answer)
            if window < distance <= NEAR_UNITS * window:
                near += 1
    return near / (NEAR_UNITS - 1)


def with_chance(
    finding: Finding, tried: Mapping[str, Sequence[float]], factors: Sequence[float]
) -> Finding:
    """A re-run finding with the expected number of chance agreements among the re-runs of
    its kind (``tried``: each kind's re-run values; ``"stated"``: the misreads reading a
    number the reply writes, the pool of a misread the reply names). A rescaling (``unit``)
    is compared as is only."""
    if finding.value is None or finding.cause not in tried:
        return finding
    stated = finding.cause == MISREAD and finding.evidence.get("stated_in_reply")
    pool = tried["stated" if stated else finding.cause]
    hits = chance_hits(pool, finding.value, (1.0,) if finding.cause == UNIT else factors)
    return Finding(
        finding.cause, {**finding.evidence, "chance_hits": round(hits, 3)}, finding.value
    )


def by_chance(finding: Finding) -> bool:
    """A re-run finding whose agreement is likely chance (its ``chance_hits``)."""
    hits = finding.evidence.get("chance_hits")
    return isinstance(hits, int | float) and hits > CHANCE_MAX


def _candidate(finding: Finding) -> tuple[Any, ...]:
    """What a re-run finding says went wrong: its kind and input (or step)."""
    e = finding.evidence
    if finding.cause in (MISREAD, UNIT):
        return (finding.cause, str(e.get("input")), str(e.get("where", e.get("line"))))
    if finding.cause == PARTIAL:
        return (finding.cause, str(e.get("step")))
    return (finding.cause,)


def _listed(f: Finding) -> dict[str, Any]:
    return {
        "cause": f.cause,
        "why": f.evidence.get("why"),
        "chance_hits": f.evidence.get("chance_hits"),
    }


def _singled_out(f: Finding) -> bool:
    """A misread the reply names: it writes the number read and not the input replaced."""
    e = f.evidence
    return f.cause == MISREAD and bool(e.get("stated_in_reply")) and not e.get("replaced_in_reply")


def _one_kind(findings: Sequence[Finding]) -> bool:
    """One candidate, or several of one kind other than misread (a rescaling of either
    factor of a product is a unit all the same; two misreads are two readings)."""
    kinds = {f.cause for f in findings}
    return len(findings) == 1 or (len(kinds) == 1 and MISREAD not in kinds)


def _rerun_cause(
    rerun: Sequence[Finding], error_class: str, value: float
) -> tuple[str, dict[str, Any]] | None:
    """The cause decided by the re-runs that explain the answer, or None (none does)."""
    order = {c: n for n, c in enumerate(CAUSES)}
    sure = sorted((f for f in rerun if not by_chance(f)), key=lambda f: order[f.cause])
    groups: dict[tuple[Any, ...], Finding] = {}
    for f in sure:
        groups.setdefault(_candidate(f), f)
    if error_class == SCALE:
        scaled = Finding(
            UNIT,
            evidence(
                "the answer times a power of ten is the gold, which this key does not credit",
                error_class=error_class,
                answer=value,
            ),
        )
        groups[(UNIT, "the answer")] = scaled
    if not groups:
        return None
    findings = sorted(groups.values(), key=lambda f: order[f.cause])
    chosen: Finding | None = None
    if _one_kind(findings):
        chosen = findings[0]
    else:
        named = [f for f in findings if _singled_out(f)]
        # one re-run that is the answer as is, beside others that are it only as a percent
        # or its fraction (an error and a conversion), is the simpler reading
        plain = [f for f in findings if f.evidence.get("form", "as is") == "as is"]
        if len(named) == 1:
            chosen = named[0]
        elif not named and plain and _one_kind(plain):
            chosen = plain[0]
    if chosen is None:
        return UNEXPLAINED, evidence(
            "re-runs of the gold of different kinds or inputs give the answer: the evidence "
            "does not decide which",
            error_class=error_class,
            answer=value,
            candidates=[_listed(f) for f in findings],
        )
    found = dict(chosen.evidence)
    if len(findings) > 1:
        found["candidates"] = _small([_listed(f) for f in findings])
    return chosen.cause, found


def _same(a: float, b: float) -> bool:
    return a == b or (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= 1e-9 * abs(b))


def cause_of(
    error_class: str,
    value: float | None,
    findings: Sequence[Finding],
    arithmetic: ArithmeticCheck | None,
) -> tuple[str, dict[str, Any]]:
    """The cause of one wrong key (its class, the number it compared, the findings)."""
    if error_class == f"{NO_ANSWER}:truncated":
        return TRUNCATED, evidence("the reply stopped at its length limit", error_class=error_class)
    if error_class == f"{NO_ANSWER}:over_budget":
        return OVER_BUDGET, evidence(
            "the prompt did not fit the context budget", error_class=error_class
        )
    if error_class.startswith(f"{NO_ANSWER}:"):
        return NO_ANSWER_CAUSE, evidence("no final answer", error_class=error_class)
    if error_class.startswith(f"{HARNESS}:"):
        return FORMAT, evidence(
            "the output holds an answer the key's official reading did not read",
            error_class=error_class,
        )
    if error_class.startswith(f"{PROGRAM_FAILED}:"):
        return PROGRAM_FAILED_CAUSE, evidence(
            "the model's program gave no number", error_class=error_class
        )
    if arithmetic is not None and arithmetic.wrong is not None:
        step = arithmetic.wrong
        return ARITHMETIC, evidence(
            f"a stated calculation is wrong beyond its shown precision: {step.text}",
            step=step.text,
            stated=step.stated,
            computed=step.computed,
            steps_checked=arithmetic.checked,
        )
    if value is None:
        return UNEXPLAINED, evidence(
            f"no number was compared (class {error_class}): the checks cannot decide"
        )

    def applies(f: Finding) -> bool:
        return f.value is None or _same(f.value, value)

    applicable = [f for f in findings if applies(f)]
    # an invented input is no re-run of the gold: it decides misread only where no re-run does
    invented = [f for f in applicable if f.cause == MISREAD and "invented" in f.evidence]
    reruns = [f for f in applicable if f.cause in RERUN_CAUSES and f not in invented]
    decided = _rerun_cause(reruns, error_class, value)
    if decided is not None:
        return decided
    if invented:
        return MISREAD, dict(invented[0].evidence)
    by_cause = {c: [f for f in applicable if f.cause == c] for c in FINDING_CAUSES}
    for cause in (RETRIEVAL, GOLD_SUSPECT):
        if by_cause[cause]:
            return cause, dict(by_cause[cause][0].evidence)
    if by_cause[METHOD]:
        # the order above already ruled out a wrong stated step; a method finding also
        # needs the reply's arithmetic (or its program) to hold at all
        return METHOD, dict(by_cause[METHOD][0].evidence)
    chance = [_listed(f) for f in reruns]
    return UNEXPLAINED, evidence(
        "the evidence does not decide"
        + (": the re-runs that give the answer are likely chance" if chance else ""),
        error_class=error_class,
        answer=value,
        **({"chance_candidates": chance} if chance else {}),
    )


def rounded_answers(answers: Iterable[float], gold: float) -> list[Finding]:
    """``precision`` for each answer that is the gold itself at the answer's written
    precision (33 for a gold of 33.33): the answer was rounded further than the key reads,
    which no re-run can explain (the gold's own value already agrees with it)."""
    found = []
    for answer in answers:
        if answer != gold and agreement(gold, answer) is not None:
            found.append(
                Finding(
                    PRECISION,
                    evidence(
                        f"the answer is the gold ({gold:g}) written to fewer digits",
                        gold_value=gold,
                        form="as is",
                    ),
                    value=answer,
                )
            )
    return found


def _failure(exc: BaseException) -> dict[str, Any]:
    return evidence(
        f"the cause checks failed ({type(exc).__name__}: {exc}); nothing was decided",
        error=type(exc).__name__,
    )


async def explain(
    classes: Mapping[str, str],
    values: Mapping[str, float | None],
    *,
    output: str,
    gold: float,
    program: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    gold_check: GoldCheck | None = None,
) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """``({key: cause}, {key: evidence})`` for every wrong key of ``classes`` (key ->
    class); ``values``: the number each key compared (None: none). Never raises."""
    causes: dict[str, str] = {}
    evidences: dict[str, dict[str, Any]] = {}
    if not classes:
        return causes, evidences
    try:
        arithmetic = check_arithmetic(output) if program is None else None
        answers = tuple(
            dict.fromkeys(
                float(v) for v in values.values() if v is not None and math.isfinite(float(v))
            )
        )
        findings: Sequence[Finding] = ()
        needs_gold = any(
            not c.startswith((f"{NO_ANSWER}:", f"{HARNESS}:", f"{PROGRAM_FAILED}:"))
            for c in classes.values()
        )
        failed: dict[str, Any] | None = None
        if gold_check is not None and needs_gold and answers:
            data = CauseInput(
                output=output,
                gold=float(gold),
                answers=answers,
                program=program,
                metadata=dict(metadata or {}),
                arithmetic=arithmetic,
            )
            try:
                findings = list(await gold_check(data))
            except Exception as exc:  # a check that cannot run decides nothing
                failed = _failure(exc)
        findings = [*rounded_answers(answers, float(gold)), *findings]
        for key, cls in classes.items():
            cause, found = cause_of(cls, values.get(key), findings, arithmetic)
            if cause == UNEXPLAINED and failed is not None:
                found = failed
            causes[key], evidences[key] = cause, _finite(found)
    except Exception as exc:  # never let the cause code end a sample
        reason = _failure(exc)
        causes = dict.fromkeys(classes, UNEXPLAINED)
        evidences = {key: dict(reason) for key in classes}
    return causes, evidences


def is_cause(value: Any) -> bool:
    return isinstance(value, str) and value in CAUSES
