"""Export a run's predictions from an Inspect log, e.g. for a leaderboard submission.

    python -m finmath_tasks.export LOG.eval -o predictions.json

Writes one record per sample, in dataset order: the sample id (``question_id``
for FinanceMath), the raw model output as a one-element list (the layout of the
FinanceMath reference's prediction files), the extracted answer and, where the
split is scored, the per-profile scores. Samples that errored are listed with
``"error"`` so nothing is lost silently.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from inspect_ai.log import read_eval_log


def predictions(log_path: str) -> list[dict[str, Any]]:
    log = read_eval_log(log_path)
    if log.samples is None:
        raise SystemExit(f"{log_path}: the log has no samples")
    rows = []
    for sample in log.samples:
        metadata = sample.metadata or {}
        score = next(iter((sample.scores or {}).values()), None)
        value = score.value if score else None
        if isinstance(value, float) and math.isnan(value):
            value = None
        rows.append(
            {
                "question_id": metadata.get("question_id", sample.id),
                "output": [sample.output.completion if sample.output else ""],
                "extracted_answer": score.answer if score else None,
                "scores": value,
                "error": sample.error.message if sample.error else None,
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("log", help="an Inspect log file (.eval or .json)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="JSON file to write")
    args = parser.parse_args(argv)
    rows = predictions(args.log)
    args.output.write_text(json.dumps(rows, indent=2, ensure_ascii=False))
    print(f"wrote {len(rows)} predictions to {args.output}")


if __name__ == "__main__":
    main()
