"""Prompt sizes of the sara task (o200k_base tokens), per retrieval strategy and prompting mode.

    python benchmarks/sara_prompt_tokens.py [data_dir]   # default $FINMATH_DATA_DIR

Prints the token count of the nine sections as rendered for ``all_statutes``,
then, over the test split's cases of the chosen kind, the mean and maximum
token count of the whole conversation sent to the model (system prompt,
exemplar turns, the case with its statutes), counted as the task's
``prompt_budget`` solver counts it.
"""

from __future__ import annotations

import os
import statistics
import sys

from finmath_tasks.tasks.sara.dataset import load_data, load_dataset
from finmath_tasks.tasks.sara.prompts import (
    case_turn,
    exemplar_turns,
    load_exemplars,
    system_prompt,
    with_statutes,
)
from finmath_tasks.tiktoken_offline import get_encoding

STRATEGIES = ("none", "mentioned_only", "entire_section", "references", "all_statutes")
PROMPTINGS = ("zero_shot", "few_shot", "cot")


def main() -> None:
    encoding = get_encoding("o200k_base")
    data = load_data(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("FINMATH_DATA_DIR"))
    kind = sys.argv[2] if len(sys.argv) > 2 else "entailment"
    all_statutes = data.statutes.render()
    print(f"all_statutes: {len(encoding.encode(all_statutes))} tokens, {len(all_statutes)} chars")
    samples = list(load_dataset(data, "test", kind))
    shots = load_exemplars(data)
    print(f"test split, {kind}: {len(samples)} cases; conversation tokens mean / max")
    print(f"{'retrieval':16}" + "".join(f"{p:>18}" for p in PROMPTINGS))
    for strategy in STRATEGIES:
        cells = []
        for prompting in PROMPTINGS:
            exemplars = "\n".join(
                t["content"] for t in exemplar_turns(data.statutes, strategy, prompting, shots)
            )
            counts = []
            for sample in samples:
                md = sample.metadata or {}
                turn = case_turn(md["kind"], md["text"], md["question"], prompting)
                if strategy != "none":
                    turn = with_statutes(data.statutes, turn, md["question"], md["kind"], strategy)
                parts = [system_prompt(prompting)] + ([exemplars] if exemplars else []) + [turn]
                counts.append(len(encoding.encode("\n".join(parts))))
            cells.append(f"{statistics.mean(counts):>9.0f} / {max(counts):>6}")
        print(f"{strategy:16}" + "".join(f"{c:>18}" for c in cells))


if __name__ == "__main__":
    main()
