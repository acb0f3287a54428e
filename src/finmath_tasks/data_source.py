"""Where a benchmark's splits live, and loading one: :class:`DataSource` and :func:`load_split`
on the readers of :mod:`finmath_tasks.loading`.

A split comes from the package (``packaged``: offline, the same bytes everywhere), else from
``-T data_dir``/``$FINMATH_DATA_DIR``, a Hub copy, or the authors' files at a pinned commit
(:class:`~finmath_tasks.loading.Upstream`). A benchmark whose data is its own declares only
``packaged`` splits: it has no upstream files, no Hub copy and nothing to verify.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from inspect_ai.dataset import MemoryDataset, Sample

from finmath_tasks.loading import (
    DatasetError,
    Record,
    Upstream,
    attach_provenance,
    check_revision_or_folder,
    find_local_file,
    hub_provenance,
    hub_split_dataset,
    json_file_dataset,
    local_provenance,
    resolve_data_dir,
)
from finmath_tasks.verification import verify_local


@dataclass(frozen=True)
class DataSource:
    """Where a benchmark's splits live: the authors' files, the Hub, a local directory, or
    the package. A benchmark whose data is its own gives ``packaged`` alone; any other split
    needs a file name (``files``) and a Hub copy or the authors' file to come from."""

    benchmark: str
    """The task's name, used in dataset names and messages."""
    hub_id: str | None = None
    """The Hub dataset's id; None when there is no Hub copy (``-T revision`` is refused)."""
    hub_revision: str | None = None
    local_subdir: str = ""
    """Subfolder of a data directory that may hold the files (``<data_dir>/<local_subdir>/``)."""
    files: Mapping[str, str] = field(default_factory=dict)
    """Split name to upstream file name, for local directories."""
    packaged: Mapping[str, Path] = field(default_factory=dict)
    """Splits shipped with the package (offline), split name to file."""
    id_field: str | None = None
    """The record field that names a record in error messages."""
    answers: Mapping[str, bool] = field(default_factory=dict)
    """Per split: True when every record must have a gold answer, False when withheld."""
    upstream: Upstream | None = None
    """The authors' files (the default when no ``data_dir`` and no Hub revision is given)."""
    upstream_files: Mapping[str, str] = field(default_factory=dict)
    """Split name to its file's path in the upstream repository."""

    def __post_init__(self) -> None:
        for split in self.splits:
            if split in self.packaged:
                continue
            if split not in self.files or not (self.hub_id or split in self.upstream_files):
                raise ValueError(
                    f"{self.benchmark}: split {split!r} is not package data and has no file "
                    "name (files) or nowhere to come from (hub_id, upstream_files)"
                )
        if not self.splits:
            raise ValueError(f"{self.benchmark}: a DataSource needs at least one split")

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
    """One split of ``source``: from the package, ``data_dir``/``$FINMATH_DATA_DIR``, the Hub
    (``revision`` given, or no upstream files declared) or the authors' files (the default).

    The dataset carries its provenance (:func:`dataset_provenance`)."""
    if split not in source.splits:
        raise DatasetError(
            f"{source.benchmark}: -T split={split!r} is not one of {', '.join(source.splits)}"
        )
    path: Path | None = source.packaged.get(split)
    folder = path.parent if path is not None else None
    if path is None:
        check_revision_or_folder(source.benchmark, revision, data_dir)
    if path is None and (local := resolve_data_dir(data_dir)) is not None:
        path, folder = find_local_file(local, source.local_subdir, source.files[split]), local
    if path is not None and folder is not None:
        origin, provenance = str(path), local_provenance(folder, [path])
        upstream_path = source.upstream_files.get(split)
        if source.upstream is not None and upstream_path and split not in source.packaged:
            [name] = provenance["files"]
            provenance = verify_local(source.upstream, provenance, {name: upstream_path})
    elif revision or source.upstream is None or split not in source.upstream_files:
        if source.hub_id is None:
            raise DatasetError(f"{source.benchmark}: -T revision={revision}: it has no Hub copy")
        rev = revision or source.hub_revision
        origin = f"hf://{source.hub_id}@{rev or 'main'}/{split}"
        dataset, records = hub_split_dataset(
            source.hub_id,
            record_to_sample,
            split=split,
            source=origin,
            name=f"{source.benchmark}-{split}",
            revision=rev,
            id_field=source.id_field,
            answers=source.answers.get(split),
            local_file=source.files[split],
        )
        return attach_provenance(dataset, hub_provenance(source.hub_id, rev, split, records))
    else:
        upstream, upstream_path = source.upstream, source.upstream_files[split]
        path = upstream.fetch_one(upstream_path)
        origin = f"{upstream.label}:{upstream_path}"
        provenance = upstream.provenance([upstream_path])
    dataset = json_file_dataset(
        path,
        record_to_sample,
        source=origin,
        name=f"{source.benchmark}-{split}",
        id_field=source.id_field,
        answers=source.answers.get(split),
    )
    return attach_provenance(dataset, provenance)
