"""FinanceMath records to samples, and the reference's user prompts.

A sample keeps the record's raw fields (question, tables, topic, gold program,
ground truth) in its metadata and the question as its input; the user prompt
is rendered by the :func:`financemath_prompt` solver, so knowledge or retrieved
passages can be inserted before generation.
"""

from __future__ import annotations

import ast
import math
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from inspect_ai.dataset import Dataset, Sample
from inspect_ai.solver import Generate, Solver, TaskState, solver

from finmath_tasks.data_source import DataSource, load_split
from finmath_tasks.loading import Upstream
from finmath_tasks.tasks.knowledgefmath.programs import ENTRY_POINT

DATA_REPOSITORY = "yale-nlp/FinanceMath"
DATA_COMMIT = "bdddc58655947475da852e241b96a7dbd1478742"
UPSTREAM = Upstream.from_manifest(
    "knowledgefmath", DATA_REPOSITORY, DATA_COMMIT, Path(__file__).parent / "upstream.tsv"
)
"""The default data: the authors' files (MIT, no token) in yale-nlp/FinanceMath at the
commit whose evaluation code our scoring reproduces (``data/validation.json``,
``data/test.json``)."""
DATASET_ID = "yale-nlp/FinanceMath"
"""The Hub copy (gated: accept its terms and set HF_TOKEN), read with ``-T revision=<rev>``."""
DATASET_REVISION: str | None = None
"""No Hub revision by default: the task reads :data:`UPSTREAM`; ``-T revision=`` picks the Hub."""

Split = Literal["validation", "test", "demo"]
PromptStyle = Literal["cot", "pot"]

PROMPTS = Path(__file__).parent / "prompts"


def _prompt(name: str) -> str:
    return (PROMPTS / name).read_text(encoding="utf-8")


# The reference's prompts, byte for byte (package data files).
COT_SYSTEM_PROMPT = _prompt("cot_system.txt")
COT_INSTRUCTION = _prompt("cot_instruction.txt")
POT_SYSTEM_PROMPT = _prompt("pot_system.txt")
POT_INSTRUCTION = _prompt("pot_instruction.txt")
COT_TABLE_HEADER = "Table:\n"
COT_TABLE_SEPARATOR = "\n\n"
# The reference appends each table followed by a newline directly after this header.
POT_TABLE_HEADER = "The following table is provided for your reference."


def demo_file() -> Path:
    return Path(str(resources.files(__package__) / "data" / "demo.json"))


SOURCE = DataSource(
    benchmark="knowledgefmath",
    hub_id=DATASET_ID,
    hub_revision=DATASET_REVISION,
    local_subdir="financemath",
    files={"validation": "validation.json", "test": "test.json"},
    packaged={"demo": demo_file()},
    id_field="question_id",
    answers={"validation": True, "demo": True, "test": False},
    upstream=UPSTREAM,
    upstream_files={"validation": "data/validation.json", "test": "data/test.json"},
)


def render_prompt(question: str, tables: list[str], style: PromptStyle = "cot") -> str:
    """The reference's user prompt: tables (if any), the question, the instruction."""
    question_input = f"Question: {question}\n"
    if style == "cot":
        instruction = COT_INSTRUCTION
        table_input = COT_TABLE_HEADER + COT_TABLE_SEPARATOR.join(tables) + "\n"
    elif style == "pot":
        instruction = POT_INSTRUCTION
        table_input = POT_TABLE_HEADER + "".join(f"{table}\n" for table in tables)
    else:
        raise ValueError(f"unknown prompt style {style!r}")
    if tables:
        question_input = f"{table_input}\n{question_input}"
    return "\n".join([question_input, instruction])


@solver
def financemath_prompt(style: PromptStyle = "cot") -> Solver:
    """Render the reference's user prompt from the sample's question and tables."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        metadata = state.metadata or {}
        state.user_prompt.text = render_prompt(
            metadata["question"], metadata.get("tables") or [], style
        )
        return state

    return solve


def check_gold_program(program: str) -> None:
    """A gold program is run to score program-of-thought answers: it must be Python that
    defines the entry point (every validation and demo record does)."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError) as e:
        where = f" (line {e.lineno})" if isinstance(e, SyntaxError) and e.lineno else ""
        message = e.msg if isinstance(e, SyntaxError) else str(e)
        raise ValueError(
            f"python_solution (the gold program) is not valid Python{where}: {message}"
        ) from None
    if not any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == ENTRY_POINT
        for node in tree.body
    ):
        raise ValueError(f"python_solution (the gold program) defines no {ENTRY_POINT}()")


def record_to_sample(record: dict[str, Any]) -> Sample:
    """One FinanceMath record (upstream schema) to a Sample; validates every field used."""
    question_id = record["question_id"]
    question = record["question"]
    if not isinstance(question_id, str) or not question_id:
        raise ValueError(f"question_id must be a non-empty string, got {question_id!r}")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question must be a non-empty string")
    tables = record.get("tables") or []
    if not isinstance(tables, list) or not all(isinstance(t, str) for t in tables):
        raise ValueError("tables must be a list of Markdown strings")
    gold = record.get("ground_truth")
    if gold is not None and (
        isinstance(gold, bool) or not isinstance(gold, int | float) or not math.isfinite(gold)
    ):
        raise ValueError(f"ground_truth must be a finite number or null, got {gold!r}")
    program = record.get("python_solution") or ""
    if not isinstance(program, str):
        raise ValueError("python_solution must be a string")
    if program.strip():
        check_gold_program(program)
    topic = record.get("topic")
    if not isinstance(topic, str) or not topic:
        raise ValueError(f"topic must be a non-empty string, got {topic!r}")
    return Sample(
        id=question_id,
        input=question,
        target="" if gold is None else repr(float(gold)),
        metadata={
            "question_id": question_id,
            "question": question,
            "tables": tables,
            "topic": topic,
            "gold_program": program,
            "ground_truth": gold,
        },
    )


def load_dataset(
    split: str, data_dir: str | None = None, revision: str | None = DATASET_REVISION
) -> Dataset:
    """The split from the package (demo), a local directory, the Hub (``revision``) or the
    authors' files at the pinned commit (the default)."""
    return load_split(SOURCE, split, record_to_sample, data_dir=data_dir, revision=revision)
