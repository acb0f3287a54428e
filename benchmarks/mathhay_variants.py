"""MathHay fresh variants over v1's whole verified set: coverage, an oracle and a reciter.

    python benchmarks/mathhay_variants.py [data_dir] [--seeds 1,2,3]
    # default data_dir: $FINMATH_DATA_DIR, else ../shared/data; default seeds: 1

For each seed: how many of the 126 verified questions were instantiated, and two real
Inspect evals of ``finmath_tasks/mathhay -T subset=verified -T length=32000 -T
judge=false -T variant=fresh -T variant_seed=N`` over every instantiated question: a
scripted model answering each variant's gold (the oracle) and one answering each
question's published answer (a model that memorised the benchmark). Prints the
accuracy of each under ``mathhay``, ``exact_match`` and ``tolerant``. Needs bubblewrap
(each variant's gold is its solve() run in the sandbox).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, get_model

from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.variants import VARIANT_KEY

KEYS = ("mathhay", "exact_match", "tolerant")


def answering(golds: list[tuple[str, list[str], float]]) -> Any:
    """A mockllm model answering each prompt with the gold of its question: the one whose
    text the prompt ends with and whose new numbers it holds (v1 asks one question twice,
    over two documents)."""

    def answer(messages: list[Any], *_: Any) -> ModelOutput:
        prompt = messages[-1].text
        found = {
            gold
            for question, numbers, gold in golds
            if question in prompt[-3000:] and all(n in prompt for n in numbers)
        }
        [gold] = found
        reply = {"relevant_quantity_cells": [], "reasoning": "read", "answer": gold}
        return ModelOutput.from_content("mockllm/model", json.dumps(reply))

    return get_model("mockllm/model", custom_outputs=answer)


def accuracies(log: Any) -> dict[str, float]:
    assert log.status == "success", log.error
    return {s.name: s.metrics["accuracy"].value for s in log.results.scores if s.name in KEYS}


def main(argv: list[str]) -> None:
    seeds = [1]
    if "--seeds" in argv:
        at = argv.index("--seeds")
        seeds = [int(s) for s in argv[at + 1].split(",")]
        argv = argv[:at] + argv[at + 2 :]
    data_dir = argv[0] if argv else os.environ.get("FINMATH_DATA_DIR", "../shared/data")
    for seed in seeds:
        args: dict[str, Any] = {
            "data_dir": data_dir, "subset": "verified", "length": 32000, "judge": False,
            "variant": "fresh", "variant_seed": seed,
        }  # fmt: skip
        started = time.perf_counter()
        task = mathhay(**args)
        built = time.perf_counter() - started
        summary = (task.metadata or {})["variant"]
        samples = list(task.dataset)
        records = [dict(s.metadata or {})[VARIANT_KEY] for s in samples]
        numbers = [[r["to"] for r in record["replaced"]] for record in records]
        golds = {
            "oracle": [
                (str(s.input), n, float(str(s.target)))
                for s, n in zip(samples, numbers, strict=True)
            ],
            "reciter": [
                (str(s.input), n, float(record["original_answer"]))
                for s, n, record in zip(samples, numbers, records, strict=True)
            ],
        }
        print(
            f"seed {seed}: {summary['instantiated']} of {summary['of']} instantiated "
            f"({summary['instantiated'] / summary['of']:.1%}); task built in {built:.0f} s"
        )
        with tempfile.TemporaryDirectory() as logs:
            for name, by_question in golds.items():
                [log] = inspect_eval(
                    "finmath_tasks/mathhay",
                    task_args=args,
                    model=answering(by_question),
                    display="none",
                    log_dir=str(Path(logs) / name),
                )
                shown = ", ".join(f"{k} {v:.3f}" for k, v in accuracies(log).items())
                print(f"  {name}: {len(log.samples or [])} samples, {shown}")


if __name__ == "__main__":
    main(sys.argv[1:])
