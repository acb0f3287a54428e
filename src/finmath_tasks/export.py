"""Export a run's predictions from an Inspect log, e.g. for a leaderboard submission.

    python -m finmath_tasks.export LOG.eval -o predictions.json
    python -m finmath_tasks.export LOG.eval -o submission.json --format submission

``rows`` (default): one record per sample, in dataset order: the sample id, the
raw model output, and for every scorer its answer and value; samples that
errored are listed with ``"error"`` so nothing is lost silently.

``submission``: the benchmark's own submission layout, defined by the task's
folder as ``finmath_tasks.tasks.<task>.export.submission_row(sample)``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalSample, read_eval_log

FORMATS = ("rows", "submission")


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def sample_row(sample: EvalSample) -> dict[str, Any]:
    """The generic row: id, output, every scorer's answer and value, error."""
    return {
        "id": sample.id,
        "output": sample.output.completion if sample.output else "",
        "scores": {
            name: {"answer": score.answer, "value": _jsonable(score.value)}
            for name, score in (sample.scores or {}).items()
        },
        "error": sample.error.message if sample.error else None,
    }


def _submission_row(task: str) -> Callable[[EvalSample], dict[str, Any]]:
    benchmark = task.rsplit("/", 1)[-1]
    try:
        module = importlib.import_module(f"finmath_tasks.tasks.{benchmark}.export")
    except ModuleNotFoundError as e:
        raise SystemExit(f"task {task!r} defines no submission format") from e
    row: Callable[[EvalSample], dict[str, Any]] = module.submission_row
    return row


def predictions(log_path: str, fmt: str = "rows") -> list[dict[str, Any]]:
    if fmt not in FORMATS:
        raise SystemExit(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    log = read_eval_log(log_path)
    if log.samples is None:
        raise SystemExit(f"{log_path}: the log has no samples")
    row = sample_row if fmt == "rows" else _submission_row(log.eval.task)
    return [row(sample) for sample in log.samples]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("log", help="an Inspect log file (.eval or .json)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--format", choices=FORMATS, default="rows", help="row layout")
    args = parser.parse_args(argv)
    rows = predictions(args.log, args.format)
    args.output.write_text(json.dumps(rows, indent=2, ensure_ascii=False))
    print(f"wrote {len(rows)} predictions to {args.output}")


if __name__ == "__main__":
    main()
