"""A numeric answer scorer over named comparisons (one benchmark's; the other numeric
benchmarks build their scorers from the same comparisons in their own ``scoring.py``).

One score per sample, with one value per named comparison (for example
``{"official": 1, "tolerant": 0}``), so the official metric of a paper and
our stricter one come out of the same run side by side.

Parameters choose, per benchmark:
- ``comparisons``: name -> comparison function (``scorers.comparisons`` or the
  benchmark's official one); each name becomes a key of the score value.
- ``answer``: ``"text"`` reads the model's output, by rules
  (:mod:`finmath_tasks.scorers.extraction`) or, with ``extractor="model"``, by
  a grader model (:mod:`finmath_tasks.scorers.model_extraction`: the ``grader``
  role, else the evaluated model, :mod:`finmath_tasks.scorers.grader`);
  ``"program"`` takes the value of the program a solver ran in the sandbox
  (``solvers.pot``), and adds ``execution_rate`` to the score.
- ``gold``: ``"target"`` (the sample's target) or ``"program"`` (the value of
  the re-executed gold program the solver recorded beside the answer, falling
  back to the target).

- ``readers``: comparison name -> a reader that gives that comparison its own
  reading of the answer (a benchmark's official normalisation of an extractor's
  reply, or its reading of a program run), instead of ours. A reader returns
  None where it does not apply (e.g. no extractor reply with the rules
  extractor); its description is in the explanation, its flags in the score
  metadata. With a program answer, ``execution_rate`` follows the first
  comparison's reader where it has one, and ``strict_execution_rate`` (the
  program returned a finite number) is ours; a text answer has an
  ``execution_rate`` where the first comparison's reader defines one.

A reply or program result that cannot be read is no answer: incorrect, in the
denominator; an odd number (huge, NaN, infinite) is read or refused by rule, never
raised. A sample whose target is empty (answers withheld) is generated and logged but
unscored; so is one whose target is not a finite number ("nan", a word: a bad record, or
a log's targets edited before ``inspect score``), with the reason. An exception in our own
code is not caught: Inspect records it as that sample's error, and the tasks'
``continue_on_fail`` lets the other samples finish (see :mod:`finmath_tasks.scorers.keyed`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState

from finmath_tasks.sandbox.client import PROGRAM_RESULT_KEY
from finmath_tasks.scorers.causes import ERROR_CAUSE_KEY, ERROR_EVIDENCE_KEY, GoldCheck, explain
from finmath_tasks.scorers.comparisons import (
    Comparison,
    GoldNumber,
    Match,
    compare,
    gold_from_float,
    number_from_float,
    percent_in_play,
)
from finmath_tasks.scorers.error_classes import (
    ERROR_CLASS_KEY,
    REJECTED,
    accepts_under,
    harness,
    is_truncated,
    no_answer,
    no_answer_class,
    number_class,
    program_failure_class,
    stop_reason_of,
)
from finmath_tasks.scorers.extraction import Extraction, ParsedNumber, extract_answer
from finmath_tasks.scorers.grader import GraderRole
from finmath_tasks.scorers.model_extraction import ModelExtraction, extract_with_model

Extractor = Literal["rules", "model"]
AnswerSource = Literal["text", "program"]
GoldSource = Literal["target", "program"]

STDERR_TAIL_CHARS = 800
"""How much of a failed program's stderr the score explanation shows."""
MAX_SHOWN_CHARS = 200
"""An extracted number's text is cut to this length where a score shows it."""
SHORT_REASON_CHARS = 80
"""How much of the reason there is no answer the samples list shows."""


@dataclass(frozen=True)
class ReadingInput:
    """What a reader may look at: the model's output, the extractor's reply, the program run."""

    output: str
    reply: str | None = None
    """The extractor's reply our reading reads (``ModelExtraction.retries_on_none``)."""
    program: Mapping[str, Any] | None = None
    replies: tuple[str, ...] = ()
    """Every extractor reply, in order (a reader may read another one)."""
    reply_index: int = 0
    """The position of ``reply`` in ``replies``."""


@dataclass(frozen=True)
class Reading:
    """One comparison's reading of the answer."""

    value: float | None
    """The number compared with the gold; None: no answer (incorrect)."""
    description: str
    """How it was read, e.g. ``read 7.0 from "7 years" (unit dropped)``."""
    executed: bool | None = None
    """The answer counts as executed, by the source's definition (programs: the run;
    a text answer: what its reader says, e.g. an extractor's reply); None: not defined.
    The first comparison's reading gives the score's ``execution_rate``."""
    flags: tuple[str, ...] = ()
    """Set to true in the score metadata (counted beside the accuracy)."""
    reply_index: int | None = None
    """Which of the extractor's replies (``ReadingInput.replies``) was read."""
    rejected: str | None = None
    """The source's rule counts this answer incorrect without comparing it (the reason)."""


Reader = Callable[[ReadingInput], Reading | None]


def _gold(target: Target, metadata: Mapping[str, Any]) -> float | None:
    """The target as a number that keeps its written digits (for ``rounding``) and says
    whether a percentage is in play (for ``tolerant``)."""
    text = target.text.strip()
    if not text:
        return None
    try:
        gold = float(text)
    except ValueError as e:
        raise ValueError(f"target {text!r} is not a number") from e
    if not math.isfinite(gold):
        raise ValueError(f"target {text!r} is not a finite number")
    try:
        return GoldNumber(text, percent_in_play(metadata))
    except ValueError:  # float() reads forms Decimal does not ("1_000"): digits of the float
        return gold_from_float(gold, percent_in_play(metadata))


def _program_extraction(program: Mapping[str, Any]) -> Extraction:
    value = program.get("value")
    number: ParsedNumber | None = None
    if program.get("ok") and isinstance(value, int | float) and not isinstance(value, bool):
        try:
            as_float = float(value)
        except OverflowError:  # an int beyond the float range is no finite number
            as_float = math.inf
        if math.isfinite(as_float):
            number = number_from_float(as_float)
    detail = program.get("error") or "value returned by the program"
    stderr_tail = (program.get("stderr") or "").strip()[-STDERR_TAIL_CHARS:]
    if number is None and stderr_tail:
        detail += f"\nstderr (tail):\n{stderr_tail}"
    return Extraction(number, "program", detail)


STATED_METHODS = frozenset({"boxed", "json", "marker"})
"""Our rules' readings of an answer the reply states (after an answer marker)."""


def harness_miss(
    output: str,
    program: Mapping[str, Any] | None,
    own: ParsedNumber | None,
    *,
    official: bool,
    model_extracted: bool,
) -> str | None:
    """The ``harness:<reason>`` class where a key's reading found no answer that the model's
    output holds: the official reading's cut of a program that ran for us (``own``: our
    run's number), or an extractor (the reference's or a grader's) that read no number where
    the reply states one after an answer marker; None where the model gave none."""
    if program is not None:
        return harness("program_cut") if official and own is not None else None
    if official or model_extracted:
        stated = extract_answer(output)
        if stated.number is not None and stated.method in STATED_METHODS:
            return harness("extractor_missed")
    return None


def _short_reason(extraction: Extraction) -> str:
    """What the samples list shows instead of an answer, e.g. ``no answer: IndentationError``."""
    first = (extraction.detail or extraction.method).strip().splitlines()
    reason = first[0] if first else extraction.method
    return f"no answer: {reason[:SHORT_REASON_CHARS]}"


@scorer(metrics={"*": [accuracy(), stderr()]})
def numeric_answer(
    comparisons: Mapping[str, Comparison],
    answer: AnswerSource = "text",
    gold: GoldSource = "target",
    extractor: Extractor = "rules",
    model_extraction: ModelExtraction | None = None,
    readers: Mapping[str, Reader] | None = None,
    gold_check: GoldCheck | None = None,
) -> Scorer:
    """Score a numeric final answer under each of ``comparisons``.

    Args:
      comparisons: score key -> comparison; e.g. the paper's official one and ours.
      answer: "text" (the model's output) or "program" (the sandboxed program's value).
      gold: "target", or "program" (the re-executed gold program's value).
      extractor: for text answers, "rules" (default) or "model" (the ``grader`` role).
      model_extraction: the grader prompt and retries (``extractor="model"``).
      readers: comparison name -> its own reading of the answer (see the module docstring).
      gold_check: the benchmark's evidence for the causes of a wrong answer
        (:mod:`finmath_tasks.scorers.causes`); without one, only the causes read from the
        class and the reply's stated arithmetic are decided.
    """
    if not comparisons:
        raise ValueError("numeric_answer needs at least one comparison")
    names = list(comparisons)
    readers = dict(readers or {})
    unknown = sorted(set(readers) - set(names))
    if unknown:
        raise ValueError(f"readers for unknown comparisons: {', '.join(unknown)}")
    spec = model_extraction or ModelExtraction()
    grader = GraderRole(spec.paper_grader)

    async def score(state: TaskState, target: Target) -> Score:
        output = state.output.completion if state.output else ""
        metadata: dict[str, Any] = {"comparisons": names, "answer_source": answer}
        try:
            gold_value = _gold(target, state.metadata or {})
        except ValueError as e:  # the record's gold (or an edited log's target): no comparison
            return Score.unscored(
                reason="gold_not_a_number",
                explanation=f"{e}: the gold cannot be compared, so the sample is left unscored",
                metadata=metadata,
            )
        program: dict[str, Any] | None = None
        reply: str | None = None
        stop_reason = stop_reason_of(state.output)

        if answer == "program":
            program = state.store.get(PROGRAM_RESULT_KEY)
            if program is None:
                program = {"ok": False, "value": None, "error": "no program was run"}
            extraction = _program_extraction(program)
            metadata["program"] = program
            if gold == "program" and program.get("gold_value") is not None:
                gold_value = gold_from_float(
                    program["gold_value"], percent_in_play(state.metadata or {})
                )
        elif extractor == "model":
            result = await extract_with_model(state.input_text, output, grader.resolve(), spec)
            extraction = result.extraction
            reply = result.reply
            metadata["extractor"] = "model"
            metadata["extractor_reply"] = result.reply
            metadata["extractor_replies"] = list(result.replies)
            metadata["extractor_reply_index"] = result.reply_index
            metadata.update(result.grader.metadata())
        else:
            # an output cut off by max_tokens without an explicit marker has no final answer
            extraction = extract_answer(output, truncated=stop_reason == "max_tokens")
            metadata["extractor"] = "rules"
        number = extraction.number

        metadata.update(
            method=extraction.method,
            extraction_detail=extraction.detail,
            extracted=number.text[:MAX_SHOWN_CHARS] if number else None,
            extracted_value=number.value if number else None,
            gold=float(gold_value) if gold_value is not None else None,
        )
        shown = number.text[:MAX_SHOWN_CHARS] if number else _short_reason(extraction)

        if gold_value is None:
            return Score.unscored(
                reason="no_gold_answer",
                answer=shown,
                explanation=(
                    "No gold answer for this sample (answers withheld); "
                    f"extracted {number.text[:MAX_SHOWN_CHARS] if number else None!r} "
                    f"({extraction.method})."
                ),
                metadata=metadata,
            )
        data = ReadingInput(
            output=output,
            reply=reply,
            program=program,
            replies=tuple(metadata.get("extractor_replies") or ()),
            reply_index=int(metadata.get("extractor_reply_index") or 0),
        )
        readings: dict[str, Reading] = {}
        for name, reader in readers.items():
            reading = reader(data)
            if reading is not None:
                readings[name] = reading
        matches: dict[str, Match] = {}
        for name, comparison in comparisons.items():
            if name in readings:
                read = readings[name]
                if read.rejected is not None:
                    matches[name] = Match(False, read.rejected)
                elif read.value is not None and math.isfinite(read.value):
                    matches[name] = compare(comparison, number_from_float(read.value), gold_value)
                else:
                    matches[name] = Match(False, f"no_answer ({name} reading)")
                continue
            matches[name] = (
                compare(comparison, number, gold_value)
                if number is not None
                else Match(False, f"no_answer ({extraction.method})")
            )
        values: dict[str, float] = {name: 1.0 if m.correct else 0.0 for name, m in matches.items()}
        classes: dict[str, str] = {}
        compared_values: dict[str, float | None] = {}
        for name, m in matches.items():
            if m.correct:
                continue
            compared_values[name] = number.value if number is not None else None
            if is_truncated(stop_reason):  # whatever was read from a cut reply
                classes[name] = no_answer("truncated")
                continue
            read_as = readings.get(name)
            compared: ParsedNumber | None = number
            if read_as is not None:
                if read_as.rejected is not None:
                    classes[name] = REJECTED
                    continue
                value = read_as.value
                compared = (
                    number_from_float(value) if value is not None and math.isfinite(value) else None
                )
                compared_values[name] = compared.value if compared is not None else None
            if compared is None or not math.isfinite(compared.value):
                missed = harness_miss(
                    output,
                    program,
                    number,
                    official=read_as is not None,
                    model_extracted=extractor == "model",
                )
                if missed is not None:
                    classes[name] = missed
                elif program is not None:
                    ran = bool(program.get("ok")) and number is not None
                    # the key's own reading of a program that ran found no number in it
                    classes[name] = (
                        program_failure_class({"ok": True})
                        if ran
                        else program_failure_class(program)
                    )
                else:
                    # (a prompt over budget is the tasks' own: those that check one say so)
                    classes[name] = no_answer_class(
                        output, stop_reason=stop_reason, method=extraction.method
                    )
                continue
            classes[name] = number_class(
                compared, gold_value, accepts_under(comparisons[name], gold_value)
            )
        metadata[ERROR_CLASS_KEY] = classes
        causes, evidences = await explain(
            classes,
            compared_values,
            output=output,
            gold=float(gold_value),
            program=program,
            metadata=state.metadata or {},
            gold_check=gold_check,
        )
        metadata[ERROR_CAUSE_KEY] = causes
        metadata[ERROR_EVIDENCE_KEY] = evidences
        first = readings.get(names[0])
        executed = first.executed if first is not None else None
        if program is not None:
            strict = 1.0 if number is not None else 0.0
            values["execution_rate"] = strict if executed is None else float(executed)
            values["strict_execution_rate"] = strict
        elif executed is not None:  # a text answer whose reader defines an execution rate
            values["execution_rate"] = float(executed)
        metadata["rules"] = {name: m.rule for name, m in matches.items()}
        if readings:
            metadata["readings"] = {
                name: {
                    "value": r.value,
                    "description": r.description,
                    "executed": r.executed,
                    **({"reply_index": r.reply_index} if r.reply_index is not None else {}),
                }
                for name, r in readings.items()
            }
            for r in readings.values():
                metadata.update(dict.fromkeys(r.flags, True))
        if extraction.method == "model_unparseable":
            # beside an official reading of its own, this is only our strict reading's verdict
            metadata["strict_unreadable" if readings else "unreadable"] = True

        verdicts = "; ".join(
            f"{name}: {'correct' if m.correct else 'incorrect'} ({m.rule}"
            + (f"; {readings[name].description}" if name in readings else "")
            + ")"
            for name, m in matches.items()
        )
        found = (
            f"extracted {shown} [{extraction.method}]"
            if number is not None
            else f"no answer [{extraction.method}: {extraction.detail}]"
        )
        return Score(
            value=values,
            answer=shown,
            explanation=f"{found}; gold {float(gold_value)!r}; {verdicts}",
            metadata=metadata,
        )

    return score
