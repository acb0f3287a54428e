"""The quality-control stage: two solutions per task, both executed in the sandbox.

What the reference does (``bench_generation/quality_control``), described:

1. The generated ``solution`` is executed (the reference uses ``exec`` in its
   own process, with its module's globals and a separate dict of locals; the
   first ``def name(`` of the text is called without arguments). A failure to
   define the function drops the task; an exception inside the call gives
   ``-inf``.
2. The model is asked, at temperature 0 (1024 tokens), to solve the question
   again from the documents and the quantity cells, answering JSON with
   ``reasoning``, ``python_solution`` and ``answer``. A reply that is not that
   JSON gives ``-inf``; its function is executed as in 1, and when it cannot be
   defined the stated ``answer`` is used (an exception inside the call still
   gives ``-inf``).
3. The task is consistent when ``math.isclose(first, second, rel_tol=1e-9)``,
   or when either is None; a consistent task's ``answer`` becomes the first
   solution's value. Every task is written back with ``consistency`` 1/0.

Here, every program (generated and second) runs in the package's sandbox
(:func:`finmath_tasks.sandbox.client.run_program`), never in this process: a
small wrapper program defines the solution in the sandbox the way the reference
does (``--qc reference``: globals ``math``, ``json``, ``re``, ``np`` and separate
locals, so a helper function or a module-level table the solution defines is not
visible inside it, as in the reference; ``strict``: one namespace) and calls it.

``--qc reference`` keeps the reference's rule that a missing answer (None)
passes; ``strict`` (the default) fails it. In both modes a pair of two failures
(``-inf`` and ``-inf``, which ``math.isclose`` calls close) is NOT consistent: its
answer could not be evaluated. A task whose solution cannot be defined is kept
with ``consistency`` 0 and its reason (the reference drops it; none of the
released tasks is such). Each task records both answers and how each was
obtained under ``qc``.

The stage is an Inspect eval of an internal task (one sample per task): the
log in ``<period>/.build/logs`` shows every prompt, reply and verdict with token
usage. Each finished task is appended to ``.build/qc-<type>.jsonl`` at once (with a
digest of its prompt, solution and mode: a stale record is not reused), so
an interrupted stage resumes without asking the model again.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, Model, get_model
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver

from finmath_tasks.sandbox.client import ProgramResult, run_program
from finmath_tasks.tasks.mathhay.build.calls import (
    Checkpoint,
    digest,
    read_checkpoint,
    usage_tokens,
)
from finmath_tasks.tasks.mathhay.build.layout import (
    CELLS_FIELD,
    BuildError,
    Layout,
    read_json,
    write_json,
)
from finmath_tasks.tasks.mathhay.build.prompts import quality_control_prompt
from finmath_tasks.tasks.mathhay.build.replies import ReplyError, json_object, require
from finmath_tasks.tasks.mathhay.dataset import DOCUMENTS_PER_TYPE

QcMode = Literal["strict", "reference"]
QC_MODES: tuple[str, ...] = ("strict", "reference")
QC_ROLE = "qc"
ENTRY = "_finmath_qc_entry"
NOT_DEFINED = "SolutionNotDefined"
DEFAULT_TIMEOUT = 10.0
"""Seconds per solution (the reference has no limit; the sandbox needs one)."""
QC_CONFIG = GenerateConfig(temperature=0.0, max_tokens=1024)
"""The reference's quality-control call: temperature 0, at most 1024 tokens."""

_WRAPPER = """\
import json
import math
import re

try:
    import numpy as np
except Exception:
    np = None

_SOURCE = {source!r}
_SEPARATE_LOCALS = {separate!r}


class SolutionNotDefined(Exception):
    pass


def {entry}():
    env = {{"__builtins__": __builtins__, "__name__": "solution", "math": math,
            "json": json, "re": re}}
    if np is not None:
        env["np"] = np
    local = {{}} if _SEPARATE_LOCALS else env
    try:
        exec(compile(_SOURCE, "<solution>", "exec"), env, local)
    except BaseException as exc:
        raise SolutionNotDefined(type(exc).__name__ + ": " + str(exc)) from None
    found = re.search(r"def (\\w+)\\s*\\(", _SOURCE)
    if found is None:
        raise SolutionNotDefined("no function definition in the solution")
    function = local.get(found.group(1))
    if not callable(function):
        raise SolutionNotDefined("function " + found.group(1) + " is not defined")
    return function()
"""


def solution_program(source: str, mode: str) -> str:
    """The program sent to the sandbox: ``source`` defined the reference's way, then called."""
    return _WRAPPER.format(source=source, separate=mode == "reference", entry=ENTRY)


# ---- one solution's value --------------------------------------------------------------


@dataclass
class Answer:
    """One solution's answer and how it was obtained."""

    value: float | None
    """A finite number, None (the solution returned None), or -inf (it failed)."""
    how: str
    """``executed``, ``returned None``, ``call failed``, ``not defined``, ``stated answer``,
    ``no reply``, ``not a number``."""
    error: str | None = None

    @property
    def usable(self) -> bool:
        return self.value is not None and math.isfinite(self.value)

    def record(self) -> dict[str, Any]:
        value = self.value if self.value is None or math.isfinite(self.value) else "-inf"
        return {"value": value, "how": self.how, "error": self.error}


def executed(result: ProgramResult) -> Answer:
    """The reference's reading of one execution (``not defined`` left to the caller)."""
    if result.ok and result.value is not None:
        return Answer(result.value, "executed")
    error = result.error or "failed"
    if NOT_DEFINED in error:
        return Answer(-math.inf, "not defined", error)
    if result.value_type == "NoneType":
        return Answer(None, "returned None", error)
    if "not a number" in error or "NaN" in error or "infinite" in error:
        # the reference compares float(value): a non-number is inconsistent
        return Answer(-math.inf, "not a number", error)
    return Answer(-math.inf, "call failed", error)


def consistency(first: Answer, second: Answer, mode: str) -> tuple[bool, str]:
    """(consistent, reason) of two answers under ``mode``."""
    if first.how == "not defined":
        return False, f"the generated solution cannot be defined ({first.error})"
    if first.value is None or second.value is None:
        if mode == "reference":
            return True, "a missing answer passes (--qc reference)"
        which = "generated" if first.value is None else "second"
        return False, f"the {which} solution gave no answer"
    if not first.usable:
        return False, f"the generated solution failed: {first.how} ({first.error})"
    if not second.usable:
        return False, f"the second solution failed: {second.how} ({second.error})"
    if math.isclose(first.value, second.value, rel_tol=1e-9):
        return True, "the two answers agree"
    return False, f"the answers differ: {first.value!r} vs {second.value!r}"


def stated_answer(value: Any) -> float | None:
    """The reply's ``answer`` read as the reference's schema does (a float)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().replace(",", ""))
        except ValueError:
            return None
    return None


# ---- the items ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One task of a generated file: where it is and what quality control needs."""

    task_type: str
    group: int
    index: int
    question: str
    solution: str
    cells: Any
    documents: list[str]

    @property
    def key(self) -> str:
        return f"{self.task_type}-{self.group:04d}-{self.index:02d}"

    @property
    def prompt(self) -> str:
        return quality_control_prompt(self.question, self.cells, self.documents)

    def digest(self, mode: str) -> str:
        """What the record depends on: a finished record with another digest is stale."""
        return digest(self.key, self.prompt, self.solution, mode)


def group_documents(group: dict[str, Any], where: str) -> list[str]:
    docs = group.get("document")
    docs = [docs] if isinstance(docs, str) else docs
    if not isinstance(docs, list) or not docs or not all(isinstance(d, str) for d in docs):
        raise BuildError(f"{where}: 'document' must be a string or a list of strings")
    return docs


def read_items(path: Path, task_type: str) -> tuple[list[Any], list[Item]]:
    """The groups of a generated file and its tasks; errors name the file and group."""
    groups = read_json(path, "generated questions")
    if not isinstance(groups, list):
        raise BuildError(f"{path}: expected a JSON list of document groups")
    cells_field = CELLS_FIELD[DOCUMENTS_PER_TYPE[task_type]]
    items = []
    for g, group in enumerate(groups):
        where = f"{path} group {g}"
        if not isinstance(group, dict) or not isinstance(group.get("tasks"), list):
            raise BuildError(f"{where}: not a document group with a 'tasks' list")
        docs = group_documents(group, where)
        for t, task in enumerate(group["tasks"]):
            if not isinstance(task, dict):
                raise BuildError(f"{where} task {t}: not an object")
            items.append(
                Item(
                    task_type,
                    g,
                    t,
                    str(task.get("question", "")),
                    str(task.get("solution", "")),
                    task.get(cells_field, {}),
                    docs,
                )
            )
    return groups, items


# ---- the Inspect task ---------------------------------------------------------------------------


@solver
def quality_control(mode: str, timeout: float, checkpoint: Checkpoint) -> Any:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        meta = state.metadata
        first_run = await run_program(
            solution_program(meta["solution"], mode), timeout=timeout, entry=ENTRY
        )
        first = executed(first_run)
        model = get_model(role=QC_ROLE, default=get_model())
        output = await model.generate(state.input_text, config=QC_CONFIG)
        state.output = output
        state.messages.append(output.message)
        second = await second_answer(output.completion, mode, timeout)
        ok, reason = consistency(first, second, mode)
        record = {
            "key": meta["key"],
            "digest": meta["digest"],
            "consistency": int(ok),
            "reason": reason,
            "first": first.record(),
            "second": second.record(),
            "mode": mode,
        }
        meta["qc"] = record
        checkpoint.add(record)
        return state

    return solve


async def second_answer(reply: str, mode: str, timeout: float) -> Answer:
    """The second solution's answer from the model's reply (see the module docstring)."""
    try:
        obj = json_object(reply)
        code = require(obj, "python_solution", str)
        require(obj, "answer", (int, float, str))
    except ReplyError as e:
        return Answer(-math.inf, "no reply", str(e))
    stated = stated_answer(obj["answer"])
    if stated is None:
        return Answer(
            -math.inf, "no reply", f"the reply's answer is not a number: {obj['answer']!r}"
        )
    answer = executed(await run_program(solution_program(code, mode), timeout=timeout, entry=ENTRY))
    if answer.how == "not defined":
        return Answer(stated, "stated answer", answer.error)
    return answer


@scorer(metrics=[mean()])
def consistent() -> Any:
    async def score(state: TaskState, target: Target) -> Score:
        qc = state.metadata.get("qc") or {}
        return Score(
            value=float(qc.get("consistency", 0)),
            answer=str(qc.get("first", {}).get("value")),
            explanation=str(qc.get("reason", "not run")),
            metadata=qc,
        )

    return score


def qc_task(
    items: list[Item], mode: str, timeout: float, checkpoint: Checkpoint, sandbox: Any
) -> Task:
    samples = [
        Sample(
            id=item.key,
            input=item.prompt,
            metadata={
                "key": item.key,
                "digest": item.digest(mode),
                "solution": item.solution,
                "task_type": item.task_type,
            },
        )
        for item in items
    ]
    return Task(
        dataset=MemoryDataset(samples, name="mathhay-build-qc"),
        solver=quality_control(mode, timeout, checkpoint),
        scorer=consistent(),
        sandbox=sandbox,
        name="mathhay_build_qc",
        continue_on_fail=True,
    )


def _finished(path: Path, wanted: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in read_checkpoint(path).items() if wanted.get(k) == r.get("digest")}


# ---- the stage ---------------------------------------------------------------------------------------


@dataclass
class QcResult:
    task_type: str
    tasks: int = 0
    consistent: int = 0
    resumed: int = 0
    calls: int = 0
    tokens: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    log: str | None = None

    def dict(self) -> dict[str, Any]:
        return asdict(self)


def _reason_kind(reason: str) -> str:
    return reason.split(":")[0].split(" (")[0]


def apply_results(
    groups: list[Any], items: list[Item], done: dict[str, dict[str, Any]]
) -> list[Any]:
    """The high-quality file: every task with ``consistency`` and, when consistent, the
    first solution's value as its ``answer``."""
    out = json.loads(json.dumps(groups))
    for item in items:
        record = done[item.key]
        task = out[item.group]["tasks"][item.index]
        if record["consistency"] == 1:
            task["answer"] = record["first"]["value"]
        task["consistency"] = record["consistency"]
        task["qc"] = {k: record[k] for k in ("reason", "first", "second", "mode")}
    return out


def run_qc(
    layout: Layout,
    task_types: list[str],
    *,
    model: str | Model | None,
    qc_model: str | Model | None = None,
    mode: str = "strict",
    sandbox: Any = None,
    timeout: float = DEFAULT_TIMEOUT,
    overwrite: bool = False,
    max_samples: int | None = None,
    display: str = "none",
) -> list[QcResult]:
    """Quality control of every ``generated_questions_<type>.json`` present in the folder."""
    if mode not in QC_MODES:
        raise BuildError(f"--qc {mode!r} is not one of {', '.join(QC_MODES)}")
    if timeout <= 0 or not math.isfinite(timeout):
        raise BuildError(f"--qc-timeout {timeout!r} must be a positive number of seconds")
    todo = [t for t in task_types if layout.generated(t).is_file()]
    if not todo:
        raise BuildError(
            f"{layout.folder}: no generated_questions_<type>.json for {', '.join(task_types)}; "
            "run the questions stage first"
        )
    for task_type in todo:
        layout.check_writable(layout.high_quality(task_type), overwrite)
    if sandbox is None:
        from finmath_tasks.sandbox.resolve import resolve_sandbox

        sandbox = resolve_sandbox("auto")
    results = []
    for task_type in todo:
        groups, items = read_items(layout.generated(task_type), task_type)
        path = layout.checkpoint("qc", task_type)
        wanted = {i.key: i.digest(mode) for i in items}

        done = _finished(path, wanted)
        result = QcResult(task_type, tasks=len(items))
        result.resumed = sum(1 for i in items if i.key in done)
        pending = [i for i in items if i.key not in done]
        checkpoint = Checkpoint(path)
        if pending:
            task = qc_task(pending, mode, timeout, checkpoint, sandbox)
            roles = {QC_ROLE: qc_model} if qc_model is not None else None
            [log] = eval(
                task,
                model=model,
                model_roles=roles,
                log_dir=str(layout.log_dir()),
                display=display,  # type: ignore[arg-type]
                max_samples=max_samples,
                fail_on_error=False,
            )
            result.log = log.location
            result.tokens = usage_tokens(log)
            done = _finished(path, wanted)
            result.calls = sum(1 for i in pending if i.key in done)
        missing = [i.key for i in items if i.key not in done]
        if missing:
            raise BuildError(
                f"qc {task_type}: {len(missing)} task(s) did not finish (first: {missing[0]}); "
                f"finished ones are kept in {path}: run the qc stage again to resume"
            )
        for item in items:
            record = done[item.key]
            result.consistent += record["consistency"]
            if not record["consistency"]:
                result.reasons[_reason_kind(record["reason"])] += 1
        write_json(layout.high_quality(task_type), apply_results(groups, items, done))
        results.append(result)
    return results


__all__ = ["QC_MODES", "Answer", "QcResult", "consistency", "run_qc", "solution_program"]
