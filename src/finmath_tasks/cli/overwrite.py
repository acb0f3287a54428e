"""No command writes over an Inspect log, nor over a file it did not write, unless told.

The checks behind ``export -o``, ``report --out`` and ``grid --plan``. Whether an existing
file is an Inspect log is decided by its content, whatever its name, through links and
``..`` (an ``.eval`` log renamed ``other.json``, a link ``link.json`` to a log): such a file
is never written over, with or without ``--overwrite``. Any other existing file is written
over only when it is the command's own earlier output (an earlier export, plan or report,
recognised by content or by the report folder's marker) or with ``--overwrite``.

Each check returns one line naming the output and what it would destroy, or "".

Only regular files are ever read to judge them. An output that is a pipe or a character device
(``-o -`` and ``/dev/stdout`` for the standard output, a named pipe, ``/dev/null``) is a
stream: written, never read nor renamed (:func:`output_kind`, :func:`write_stream`); a socket or
a block device is refused in one line. A reader that goes away (``| head``) ends the command
quietly, as a closed standard output does.
"""

from __future__ import annotations

import json
import os
import re
import stat
import struct
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

REPORT_FILES = (
    "report.md", "report.html", "comparisons.csv", "paired.csv", "gap.csv", "runs.csv",
)  # fmt: skip
"""The files ``finmath report`` writes into ``--out`` (plus its plots, ``*.png``)."""

REPORT_MARKER = ".finmath-report"
"""Written by ``finmath report`` into its ``--out`` folder: the files there are its own."""

OVERWRITE = "pass --overwrite to replace it, or give another name"

_ZIP_ENTRY = b"PK\x03\x04"
_LOG_ENTRIES = ("_journal/start.json", "header.json")
"""The first entry of an ``.eval`` log (a zip): the run's start record, or its header."""
_JSON_LOG = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:\s*"')
"""The opening of a ``.json`` log as Inspect writes it."""
_PARSED_LIMIT = 64 * 2**20
"""A JSON file up to this size is parsed whole to recognise a log written in another order."""


def _local(location: str) -> Path | None:
    """The local path of ``location`` (None for a remote one: ``s3://``)."""
    bare = location.removeprefix("file://")
    return None if "://" in bare else Path(bare)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


STDOUT = "-"
"""The output name for the standard output (``-o -``, ``--plan -``)."""


def _read_regular(path: Path, size: int) -> bytes | None:
    """Up to ``size`` bytes of ``path`` (a link is followed) if it is a regular file, else
    None: a pipe or a device is never opened to read (it could block, or never end)."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        return None
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the stat
            return None
        chunks: list[bytes] = []
        left = size
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _head(location: str, size: int) -> bytes | None:
    """The first ``size`` bytes of the file at ``location`` (local or remote; a link is
    followed), or None when there is no readable regular file there."""
    path = _local(location)
    try:
        if path is not None:
            return _read_regular(path, size)
        import fsspec

        fs, inner = fsspec.core.url_to_fs(location)
        if not fs.isfile(inner):
            return None
        with fs.open(inner, "rb") as f:
            data: bytes = f.read(size)
            return data
    except (OSError, ValueError, ImportError):
        return None


def _whole(location: str) -> bytes | None:
    path = _local(location)
    try:
        if path is not None:
            local = _read_regular(path, _PARSED_LIMIT + 1)
            return local if local is not None and len(local) <= _PARSED_LIMIT else None
        import fsspec

        with fsspec.open(location, "rb") as f:
            data: bytes = f.read(_PARSED_LIMIT + 1)
        return data if len(data) <= _PARSED_LIMIT else None
    except (OSError, ValueError, ImportError):
        return None


def is_inspect_log(location: str | Path) -> bool:
    """Whether the file at ``location`` is an Inspect log (``.eval`` or ``.json`` format,
    finished or not), judged by its content, not its name."""
    head = _head(str(location), 4096)
    if not head:
        return False
    if head.startswith(_ZIP_ENTRY) and len(head) >= 30:
        # a zip's first local entry: its name length at byte 26, its name from byte 30
        (length,) = struct.unpack("<H", head[26:28])
        name = head[30 : 30 + length].decode("utf-8", "replace")
        return name in _LOG_ENTRIES or _zip_holds_log(str(location))
    if _JSON_LOG.match(head):
        return True
    if not head.lstrip().startswith(b"{"):
        return False
    parsed = _parsed(str(location))
    return (
        isinstance(parsed, dict)
        and isinstance(parsed.get("eval"), dict)
        and "task" in parsed["eval"]
        and "status" in parsed
    )


def _zip_holds_log(location: str) -> bool:
    import zipfile

    path = _local(location)
    if path is None:
        return False
    try:
        with zipfile.ZipFile(path) as z:
            return any(name in z.namelist() for name in _LOG_ENTRIES)
    except (OSError, zipfile.BadZipFile):
        return False


def _parsed(location: str) -> Any:
    data = _whole(location)
    if data is None:
        return None
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None


def is_export(location: str | Path) -> bool:
    """Whether the file is an earlier ``finmath export``: a JSON list of records, each with
    the ``error`` every row format of ours carries (another list of data is not one)."""
    parsed = _parsed(str(location))
    return isinstance(parsed, list) and all(
        isinstance(row, dict) and "error" in row for row in parsed
    )


def is_plan(location: str | Path) -> bool:
    """Whether the file is an earlier ``finmath grid --plan`` (its version key)."""
    parsed = _parsed(str(location))
    return isinstance(parsed, dict) and "finmath_plan" in parsed


def output_problem(
    flag: str,
    location: str | Path,
    ours: Callable[[str | Path], bool],
    what: str,
    overwrite: bool = False,
) -> str:
    """Why the command should not write its output (named ``flag location``) there, or "":
    a folder, an Inspect log (never written over), or an existing file that is not the
    command's own ``what`` (unless ``overwrite``)."""
    text = str(location)
    path = _local(text)
    if path is not None and path.is_dir():
        return f"{flag} {text}: is a folder; give a file name (e.g. {path / 'out.json'})"
    if is_inspect_log(text):
        via = ""
        if path is not None and path.is_symlink():
            via = f" (a link to {_resolved(path)})"
        return (
            f"{flag} {text}: is an Inspect log{via}; writing there would destroy it: "
            "give another name"
        )
    if _head(text, 1) is None and not (path is not None and path.exists()):
        return ""  # nothing there yet
    if overwrite or ours(text):
        return ""
    return f"{flag} {text}: exists and is not {what}; {OVERWRITE}"


def report_overwrites(out: Path, logs: Iterable[Any], overwrite: bool = False) -> str:
    """Why ``finmath report LOG_DIR --out out`` would write over a log or a file it did not
    write (``logs``: the log files found, Inspect's infos or paths), or "".

    Refused: ``--out`` being one of the logs, a file the report writes being one (by
    content: a log under another name, a link to a log), ``--out`` being a folder that
    holds logs itself (the report's files would sit among the logs it reads: the report
    of a later run lists every ``.json`` file there), and, without ``overwrite``, a file
    the report writes that exists in a folder no report was written to."""
    target = _resolved(out)
    files = {_resolved(out / name) for name in REPORT_FILES}
    for info in logs:
        location = info if isinstance(info, str) else info.name
        path = _local(str(location))
        if path is None:
            continue
        log = _resolved(path)
        if log == target or log in files:
            return (
                f"--out {out}: would write over the log {path} that it reports; give another folder"
            )
        if log.parent == target:
            return (
                f"--out {out}: is a folder of the logs it reports ({path} is there); the "
                f"report's files would sit among them: give another folder (e.g. "
                f"--out {out / 'report'})"
            )
    if not out.is_dir():
        return ""
    existing = [out / name for name in REPORT_FILES if (out / name).exists()]
    existing += sorted(out.glob("*.png"))
    for path in existing:
        if is_inspect_log(path):
            return (
                f"--out {out}: {path.name} there is an Inspect log; the report would write "
                "over it: give another folder"
            )
    if existing and not overwrite and not (out / REPORT_MARKER).exists():
        return (
            f"--out {out}: holds {existing[0].name}, which no finmath report wrote; "
            "pass --overwrite to replace the report's files there, or give another folder"
        )
    return ""


def mark_report_folder(out: Path) -> None:
    """Mark ``out`` as a report's folder: a later report may replace its files."""
    (out / REPORT_MARKER).write_text(
        "finmath report writes here: report.md, report.html, *.csv, *.png\n", encoding="utf-8"
    )


def plan_overwrites(plan: str, log_dir: str, overwrite: bool = False) -> str:
    """Why ``finmath grid --plan plan`` (written) would destroy or mix with a log or write
    over a file that is not a plan, or ""."""
    path = _local(plan)
    folder = _local(log_dir)
    if (
        path is not None
        and folder is not None
        and _resolved(path).is_relative_to(_resolved(folder))
    ):
        return (
            f"--plan {plan}: is inside the log directory {log_dir}, whose .json files are "
            "read as logs (by Inspect's eval set and by finmath report): write the plan "
            "elsewhere"
        )
    if path is not None and path.is_dir():
        return f"--plan {plan}: is a folder; give a file name (e.g. {path / 'plan.json'})"
    return output_problem("--plan", plan, is_plan, "a finmath grid plan", overwrite)


def _kind(mode: int) -> str:
    return (
        "a socket"
        if stat.S_ISSOCK(mode)
        else "a block device"
        if stat.S_ISBLK(mode)
        else ("not a file")
    )


def output_kind(flag: str, location: str) -> tuple[str, str]:
    """How the output named ``flag location`` is written: ``("stdout", "")`` (``-``, or a path
    naming this process's standard output, e.g. ``/dev/stdout``: the shell has opened it
    already, whatever it is), ``("stream", "")``
    (a named pipe or a character device), ``("file", "")`` (a regular file, a folder, nothing
    yet, a remote location: the checks of :func:`output_problem` apply), or ``("", line)``
    refusing it (a socket, a block device). Nothing is opened to decide."""
    if location == STDOUT:
        return "stdout", ""
    path = _local(location)
    if path is None:
        return "file", ""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "file", ""  # nothing there (yet): written as a file, its folder checked later
    try:
        if os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno())):
            return "stdout", ""
    except (OSError, ValueError, AttributeError):  # no real standard output (a test's capture)
        pass
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return "file", ""
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return "stream", ""
    return "", (
        f"{flag} {location}: is {_kind(mode)}; give a file name, or {STDOUT} for the standard "
        "output"
    )


def write_stream(kind: str, location: str, text: str) -> None:
    """Write ``text`` to the stream output ``location`` (``kind`` from :func:`output_kind`),
    never reading it. A closed reader raises ``BrokenPipeError`` (the command line ends
    quietly); any other failure is an ``OSError``."""
    if kind == "stdout":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    fd = os.open(location, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    with os.fdopen(fd, "w", encoding="utf-8") as stream:
        stream.write(text)
