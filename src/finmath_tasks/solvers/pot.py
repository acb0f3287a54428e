"""Program of thought: the model writes a program; the sandbox runs it.

The program never runs in the evaluation process: :func:`execute_program`
sends it to the sample's sandbox (``sandbox.client.run_program``), and only a
JSON result comes back. The result is recorded in the sample store under
``PROGRAM_RESULT_KEY`` (``sandbox.client``) for the numeric scorer (``answer="program"``), together
with, when asked, the result of the sample's gold program re-executed through
the same path (some papers compare program answers with the re-executed gold).

How a program is cut out of the output and which function is its entry point
are the benchmark's: they are parameters here.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from inspect_ai.solver import Generate, Solver, TaskState, chain, generate, solver, system_message
from inspect_ai.util import sandbox

from finmath_tasks.sandbox.client import (
    DEFAULT_TIMEOUT,
    PROGRAM_RESULT_KEY,
    ProgramResult,
    SandboxFailure,
    is_unisolated,
    run_program,
)
from finmath_tasks.sandbox.resolve import UNISOLATED_WARNING

logger = logging.getLogger(__name__)

ALTERNATIVES_KEY = "alternatives"
"""Key, inside a ``PROGRAM_RESULT_KEY`` record, of the runs of other extractions' programs."""
_TRAILING_SPACE = " \t\r\n"

GOLD_PROGRAM_MIN_TIMEOUT = 10.0
"""Gold programs get at least this many seconds: a slow gold must not fail the sample."""

_FENCED_PYTHON = re.compile(r"```python(.*?)```", re.DOTALL)
_FENCED_ANY = re.compile(r"```(.*?)```", re.DOTALL)

ProgramExtractor = Callable[[str], str]


def same_program(a: str, b: str) -> bool:
    """Two program texts that run alike: equal but for spaces and newlines at the end."""
    return a.rstrip(_TRAILING_SPACE) == b.rstrip(_TRAILING_SPACE)


def fenced_code(output: str) -> tuple[str, bool]:
    """(code, fenced): the first ```python block, else the first ``` block, else the text
    before a lone closing fence (a continuation), else the whole output."""
    for pattern in (_FENCED_PYTHON, _FENCED_ANY):
        block = pattern.search(output)
        if block:
            return block.group(1).strip("\n"), True
    return (output.split("```")[0] if output.count("```") == 1 else output), False


def first_code_block(output: str) -> str:
    """The simplest extraction: the first fenced block, else the whole output."""
    return fenced_code(output)[0].strip()


async def run_and_record(
    state: TaskState,
    program: str,
    *,
    entry: str,
    timeout: float,
    gold_program: str | None = None,
    alternatives: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``program`` (and ``gold_program``) in the sandbox; store and return the record.

    ``alternatives``: name -> another cut of the same output (e.g. a paper's own
    extraction rules); each that differs from ``program`` runs too (identical ones
    once) and is recorded under ``alternatives``."""
    if is_unisolated(sandbox()):
        # recorded in every affected sample's transcript, so the log says it
        logger.warning(UNISOLATED_WARNING)
    result = await _run(program, entry=entry, timeout=timeout)
    record = result.to_dict()
    record["program"] = program
    if gold_program:
        gold = await _run(gold_program, entry=entry, timeout=max(timeout, GOLD_PROGRAM_MIN_TIMEOUT))
        record["gold_value"] = gold.value if gold.ok else None
        record["gold_value_type"] = gold.value_type
        if not gold.ok:
            record["gold_error"] = gold.error
    if alternatives:
        runs: dict[str, dict[str, Any]] = {}
        for name, text in alternatives.items():
            if same_program(text, program):
                continue
            done = next((r for r in runs.values() if same_program(r["program"], text)), None)
            if done is None:
                done = (await _run(text, entry=entry, timeout=timeout)).to_dict()
                done["program"] = text
            runs[name] = done
        record[ALTERNATIVES_KEY] = runs
    state.store.set(PROGRAM_RESULT_KEY, record)
    return record


async def _run(program: str, *, entry: str, timeout: float) -> ProgramResult:
    if not program.strip():
        return ProgramResult.failure("no program found in the output")
    try:
        return await run_program(program, timeout=timeout, entry=entry)
    except SandboxFailure:
        raise  # the sandbox failed, not the program: the sample's error (retried), no verdict
    except Exception as exc:  # our own failure is this sample's result, never the eval's end
        return ProgramResult.failure(f"could not run the program: {type(exc).__name__}: {exc}")


@solver
def execute_program(
    extract: ProgramExtractor = first_code_block,
    entry: str = "solution",
    timeout: float = DEFAULT_TIMEOUT,
    gold_program_field: str | None = None,
    alternatives: Mapping[str, ProgramExtractor] | None = None,
) -> Solver:
    """Run the program in the model's last output in the sandbox and record its value.

    Args:
      extract: cuts the program out of the output (the benchmark's rules).
      entry: the function the program defines and the sandbox calls.
      timeout: seconds per program.
      gold_program_field: sample metadata field holding a gold program to
        re-execute beside it (None: none), for ``numeric_answer(gold="program")``.
      alternatives: name -> another extraction of the program (a paper's own rules);
        where its program differs from ``extract``'s, it runs too (``run_and_record``).
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        completion = state.output.completion if state.output else ""
        try:
            program = extract(completion)
        except Exception as exc:
            program = ""
            logger.warning("program extraction failed: %s: %s", type(exc).__name__, exc)
        others = {name: _cut(cut, completion) for name, cut in (alternatives or {}).items()}
        gold_program = None
        if gold_program_field and state.target.text.strip():
            gold_program = (state.metadata or {}).get(gold_program_field) or None
        await run_and_record(
            state,
            program,
            entry=entry,
            timeout=timeout,
            gold_program=gold_program,
            alternatives=others,
        )
        return state

    return solve


def _cut(extract: ProgramExtractor, completion: str) -> str:
    try:
        return extract(completion)
    except Exception as exc:
        logger.warning("program extraction failed: %s: %s", type(exc).__name__, exc)
        return ""


@solver
def pot(
    system_prompt: str,
    prompt: Solver | None = None,
    extract: ProgramExtractor = first_code_block,
    entry: str = "solution",
    timeout: float = DEFAULT_TIMEOUT,
    gold_program_field: str | None = None,
    alternatives: Mapping[str, ProgramExtractor] | None = None,
) -> Solver:
    """Program of thought: system prompt, user prompt, generate, run the program."""
    steps = [system_message(system_prompt)]
    if prompt is not None:
        steps.append(prompt)
    steps += [
        generate(),
        execute_program(extract, entry, timeout, gold_program_field, alternatives),
    ]
    return chain(steps)
