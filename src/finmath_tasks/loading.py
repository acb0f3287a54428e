"""Dataset loading shared by every benchmark: Hugging Face Hub or a local directory.

Resolution order for where the data comes from:
1. the task parameter ``data_dir`` (``-T data_dir=/path``),
2. the environment variable ``FINMATH_DATA_DIR``,
3. the Hugging Face Hub (dataset id and revision constants of the task).

A local directory may hold the upstream files directly (``validation.json``)
or in a per-benchmark subfolder (``financemath/validation.json``), so one
``FINMATH_DATA_DIR`` can serve every benchmark.

Every record goes through the task's ``record_to_sample``; a record that
cannot be converted stops loading with an error that names the file (or Hub
id), the record's position and its id, so nothing is dropped silently.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from inspect_ai.dataset import MemoryDataset, Sample

DATA_DIR_ENV = "FINMATH_DATA_DIR"

Record = dict[str, Any]


class DatasetError(RuntimeError):
    """A dataset cannot be loaded; the message says what to do."""


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path | None:
    """The local data directory to use, or None to use the Hub."""
    chosen = data_dir if data_dir not in (None, "") else os.environ.get(DATA_DIR_ENV) or None
    if chosen is None:
        return None
    path = Path(chosen).expanduser()
    if not path.is_dir():
        origin = "-T data_dir" if data_dir not in (None, "") else DATA_DIR_ENV
        raise DatasetError(f"{origin}={chosen!s}: no such directory")
    return path


def find_local_file(data_dir: Path, subdir: str, filename: str) -> Path:
    """``data_dir/filename`` or ``data_dir/subdir/filename``, whichever exists."""
    candidates = [data_dir / filename, data_dir / subdir / filename]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    tried = " or ".join(str(c) for c in candidates)
    raise DatasetError(f"Data file not found: looked for {tried}")


def read_json_records(path: Path) -> list[Record]:
    """Records of a JSON array file or a JSON-lines file; errors name the file and place."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"{path}: cannot read ({e})") from e
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise DatasetError(
                f"{path}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}"
            ) from e
        records = data
    else:
        records = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise DatasetError(f"{path}: malformed JSON on line {lineno}: {e.msg}") from e
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise DatasetError(
                f"{path}: record #{i} is a {type(record).__name__}, expected an object"
            )
    return records


def load_hub_records(
    path: str,
    *,
    split: str,
    revision: str | None = None,
    name: str | None = None,
    **kwargs: Any,
) -> list[Record]:
    """Records of a Hub dataset split (``datasets.load_dataset``), with actionable errors."""
    import datasets

    try:
        ds = datasets.load_dataset(path, name=name, split=split, revision=revision, **kwargs)
    except Exception as e:
        message = str(e)
        lowered = message.lower()
        hint = f"pass -T data_dir=<directory with the {split} file> or set {DATA_DIR_ENV}"
        if "gated" in lowered or "authenticated" in lowered or "401" in message or "403" in message:
            raise DatasetError(
                f"The Hugging Face dataset {path!r} is gated: accept its terms at "
                f"https://huggingface.co/datasets/{path} while logged in, create a token "
                f"(https://huggingface.co/settings/tokens) and export HF_TOKEN=<token>; or {hint}. "
                f"({type(e).__name__}: {message[:300]})"
            ) from e
        if (
            isinstance(e, ConnectionError | OSError)
            or "couldn't reach" in lowered
            or "offline" in lowered
        ):
            raise DatasetError(
                f"Cannot reach the Hugging Face Hub for {path!r} (split {split!r}); "
                f"{hint}. ({type(e).__name__}: {message[:300]})"
            ) from e
        if isinstance(e, ValueError) and "split" in lowered:
            raise DatasetError(f"{path!r} has no split {split!r}: {message[:300]}") from e
        raise DatasetError(
            f"Could not load {path!r} split {split!r}: {type(e).__name__}: {message[:300]}"
        ) from e
    return [dict(row) for row in ds]


def records_to_dataset(
    records: Iterable[Record],
    record_to_sample: Callable[[Record], Sample],
    *,
    source: str,
    name: str,
    id_field: str | None = None,
) -> MemoryDataset:
    """Convert records to samples; a bad record raises a DatasetError naming it."""
    samples: list[Sample] = []
    seen: dict[Any, int] = {}
    for i, record in enumerate(records):
        label = f"record #{i}"
        if id_field and isinstance(record, dict) and record.get(id_field) is not None:
            label += f" ({id_field}={record[id_field]!r})"
        try:
            sample = record_to_sample(record)
        except DatasetError as e:
            raise DatasetError(f"{source}: {label}: {e}") from e
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            detail = f"missing field {e}" if isinstance(e, KeyError) else str(e)
            raise DatasetError(f"{source}: {label} is malformed: {detail}") from e
        if sample.id is not None:
            if sample.id in seen:
                raise DatasetError(
                    f"{source}: {label} repeats sample id {sample.id!r} of record #{seen[sample.id]}"
                )
            seen[sample.id] = i
        samples.append(sample)
    if not samples:
        raise DatasetError(f"{source}: no records")
    return MemoryDataset(samples, name=name, location=source)
