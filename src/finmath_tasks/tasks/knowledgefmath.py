"""KnowledgeFMATH / FinanceMath (Zhao et al., ACL 2024).

Finance problems, many with Markdown tables, each with a gold Python
``def solution()`` program. Splits: ``validation`` (200, answers public),
``test`` (1,000, answers withheld: generated and logged, unscored) and our own
offline ``demo`` split (15 original problems shipped with the package).

Prompts and generation settings follow the reference code (zero-shot CoT:
temperature 1.0, top_p 1.0, 512 max tokens); the official FinanceMath
comparison is reported beside our stricter ``profile`` (default ``tolerant``).

    inspect eval finmath_tasks/knowledgefmath --model openai/gpt-4o
    inspect eval finmath_tasks/knowledgefmath -T split=demo -T solver=oracle --model mockllm/model
"""

from __future__ import annotations

import math
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from inspect_ai import Task, task
from inspect_ai.dataset import Dataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import Metric, accuracy, grouped, stderr
from inspect_ai.solver import Solver

from finmath_tasks.loading import (
    find_local_file,
    load_hub_records,
    read_json_records,
    records_to_dataset,
    resolve_data_dir,
)
from finmath_tasks.sandbox.resolve import check_sandbox, resolve_sandbox
from finmath_tasks.scorers.numeric import check_extractor, numeric_answer
from finmath_tasks.scorers.profiles import check_profile
from finmath_tasks.solvers.cot import cot
from finmath_tasks.solvers.oracle import oracle
from finmath_tasks.solvers.pot import oracle_pot, pot

DATASET_ID = "yale-nlp/FinanceMath"
# The Hub repo is gated and unreachable from our CI, so no commit hash could be
# verified here; pin one for exact reproducibility with `-T revision=<sha>`.
DATASET_REVISION: str | None = None
LOCAL_SUBDIR = "financemath"
SPLITS = ("validation", "test", "demo")
SOLVERS = ("cot", "pot", "oracle", "oracle_pot")
CODE_SOLVERS = ("pot", "oracle_pot")
OFFICIAL_PROFILE = "financemath"
TASK_VERSION = "1.0.0"

GENERATE_CONFIG = GenerateConfig(temperature=1.0, top_p=1.0, max_tokens=512)

# --- Prompts of the reference implementation (yale-nlp/FinanceMath) ---------

COT_SYSTEM_PROMPT = (
    "You are a financial expert, you are supposed to answer the given question. "
    "You need to first think through the problem step by step, documenting each necessary step. "
    "Then you are required to conclude your response with the final answer in your last sentence "
    "as 'Therefore, the answer is {final answer}'. The final answer should be a numeric value."
)
COT_TABLE_HEADER = "Table:\n"
COT_TABLE_SEPARATOR = "\n\n"
COT_INSTRUCTION = "Let's think step by step to answer the given question.\n"

POT_SYSTEM_PROMPT = """You are a financial expert, you are supposed to generate a Python program to answer the given question. The returned value of the program is supposed to be the answer. Here is an example of the Python program:
```python
def solution():
    # Define variables name and value
    revenue = 600000
    avg_account_receivable = 50000
    
    # Do math calculation to get the answer
    receivables_turnover = revenue / avg_account_receivable
    answer = 365 / receivables_turnover
    
    # return answer
    return answer
```
"""
# The reference appends each table followed by a newline directly after this header.
POT_TABLE_HEADER = "The following table is provided for your reference."
POT_INSTRUCTION = """Please generate a Python program to answer the given question. The format of the program should be the following:
```python
def solution():
    # Define variables name and value
    
    # Do math calculation to get the answer
    
    # return answer
```

Continue your output:
```python
def solution():
    # Define variables name and value
"""

PromptStyle = Literal["cot", "pot"]


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


def record_to_sample(record: dict[str, Any], style: PromptStyle = "cot") -> Sample:
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
    topic = record.get("topic")
    if not isinstance(topic, str) or not topic:
        raise ValueError(f"topic must be a non-empty string, got {topic!r}")
    return Sample(
        id=question_id,
        input=render_prompt(question, tables, style),
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


def demo_file() -> Path:
    return Path(str(resources.files("finmath_tasks") / "data" / "knowledgefmath" / "demo.json"))


def load_dataset(
    split: str,
    data_dir: str | None = None,
    revision: str | None = DATASET_REVISION,
    style: PromptStyle = "cot",
) -> Dataset:
    """The split from the package (demo), a local directory, or the Hub."""
    if split not in SPLITS:
        raise ValueError(f"knowledgefmath: -T split={split!r} is not one of {', '.join(SPLITS)}")
    path: Path | None = None
    if split == "demo":
        path = demo_file()
    elif (local := resolve_data_dir(data_dir)) is not None:
        path = find_local_file(local, LOCAL_SUBDIR, f"{split}.json")
    if path is not None:
        records, source = read_json_records(path), str(path)
    else:
        records = load_hub_records(DATASET_ID, split=split, revision=revision)
        source = f"hf://{DATASET_ID}@{revision or 'main'}/{split}"
    return records_to_dataset(
        records,
        partial(record_to_sample, style=style),
        source=source,
        name=f"knowledgefmath-{split}",
        id_field="question_id",
    )


def _metrics(keys: list[str]) -> dict[str, list[Metric]]:
    return {k: [accuracy(), stderr(), grouped(accuracy(), "topic", all=False)] for k in keys}


def _solver(name: str, program_repair: bool = False) -> Solver:
    if name == "cot":
        return cot(COT_SYSTEM_PROMPT)
    if name == "pot":
        return pot(POT_SYSTEM_PROMPT, repair=program_repair)
    if name == "oracle":
        return oracle()
    if name == "oracle_pot":
        return oracle_pot()
    raise ValueError(f"knowledgefmath: -T solver={name!r} is not one of {', '.join(SOLVERS)}")


@task(name="knowledgefmath")
def knowledgefmath(
    split: str = "validation",
    solver: str = "cot",
    profile: str = "tolerant",
    extractor: str = "rules",
    data_dir: str | None = None,
    revision: str | None = DATASET_REVISION,
    sandbox: str = "auto",
    program_repair: bool = False,
) -> Task:
    """KnowledgeFMATH / FinanceMath.

    Args:
      split: validation (200, scored), test (1,000, answers withheld: unscored),
        or demo (15 offline problems shipped with the package).
      solver: cot (zero-shot chain of thought), pot (program of thought, run in
        the sandbox), oracle (answers with the gold answer) or oracle_pot (runs
        the gold program through the pot path).
      profile: our comparison profile reported beside the official
        ``financemath`` one: tolerant (default), rounding, exact, financemath.
      extractor: rules (default) or model (the ``grader`` model role reads the
        final number, as the reference evaluation does).
      data_dir: local directory with validation.json/test.json (or a
        financemath/ subfolder); default $FINMATH_DATA_DIR, else the Hub.
      revision: Hub revision (commit) of yale-nlp/FinanceMath to load.
      sandbox: where programs run (pot, oracle_pot): auto (our docker backend
        if an engine with its image or base answers, else bubblewrap), bwrap, docker, inspect_docker
        (Inspect's built-in docker with our compose.yaml), or local (NO
        isolation; explicit opt-in only, logged as a warning).
      program_repair: with solver=pot, wrap a bare function body in
        ``def solution():`` instead of failing it as the reference does
        (changes the execution rate; off by default for comparability).
    """
    check_profile(profile)
    check_extractor(extractor)
    check_sandbox(sandbox)
    if not isinstance(program_repair, bool):
        raise ValueError(
            f"knowledgefmath: -T program_repair={program_repair!r} must be true or false"
        )
    chosen_solver = _solver(solver, program_repair)
    if solver == "oracle" and split == "test":
        raise ValueError(
            "knowledgefmath: -T solver=oracle needs gold answers, which the test split withholds"
        )
    profiles = list(dict.fromkeys([OFFICIAL_PROFILE, profile]))
    runs_code = solver in CODE_SOLVERS
    sandbox_spec = resolve_sandbox(sandbox) if runs_code else None
    style: PromptStyle = "pot" if solver == "pot" else "cot"
    return Task(
        dataset=load_dataset(split, data_dir, revision, style=style),
        solver=chosen_solver,
        scorer=numeric_answer(profiles=profiles, extractor=extractor),  # type: ignore[arg-type]
        metrics=_metrics(profiles + (["execution_rate"] if runs_code else [])),
        config=GENERATE_CONFIG,
        sandbox=sandbox_spec,
        version=TASK_VERSION,
        metadata={
            "benchmark": "knowledgefmath",
            "split": split,
            "profiles": profiles,
            "sandbox": sandbox_spec.type if sandbox_spec else None,
        },
    )
