"""MathHay: the `mathhay` accuracy's denominator when the judge fails.

    python benchmarks/mathhay_judge_denominator.py [data_dir]
    # default data_dir: $FINMATH_DATA_DIR, else ../shared/data

A real Inspect eval of 6 real v1 verified sssd questions at 32K tokens: a scripted
model answers a wrong number for each, a scripted judge replies twice "Yes", once
"No", twice unreadably and once raises. Each reply is readable under both the
old (last line Yes/No) and the new (JSON output) format, so the script measures
any version. Prints the denominator, the accuracy and the flag counts.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from inspect_ai import eval
from inspect_ai.model import ModelOutput, get_model

from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.mathhay.task import in_files_order

N = 6
REPLIES = [
    '{"reasoning": "same steps", "output": "Yes"}\nYes',
    '{"reasoning": "differs", "output": "No"}\nNo',
    "They might be the same, hard to say.",
    "I cannot decide",
    None,  # the call raises
    '{"reasoning": "same steps", "output": "Yes"}\nYes',
]


def main() -> None:
    default = os.environ.get("FINMATH_DATA_DIR") or str(
        Path(__file__).resolve().parents[1].parent / "shared" / "data"
    )
    data_dir = sys.argv[1] if len(sys.argv) > 1 else default
    answer = json.dumps({"relevant_quantity_cells": [], "reasoning": "guess", "answer": 123456.789})
    replies = iter(REPLIES)

    def judge(*_: Any) -> ModelOutput:
        reply = next(replies)
        if reply is None:
            raise RuntimeError("judge service unavailable")
        return ModelOutput.from_content("mockllm/judge", reply)

    model = get_model("mockllm/model", custom_outputs=[ModelOutput.from_content("m", answer)] * N)
    # the first N questions of the files (the task itself sends them in prefix order)
    task = in_files_order(mathhay(release="v1", subset="verified", task_type="sssd",
                                  length=32000, data_dir=data_dir))  # fmt: skip
    with tempfile.TemporaryDirectory() as logs:
        [log] = eval(
            task, model=model, model_roles={"grader": get_model("mockllm/judge", custom_outputs=judge)},
            limit=N, max_samples=1, display="none", log_dir=logs,
        )  # fmt: skip
    assert log.status == "success" and log.results is not None
    for score in log.results.scores:
        if score.name in ("mathhay", "exact_match"):
            print(score.name, {k: v.value for k, v in score.metrics.items()
                               if k == "accuracy" or k.startswith("judge")})  # fmt: skip


if __name__ == "__main__":
    main()
