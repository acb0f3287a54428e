"""A grid holds its log folder while it runs: a second ``finmath grid`` on the same folder is
refused in one line, so no work is done twice.

A local log folder gets a lock file, ``.finmath-grid.lock`` (hidden: neither Inspect nor
``finmath report`` reads it as a log), held with ``flock`` for as long as the grid runs; the
system releases it when the process ends, however it ends (a SIGKILL leaves no stale lock).

- ``finmath grid`` (the whole grid in one process) holds the folder alone: a second grid,
  or any worker, is refused while it runs.
- ``finmath grid --plan P --worker I --of N`` shares the folder with the other workers of
  the plan (each runs its own shard) but holds its index alone: a second worker ``I`` is
  refused, and so is a whole grid while any worker runs.

An ``s3://`` (or other remote) log folder cannot be locked this way (object storage has no
locks): nothing stops a second grid there; :func:`hold_log_dir` gives the line that says
so (the grid prints it before its summary line), and the grid runs. Run one grid (or one worker per index) per remote folder.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = ".finmath-grid.lock"


class LogDirBusy(Exception):
    """Another grid holds the log folder: the message is one line naming it."""


def _local(log_dir: str) -> Path | None:
    bare = log_dir.removeprefix("file://")
    return None if "://" in bare else Path(bare)


def remote_note(log_dir: str) -> str:
    """The line a grid on a remote log folder prints: it is not locked."""
    return (
        f"note: {log_dir} is object storage, which has no locks: nothing stops a "
        "second grid on it from repeating this one's work; run one grid (or one worker per "
        "index) on it at a time"
    )


def _holder() -> str:
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    return f"pid {os.getpid()} on {socket.gethostname()}, since {started}"


def _try(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _write(fd: int, text: str) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{text}\n".encode(), 0)


def _busy(log_dir: str, path: Path, fd: int) -> LogDirBusy:
    """Who holds the folder: a whole grid (an exclusive lock), or workers (shared)."""
    if _try(fd, fcntl.LOCK_SH):  # only shared holders: the workers of a plan
        fcntl.flock(fd, fcntl.LOCK_UN)
        held = "workers of a grid plan are running on it"
    else:
        who = _read(path)
        held = "another finmath grid is running on it" + (f" ({who})" if who else "")
    return LogDirBusy(
        f"--log-dir {log_dir}: {held}; wait until it ends (then rerun this command: it "
        "resumes what is left), or give another folder"
    )


@contextmanager
def hold_log_dir(log_dir: str, worker: tuple[int, int] | None = None) -> Iterator[str]:
    """Hold ``log_dir`` for a grid (``worker``: this process's shard index and count) while
    the block runs; yields a line to print first ("" for a local folder, which is locked;
    for a remote one, :func:`remote_note`). Raises :class:`LogDirBusy` (one line) when
    another grid holds it."""
    folder = _local(log_dir)
    if folder is None:
        yield remote_note(log_dir)
        return
    path = folder / LOCK_FILE
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise LogDirBusy(
            f"--log-dir {log_dir}: cannot hold the folder for this grid ({path}: "
            f"{e.strerror or type(e).__name__})"
        ) from e
    own: int | None = None
    try:
        if not _try(fd, fcntl.LOCK_EX if worker is None else fcntl.LOCK_SH):
            raise _busy(log_dir, path, fd)
        if worker is None:
            _write(fd, f"finmath grid, {_holder()}")
        else:
            index, count = worker
            mine = folder / f".finmath-grid.worker-{index}-of-{count}.lock"
            own = os.open(mine, os.O_RDWR | os.O_CREAT, 0o644)
            if not _try(own, fcntl.LOCK_EX):
                who = _read(mine)
                raise LogDirBusy(
                    f"--log-dir {log_dir}: worker {index} of {count} is already running on "
                    f"it{f' ({who})' if who else ''}; wait until it ends, or run another index"
                )
            _write(own, f"finmath grid worker {index} of {count}, {_holder()}")
        yield ""
    finally:
        for descriptor in (own, fd):
            if descriptor is not None:
                os.close(descriptor)  # closing releases the lock
