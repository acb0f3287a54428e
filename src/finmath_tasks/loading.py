"""Dataset loading shared by every benchmark: Hugging Face Hub or a local directory.

Resolution order for where the data comes from:
1. the task parameter ``data_dir`` (``-T data_dir=/path``),
2. the environment variable ``FINMATH_DATA_DIR``,
3. the Hugging Face Hub (dataset id and revision constants of the task).

A local directory may hold the upstream files directly (``validation.json``)
or in a per-benchmark subfolder (``<benchmark>/validation.json``), so one
``FINMATH_DATA_DIR`` can serve every benchmark.

Every record goes through the task's ``record_to_sample``; a record that
cannot be converted stops loading with an error that names the file (or Hub
id), the record's position and its id, so nothing is dropped silently.

A benchmark describes where its data lives with a :class:`DataSource` and
loads a split with :func:`load_split`; the lower-level helpers below serve
benchmarks whose files need more than one JSON list per split.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.dataset import MemoryDataset, Sample

from finmath_tasks.errors import UsageError

logger = logging.getLogger(__name__)

DATA_DIR_ENV = "FINMATH_DATA_DIR"

Record = dict[str, Any]


class DatasetError(UsageError, RuntimeError):
    """A dataset cannot be loaded; the message says what to do.

    An Inspect ``PrerequisiteError``: ``inspect eval`` prints the message alone,
    without a traceback in front of it.
    """


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path | None:
    """The local data directory to use, or None to use the Hub."""
    if data_dir is not None and not isinstance(data_dir, str | os.PathLike):
        raise DatasetError(
            f"-T data_dir={data_dir!r} must be a path (a string), not {type(data_dir).__name__}"
        )
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
    elif stripped.startswith("{") and _single_json_value(text):
        raise DatasetError(
            f"{path}: the file holds one JSON object (keys: {_keys(text)}); expected a JSON "
            "list of records, or JSON lines with one record per line"
        )
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


def _single_json_value(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _keys(text: str, limit: int = 8) -> str:
    keys = list(json.loads(text))
    shown = ", ".join(repr(k) for k in keys[:limit])
    return shown + (f", ... ({len(keys)} in all)" if len(keys) > limit else "")


def load_hub_records(
    path: str,
    *,
    split: str,
    revision: str | None = None,
    name: str | None = None,
    local_file: str | None = None,
    **kwargs: Any,
) -> list[Record]:
    """Records of a Hub dataset split (``datasets.load_dataset``), with actionable errors.

    ``local_file``: the upstream file a local copy must hold, named in the messages
    (default: the file of ``data_files``; ``datasets`` calls a lone data file's split
    "train", which tells the user nothing).
    """
    import datasets

    try:
        ds = datasets.load_dataset(path, name=name, split=split, revision=revision, **kwargs)
    except Exception as e:
        message = str(e)
        lowered = message.lower()
        needed = local_file or _data_file_name(kwargs.get("data_files"), split)
        what = f"file {needed!r}" if needed else f"split {split!r}"
        hint = (
            f"pass -T data_dir=<directory with {needed or f'the {split} file'}> "
            f"or set {DATA_DIR_ENV}"
        )
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
                f"Cannot reach the Hugging Face Hub for {path!r} ({what}); "
                f"{hint}. ({type(e).__name__}: {message[:300]})"
            ) from e
        if isinstance(e, ValueError) and "split" in lowered:
            raise DatasetError(f"{path!r} has no {what}: {message[:300]}") from e
        raise DatasetError(
            f"Could not load {path!r} {what}: {type(e).__name__}: {message[:300]}; or {hint}"
        ) from e
    return [dict(row) for row in ds]


def _data_file_name(data_files: Any, split: str) -> str | None:
    """The file name of ``data_files`` for ``split`` (a name, a list of one, a mapping)."""
    if isinstance(data_files, Mapping):
        data_files = data_files.get(split)
    if isinstance(data_files, list | tuple) and len(data_files) == 1:
        data_files = data_files[0]
    if isinstance(data_files, str | os.PathLike):
        return Path(data_files).name
    return None


def records_to_dataset(
    records: Iterable[Record],
    record_to_sample: Callable[[Record], Sample],
    *,
    source: str,
    name: str,
    id_field: str | None = None,
    answers: bool | None = None,
) -> MemoryDataset:
    """Convert records to samples; a bad record raises a DatasetError naming it.

    ``answers``: True when every record must have a gold answer (a sample with
    an empty target is then an error naming its record), False when answers
    are withheld, None when either is fine. How many records lack an answer is
    logged either way.
    """
    samples: list[Sample] = []
    seen: dict[Any, int] = {}
    without_answer: list[str] = []
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
        if not _has_target(sample):
            if answers:
                raise DatasetError(
                    f"{source}: {label} has no gold answer, but every record of this split "
                    "must have one"
                )
            without_answer.append(label)
        samples.append(sample)
    if not samples:
        raise DatasetError(f"{source}: no records")
    if without_answer:
        logger.log(
            logging.INFO if answers is False else logging.WARNING,
            "%s: %d of %d records have no gold answer (generated and logged, left unscored)%s",
            source,
            len(without_answer),
            len(samples),
            "" if answers is False else f"; first: {without_answer[0]}",
        )
    return MemoryDataset(samples, name=name, location=source)


def _has_target(sample: Sample) -> bool:
    target = sample.target
    if isinstance(target, str):
        return bool(target.strip())
    return any(str(t).strip() for t in target)


@dataclass(frozen=True)
class DataSource:
    """Where a benchmark's splits live: the Hub, a local directory, or the package."""

    benchmark: str
    """The task's name, used in dataset names and messages."""
    hub_id: str
    hub_revision: str | None
    local_subdir: str
    """Subfolder of a data directory that may hold the files (``<data_dir>/<local_subdir>/``)."""
    files: Mapping[str, str]
    """Split name to upstream file name, for local directories."""
    packaged: Mapping[str, Path] = field(default_factory=dict)
    """Splits shipped with the package (offline), split name to file."""
    id_field: str | None = None
    """The record field that names a record in error messages."""
    answers: Mapping[str, bool] = field(default_factory=dict)
    """Per split: True when every record must have a gold answer, False when withheld."""

    @property
    def splits(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.files, *self.packaged]))


def load_split(
    source: DataSource,
    split: str,
    record_to_sample: Callable[[Record], Sample],
    *,
    data_dir: str | os.PathLike[str] | None = None,
    revision: str | None = None,
) -> MemoryDataset:
    """One split of ``source``: from the package, ``data_dir``/``$FINMATH_DATA_DIR``, or the Hub."""
    if split not in source.splits:
        raise DatasetError(
            f"{source.benchmark}: -T split={split!r} is not one of {', '.join(source.splits)}"
        )
    path: Path | None = source.packaged.get(split)
    if path is None and (local := resolve_data_dir(data_dir)) is not None:
        path = find_local_file(local, source.local_subdir, source.files[split])
    if path is not None:
        records, origin = read_json_records(path), str(path)
    else:
        rev = revision or source.hub_revision
        records = load_hub_records(
            source.hub_id, split=split, revision=rev, local_file=source.files[split]
        )
        origin = f"hf://{source.hub_id}@{rev or 'main'}/{split}"
    return records_to_dataset(
        records,
        record_to_sample,
        source=origin,
        name=f"{source.benchmark}-{split}",
        id_field=source.id_field,
        answers=source.answers.get(split),
    )
