"""No command writes over what it reads: the checks behind ``report --out`` and
``grid --plan`` (``export -o`` has its own, :func:`finmath_tasks.export.check_not_input`).

Each returns one line naming the output and what it would destroy or mix with, or ""."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPORT_FILES = (
    "report.md", "report.html", "comparisons.csv", "paired.csv", "gap.csv", "runs.csv",
)  # fmt: skip
"""The files ``finmath report`` writes into ``--out`` (plus its plots, ``*.png``)."""


def _local(location: str) -> Path | None:
    """The local path of ``location`` (None for a remote one: ``s3://``)."""
    bare = location.removeprefix("file://")
    return None if "://" in bare else Path(bare)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


def report_overwrites(out: Path, logs: Iterable[Any]) -> str:
    """Why ``finmath report LOG_DIR --out out`` would write where it reads (``logs``: the
    log files found, Inspect's infos or paths), or "".

    Refused: ``--out`` being one of the logs, a file the report writes being one, and
    ``--out`` being a folder that holds logs itself (the report's files would sit among
    the logs it reads: the report of a later run lists every ``.json`` file there)."""
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
    return ""


def plan_overwrites(plan: str, log_dir: str) -> str:
    """Why ``finmath grid --plan plan`` (written) would destroy or mix with a log, or ""."""
    path = _local(plan)
    if path is None:
        return ""
    folder = _local(log_dir)
    if folder is not None and _resolved(path).is_relative_to(_resolved(folder)):
        return (
            f"--plan {plan}: is inside the log directory {log_dir}, whose .json files are "
            "read as logs (by Inspect's eval set and by finmath report): write the plan "
            "elsewhere"
        )
    if path.is_file() and _is_log(path):
        return f"--plan {plan}: is an Inspect log; writing the plan would destroy it"
    return ""


def _is_log(path: Path) -> bool:
    if path.suffix == ".eval":
        return True
    if path.suffix != ".json":
        return False
    from inspect_ai.log import read_eval_log

    try:
        read_eval_log(str(path), header_only=True)
    except Exception:  # not a log: a plan, a result file, anything else
        return False
    return True
