"""A grid holds its log folder while it runs: a second ``finmath grid`` on the same folder is
refused in one line, so no work is done twice.

The lock is held on the log folder itself (``flock`` on a descriptor opened on the
directory), for as long as the grid runs; the system releases it when the process ends,
however it ends (a SIGKILL leaves no stale lock). A file in the folder could be deleted or
swapped while the grid runs, letting a second grid in; the directory cannot be deleted while
it holds anything, so deleting, replacing or linking away any file in it changes nothing.

- ``finmath grid`` (the whole grid in one process) holds the folder alone: a second grid,
  or any worker, is refused while it runs.
- ``finmath grid --plan P --worker I --of N`` shares the folder with the other workers of
  the plan (each runs its own shard) but holds its index alone: a second worker ``I`` is
  refused, and so is a whole grid while any worker runs. The index is an open-file-description
  lock on one byte of the same directory (Linux; elsewhere, a flock on the index's own file,
  checked to be still the file at that name).

Who holds the folder is written for the next grid's refusal into a hidden file,
``.finmath-grid.lock`` (``.finmath-grid.worker-I-of-N.lock`` for a worker): opened without
following a link (``O_NOFOLLOW``) and checked to be a regular file, so nothing is ever written
through a link it did not make; a link, a pipe or a device there is refused in one line. When
the grid ends, it checks that the folder's path still names the folder it held (a folder moved
away and replaced while it ran); if not, :meth:`Hold.problem` says so, and the grid fails.

An ``s3://`` (or other remote) log folder cannot be locked this way (object storage has no
locks): nothing stops a second grid there; :func:`hold_log_dir` gives the line that says
so (the grid prints it before its summary line), and the grid runs. Run one grid (or one worker per index) per remote folder.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import stat
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

LOCK_FILE = ".finmath-grid.lock"
_OFD_SETLK = getattr(fcntl, "F_OFD_SETLK", None)
_OFD_GETLK = getattr(fcntl, "F_OFD_GETLK", None)
_FLOCK = "hhqqi4x"
"""``struct flock`` (l_type, l_whence, l_start, l_len, l_pid), padded as Linux lays it out."""
_ATTEMPTS = 20


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


def worker_lock_file(index: int, count: int) -> str:
    """The file naming who runs worker ``index`` of ``count``."""
    return f".finmath-grid.worker-{index}-of-{count}.lock"


def _holder() -> str:
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    return f"pid {os.getpid()} on {socket.gethostname()}, since {started}"


def _try(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def _entry(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _not_a_lock(log_dir: str, name: str, mode: int) -> LogDirBusy:
    return LogDirBusy(
        f"--log-dir {log_dir}: {name} there is {_kind(mode)}, not a lock file a grid made; "
        "nothing was written through it: remove it, then rerun"
    )


def _open_lock(log_dir: str, dir_fd: int, name: str) -> int:
    """The lock file ``name`` of the folder, opened (created) for writing without following a
    link and checked to be a regular file; anything else there is refused in one line."""
    found = _entry(dir_fd, name)
    if found is not None and not stat.S_ISREG(found.st_mode):
        raise _not_a_lock(log_dir, name, found.st_mode)  # not even opened: a device is not touched
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        fd = os.open(name, flags, 0o644, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP:  # a link put there since
            raise _not_a_lock(log_dir, name, stat.S_IFLNK) from e
        raise LogDirBusy(
            f"--log-dir {log_dir}: cannot write {name} there ({e.strerror or type(e).__name__})"
        ) from e
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _not_a_lock(log_dir, name, mode)
    return fd


def _read(dir_fd: int, name: str) -> str:
    """Who holds the lock, as the holder wrote it (a regular file only, never a link)."""
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return os.read(fd, 4096).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    finally:
        os.close(fd)


def _write(fd: int, text: str) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{text}\n".encode(), 0)


def _byte(index: int, count: int) -> int:
    """The byte of the folder's lock range that stands for worker ``index`` of ``count``."""
    return count * (count - 1) // 2 + index


def _range_lock(fd: int, command: int, kind: int, start: int) -> int:
    """An open-file-description lock call on one byte; the lock type the kernel answers."""
    answer = fcntl.fcntl(fd, command, struct.pack(_FLOCK, kind, os.SEEK_SET, start, 1, 0))
    return int(struct.unpack(_FLOCK, answer)[0])


def _claim_index(dir_fd: int, index: int, count: int) -> bool:
    """Whether this process alone now holds worker ``index`` of ``count`` on the folder: a read
    lock on its byte of the directory, kept only when no other descriptor holds that byte (two
    claiming at once both give up: never both run)."""
    assert _OFD_SETLK is not None and _OFD_GETLK is not None
    start = _byte(index, count)
    _range_lock(dir_fd, _OFD_SETLK, fcntl.F_RDLCK, start)
    if _range_lock(dir_fd, _OFD_GETLK, fcntl.F_WRLCK, start) == fcntl.F_UNLCK:
        return True
    _range_lock(dir_fd, _OFD_SETLK, fcntl.F_UNLCK, start)
    return False


@dataclass
class Hold:
    """A log folder held by this process while a grid runs."""

    log_dir: str
    note: str = ""
    """A line to print first ("" for a local folder, which is locked; for a remote one,
    :func:`remote_note`)."""
    _folder: Path | None = None
    _dir_fd: int | None = None
    _files: list[tuple[str, int]] = field(default_factory=list)
    """Lock files this process flocks (where the lock is on the file): re-checked at the end."""

    def problem(self) -> str:
        """Why the hold may not have kept a second grid out, checked when the grid ends: its
        folder's path names another folder now (moved away and replaced), or a lock file it
        relies on was deleted or replaced. "" when the hold held."""
        if self._folder is None or self._dir_fd is None:
            return ""
        try:
            moved = not _same(os.stat(self._folder), os.fstat(self._dir_fd))
        except OSError:
            moved = True
        if moved:
            return (
                f"--log-dir {self.log_dir}: the folder was moved or removed while this grid "
                "ran, so a second grid could have started on the new one; check both "
                "folders' logs"
            )
        for name, fd in self._files:
            found = _entry(self._dir_fd, name)
            if found is None or not _same(found, os.fstat(fd)):
                return (
                    f"--log-dir {self.log_dir}: {name} was deleted or replaced while this "
                    "worker ran, so a second worker of its index could have started; check "
                    "the folder's logs"
                )
        return ""


def _open_folder(log_dir: str, folder: Path) -> int:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise LogDirBusy(
            f"--log-dir {log_dir}: cannot hold the folder for this grid "
            f"({e.strerror or type(e).__name__})"
        ) from e
    try:
        if _same(os.stat(folder), os.fstat(fd)):
            return fd
    except OSError:
        pass
    os.close(fd)  # swapped between the two calls: the caller tries again
    return -1


def _lock_folder(log_dir: str, folder: Path, mode: int) -> int:
    """A descriptor on the folder holding ``mode`` (flock), the path checked to still name it."""
    for _ in range(_ATTEMPTS):
        fd = _open_folder(log_dir, folder)
        if fd < 0:
            continue
        try:
            taken = _try(fd, mode)
        except OSError as e:  # e.g. a file system without locks on folders
            os.close(fd)
            raise LogDirBusy(
                f"--log-dir {log_dir}: this file system cannot lock the folder "
                f"({e.strerror or type(e).__name__}); give a local folder"
            ) from e
        if not taken:
            busy = _busy(log_dir, fd)
            os.close(fd)
            raise busy
        try:
            if _same(os.stat(folder), os.fstat(fd)):
                return fd
        except OSError:
            pass
        os.close(fd)  # replaced while we took it: the lock is on a folder no longer there
    raise LogDirBusy(f"--log-dir {log_dir}: the folder keeps being replaced; cannot hold it")


def _busy(log_dir: str, fd: int) -> LogDirBusy:
    """Who holds the folder: a whole grid (an exclusive lock), or workers (shared)."""
    if _try(fd, fcntl.LOCK_SH):  # only shared holders: the workers of a plan
        fcntl.flock(fd, fcntl.LOCK_UN)
        held = "workers of a grid plan are running on it"
    else:
        who = _read(fd, LOCK_FILE)
        held = "another finmath grid is running on it" + (f" ({who})" if who else "")
    return LogDirBusy(
        f"--log-dir {log_dir}: {held}; wait until it ends (then rerun this command: it "
        "resumes what is left), or give another folder"
    )


def _hold_index(hold: Hold, dir_fd: int, index: int, count: int) -> int:
    """Hold worker ``index`` of ``count`` and write who holds it; the lock file's descriptor."""
    name = worker_lock_file(index, count)

    def refused() -> LogDirBusy:
        who = _read(dir_fd, name)
        return LogDirBusy(
            f"--log-dir {hold.log_dir}: worker {index} of {count} is already running on "
            f"it{f' ({who})' if who else ''}; wait until it ends, or run another index"
        )

    if _OFD_SETLK is not None and not _claim_index(dir_fd, index, count):
        raise refused()
    for _ in range(_ATTEMPTS):
        own = _open_lock(hold.log_dir, dir_fd, name)
        if not _try(own, fcntl.LOCK_EX):
            os.close(own)
            raise refused()
        found = _entry(dir_fd, name)
        if found is not None and _same(found, os.fstat(own)):
            if _OFD_SETLK is None:  # the file's own lock is the index's: re-checked at the end
                hold._files.append((name, own))
            _write(own, f"finmath grid worker {index} of {count}, {_holder()}")
            return own
        os.close(own)  # deleted or replaced between open and lock: take the new one
    raise LogDirBusy(f"--log-dir {hold.log_dir}: {name} keeps being replaced; cannot hold it")


@contextmanager
def hold_log_dir(log_dir: str, worker: tuple[int, int] | None = None) -> Iterator[Hold]:
    """Hold ``log_dir`` for a grid (``worker``: this process's shard index and count) while
    the block runs; yields the :class:`Hold` (its ``note``: a line to print first; its
    ``problem()``: checked when the grid ends). Raises :class:`LogDirBusy` (one line) when
    another grid holds it, or its lock file is a link, pipe or device."""
    folder = _local(log_dir)
    if folder is None:
        yield Hold(log_dir, remote_note(log_dir))
        return
    dir_fd = _lock_folder(log_dir, folder, fcntl.LOCK_EX if worker is None else fcntl.LOCK_SH)
    descriptors = [dir_fd]
    hold = Hold(log_dir, "", folder, dir_fd)
    try:
        if worker is None:
            own = _open_lock(log_dir, dir_fd, LOCK_FILE)
            descriptors.append(own)
            _write(own, f"finmath grid, {_holder()}")
        else:
            descriptors.append(_hold_index(hold, dir_fd, *worker))
        yield hold
    finally:
        for descriptor in reversed(descriptors):
            os.close(descriptor)  # closing releases the locks
