"""A log's header and samples as the tools read them: once per log, and a log whose samples
do not read is one :class:`DamagedLog` line, never a traceback (``cli.reading`` turns it into a
log left out and listed). No other module of the tools is imported here, so every table's
module reads samples through it without an import cycle.

A local ``.eval`` log (a zip) is read here directly, with Inspect's own models: its header
from ``header.json`` (:func:`read_header`) and, of each sample, what the report reads (id,
epoch, target, metadata, scores: :func:`eval_zip_records`), every member read whole, so the
zip's CRC of each is checked and a member cut inside the zip is a :class:`DamagedLog` as
before. Inspect's ``read_eval_log_samples`` opens the zip once per sample, reads the header
again and validates every message and event of it: 15 ms a log of 3 samples where this
takes 2 (``benchmarks/report_many_logs.py``). Other logs (``.json``, remote, an unfinished
log without ``header.json``) are read through Inspect's API.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import zipfile_zstd  # noqa: F401  (Inspect writes .eval members zstd-compressed, method 93)
from inspect_ai.log import EvalLog, EvalSample, read_eval_log, read_eval_log_samples
from inspect_ai.scorer import Score


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
        raise DamagedLog(path, _unreadable(e)) from e


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
    """The samples of ``run``, read once (:func:`log_records`) and kept on the run: every
    table, pair and error class of the report reads them from here, so a report reads each
    log's samples once however many tables and scores it draws from them."""
    cached = run.per_sample.get(SAMPLES_KEY)
    if isinstance(cached, list):
        return cached
    records = log_records(run.path)
    run.per_sample[SAMPLES_KEY] = records
    return records


def log_records(path: str) -> list[SampleRecord]:
    """What the report reads of each sample of the log at ``path``, in Inspect's order (the
    header's sample ids, each epoch; a sample an unfinished log lacks left out): from the
    zip itself for a local ``.eval`` (:func:`eval_zip_records`), else through
    :func:`log_samples`. :class:`DamagedLog` when a sample does not read."""
    local = local_eval(path)
    context = _deserializing()
    if local is not None and context is not None:
        try:
            records = eval_zip_records(local, context)
        except Exception as e:  # a cut member, a bad CRC, an edited sample
            raise DamagedLog(path, _unreadable(e)) from e
        if records is not None:
            return records
    return [
        SampleRecord(s.id, int(s.epoch), s.target, dict(s.metadata or {}), dict(s.scores or {}))
        for s in log_samples(path)
    ]


def _unreadable(error: Exception) -> str:
    return (
        "its header reads but its samples do not: left out "
        f"({type(error).__name__}: {_first_line(error)})"
    )


def local_eval(path: str) -> Path | None:
    """``path`` as a local ``.eval`` file, or None (a ``.json`` log, a remote one)."""
    local = path.removeprefix("file://")
    if "://" in local or not local.endswith(".eval"):
        return None
    found = Path(local)
    return found if found.is_file() else None


HEADER = "header.json"
SAMPLES_DIR = "samples"


def _deserializing() -> dict[str, Any] | None:
    """The context Inspect validates a log read back with (a field a later Inspect added to
    the generation config dropped rather than refused, ids kept as written); None where
    Inspect has it no more: the logs are then read through Inspect's API only."""
    from finmath_tasks._inspect_private import InspectPrivateNameMissing

    try:
        from finmath_tasks._inspect_private import get_deserializing_context

        return dict(get_deserializing_context())
    except InspectPrivateNameMissing:
        return None


def read_header(info: Any) -> EvalLog:
    """The header of a log (``info``: its path or Inspect's ``EvalLogInfo``), as
    ``read_eval_log(info, header_only=True)`` reads it: for a local ``.eval`` with its
    ``header.json`` (a finished log), that member validated with Inspect's ``EvalLog``
    (its sample reductions are not read: the tools use none); otherwise through Inspect."""
    location = info if isinstance(info, str) else str(info.name)
    local = local_eval(location)
    context = _deserializing()
    if local is not None and context is not None:
        with zipfile.ZipFile(local) as zip:
            if HEADER in zip.namelist():
                log = EvalLog.model_validate(json.loads(zip.read(HEADER)), context=context)
                log.location = location
                return log
    return read_eval_log(info, header_only=True)


def eval_zip_records(path: Path, context: dict[str, Any]) -> list[SampleRecord] | None:
    """The samples of the local ``.eval`` log at ``path``, one zip open, each member read
    whole (its CRC checked), validated in Inspect's ``context``; None when it has no
    ``header.json`` or its header lists no sample ids (Inspect's reader then reads it, or
    says why not). Raises what reading, unzipping or validating a member raises."""
    with zipfile.ZipFile(path) as zip:
        names = set(zip.namelist())
        if HEADER not in names:
            return None  # an unfinished log: Inspect reads its journal
        header = json.loads(zip.read(HEADER))
        ids = (header.get("eval", {}).get("dataset") or {}).get("sample_ids")
        if ids is None:
            return None
        epochs = int((header.get("eval", {}).get("config") or {}).get("epochs") or 1)
        records = []
        for sample_id in ids:
            for epoch in range(1, epochs + 1):
                member = f"{SAMPLES_DIR}/{sample_id}_epoch_{epoch}.json"
                if member in names:
                    records.append(_record(json.loads(zip.read(member)), context))
        return records


def _record(data: Any, context: dict[str, Any]) -> SampleRecord:
    """A sample's JSON as :class:`SampleRecord`, its fields checked as Inspect's
    ``EvalSample`` checks them (id, epoch, target, metadata) and its scores Inspect's
    ``Score``s."""
    if not isinstance(data, dict):
        raise ValueError(f"a sample is a JSON object, not {type(data).__name__}")
    checked = EvalSample.model_validate(
        {key: data[key] for key in ("id", "epoch", "target", "metadata") if key in data}
        | {"input": ""},
        context=context,
    )
    scores = data.get("scores") or {}
    if not isinstance(scores, dict):
        raise ValueError(f"a sample's scores are a JSON object, not {type(scores).__name__}")
    return SampleRecord(
        checked.id,
        int(checked.epoch),
        checked.target,
        dict(checked.metadata or {}),
        {str(key): Score.model_validate(value) for key, value in scores.items()},
    )
