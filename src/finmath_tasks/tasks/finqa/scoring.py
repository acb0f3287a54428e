"""FinQA's official metrics and our answer accuracy, one score per sample.

The model's output is read for its last ``Program:`` line (a program in
FinQA's DSL) and its last ``Final answer:`` line. Score values:

``execution_accuracy`` (official)
    The predicted program, executed against the sample's table
    (:mod:`finmath_tasks.tasks.finqa.dsl`), rounded to 5 decimals, equals
    ``exe_ans`` (yes/no compared as text). No program, or one that does not
    parse or run, is 0 with the reason in the explanation.
``program_accuracy`` (official)
    The predicted program is symbolically equivalent to the gold program
    (the reference's definition, see :func:`dsl.equivalent_programs`).
``<comparison>`` (``tolerant``, ``rounding``, ...)
    The final answer (the ``Final answer:`` line, else the answer the generic
    extraction finds in the whole output) compared with ``exe_ans`` by the
    generic comparisons; a yes/no gold needs the answer yes/no.

A bad model output (no program, a program that fails to run or to parse, no
answer) is incorrect with the reason. Every wrong key's score carries its error class and
its cause with the evidence (:mod:`finmath_tasks.scorers.causes`; FinQA's evidence, the
gold program and the retrieval, in :mod:`finmath_tasks.tasks.finqa.causes`): the answer
keys explain the final answer, ``execution_accuracy`` the predicted program's value; a
non-equivalent program that executes to the gold (``other_program``) is ``unexplained``. An exception in our own code is not
caught: Inspect records it as that sample's error and the other samples finish
(see :mod:`finmath_tasks.scorers.keyed`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState

from finmath_tasks.scorers.causes import (
    ERROR_CAUSE_KEY,
    ERROR_EVIDENCE_KEY,
    UNEXPLAINED,
    evidence,
    explain,
)
from finmath_tasks.scorers.comparisons import (
    Comparison,
    Match,
    compare,
    gold_from_float,
    percent_in_play,
)
from finmath_tasks.scorers.error_classes import (
    ERROR_CLASS_KEY,
    accepts_under,
    no_answer_class,
    number_class,
    stop_reason_of,
    truncated_first,
)
from finmath_tasks.scorers.extraction import extract_answer
from finmath_tasks.tasks.finqa.causes import finqa_causes
from finmath_tasks.tasks.finqa.dsl import (
    equivalent_programs,
    execute,
    same_value,
)
from finmath_tasks.tasks.finqa.error_classes import (
    OTHER_PROGRAM,
    execution_class,
    yes_no_class,
)
from finmath_tasks.tasks.finqa.reply import FINAL_LINE, MAX_SCAN_CHARS, last_line, predicted_program

EXECUTION = "execution_accuracy"
PROGRAM = "program_accuracy"
EQUIVALENCE_TIMEOUT = 20.0
"""Seconds allowed for the symbolic comparison of one predicted program."""
_YES_NO = re.compile(r"\b(yes|no)\b", re.I)


def yes_no(text: str) -> str | None:
    """The first yes/no word of ``text`` (lower-cased), if any."""
    m = _YES_NO.search(text)
    return m.group(1).lower() if m else None


def answer_matches(
    output: str,
    gold: float | str,
    comparisons: Mapping[str, Comparison],
    classes: dict[str, str] | None = None,
    stop_reason: str | None = None,
    percent: bool = False,
) -> tuple[dict[str, Match], str | None, str]:
    """Per comparison, does the final answer match ``gold``? (matches, answer shown, method);
    ``classes``: filled with the error class of each comparison the answer fails;
    ``percent``: a percentage is in play (``tolerant`` may read a fraction as a percent)."""
    classes = {} if classes is None else classes
    final = last_line(FINAL_LINE, output)
    if isinstance(gold, str):
        if final is not None:
            said, method = yes_no(final), "final_answer_line"
        else:
            found = _YES_NO.findall(output[-MAX_SCAN_CHARS:])
            said, method = (found[-1].lower() if found else None), "last_yes_no"
        correct = said == gold
        rule = "equal" if correct else ("no_answer" if said is None else "no_match")
        if not correct:
            classes.update(dict.fromkeys(comparisons, yes_no_class(said, output, stop_reason)))
        return {name: Match(correct, rule) for name in comparisons}, said, method
    extraction = extract_answer(final if final is not None else output)
    method = "final_answer_line" if final is not None else f"output:{extraction.method}"
    number = extraction.number
    if number is None:
        miss = Match(False, f"no_answer ({extraction.detail})")
        reason = no_answer_class(output, stop_reason=stop_reason, method=extraction.method)
        classes.update(dict.fromkeys(comparisons, reason))
        return {name: miss for name in comparisons}, None, method
    value = gold_from_float(gold, percent)
    matches = {name: compare(fn, number, value) for name, fn in comparisons.items()}
    for name, m in matches.items():
        if not m.correct:
            classes[name] = number_class(
                number, value, accepts_under(comparisons[name], value), stop_reason=stop_reason
            )
    return matches, number.text[:200], method


async def program_equivalence(gold: str, predicted: str) -> tuple[bool, str]:
    """:func:`equivalent_programs` off the event loop, bounded by EQUIVALENCE_TIMEOUT."""
    try:
        return await asyncio.wait_for(
            asyncio.to_thread(equivalent_programs, gold, predicted), EQUIVALENCE_TIMEOUT
        )
    except TimeoutError:
        return False, f"symbolic comparison took longer than {EQUIVALENCE_TIMEOUT:g} s"


def answer_value(output: str) -> float | None:
    """The number the answer keys compare: the ``Final answer:`` line's, else the output's."""
    final = last_line(FINAL_LINE, output)
    number = extract_answer(final if final is not None else output).number
    return number.value if number is not None else None


async def finqa_explain(
    classes: Mapping[str, str],
    output: str,
    gold: float | str,
    metadata: Mapping[str, Any],
    executed: Any,
) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """The cause of every wrong key of ``classes`` (``executed``: the predicted program's
    value, None when it did not run)."""
    answer = answer_value(output) if not isinstance(gold, str) else None
    run = float(executed) if isinstance(executed, int | float) else None
    values: dict[str, float | None] = {}
    for key, cls in classes.items():
        if key == EXECUTION or (key == PROGRAM and cls != OTHER_PROGRAM):
            values[key] = run
        elif key == PROGRAM:
            values[key] = None  # it executes to the gold: no wrong number to explain
        else:
            values[key] = answer
    causes, evidences = await explain(
        classes,
        values,
        output=output,
        gold=float("nan") if isinstance(gold, str) else float(gold),
        metadata=metadata,
        gold_check=finqa_causes,
    )
    if classes.get(PROGRAM) == OTHER_PROGRAM:
        causes[PROGRAM] = UNEXPLAINED
        evidences[PROGRAM] = evidence(
            "the program executes to the gold's value by another derivation than the gold "
            "program's: no wrong number to explain",
            error_class=OTHER_PROGRAM,
        )
    return causes, evidences


def finqa_keys(comparisons: Mapping[str, Comparison], programs: bool = True) -> list[str]:
    return [*((EXECUTION, PROGRAM) if programs else ()), *comparisons]


@scorer(metrics={"*": [accuracy(), stderr()]})
def finqa_scorer(comparisons: Mapping[str, Comparison], programs: bool = True) -> Scorer:
    """FinQA execution and program accuracy, and answer accuracy under each of ``comparisons``.

    ``programs=False``: for solvers whose answers carry no DSL program (the
    agent solvers' JSON answers): answer accuracy only, no execution/program keys.
    """
    if not comparisons:
        raise ValueError("finqa_scorer needs at least one comparison")

    async def score(state: TaskState, target: Target) -> Score:
        metadata = state.metadata
        gold: float | str = metadata["exe_ans"]
        output = state.output.completion if state.output else ""
        stop = stop_reason_of(state.output)
        program = predicted_program(output) if programs else None
        info: dict[str, Any] = {"program": program}
        classes: dict[str, str] = {}
        run_ok, run_value = False, None
        if not programs:
            executed, equivalent = False, False
            exec_note = equiv_note = "not scored for this solver"
        elif program is None:
            executed, equivalent = False, False
            exec_note = equiv_note = "no 'Program:' line in the output"
        else:
            run = execute(program, metadata["table"])
            run_ok, run_value = run.ok, run.value
            executed = run.ok and same_value(run.value, gold)
            info["executed_value"] = run.value
            info["execution_error"] = run.error or None
            exec_note = (
                f"program error: {run.error}"
                if not run.ok
                else f"program value {run.value!r} vs exe_ans {gold!r}"
            )
            equivalent, equiv_note = await program_equivalence(metadata["program"], program)
        matches, shown, method = answer_matches(
            output, gold, comparisons, classes, stop, percent=percent_in_play(metadata)
        )
        if programs and not executed:
            classes[EXECUTION] = execution_class(program, run_ok, run_value, gold, output, stop)
        if programs and not equivalent:
            classes[PROGRAM] = OTHER_PROGRAM if executed else classes[EXECUTION]
        values = {
            **({EXECUTION: float(executed), PROGRAM: float(equivalent)} if programs else {}),
            **{name: float(m.correct) for name, m in matches.items()},
        }
        info.update(
            gold_program=metadata["program"],
            exe_ans=gold,
            answer_method=method,
            rules={name: m.rule for name, m in matches.items()},
            equivalence=equiv_note,
        )
        info[ERROR_CLASS_KEY] = final_classes = truncated_first(classes, stop)
        causes, evidences = await finqa_explain(
            final_classes, output, gold, metadata, run_value if run_ok else None
        )
        info[ERROR_CAUSE_KEY], info[ERROR_EVIDENCE_KEY] = causes, evidences
        verdicts = "; ".join(
            f"{name}: {'correct' if m.correct else 'incorrect'} ({m.rule})"
            for name, m in matches.items()
        )
        explanation = f"answer {shown!r} [{method}]: {verdicts}"
        if programs:
            explanation = (
                f"execution: {'correct' if executed else 'incorrect'} ({exec_note}); "
                f"program: {'equivalent' if equivalent else 'not equivalent'} ({equiv_note}); "
                + explanation
            )
        return Score(value=values, answer=shown, explanation=explanation, metadata=info)

    return score
