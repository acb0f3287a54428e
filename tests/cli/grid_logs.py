"""Real Inspect logs of the agents and MathHay grids for the report tests: scripted models.

Fixture records of ours (``tests/tasks/*/..._fixtures.py``), two models, a few runs of
each grid: FinQA rag_cot (three retrievals) and agents (cot, critic, critic_oracle),
TAT-QA agents (cot, critic_oracle), MathHay's main grid and depth sweep at small lengths.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.log import EvalLog

from cli.cli_logs import MODELS
from eval_helpers import scripted
from finmath_tasks.tasks.finqa import finqa
from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.tatqa import tatqa
from tasks.finqa.finqa_fixtures import RECORDS, gold_output, write_task_data
from tasks.mathhay.mathhay_fixtures import write_release as write_mathhay
from tasks.tatqa.tatqa_fixtures import DOCUMENT, write_split

MATHHAY_LENGTHS = (400, 800)
MATHHAY_DEPTHS = ("p1", "p9")


def reply(answer: Any, steps: str = "steps") -> str:
    return json.dumps({"steps": steps, "answer": answer})


def _run(logs: list[EvalLog], log_dir: Path, task: Task, model: str, outputs: list[str]) -> None:
    [log] = eval(
        task, model=scripted(outputs, model), max_samples=1, display="none", log_dir=str(log_dir)
    )
    assert log.status == "success", log.error
    logs.append(log)


# FinQA fixture golds, in order: 0.25 (float), 250 (integer), yes (text), 0.24 (float)
FINQA_COT = [[0.25, 250, "no", "24"], [0.3, 250, "yes", 0.24]]
FINQA_CRITIC = [  # (first answer, revised answer[, steps changed]) per sample
    # c->w (same steps: minor), w->c (other steps: major), none, w->c (same steps: minor)
    [(0.25, 0.5), (240, 250, True), ("yes", "yes"), (24, 0.24)],
    [(0.25, 0.25), (250, 251), ("no", "no"), (0.24, 0.24, True)],  # c->w (minor), no flips
]
FINQA_ORACLE = [  # first answer, and the revision when the first one is wrong (critic applied)
    [(0.25, None), (240, 250), ("no", "yes"), (24, 0.24)],
    [(0.25, None), (250, None), ("no", "no"), (0.24, None)],
]


def critic_outputs(pairs: list[tuple[Any, ...]], oracle: bool = False) -> list[str]:
    out: list[str] = []
    for first, revised, *changed in pairs:
        out.append(reply(first))
        if oracle and revised is None:
            continue  # right: the oracle gate skips the critic
        out += ["A critique of the steps.", reply(revised, "other steps" if changed else "steps")]
    return out


def rag_outputs(model: int, shift: int) -> list[str]:
    out = []
    for i, record in enumerate(RECORDS):
        right = (i + shift + model) % 3 != 0
        out.append(gold_output(record) if right else "Program: add(1, 2)\nFinal answer: 3")
    return out


# TAT-QA: the fixture document's arithmetic questions (250, 25) and one float gold of ours
HALF = {
    **DOCUMENT["questions"][0],
    "uid": "q-half",
    "order": 5,
    "question": "What is the change in revenue divided by 40?",
    "answer": 6.25,
    "derivation": "(1,250.0 - 1,000.0) / 40",
}
TATQA_COT = [[250, 2.5, 6.25], [250, 25, 6.3]]
TATQA_ORACLE = [
    [(250, None), (2.5, 25), (6.25, None)],
    [(200, 250), (25, None), (6.3, 7)],
]


def tatqa_document() -> dict[str, Any]:
    doc = copy.deepcopy(DOCUMENT)
    doc["questions"].append(HALF)
    return doc


def mathhay_reply(answer: Any) -> str:
    body = {"relevant_quantities": ["q"], "reasoning": "r", "answer": answer}
    return f"```json\n{json.dumps(body)}\n```"


JUDGED_DIFFERENT = json.dumps({"reasoning": "another number", "output": "No"})


def mathhay_outputs(model: int, k: int) -> list[str]:
    """The two sssd fixture questions (golds 40, 100): right or wrong by model and run; a
    wrong answer is then judged (no grader role: by the model itself) not equivalent."""
    out = []
    for i, gold in enumerate([40, 100]):
        right = bool((i + k + model) % 3)
        out += [mathhay_reply(gold)] if right else [mathhay_reply(gold + 1), JUDGED_DIFFERENT]
    return out


def make_agent_logs(root: Path) -> list[EvalLog]:
    """FinQA and TAT-QA logs in ``root / "logs"``."""
    log_dir = root / "logs"
    finqa_data, tatqa_data = root / "finqa", root / "tatqa"
    write_task_data(finqa_data)
    write_split(tatqa_data, [tatqa_document()])
    logs: list[EvalLog] = []
    for m, model in enumerate(MODELS):
        for shift, retrieval in enumerate(["none", "bm25", "gold"]):
            task = finqa(data_dir=str(finqa_data), solver="rag_cot", retrieval=retrieval)
            _run(logs, log_dir, task, model, rag_outputs(m, shift))
        cot = [reply(a) for a in FINQA_COT[m]]
        # the agent runs on the agents paper's split, as the grid runs them
        task = finqa(data_dir=str(finqa_data), solver="cot", split="dev")
        _run(logs, log_dir, task, model, cot)
        critic = critic_outputs(FINQA_CRITIC[m])
        task = finqa(data_dir=str(finqa_data), solver="critic", split="dev")
        _run(logs, log_dir, task, model, critic)
        oracle = critic_outputs(FINQA_ORACLE[m], oracle=True)
        task = finqa(data_dir=str(finqa_data), solver="critic_oracle", split="dev")
        _run(logs, log_dir, task, model, oracle)
        cot = [reply(a) for a in TATQA_COT[m]]
        _run(logs, log_dir, tatqa(data_dir=str(tatqa_data), solver="cot"), model, cot)
        oracle = critic_outputs(TATQA_ORACLE[m], oracle=True)
        task = tatqa(data_dir=str(tatqa_data), solver="critic_oracle")
        _run(logs, log_dir, task, model, oracle)
    return logs


def make_mathhay_logs(root: Path) -> list[EvalLog]:
    """MathHay logs in ``root / "logs"``: main grid (sssd x lengths) and a depth sweep."""
    log_dir = root / "logs"
    write_mathhay(root)
    logs: list[EvalLog] = []
    paper = {"release": "v1", "subset": "verified", "task_type": "sssd"}
    runs: list[dict[str, Any]] = [{**paper, "length": length} for length in MATHHAY_LENGTHS] + [
        {**paper, "placement": p, "length": length}
        for p in MATHHAY_DEPTHS
        for length in MATHHAY_LENGTHS
    ]
    for m, model in enumerate(MODELS):
        for k, args in enumerate(runs):
            task = mathhay(data_dir=str(root), **args)
            _run(logs, log_dir, task, model, mathhay_outputs(m, k))
    return logs
