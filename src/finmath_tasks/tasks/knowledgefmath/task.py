"""KnowledgeFMATH / FinanceMath (Zhao et al., ACL 2024): the ``knowledgefmath`` task.

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

from collections.abc import Callable
from typing import Any, Literal

from inspect_ai import Task, task
from inspect_ai.model import GenerateConfig
from inspect_ai.solver import Solver, chain

from finmath_tasks import params
from finmath_tasks.sandbox.client import DEFAULT_TIMEOUT
from finmath_tasks.sandbox.resolve import SandboxChoice, resolve_sandbox
from finmath_tasks.scorers.comparisons import COMPARISONS
from finmath_tasks.scorers.metrics import accuracy_metrics
from finmath_tasks.scorers.numeric import Extractor, numeric_answer
from finmath_tasks.solvers.cot import cot
from finmath_tasks.solvers.oracle import oracle, oracle_program
from finmath_tasks.solvers.pot import execute_program, pot
from finmath_tasks.tasks.knowledgefmath.dataset import (
    COT_SYSTEM_PROMPT,
    DATASET_REVISION,
    POT_SYSTEM_PROMPT,
    Split,
    financemath_prompt,
    load_dataset,
)
from finmath_tasks.tasks.knowledgefmath.programs import (
    ENTRY_POINT,
    extract_program,
    extract_repaired_program,
)
from finmath_tasks.tasks.knowledgefmath.scoring import ANSWER_EXTRACTION, OFFICIAL, financemath
from finmath_tasks.tiktoken_offline import ensure_tiktoken_encodings

NAME = "knowledgefmath"
TASK_VERSION = "1.0.0"
GENERATE_CONFIG = GenerateConfig(temperature=1.0, top_p=1.0, max_tokens=512)

SolverName = Literal["cot", "pot", "oracle", "oracle_pot"]
Profile = Literal["tolerant", "rounding", "exact", "financemath"]
CODE_SOLVERS = ("pot", "oracle_pot")
COMPARISONS_OFFERED = {**COMPARISONS, OFFICIAL: financemath}


def _program_args(repair: bool) -> dict[str, Any]:
    return {
        "extract": extract_repaired_program if repair else extract_program,
        "entry": ENTRY_POINT,
        "timeout": DEFAULT_TIMEOUT,
        "gold_program_field": "gold_program",
    }


SOLVERS: dict[str, Callable[[bool], Solver]] = {
    "cot": lambda repair: cot(COT_SYSTEM_PROMPT, prompt=financemath_prompt("cot")),
    "pot": lambda repair: pot(
        POT_SYSTEM_PROMPT, prompt=financemath_prompt("pot"), **_program_args(repair)
    ),
    "oracle": lambda repair: chain(financemath_prompt("cot"), oracle()),
    "oracle_pot": lambda repair: chain(
        financemath_prompt("pot"),
        oracle_program("gold_program", execute_program(**_program_args(False))),
    ),
}
"""-T solver= name -> the solver, given ``program_repair``."""


@task(name=NAME)
def knowledgefmath(
    split: Split = "validation",
    solver: SolverName = "cot",
    profile: Profile = "tolerant",
    extractor: Extractor = "rules",
    data_dir: str | None = None,
    revision: str | None = DATASET_REVISION,
    sandbox: SandboxChoice = "auto",
    program_repair: bool = False,
) -> Task:
    """KnowledgeFMATH / FinanceMath.

    Args:
      split: validation (200, scored), test (1,000, answers withheld: unscored),
        or demo (15 offline problems shipped with the package).
      solver: cot (zero-shot chain of thought), pot (program of thought, run in
        the sandbox), oracle (answers with the gold answer) or oracle_pot (runs
        the gold program through the pot path).
      profile: our comparison reported beside the official ``financemath``
        one: tolerant (default), rounding, exact, financemath.
      extractor: rules (default) or model (the ``grader`` model role reads the
        final number, as the reference evaluation does; without a ``grader``
        role the evaluated model does it, which each score records).
      data_dir: local directory with validation.json/test.json (or a
        financemath/ subfolder); default $FINMATH_DATA_DIR, else the Hub.
      revision: Hub revision (commit) of yale-nlp/FinanceMath to load.
      sandbox: where programs run (pot, oracle_pot): auto (our docker backend
        if an engine with its image or base answers, else bubblewrap), bwrap,
        docker, inspect_docker (Inspect's built-in docker with our
        compose.yaml), or local (NO isolation; explicit opt-in only, logged as
        a warning).
      program_repair: with solver=pot, wrap a bare function body in
        ``def solution():`` instead of failing it as the reference does
        (changes the execution rate; off by default for comparability).
    """
    params.choice(NAME, "split", split, Split)
    params.choice(NAME, "solver", solver, SolverName)
    params.choice(NAME, "profile", profile, Profile)
    params.choice(NAME, "extractor", extractor, Extractor)
    params.choice(NAME, "sandbox", sandbox, SandboxChoice)
    data_dir = params.optional_path(NAME, "data_dir", data_dir)
    revision = params.optional_text(NAME, "revision", revision)
    program_repair = params.boolean(NAME, "program_repair", program_repair)
    if solver == "oracle" and split == "test":
        raise params.TaskParameterError(
            f"{NAME}: -T solver=oracle needs gold answers, which the test split withholds"
        )
    ensure_tiktoken_encodings()  # offline token counting (Inspect's mockllm)

    names = list(dict.fromkeys([OFFICIAL, profile]))
    runs_code = solver in CODE_SOLVERS
    sandbox_spec = resolve_sandbox(sandbox) if runs_code else None
    return Task(
        dataset=load_dataset(split, data_dir, revision),
        solver=SOLVERS[solver](program_repair),
        scorer=numeric_answer(
            comparisons={name: COMPARISONS_OFFERED[name] for name in names},
            answer="program" if runs_code else "text",
            gold="program" if runs_code else "target",
            extractor=extractor,
            model_extraction=ANSWER_EXTRACTION,
        ),
        metrics=accuracy_metrics(names + (["execution_rate"] if runs_code else []), "topic"),
        config=GENERATE_CONFIG,
        sandbox=sandbox_spec,
        version=TASK_VERSION,
        metadata={
            "benchmark": NAME,
            "split": split,
            "profiles": names,
            "sandbox": sandbox_spec.type if sandbox_spec else None,
            "grader": "the grader model role, else the evaluated model"
            if extractor == "model"
            else None,
        },
    )
