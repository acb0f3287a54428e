"""A log's samples as the tools read them: once per log, and a log whose samples do not
read is one :class:`DamagedLog` line, never a traceback (``cli.reading`` turns it into a log
left out and listed). No other module of the tools is imported here, so every table's
module reads samples through it without an import cycle."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from inspect_ai.log import EvalSample, read_eval_log_samples


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def _shown(location: str) -> str:
    return location.removeprefix("file://")


class DamagedLog(Exception):
    """A log whose header reads but whose samples do not (a member cut inside the zip, a
    JSON log cut after its header, a sample edited into another shape)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{_shown(path)}: {reason}")
        self.path = path
        self.reason = reason


def log_samples(path: str) -> Iterator[EvalSample]:
    """The samples of the log at ``path``, one at a time (Inspect's
    ``read_eval_log_samples``, a sample missing from an unfinished log allowed): every part
    of the tools that reads a log's samples reads them here, so that a log whose samples
    cannot be read raises :class:`DamagedLog`, one line naming the file and what is wrong,
    which the caller turns into a log left out and listed (``finmath report``) or its one
    line of error, rather than a traceback."""
    try:
        samples = iter(read_eval_log_samples(path, all_samples_required=False))
        while True:
            try:
                sample = next(samples)
            except StopIteration:
                return
            yield sample
    except Exception as e:  # a cut member, a JSON log cut short, an edited sample
        raise DamagedLog(
            path,
            "its header reads but its samples do not: left out "
            f"({type(e).__name__}: {_first_line(e)})",
        ) from e


@dataclass(frozen=True)
class SampleRecord:
    """What the report reads of a sample: its id, epoch, target, metadata and scores."""

    id: int | str
    epoch: int
    target: str | list[str]
    metadata: dict[str, Any]
    scores: dict[str, Any]


SAMPLES_KEY = "samples"
"""Where :func:`run_samples` keeps a run's samples (``Run.per_sample``)."""


class _Read(Protocol):
    path: str
    per_sample: dict[str, Any]


def run_samples(run: _Read) -> list[SampleRecord]:
    """The samples of ``run``, read once (:func:`log_samples`) and kept on the run: every
    table, pair and error class of the report reads them from here, so a report reads each
    log's samples once however many tables and scores it draws from them."""
    cached = run.per_sample.get(SAMPLES_KEY)
    if isinstance(cached, list):
        return cached
    records = [
        SampleRecord(s.id, int(s.epoch), s.target, dict(s.metadata or {}), dict(s.scores or {}))
        for s in log_samples(run.path)
    ]
    run.per_sample[SAMPLES_KEY] = records
    return records
