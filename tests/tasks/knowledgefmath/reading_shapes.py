"""The reply shapes and program-output shapes where a strict reading and the reference's
differ, with the reference's verdicts.

Each expected verdict is written from FinanceMath's evaluation rules (its
``normalize``/``get_acc``/``compare_two_numbers`` and its PoT loop), by hand,
not computed by our code:

- CoT: a reply mentioning "none" is wrong; otherwise the normalisation drops
  currency signs, scale words, "%", "$", backticks, "approximately", a unit
  word, takes the right of "=" / "≈", the first of " or ", drops thousands
  separators of a plain number, and evaluates arithmetic; a reply it cannot
  evaluate becomes 0 (wrong for a non-zero gold).
- PoT: the output mentioning argparse is discarded (not executed, wrong); the
  first ```python block, else the first ``` block, else the continuation rules;
  a run that returns without an exception is executed; the result is read with
  ``float()`` (a numeric string counts; None and lists are wrong).

Used by ``test_knowledgefmath_reading.py`` (a few real validation questions)
and ``benchmarks/knowledgefmath_reading.py`` (its 640 and 600 samples).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample

from eval_helpers import scripted, whole_score
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.knowledgefmath.scoring2023 import ASKS_2023


def _fmt(g: float) -> str:
    return repr(g)


def _thousands(g: float) -> str:
    return f"${g:,}"


@dataclass(frozen=True)
class ReplyShape:
    name: str
    reply: Callable[[float], str]
    correct: bool  # the reference's verdict for a non-zero gold
    strict_reads: bool  # our strict reader reads it (the `tolerant` profile's verdict follows)


def _wrong(g: float) -> float:
    return g + 1 + abs(g) * 0.5


REPLY_SHAPES: list[ReplyShape] = [
    ReplyShape("g", _fmt, True, True),
    ReplyShape("g.", lambda g: f"{g!r}.", True, True),
    ReplyShape("$g with separators", _thousands, True, True),
    ReplyShape("g%", lambda g: f"{g!r}%", True, True),
    ReplyShape("g million", lambda g: f"{g!r} million", True, True),
    ReplyShape("scientific", lambda g: f"{g:.6e}", True, True),
    ReplyShape("a wrong number", lambda g: repr(_wrong(g)), False, True),
    ReplyShape("g years", lambda g: f"{g!r} years", True, False),
    ReplyShape("approximately g", lambda g: f"approximately {g!r}", True, False),
    ReplyShape("g or g+1", lambda g: f"{g!r} or {g + 1!r}", True, False),
    ReplyShape("x = g", lambda g: f"x = {g!r}", True, False),
    ReplyShape("7g/7", lambda g: f"7*{g!r}/7", True, False),
    ReplyShape("≈ g", lambda g: f"≈ {g!r}", True, False),
    ReplyShape("`g`", lambda g: f"`{g!r}`", True, False),
    ReplyShape("The answer is g", lambda g: f"The answer is {g!r}", False, False),
    ReplyShape("None", lambda g: "None", False, False),
]


@dataclass(frozen=True)
class OutputShape:
    name: str
    output: Callable[[str, str], str]  # (gold program, its body after the signature) -> output
    correct: bool
    executed: bool


WRAP = "\n\n_gold_solution = solution\n\n\ndef solution():\n    {body}\n"


def _wrapped(body: str) -> Callable[[str, str], str]:
    return lambda program, _: f"```python\n{program}{WRAP.format(body=body)}```"


OUTPUT_SHAPES: list[OutputShape] = [
    OutputShape("fenced python", lambda p, _: f"Here it is:\n```python\n{p}\n```\n", True, True),
    OutputShape("fenced, no language", lambda p, _: f"```\n{p}\n```", True, True),
    OutputShape("no fence", lambda p, _: p, True, True),
    OutputShape("continued body, indented", lambda _, body: body, True, True),
    OutputShape("continued body, fenced", lambda _, body: f"{body}\n```\nDone.", True, True),
    OutputShape(
        "two blocks (first taken)",
        lambda p, _: f"```python\n{p}\n```\nor\n```python\ndef solution():\n    return -1\n```",
        True,
        True,
    ),
    OutputShape(
        "print(solution())", lambda p, _: f"```python\n{p}\n\nprint(solution())\n```", True, True
    ),
    OutputShape("a wrong value", _wrapped("return _gold_solution() * 1.5 + 1"), False, True),
    OutputShape(
        "mentions argparse",
        lambda p, _: f"```python\n{p}\n```\n(argparse is not needed here)",
        False,
        False,
    ),
    OutputShape("returns a string", _wrapped("return str(float(_gold_solution()))"), True, True),
    OutputShape("returns a list", _wrapped("return [_gold_solution()]"), False, True),
    OutputShape("returns None (prints)", _wrapped("print(_gold_solution())"), False, True),
]


def validation_records(data_dir: Path) -> list[dict[str, Any]]:
    return json.loads((data_dir / "financemath" / "validation.json").read_text("utf-8"))


def body_of(program: str) -> str | None:
    """The gold program's body after ``def solution():`` (None if it does not start so)."""
    head = "def solution():\n"
    return program[len(head) :] if program.startswith(head) else None


def _samples(task: Task, picks: list[tuple[str, str]]) -> MemoryDataset:
    by_id = {s.id: s for s in task.dataset}
    samples = []
    for question_id, shape in picks:
        base = by_id[question_id]
        samples.append(
            Sample(
                id=f"{question_id}|{shape}",
                input=base.input,
                target=base.target,
                metadata=base.metadata,
            )
        )
    return MemoryDataset(samples)


def run_reply_shapes(
    data_dir: Path, question_ids: list[str], log_dir: Path, profile: str = "tolerant"
) -> list[dict[str, Any]]:
    """One CoT eval: every question x every reply shape, the grader scripted with the shape."""
    task = knowledgefmath(
        split="validation", solver="cot", extractor="model", data_dir=str(data_dir), profile=profile
    )
    gold = {s.id: float(s.target) for s in task.dataset}  # type: ignore[arg-type]
    picks = [(q, shape.name) for q in question_ids for shape in REPLY_SHAPES]
    task.dataset = _samples(task, picks)
    replies: list[str] = []
    for q, name in picks:
        shape = next(s for s in REPLY_SHAPES if s.name == name)
        reply = shape.reply(gold[q])
        # asked again while the reply says "none": once for financemath, twice more for 2023
        replies += [reply] * (ASKS_2023 if "none" in reply.lower() else 1)
    solver_model = scripted([f"... Therefore, the answer is {i}." for i in range(len(picks))])
    [log] = eval(
        task,
        model=solver_model,
        model_roles={"grader": scripted(replies)},
        log_dir=str(log_dir),
        display="none",
        max_samples=1,
    )
    assert log.status == "success", log.error
    return _rows(log, REPLY_SHAPES, gold)


def run_output_shapes(
    data_dir: Path, question_ids: list[str], log_dir: Path
) -> list[dict[str, Any]]:
    """One PoT eval (our sandbox): every question x every output shape of its gold program."""
    task = knowledgefmath(split="validation", solver="pot", data_dir=str(data_dir))
    gold = {s.id: float(s.target) for s in task.dataset}  # type: ignore[arg-type]
    programs = {s.id: (s.metadata or {})["gold_program"] for s in task.dataset}
    picks = [(q, shape.name) for q in question_ids for shape in OUTPUT_SHAPES]
    task.dataset = _samples(task, picks)
    outputs = []
    for q, name in picks:
        shape = next(s for s in OUTPUT_SHAPES if s.name == name)
        program = programs[q].strip()
        body = body_of(program)
        assert body is not None, f"{q}: the gold program does not start with the signature"
        outputs.append(shape.output(program, body))
    [log] = eval(task, model=scripted(outputs), log_dir=str(log_dir), display="none", max_samples=1)
    assert log.status == "success", log.error
    return _rows(log, OUTPUT_SHAPES, gold)


def _rows(log: Any, shapes: list[Any], gold: dict[str, float]) -> list[dict[str, Any]]:
    rows = []
    assert log.samples is not None
    for sample in log.samples:
        question_id, name = str(sample.id).split("|", 1)
        shape = next(s for s in shapes if s.name == name)
        score = whole_score(sample)
        rows.append(
            {
                "question_id": question_id,
                "shape": name,
                "gold": gold[question_id],
                "value": score.value,
                "metadata": score.metadata or {},
                "explanation": score.explanation or "",
                "expected_correct": shape.correct,
                "expected_executed": getattr(shape, "executed", None),
                "strict_reads": getattr(shape, "strict_reads", None),
            }
        )
    return rows
