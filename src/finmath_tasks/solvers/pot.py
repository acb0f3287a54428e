"""Program-of-thought: the model writes ``def solution():``; the sandbox runs it.

The program never runs in the evaluation process: it goes to the sample's
sandbox (``sandbox().exec`` of the program runner), and only a JSON result
comes back. The result is recorded in the sample store under
``PROGRAM_RESULT_KEY`` for the numeric scorer, together with the result of the
sample's gold program, re-executed through the same path (as the FinanceMath
reference compares program answers with the re-executed gold program).
"""

from __future__ import annotations

import logging
import re
import textwrap
from typing import Any

from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox

from finmath_tasks.sandbox.client import DEFAULT_TIMEOUT, ProgramResult, is_unisolated, run_program
from finmath_tasks.sandbox.resolve import UNISOLATED_WARNING
from finmath_tasks.scorers.numeric import PROGRAM_RESULT_KEY

logger = logging.getLogger(__name__)

ENTRY_POINT = "solution"
_FENCED_PYTHON = re.compile(r"```python(.*?)```", re.DOTALL)
_FENCED_ANY = re.compile(r"```(.*?)```", re.DOTALL)
_SIGNATURE = "def solution():"


def extract_program(output: str, repair: bool = False) -> str:
    """The program in a model output, following the reference's rules.

    The first ```python block, else the first ``` block. Without a complete
    block, the output is the continuation of the prompt, which ends inside
    ``def solution():``: text before a lone closing fence is taken, and the
    signature is prepended when the output lacks it.

    With ``repair`` (not in the reference, off by default), code without
    ``def solution():`` -- typically a fenced function body, which the
    reference's rules turn into an indentation error -- is dedented and wrapped
    in the signature instead.
    """
    if not output:
        return ""
    code, fenced = _code_text(output)
    if repair and _SIGNATURE not in code:
        body = textwrap.dedent(code).strip("\n")
        return f"{_SIGNATURE}\n{textwrap.indent(body, '    ')}"
    if fenced or _SIGNATURE in output:
        return code.strip()
    if code.startswith("    "):
        return f"{_SIGNATURE}\n{code}".strip()
    return f"{_SIGNATURE}\n    {code}".strip()


def _code_text(output: str) -> tuple[str, bool]:
    """(code, fenced): the first fenced block, else the text before a lone closing fence,
    else the whole output."""
    for pattern in (_FENCED_PYTHON, _FENCED_ANY):
        block = pattern.search(output)
        if block:
            return block.group(1).strip("\n"), True
    return (output.split("```")[0] if output.count("```") == 1 else output), False


def _record(result: ProgramResult) -> dict[str, Any]:
    return {
        "ok": result.ok,
        "value": result.value,
        "value_type": result.value_type,
        "error": result.error,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "duration_ms": result.duration_ms,
    }


async def execute_and_record(state: TaskState, program: str, timeout: float) -> None:
    """Run the program and the gold program; store both results for the scorer."""
    if is_unisolated(sandbox()):
        # recorded in every affected sample's transcript, so the log says it
        logger.warning(UNISOLATED_WARNING)
    result = await run_program(program, timeout=timeout, entry=ENTRY_POINT)
    record = _record(result)
    record["program"] = program
    gold_program = (state.metadata or {}).get("gold_program") or ""
    if gold_program and state.target.text.strip():
        gold = await run_program(gold_program, timeout=max(timeout, 10.0), entry=ENTRY_POINT)
        record["gold_value"] = gold.value if gold.ok else None
        if not gold.ok:
            record["gold_error"] = gold.error
    state.store.set(PROGRAM_RESULT_KEY, record)


@solver
def pot(system_prompt: str, timeout: float = DEFAULT_TIMEOUT, repair: bool = False) -> Solver:
    """Zero-shot program of thought: generate, extract ``solution()``, run it in the sandbox.

    Args:
      system_prompt: the paper's system prompt (used verbatim).
      timeout: seconds per program (3, as the reference).
      repair: wrap a bare function body in ``def solution():`` (see ``extract_program``).
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.messages = [
            ChatMessageSystem(content=system_prompt),
            ChatMessageUser(content=state.user_prompt.text),
        ]
        state = await generate(state)
        completion = state.output.completion if state.output else ""
        await execute_and_record(state, extract_program(completion, repair=repair), timeout)
        return state

    return solve


@solver
def oracle_pot(timeout: float = DEFAULT_TIMEOUT) -> Solver:
    """Answer with the sample's gold program, executed through the same sandbox path as ``pot``."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        program = (state.metadata or {}).get("gold_program") or ""
        if not program:
            raise ValueError(f"sample {state.sample_id!r} has no gold program for oracle_pot")
        content = f"```python\n{program}\n```"
        state.output = ModelOutput.from_content(model="oracle", content=content)
        state.messages.append(ChatMessageAssistant(content=content, model="oracle"))
        await execute_and_record(state, extract_program(content), timeout)
        return state

    return solve
