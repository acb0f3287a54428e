"""How often knowledgefmath's default extraction (``extractor=rules``) gives the reference's
verdict on the leaderboard's recorded CoT outputs.

Usage: FINMATH_DATA_DIR=../shared/data python benchmarks/rules_agreement.py [--models A,B]

For every model whose recorded validation CoT outputs are in
``financemath/reference_outputs/validation/cot/`` (the reference extracted their answers
with gpt-4o-mini), one real Inspect eval of ``knowledgefmath`` on the validation split
with its default ``extractor=rules`` and a scripted model answering each question with
the recorded output; each sample's ``financemath`` verdict is compared with the recorded
one (``result.acc``). Prints per model the verdicts that agree and the two accuracies,
then the totals: the figure ``finmath report`` cites beside a default run's comparison
with the leaderboard's CoT cells.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from leaderboard_replay import OUTPUTS, _answering, data_dir_from_env, recorded_models


def _recorded_verdict(record: dict[str, Any]) -> float:
    result = record["result"]
    if isinstance(result, str):
        result = ast.literal_eval(result)
    return float(result["acc"])


def agreement(data_dir: Path, model: str, log_dir: Path) -> tuple[int, int, float, float]:
    """(verdicts agreeing, samples, our accuracy, the recorded accuracy) for one model."""
    from inspect_ai import eval

    from finmath_tasks.tasks.knowledgefmath import knowledgefmath
    from finmath_tasks.tasks.knowledgefmath.dataset import render_prompt

    records = json.loads((data_dir / OUTPUTS / "cot" / f"{model}.json").read_text("utf-8"))
    by_id = {r["question_id"]: r for r in records}
    task = knowledgefmath(split="validation", solver="cot", data_dir=str(data_dir))
    answers: dict[str, str] = {}
    for sample in task.dataset:
        if sample.id not in by_id:
            continue
        record = by_id[str(sample.id)]
        output = record["output"][0] if isinstance(record["output"], list) else record["output"]
        meta = sample.metadata or {}
        answers[render_prompt(meta["question"], meta.get("tables") or [], "cot")] = output
    task.dataset = task.dataset.filter(lambda s: s.id in by_id)
    [log] = eval(
        task,
        model=_answering(answers, "output"),
        log_dir=str(log_dir),
        display="none",
        log_level="error",
        log_realtime=False,
        max_samples=16,
    )
    if log.status != "success" or log.samples is None:
        raise RuntimeError(f"{model}: the eval ended {log.status}: {log.error}")
    ours = {str(s.id): float((s.scores or {})["financemath"].value) for s in log.samples}  # type: ignore[arg-type]
    recorded = {qid: _recorded_verdict(by_id[qid]) for qid in ours}
    agree = sum(1 for qid in ours if ours[qid] == recorded[qid])
    n = len(ours)
    return agree, n, sum(ours.values()) / n, sum(recorded.values()) / n


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated model names (default: all recorded)")
    args = parser.parse_args(argv)
    data_dir = data_dir_from_env()
    models = args.models.split(",") if args.models else recorded_models(data_dir, "cot")
    total_agree = total = 0
    print(f"{'model':45} {'agree':>9} {'ours %':>7} {'recorded %':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            agree, n, ours, recorded = agreement(data_dir, model, Path(tmp))
            total_agree += agree
            total += n
            print(f"{model:45} {agree:>4}/{n:<4} {ours * 100:>7.1f} {recorded * 100:>10.1f}")
    print(
        f"rules agree with the recorded verdicts on {total_agree}/{total} outputs "
        f"({total_agree / total * 100:.1f} %) of {len(models)} models"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
