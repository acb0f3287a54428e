"""Export a run's predictions from an Inspect log, e.g. for a leaderboard submission
(``finmath export LOG.eval -o predictions.json [--format submission]``).

``rows`` (default): one record per sample, in dataset order: the sample id, the
raw model output, and for every scorer its answer and value; samples that
errored are listed with ``"error"`` so nothing is lost silently.

``submission``: the benchmark's own submission layout, defined by the task's
folder as ``finmath_tasks.tasks.<task>.export.submission_row(sample)``.

A run on fresh variants (``-T variant=fresh -T variant_seed=N``) keeps the published
question ids with other numbers and golds: its rows carry ``"variant": "fresh"`` and
``"variant_seed": N``, and the submission format refuses it.

A log whose run did not finish (status ``cancelled``, ``error`` or ``started``) is
refused, since a submission from it would look whole; ``--partial`` exports it to
``<name>.partial-<held>-of-<planned>.json`` and says so on screen. Either way the
screen says how many samples ended in an error (an exception while solving or scoring
them: no score), e.g. in a run that accepted some with ``--fail-on-error``.

An output that is the log itself is refused: the export would destroy what it reads; the
command line also refuses any other Inspect log, and an existing file that is not an earlier
export unless ``--overwrite`` (``finmath_tasks.cli.overwrite``). The command line writes to a
pipe or device (``-o -``, ``/dev/stdout``, a named pipe) as a stream: never read nor renamed,
the line saying what was written on the standard error. A log that is a pipe or a device is
refused (reading it could block, or never end).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, EvalSample, read_eval_log

from finmath_tasks.variants import is_fresh

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


class ExportError(Exception):
    """A user error of ``export``: the message is one line, shown without a traceback."""


def _submission_row(task: str) -> Callable[[EvalSample], dict[str, Any]]:
    benchmark = task.rsplit("/", 1)[-1]
    try:
        module = importlib.import_module(f"finmath_tasks.tasks.{benchmark}.export")
    except ModuleNotFoundError as e:
        raise ExportError(f"task {task!r} defines no submission format (use --format rows)") from e
    row: Callable[[EvalSample], dict[str, Any]] = module.submission_row
    return row


def read_log(log_path: str) -> EvalLog:
    """The log at ``log_path``; a missing file or one that is not a whole Inspect log is an
    :class:`ExportError` naming it."""
    if "://" not in log_path:
        path = Path(log_path)
        if not path.exists():
            raise ExportError(f"{log_path}: no such file")
        if path.is_dir():
            raise ExportError(f"{log_path}: is a folder, not an Inspect log file")
        if not stat.S_ISREG(path.stat().st_mode):
            raise ExportError(f"{log_path}: is a pipe or a device, not an Inspect log file")
    try:
        return read_eval_log(log_path)
    except Exception as e:  # a truncated .eval, a JSON of another shape, binary junk
        detail = " ".join(str(e).split())[:200] or type(e).__name__
        raise ExportError(
            f"{log_path}: not a readable Inspect log ({type(e).__name__}: {detail})"
        ) from e


def planned_samples(log: EvalLog) -> int | None:
    """How many samples (times epochs) the run set out to evaluate, if the log says."""
    dataset, config = log.eval.dataset, log.eval.config
    ids = dataset.sample_ids
    count = len(ids) if ids is not None else dataset.samples
    if count is None:
        return None
    limit = config.limit
    if isinstance(limit, int):
        count = min(count, limit)
    elif isinstance(limit, tuple | list) and len(limit) == 2:
        count = min(count, max(0, int(limit[1]) - int(limit[0])))
    return count * (config.epochs or 1)


@dataclass(frozen=True)
class Export:
    rows: list[dict[str, Any]]
    status: str
    planned: int | None
    errored: int = 0
    """Samples that ended in an error (no score; their row's ``error`` says why)."""
    variant_seed: int | None = None
    """The seed of a run on fresh variants (its rows say so), None for the published questions."""

    @property
    def whole(self) -> bool:
        return self.status == "success"

    def holding(self) -> str:
        of = f" of {self.planned}" if self.planned is not None else ""
        return f"{len(self.rows)}{of} samples"


def predictions(log_path: str, fmt: str = "rows", partial: bool = False) -> Export:
    """The log's rows; a log whose run did not finish (status other than ``success``) is
    refused unless ``partial``."""
    if fmt not in FORMATS:
        raise ExportError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    log = read_log(log_path)
    planned = planned_samples(log)
    held = len(log.samples or [])
    errored = sum(1 for sample in log.samples or [] if sample.error)
    if log.status != "success" and not partial:
        of = f" of {planned}" if planned is not None else ""
        failed = f", {errored} of them ended in an error" if errored else ""
        raise ExportError(
            f"{log_path}: the run did not finish (status {log.status}; the log holds {held}{of} "
            f"samples{failed}): nothing exported; rerun it to completion (inspect eval-retry), "
            "or pass --partial to export what it holds, marked as partial"
        )
    if not log.samples:
        raise ExportError(f"{log_path}: the log has no samples")
    seed = fresh_seed(log)
    if seed is not None and fmt == "submission":
        raise ExportError(
            f"{log_path}: a run on fresh variants (-T variant=fresh -T variant_seed={seed}): "
            "its questions carry the published ids with other numbers and golds, so it is no "
            "submission; --format rows exports it, each row marked with the variant and seed"
        )
    row = sample_row if fmt == "rows" else _submission_row(log.eval.task)
    rows = [row(sample) for sample in log.samples]
    if seed is not None:
        rows = [{**r, "variant": "fresh", "variant_seed": seed} for r in rows]
    return Export(rows, log.status, planned, errored, seed)


def fresh_seed(log: EvalLog) -> int | None:
    """The variant seed of a run on fresh variants (``-T variant=fresh -T variant_seed=N``,
    N > 0), or None for a run on the questions as published."""
    args = log.eval.task_args or {}
    variant, seed = args.get("variant", "original"), args.get("variant_seed", 0)
    try:
        return int(seed) if is_fresh(str(variant), int(seed)) else None
    except (TypeError, ValueError):
        return None


def partial_name(output: Path, export: Export) -> Path:
    """``out.json`` -> ``out.partial-10-of-200.json``: a partial export says so in its name."""
    of = f"-of-{export.planned}" if export.planned is not None else ""
    return output.with_name(f"{output.stem}.partial-{len(export.rows)}{of}{output.suffix}")


def check_output(output: Path) -> None:
    """``-o`` must name a file in an existing folder."""
    if output.is_dir():
        raise ExportError(f"-o {output}: is a folder; give a file name (e.g. {output}/out.json)")
    parent = output.parent
    if not parent.is_dir():
        raise ExportError(f"-o {output}: the folder {parent} does not exist")


def same_file(path: Path, location: str) -> bool:
    """Whether ``path`` names the local file at ``location`` (the same path once resolved,
    or the same file through a link); a remote location (``s3://``) is never local."""
    if "://" in location.removeprefix("file://"):
        return False
    other = Path(location.removeprefix("file://"))
    try:
        if path.exists() and other.exists():
            return os.path.samefile(path, other)
        return path.resolve() == other.resolve()
    except OSError:
        return False


def check_not_input(target: Path, log: str) -> None:
    """The export never writes over the log it reads."""
    if same_file(target, log):
        raise ExportError(
            f"-o {target}: is the log it exports ({log}); writing there would destroy the "
            "log: give another file name"
        )


def export(
    log: str,
    output: Path,
    fmt: str = "rows",
    partial: bool = False,
    guard: Callable[[Path], str] | None = None,
    stream: Callable[[str], None] | None = None,
) -> Path:
    """Write the log's rows to ``output`` (a partial export: to :func:`partial_name`);
    prints what it wrote. Returns the file written. Never writes over ``log``; ``guard``
    says why a file must not be written over (the command line's: never another Inspect
    log, nor a file that is no earlier export without ``--overwrite``), "" if it may.
    ``stream``: ``output`` is a pipe or device, written by this call (never read, never
    renamed for a partial run; what was written is said on the standard error); a closed
    reader's ``BrokenPipeError`` passes through."""
    if stream is None:
        check_output(output)
        check_not_input(output, log)
    result = predictions(log, fmt, partial)
    target = output if result.whole or stream is not None else partial_name(output, result)
    if stream is None:
        check_not_input(target, log)
        problem = guard(target) if guard is not None else ""
        if problem:
            raise ExportError(problem)
    text = json.dumps(result.rows, indent=2, ensure_ascii=False)
    try:
        if stream is None:
            target.write_text(text)
        else:
            stream(text + "\n")
    except BrokenPipeError:
        raise
    except OSError as e:
        raise ExportError(f"-o {target}: cannot write ({e.strerror or e})") from e
    failed = (
        f"; {result.errored} of them ended in an error (not scored: see each row's error)"
        if result.errored
        else ""
    )
    if result.variant_seed is not None:
        failed += (
            f" (fresh variants, seed {result.variant_seed}: each row carries variant and "
            "variant_seed)"
        )
    said = sys.stdout if stream is None else sys.stderr
    if result.whole:
        print(f"wrote {len(result.rows)} predictions to {target}{failed}", file=said)
    else:
        print(
            f"PARTIAL: wrote {result.holding()} of an unfinished run (status {result.status}) "
            f"to {target}{failed}",
            file=said,
        )
    return target
