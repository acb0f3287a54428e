"""Where each run's data came from, for ``finmath report``: a table of every run's data
source and fingerprint, and a warning for runs of one comparison that read different data.

Every task records its data's provenance in its eval metadata (key
:data:`finmath_tasks.loading.PROVENANCE_KEY`): the source (a local folder, the authors'
repository and commit, or a Hub id and revision), the files read with their git blob ids,
and a fingerprint of those contents. Runs of one comparison are runs of one task with the
same data arguments (:data:`DATA_ARGS`: the split, subset, release and so on); their
fingerprints should agree, wherever each run read its files from. Each run's data is also
said to be the authors' or other data (:mod:`finmath_tasks.verification`): a local copy
whose files are not the authors' has its own fingerprint, another data identity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from inspect_ai.log import read_eval_log

from finmath_tasks.cli.runs import Rendered, Run, Section
from finmath_tasks.loading import PROVENANCE_KEY
from finmath_tasks.verification import AUTHORS_KEY, OTHER_FILES_KEY

DATA_ARGS = ("split", "subset", "release", "kind", "task_type")
"""Task arguments that choose which data a run reads: runs that differ in them are not
expected to read the same files."""


@dataclass(frozen=True)
class RunData:
    run: str
    task: str
    data_args: tuple[tuple[str, Any], ...]
    provenance: dict[str, Any] | None


def source_text(provenance: dict[str, Any] | None) -> str:
    """One line: where the data came from (``github owner/repo@abc1234``, ``local /path``,
    ``hub id@revision``), or that the log does not say."""
    if not provenance:
        return "not recorded (a log from before provenance was recorded)"
    source = provenance.get("source")
    if source == "github":
        text = f"github {provenance.get('repository')}@{str(provenance.get('commit'))[:7]}"
        return text + (f" (mirror {provenance['mirror']})" if provenance.get("mirror") else "")
    if source == "hub":
        return f"hub {provenance.get('hub_id')}@{provenance.get('revision') or 'main'}"
    return f"{source} {provenance.get('location', '')}".strip()


def data_kind(provenance: dict[str, Any] | None) -> str:
    """Whether the run read the authors' files (compared with their pinned blob ids when the
    task read a local folder, checked when it downloaded them), other data, or neither is
    known (a Hub copy, a log from before the comparison)."""
    verdict = (provenance or {}).get(AUTHORS_KEY)
    if verdict is None:
        return "not compared"
    if verdict:
        return "the authors' data"
    other = (provenance or {}).get(OTHER_FILES_KEY) or {}
    return f"other data ({len(other)} file{'s' if len(other) != 1 else ''} not the authors')"


def run_data(run: Run) -> RunData:
    """The run's provenance, read from its log's header."""
    log = read_eval_log(run.path, header_only=True)
    provenance = (log.eval.metadata or {}).get(PROVENANCE_KEY)
    data_args = tuple((k, run.args[k]) for k in DATA_ARGS if k in run.args)
    return RunData(
        run.name, run.task, data_args, provenance if isinstance(provenance, dict) else None
    )


def mismatches(entries: Sequence[RunData]) -> list[str]:
    """One line per comparison (task and data arguments) whose runs read different data."""
    groups: dict[tuple[str, tuple[tuple[str, Any], ...]], list[RunData]] = {}
    for entry in entries:
        if entry.provenance and entry.provenance.get("fingerprint"):
            groups.setdefault((entry.task, entry.data_args), []).append(entry)
    lines = []
    for (task, data_args), group in groups.items():
        prints: dict[str, list[RunData]] = {}
        for entry in group:
            prints.setdefault(str(entry.provenance["fingerprint"]), []).append(entry)  # type: ignore[index]
        if len(prints) < 2:
            continue
        where = " ".join(f"{k}={v}" for k, v in data_args)
        parts = [
            f"{', '.join(e.run for e in runs)} read {fingerprint} ({source_text(runs[0].provenance)}"
            f", {data_kind(runs[0].provenance)})"
            for fingerprint, runs in prints.items()
        ]
        lines.append(
            f"warning: {task}{' ' + where if where else ''}: runs compared read different data: "
            + "; ".join(parts)
        )
    return lines


def data_section(runs: Sequence[Run]) -> tuple[Section | None, list[str]]:
    """The report's "Data" section (every run's source and fingerprint) and its warnings."""
    entries = [run_data(run) for run in runs]
    if not entries:
        return None, []
    warnings = mismatches(entries)
    rows = [
        [
            e.run,
            e.task,
            " ".join(f"{k}={v}" for k, v in e.data_args),
            source_text(e.provenance),
            data_kind(e.provenance),
            str((e.provenance or {}).get("fingerprint", "")),
        ]
        for e in entries
    ]
    columns = ["log", "task", "data arguments", "source", "data", "fingerprint"]
    table = Rendered("Data", columns, rows)
    return Section("Data", [table], notes=list(warnings)), warnings
