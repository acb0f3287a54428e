"""Whether a local copy of a benchmark is the authors' data.

A task that reads a local folder (``-T data_dir=`` or ``FINMATH_DATA_DIR``) compares each
file it read with the file its authors published: the git blob id pinned in the task's
``upstream.tsv`` (:class:`~finmath_tasks.loading.Upstream`), or for content the task derives
from those files (a split list, a pool of documents) the blob id of the derivation.
The blob ids are the ones the run's provenance records anyway
(:func:`~finmath_tasks.loading.local_provenance`), so the comparison reads no file twice.

The verdict is part of the provenance a task records in its log:

- ``authors_data``: true when every file read is the authors' file, byte for byte;
- ``other_files``: otherwise, each file that is not, with why (a different git blob, or a
  file the authors' release does not have);
- ``compared_with``: the repository and commit compared with.

A copy that differs still runs: it is "other data", said by a warning when the task is
built and in the log; its fingerprint (computed from the blob ids read) differs from the
authors', so ``finmath report`` treats it as another data identity. Files downloaded from
the authors' repository are checked before use, so their provenance says ``authors_data``
too; a Hub copy is not compared (the key is absent).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

logger = logging.getLogger(__name__)

AUTHORS_KEY = "authors_data"
"""Provenance key: whether every file read is the authors' (absent: not compared)."""
OTHER_FILES_KEY = "other_files"
"""Provenance key: the files read that are not the authors', each with why."""
COMPARED_KEY = "compared_with"
"""Provenance key: ``owner/repository@commit`` the files were compared with."""
NOT_PINNED = "not a file of the authors' release"
MISSING = "missing: the authors' release has it"


class Pinned(Protocol):
    """The authors' files at one commit (:class:`finmath_tasks.loading.Upstream`)."""

    @property
    def benchmark(self) -> str: ...
    @property
    def repository(self) -> str: ...
    @property
    def commit(self) -> str: ...
    @property
    def blobs(self) -> Mapping[str, str]: ...


@dataclass(frozen=True)
class Pin:
    """What a file read from a local folder should be: the authors' git blob id, and the
    file (or derivation) it is the id of, for messages."""

    blob: str
    """The authors' git blob id; "" where it cannot be known here (the file is then not
    the authors', and ``what`` says what the authors' is)."""
    what: str


def pins_for(blobs: Mapping[str, str], names: Mapping[str, str]) -> dict[str, Pin]:
    """Pins of local file names: ``names`` maps each name (as the provenance records it)
    to its path in the authors' repository, ``blobs`` is the repository's pinned ids
    (:attr:`~finmath_tasks.loading.Upstream.blobs`). A path the repository does not pin
    gives no pin (the file is then not the authors')."""
    return {name: Pin(blobs[path], path) for name, path in names.items() if path in blobs}


def differences(files: Mapping[str, str], pins: Mapping[str, Pin]) -> dict[str, str]:
    """Each file of ``files`` (name to git blob id) that is not its pinned file, with why."""
    other: dict[str, str] = {}
    for name, blob in files.items():
        pin = pins.get(name)
        if pin is None:
            other[name] = NOT_PINNED
        elif not pin.blob:
            other[name] = f"not {pin.what}"
        elif pin.blob != blob:
            other[name] = f"git blob {blob}, the authors' {pin.what} is {pin.blob}"
    return other


_WARNED: set[tuple[str, tuple[str, ...]]] = set()
"""Copies already warned about in this process (location, files that differ): a grid or a
dry run builds the task once per run."""


def compare_with_authors(
    provenance: dict[str, Any],
    pins: Mapping[str, Pin],
    *,
    benchmark: str,
    compared_with: str,
    absent: Iterable[str] = (),
) -> dict[str, Any]:
    """``provenance`` (of a local folder) with the verdict: its files compared with ``pins``;
    ``absent``: the authors' files it would read that the folder lacks.

    A copy that is not the authors' is warned about (once per process), naming its files.
    The fingerprint is left as it is: it is computed from the blob ids read, so it already
    differs from the authors' wherever a file does."""
    other = differences(provenance.get("files", {}), pins)
    other.update({name: MISSING for name in absent})
    verdict: dict[str, Any] = {**provenance, AUTHORS_KEY: not other, COMPARED_KEY: compared_with}
    if other:
        verdict[OTHER_FILES_KEY] = other
        warn_other_data(benchmark, str(provenance.get("location", "")), compared_with, other)
    return verdict


def verify_local(
    upstream: Pinned,
    provenance: dict[str, Any],
    paths: Mapping[str, str],
    derived: Mapping[str, Pin] | None = None,
    absent: Iterable[str] = (),
) -> dict[str, Any]:
    """A local folder's ``provenance`` with the verdict whether it is ``upstream``'s files:
    ``paths`` maps each file name the provenance records to its path in the repository;
    ``derived``: more pins (name to :class:`Pin`) of content derived from the files;
    ``absent``: files the task reads of the authors' release that the folder lacks."""
    return compare_with_authors(
        provenance,
        {**pins_for(upstream.blobs, paths), **(derived or {})},
        benchmark=upstream.benchmark,
        compared_with=f"{upstream.repository}@{upstream.commit}",
        absent=absent,
    )


def warn_other_data(
    benchmark: str, location: str, compared_with: str, other: Mapping[str, str]
) -> None:
    key = (location, tuple(sorted(other)))
    if key in _WARNED:
        return
    _WARNED.add(key)
    shown = list(other.items())[:5]
    more = f"; and {len(other) - len(shown)} more" if len(other) > len(shown) else ""
    logger.warning(
        "%s: other data: %s is not the authors' data (%s); files that differ: %s%s. The run "
        "goes on and its log says so (authors_data: false); its scores are not comparable "
        "with runs on the authors' files.",
        benchmark,
        location,
        compared_with,
        "; ".join(f"{name} ({why})" for name, why in shown),
        more,
    )


def combined(provenance: dict[str, Any], others: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``provenance``'s verdict joined with those of other files the run read (their files
    are merged by the caller): the authors' data only if all are."""
    verdict = provenance.get(AUTHORS_KEY)
    other: dict[str, str] = dict(provenance.get(OTHER_FILES_KEY, {}))
    for item in others:
        if AUTHORS_KEY not in item:
            continue
        verdict = bool(item[AUTHORS_KEY]) and verdict is not False
        other.update(item.get(OTHER_FILES_KEY, {}))
    result = {**provenance}
    if verdict is not None:
        result[AUTHORS_KEY] = verdict
    if other:
        result[OTHER_FILES_KEY] = other
    return result
