"""The agent solvers of the financial-agents paper, for any task whose samples carry
``metadata["question"]`` and ``metadata["context"]`` (the rendered document).

Every model call is its own single-turn prompt, as in the paper's appendix D (D.3 to
D.7): the analyst's question (no system prompt), then each agent's prompt restating what
that agent reads (``prompts.py``): the critic gets the document, the question and the
analyst's whole response; the revision the same and the critique; the improved critic
the document, the question and the previous answer; the comparison after an update the
question and both whole replies; the calculator's extraction the analyst's whole output
as its list of steps; its final prompt that output and the checked calculations. No
prompt refers to an earlier turn. ``state.messages`` holds the call being made (its
prompt, then the reply); the log's transcript shows every call's prompt and reply. The
same model plays every agent, as in the paper.

==================== ========================================================================
``cot``              analyst: JSON ``{"steps", "answer"}`` chain of thought
``pot``              analyst writes ``solution()``; it runs in the sandbox (``run_program``)
``critic``           cot, then critic feedback, then the analyst answers again
``icritic``          cot, then the improved critic: "maintain" (answer kept, no more calls)
                     or "update" with its own answer, and the analyst compares both
``calculator``       cot, then the model lists the equations of the analyst's output; our
                     evaluator checks them; the checked calculations go back with that
                     output for the final answer
``critic_calculator``  cot, critic, calculator
``icritic_calculator`` cot, improved critic, calculator
``critic_oracle``    cot, and the critic only when the first answer is wrong by the GOLD
                     answer (the earlier paper's oracle setting; uses gold labels)
==================== ========================================================================

Every answer is recorded in the store under ``AGENT_ANSWERS_KEY``, the whole reply that
gave the current answer under ``AGENT_RESPONSE_KEY`` (what the next agent reads), and what
each step did under ``AGENT_TRACE_KEY``;
:func:`~finmath_tasks.solvers.agents.scoring.agent_answer` scores them. Our own failures
(a reply we cannot parse, a refused equation) are recorded with the reason and never end
the evaluation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args

from inspect_ai.model import ChatMessageUser
from inspect_ai.solver import (
    Generate,
    Solver,
    TaskState,
    chain,
    generate,
    solver,
)

from finmath_tasks.sandbox.client import DEFAULT_TIMEOUT, PROGRAM_RESULT_KEY
from finmath_tasks.solvers.agents import prompts as P
from finmath_tasks.solvers.agents.answers import (
    Answer,
    ParsedReply,
    answer_text,
    decision,
    parse_reply,
)
from finmath_tasks.solvers.agents.calculator import (
    check_equations,
    equation_sources,
    render_checks,
)
from finmath_tasks.solvers.agents.scoring import (
    AGENT_ANSWERS_KEY,
    AGENT_RESPONSE_KEY,
    AGENT_TRACE_KEY,
    AnswerCheck,
    steps_record,
)
from finmath_tasks.solvers.pot import execute_program, first_code_block

AgentName = Literal[
    "cot",
    "pot",
    "critic",
    "icritic",
    "calculator",
    "critic_calculator",
    "icritic_calculator",
    "critic_oracle",
]
AGENT_NAMES: tuple[str, ...] = get_args(AgentName)
PROGRAM_AGENTS = ("pot",)
"""Agents that run a program (the task needs a sandbox for them)."""
REVIEW_AGENTS: tuple[str, ...] = tuple(a for a in AGENT_NAMES if a not in ("cot", "pot"))
"""Agents with a critic or calculator stage after the first answer: only they report the
first answer and the flips between it and the final answer."""
CALCULATOR_AGENTS: tuple[str, ...] = ("calculator", "critic_calculator", "icritic_calculator")
"""Agents with a calculator stage (they report the ``unsourced_equations`` diagnostic)."""
GOLD_LABEL_AGENTS = ("critic_oracle",)
"""Agents that read the gold answer while solving (label their results as oracle results)."""
POT_ENTRY = "solution"


# --- recording -------------------------------------------------------------------------


def record_answer(
    state: TaskState,
    stage: str,
    answer: Answer,
    method: str,
    detail: str = "",
    steps: Any = None,
) -> None:
    """Append one answer, with the steps the model wrote for it, to the recorded answers."""
    stages = list(state.store.get(AGENT_ANSWERS_KEY) or [])
    stages.append(
        {
            "stage": stage,
            "answer": answer,
            "method": method,
            "detail": detail[:500],
            "steps": steps_record(steps),
        }
    )
    state.store.set(AGENT_ANSWERS_KEY, stages)


def record_reply(state: TaskState, stage: str, reply: ParsedReply) -> None:
    """Record a JSON reply's answer and its ``steps`` (None when the reply has none)."""
    record_answer(state, stage, reply.answer, reply.method, reply.detail, reply.fields.get("steps"))


def record_kept(state: TaskState, stage: str, method: str, detail: str) -> None:
    """Record the last answer again, with its steps (a stage that changed nothing)."""
    stages = state.store.get(AGENT_ANSWERS_KEY) or []
    last = stages[-1] if stages else {}
    record_answer(state, stage, last.get("answer"), method, detail, last.get("steps"))


def record_trace(state: TaskState, step: str, info: dict[str, Any]) -> None:
    trace = dict(state.store.get(AGENT_TRACE_KEY) or {})
    trace[step] = info
    state.store.set(AGENT_TRACE_KEY, trace)


def current_answer(state: TaskState) -> Answer:
    stages = state.store.get(AGENT_ANSWERS_KEY) or []
    return stages[-1].get("answer") if stages else None


def _last_reply(state: TaskState) -> str:
    return state.output.completion if state.output else ""


def _read_answer(state: TaskState) -> ParsedReply:
    """The last reply's answer (no last-number guess when it was cut off at max_tokens)."""
    truncated = bool(state.output) and state.output.stop_reason == "max_tokens"
    return parse_reply(_last_reply(state), truncated=truncated)


def _inputs(state: TaskState) -> tuple[str, str]:
    """The sample's document and question, as every prompt that reads them carries them."""
    metadata = state.metadata or {}
    return str(metadata.get("context", "")), str(metadata.get("question", state.input_text))


def current_response(state: TaskState) -> str:
    """The whole reply that gave the current answer (what the next agent reads)."""
    return str(state.store.get(AGENT_RESPONSE_KEY) or "")


def _answered(state: TaskState, stage: str) -> None:
    """Record the last reply's answer as ``stage``; the reply becomes the response."""
    record_reply(state, stage, _read_answer(state))
    state.store.set(AGENT_RESPONSE_KEY, _last_reply(state))


async def _call(state: TaskState, generate: Generate, prompt: str) -> TaskState:
    """One agent call: a new conversation of the single user prompt ``prompt``."""
    state.messages = [ChatMessageUser(content=prompt)]
    return await generate(state)


# --- steps -----------------------------------------------------------------------------


@solver
def render_question(template: str, answer_instruction: str) -> Solver:
    """The user turn: ``template`` filled with the sample's question and context."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        context, question = _inputs(state)
        state.user_prompt.text = P.fill(
            template,
            context=context,
            question=question,
            answer_instruction=answer_instruction,
        )
        return state

    return solve


@solver
def answer_and_record(stage: str) -> Solver:
    """Generate, then record the reply's JSON answer as ``stage`` (and the reply as the
    response the later agents read)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state = await generate(state)
        _answered(state, stage)
        return state

    return solve


@solver
def critic_step(answer_instruction: str) -> Solver:
    """The critic's feedback on the response, then the analyst's revised answer (D.3)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        context, question = _inputs(state)
        response = current_response(state)
        state = await _call(state, generate, P.critic_prompt(context, question, response))
        critique = _last_reply(state)
        prompt = P.revision_prompt(context, question, response, critique, answer_instruction)
        state = await _call(state, generate, prompt)
        _answered(state, "critic")
        record_trace(state, "critic", {"critique": critique[:2000]})
        return state

    return solve


@solver
def improved_critic_step(answer_instruction: str) -> Solver:
    """The improved critic: maintain (the answer stands) or update (the analyst compares
    both whole replies) (D.4)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        context, question = _inputs(state)
        response = current_response(state)
        prompt = P.improved_critic_prompt(context, question, response, answer_instruction)
        state = await _call(state, generate, prompt)
        critic_reply = _last_reply(state)
        verdict, obj = decision(critic_reply, ("maintain", "update"))
        critic_answer = answer_text(obj.get("answer")) if verdict == "update" else None
        info: dict[str, Any] = {
            "decision": verdict,
            "critique": str(obj.get("critique", ""))[:2000],
            "critic_answer": critic_answer,
        }
        if verdict != "update" or critic_answer is None:
            reason = (
                "the critic maintained the answer"
                if verdict == "maintain"
                else "the critic's reply had no decision (read as maintain)"
                if verdict is None
                else "the critic updated without an answer (read as maintain)"
            )
            info["reason"] = reason
            record_kept(state, "icritic", "maintained", reason)
            record_trace(state, "icritic", info)
            return state
        prompt = P.compare_prompt(question, response, critic_reply, answer_instruction)
        state = await _call(state, generate, prompt)
        _answered(state, "icritic")
        record_trace(state, "icritic", info)
        return state

    return solve


@solver
def calculator_step(answer_instruction: str) -> Solver:
    """The calculator agent (D.5): the model lists the equations of the analyst's whole
    output, we check them, and the analyst improves that output with the checked
    calculations.

    Without any equation line in the reply the answer stands (no further call). The
    trace records, per equation, the operands that occur nowhere in the analyst's output
    (:func:`~finmath_tasks.solvers.agents.calculator.equation_sources`).
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        response = current_response(state)
        state = await _call(state, generate, P.extraction_prompt(response))
        extraction = _last_reply(state)
        checks = check_equations(extraction)
        sources = equation_sources(checks, response, P.CALCULATOR_EXTRACT)
        info: dict[str, Any] = {
            "equations": [
                {**c.to_dict(), "unsourced": list(src.unsourced), "in_examples": src.in_examples}
                for c, src in zip(checks, sources, strict=True)
            ],
            "corrected": sum(c.status == "incorrect" for c in checks),
            "refused": sum(c.status == "refused" for c in checks),
            "unsourced": sum(bool(src.unsourced) for src in sources),
            "extraction": extraction[:2000],
        }
        if not checks:
            info["reason"] = "no equations in the reply; the answer stands"
            record_kept(state, "calculator", "kept", info["reason"])
            record_trace(state, "calculator", info)
            return state
        prompt = P.final_prompt(response, render_checks(checks), answer_instruction)
        state = await _call(state, generate, prompt)
        _answered(state, "calculator")
        record_trace(state, "calculator", info)
        return state

    return solve


@solver
def oracle_gate(step: Solver, check: AnswerCheck, stage: str = "critic") -> Solver:
    """Run ``step`` only when the last answer is wrong by the GOLD answer (uses gold labels).

    When it is right, the answer is recorded again as ``stage`` unchanged.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        before = current_answer(state)
        try:
            first_correct: bool | None = check(before, state).correct
        except Exception as exc:
            first_correct = None
            reason = f"the gold check failed ({type(exc).__name__}: {exc}); critic applied"
        else:
            reason = (
                "first answer right by the gold answer: critic skipped"
                if first_correct
                else "first answer wrong by the gold answer: critic applied"
            )
        record_trace(
            state,
            "oracle",
            {"uses_gold_labels": True, "first_correct": first_correct, "reason": reason},
        )
        if first_correct:
            record_kept(state, stage, "oracle_skipped", reason)
            return state
        return await step(state, generate)

    return solve


@solver
def record_program_answer() -> Solver:
    """Record the sandboxed program's value (``execute_program``) as the answer "pot", its
    program text as the steps."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        result = state.store.get(PROGRAM_RESULT_KEY) or {}
        value = result.get("value")
        program = result.get("program")  # the program text is the PoT stage's steps
        if result.get("ok") and isinstance(value, int | float) and not isinstance(value, bool):
            record_answer(
                state, "pot", repr(value), "program", "value returned by solution()", program
            )
        else:
            error = str(result.get("error") or "no program result")
            record_answer(state, "pot", None, "program_failed", error, program)
        return state

    return solve


# --- the table -------------------------------------------------------------------------


def agent_solver(
    name: AgentName,
    *,
    answer_instruction: str = P.DEFAULT_ANSWER_INSTRUCTION,
    oracle_check: AnswerCheck | None = None,
    program_timeout: float = DEFAULT_TIMEOUT,
) -> Solver:
    """The solver ``name`` (see the module docstring).

    Args:
      name: one of :data:`AGENT_NAMES`.
      answer_instruction: how the answer must be written (the task's rule).
      oracle_check: for ``critic_oracle``, the check that decides whether the first answer
        is wrong by the gold answer (e.g. ``numeric_check({"rounding": rounding})``).
      program_timeout: seconds per program (``pot``; the task must set a sandbox).
    """
    if name not in AGENT_NAMES:
        raise ValueError(f"unknown agent {name!r}; one of {', '.join(AGENT_NAMES)}")
    instruction = answer_instruction
    if name == "pot":
        return chain(
            render_question(P.ANALYST_POT, instruction),
            generate(),
            execute_program(extract=first_code_block, entry=POT_ENTRY, timeout=program_timeout),
            record_program_answer(),
        )
    steps: list[Solver] = [
        render_question(P.ANALYST_COT, instruction),
        answer_and_record("cot"),
    ]
    later: dict[str, Callable[[], list[Solver]]] = {
        "cot": lambda: [],
        "critic": lambda: [critic_step(instruction)],
        "icritic": lambda: [improved_critic_step(instruction)],
        "calculator": lambda: [calculator_step(instruction)],
        "critic_calculator": lambda: [critic_step(instruction), calculator_step(instruction)],
        "icritic_calculator": lambda: [
            improved_critic_step(instruction),
            calculator_step(instruction),
        ],
    }
    if name == "critic_oracle":
        if oracle_check is None:
            raise ValueError("critic_oracle needs oracle_check (the gold-answer check)")
        return chain([*steps, oracle_gate(critic_step(instruction), oracle_check)])
    return chain([*steps, *later[name]()])
