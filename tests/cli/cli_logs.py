"""Real Inspect logs for the report tests: scripted models, both existing tasks, two models."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

from inspect_ai import eval
from inspect_ai.log import EvalLog
from inspect_ai.model import Model

from eval_helpers import scripted
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.sara import sara
from tasks.sara.sara_fixtures import write_release

MODELS = ("mockllm/alpha", "mockllm/beta")
DEMO = json.loads(
    files("finmath_tasks.tasks.knowledgefmath").joinpath("data/demo.json").read_text()
)
POT_LIMIT = 6


def cot_outputs(model_index: int, shift: int) -> list[str]:
    """Right on a model- and setting-dependent subset of the demo problems, wrong elsewhere."""
    out = []
    for i, record in enumerate(DEMO):
        right = (i + shift) % (2 + model_index) != 0
        answer = record["ground_truth"] if right else record["ground_truth"] * 3 + 7
        out.append(f"Therefore, the answer is {answer}.")
    return out


def pot_outputs(model_index: int) -> list[str]:
    """Programs: some return the answer, some a wrong one, some crash (execution rate < 1)."""
    crash = [{0, 3}, {2}][model_index]
    out = []
    for i, record in enumerate(DEMO[:POT_LIMIT]):
        if i in crash:
            body = "    raise ValueError('no')"
        elif i % 2:
            body = f"    return {record['ground_truth']!r}"
        else:
            body = f"    return {record['ground_truth']!r} * 2 + 1"
        out.append(f"```python\ndef solution():\n{body}\n```")
    return out


SARA_RUNS: list[dict[str, Any]] = [
    {"retrieval": "mentioned_only", "prompting": "cot"},
    {"retrieval": "none", "prompting": "zero_shot"},
    {"retrieval": "all_statutes", "prompting": "few_shot"},
]
# test split, entailment cases in order: s10_a_1_pos (E), s10_b_pos (E), s11_neg (C)
SARA_ANSWERS = [
    ["Entailment", "Entailment", "Contradiction"],
    ["Entailment", "Contradiction", "Entailment"],
    ["Contradiction", "Contradiction", "Entailment"],
]


def make_logs(root: Path) -> list[EvalLog]:
    """Ten successful logs in ``root / "logs"``."""
    log_dir = str(root / "logs")
    release = root / "sara-release"
    if not release.exists():
        write_release(release)
    logs: list[EvalLog] = []

    def run(task: Any, model: Model, **kwargs: Any) -> None:
        [log] = eval(task, model=model, max_samples=1, display="none", log_dir=log_dir, **kwargs)
        assert log.status == "success", log.error
        logs.append(log)

    for m, name in enumerate(MODELS):
        for shift, knowledge in enumerate(["none", "oracle"]):
            run(
                knowledgefmath(split="demo", solver="cot", knowledge=knowledge),
                scripted(cot_outputs(m, shift), name),
            )
        run(
            knowledgefmath(split="demo", solver="pot"),
            scripted(pot_outputs(m), name),
            limit=POT_LIMIT,
            sandbox="finmath_bwrap",
        )
        for r, args in enumerate(SARA_RUNS):
            run(
                sara(data_dir=str(release), **args),
                scripted(SARA_ANSWERS[(r + m) % len(SARA_ANSWERS)], name),
            )
    return logs
