"""Why FinanceMath's leaderboard models are wrong: the error classes of their recorded
validation outputs, replayed through ``knowledgefmath``.

Usage: FINMATH_DATA_DIR=../shared/data python benchmarks/error_classes_replay.py
           [--kind cot|pot|both] [--models NAME,NAME,...] [--score financemath|tolerant]

Each model's recorded outputs (``financemath/reference_outputs/validation/{cot,pot}/``)
run through one real Inspect eval each, as ``benchmarks/leaderboard_replay.py`` runs them
(CoT: the reference's recorded extractor replies as the grader; PoT: the programs in our
bwrap sandbox). From each log's samples: the share of the 200 questions in each error
class of ``--score`` (default ``financemath``, the official comparison; ``tolerant`` is
ours), per model and kind, the sub-reasons of ``no_answer`` and ``program_failed``
summed over the models, and a check: a sample the reference scored correct (its
recorded ``acc``) has no class under ``financemath``. Exit status 1 when one does.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
COLUMNS = ["scale", "sign", "rounding", "near", "wrong", "no_answer", "program_failed", "rejected"]
"""The classes shown as columns (no_answer and program_failed summed over their reasons)."""


def _replay() -> Any:
    spec = importlib.util.spec_from_file_location(
        "leaderboard_replay", HERE / "leaderboard_replay.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def model_classes(
    data_dir: Path, model: str, kind: str, log_dir: Path, score: str
) -> tuple[Counter[str], int, list[str]]:
    """(class -> count under ``score``, samples, ids the reference scored correct that have
    a ``financemath`` class) of one model's replayed outputs."""
    from inspect_ai.log import read_eval_log

    replay = _replay()
    replay.replay_model(data_dir, model, kind, log_dir)
    [path] = sorted(log_dir.glob("*.eval"))
    log = read_eval_log(str(path))
    records = json.loads((data_dir / replay.OUTPUTS / kind / f"{model}.json").read_text("utf-8"))
    accepted = {r["question_id"] for r in records if r["result"]["acc"]}
    counts: Counter[str] = Counter()
    wrongly_classed: list[str] = []
    for sample in log.samples or []:
        scores = sample.scores or {}
        official = (scores["financemath"].metadata or {}).get("error_class")
        if str(sample.id) in accepted and official is not None:
            wrongly_classed.append(str(sample.id))
        found = (scores[score].metadata or {}).get("error_class")
        counts[found if isinstance(found, str) else "correct"] += 1
    return counts, len(log.samples or []), wrongly_classed


def column(counts: Counter[str], name: str) -> int:
    return sum(v for k, v in counts.items() if k == name or k.startswith(f"{name}:"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=["cot", "pot", "both"], default="both")
    parser.add_argument("--models", default="", help="comma-separated (default: all recorded)")
    parser.add_argument("--score", default="financemath", choices=["financemath", "tolerant"])
    args = parser.parse_args()
    replay = _replay()
    data_dir = replay.data_dir_from_env()
    kinds = ["cot", "pot"] if args.kind == "both" else [args.kind]
    wanted = [m for m in args.models.split(",") if m]
    problems = 0
    for kind in kinds:
        models = wanted or replay.recorded_models(data_dir, kind)
        print(f"\n### validation {kind.upper()}: error classes of {args.score} (% of questions)\n")
        print("| model | n | correct | " + " | ".join(COLUMNS) + " |")
        print("|---|---|---|" + "---|" * len(COLUMNS))
        reasons: Counter[str] = Counter()
        started = time.monotonic()
        for model in models:
            with tempfile.TemporaryDirectory() as tmp:
                counts, n, wrongly = model_classes(data_dir, model, kind, Path(tmp), args.score)
            problems += len(wrongly)
            reasons.update({k: v for k, v in counts.items() if ":" in k})
            cells = [f"{100 * column(counts, c) / n:.1f}" for c in ["correct", *COLUMNS]]
            print(f"| {model} | {n} | " + " | ".join(cells) + " |", flush=True)
            if wrongly:
                print(f"  {model}: reference-correct samples with a class: {wrongly[:5]}")
        print(f"\nSub-reasons over the {len(models)} models ({kind.upper()}):\n")
        print("| class | samples |\n|---|---|")
        for name, count in sorted(reasons.items()):
            print(f"| {name} | {count} |")
        print(f"\n({len(models)} models in {time.monotonic() - started:.0f} s)")
    print(
        f"\nreference-correct samples with a financemath class: {problems}"
        + (" (none, as it must be)" if not problems else " (DIFFERS)")
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
