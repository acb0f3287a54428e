"""Git blob ids of files: what the authors' files are pinned by, and what a run's
provenance records of each file it read.

A file read through :func:`read_text` is hashed from the very bytes read, and the id kept
(in this process) with the file's size, modification time and inode: :func:`file_blob_id`
then returns it without reading the file again, while those are unchanged. So a
local copy is compared with the authors' files at the cost of hashing its bytes once
(``benchmarks/local_data_verification.py`` measures it), and the id recorded is that of
the bytes the task parsed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_READ: dict[str, tuple[tuple[int, int, int, int], str]] = {}
"""Path to (size, mtime_ns, inode, device) when read, and its git blob id."""


def git_blob_id(data: bytes) -> str:
    """Git's object id of a file's bytes (``git hash-object``): sha1 of ``blob <size>\\0`` + bytes."""
    digest = hashlib.sha1(f"blob {len(data)}\0".encode(), usedforsecurity=False)
    digest.update(data)
    return digest.hexdigest()


def _stamp(status: os.stat_result) -> tuple[int, int, int, int]:
    return (status.st_size, status.st_mtime_ns, status.st_ino, status.st_dev)


def read_text(path: Path) -> str:
    """The file's text (UTF-8), its git blob id kept for :func:`file_blob_id`.

    Raises ``OSError`` or ``UnicodeDecodeError`` as ``Path.read_text`` does."""
    with path.open("rb") as handle:
        before = os.fstat(handle.fileno())
        data = handle.read()
    _READ[str(path)] = (_stamp(before), git_blob_id(data))
    return data.decode("utf-8")


def file_blob_id(path: Path) -> str:
    """The file's git blob id: the one kept when :func:`read_text` read it, if the file has
    not changed since (size, modification time, inode), else hashed now."""
    kept = _READ.get(str(path))
    if kept is not None and kept[0] == _stamp(path.stat()):
        return kept[1]
    return git_blob_id(path.read_bytes())
