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

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from inspect_ai.log import read_eval_log

from finmath_tasks.cli.runs import Rendered, Run, Section, identity_key, run_labels
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
    other = [str(name) for name in (provenance or {}).get(OTHER_FILES_KEY) or {}]
    shown = ", ".join(other[:3]) + (f" and {len(other) - 3} more" if len(other) > 3 else "")
    plural = "s" if len(other) != 1 else ""
    return f"other data ({len(other)} file{plural} not the authors': {shown})"


def run_data(run: Run) -> RunData:
    """The run's provenance, from its log's header (as read with the run, else read)."""
    metadata = run.metadata
    if metadata is None:
        metadata = read_eval_log(run.path, header_only=True).eval.metadata or {}
    provenance = metadata.get(PROVENANCE_KEY)
    data_args = tuple((k, run.args[k]) for k in DATA_ARGS if k in run.args)
    return RunData(
        run.name, run.task, data_args, provenance if isinstance(provenance, dict) else None
    )


def _variant(provenance: dict[str, Any]) -> dict[str, Any] | None:
    """A fresh variant's record (name, seed, the fingerprint of the data it was drawn
    from), or None for a run on the data as read."""
    found = provenance.get("variant")
    return found if isinstance(found, dict) and found.get("original_fingerprint") else None


def mismatches(entries: Sequence[RunData]) -> list[str]:
    """One line per comparison (task and data arguments) whose runs read different data.

    A fresh variant's data differ from its original's by design: a variant is compared by
    the data it was drawn from (the original run's fingerprint, which its provenance
    keeps), so an original run and its variants say nothing, and a variant drawn from other
    data than the original runs read is named; variants of one seed are compared by their
    own fingerprints too."""
    lines = _differing(entries, lambda e: (), _origin, "runs compared read different data")
    fresh = [e for e in entries if _variant(e.provenance or {}) is not None]
    lines += _differing(
        fresh,
        lambda e: (("seed", (_variant(e.provenance or {}) or {}).get("seed")),),
        lambda e: str((e.provenance or {}).get("fingerprint")),
        "fresh variants of one seed read different data",
    )
    return lines


def _origin(entry: RunData) -> str:
    provenance = entry.provenance or {}
    variant = _variant(provenance)
    if variant is not None:
        return str(variant["original_fingerprint"])
    return str(provenance.get("fingerprint"))


def _differing(
    entries: Sequence[RunData],
    extra: Callable[[RunData], tuple[tuple[str, Any], ...]],
    fingerprint: Callable[[RunData], str],
    what: str,
) -> list[str]:
    groups: dict[tuple[str, tuple[tuple[str, Any], ...]], list[RunData]] = {}
    for entry in entries:
        if entry.provenance and entry.provenance.get("fingerprint"):
            groups.setdefault((entry.task, entry.data_args + extra(entry)), []).append(entry)
    lines = []
    for (task, data_args), group in groups.items():
        prints: dict[str, list[RunData]] = {}
        for entry in group:
            prints.setdefault(fingerprint(entry), []).append(entry)
        if len(prints) < 2:
            continue
        where = " ".join(f"{k}={v}" for k, v in data_args)
        parts = [
            f"{', '.join(e.run for e in runs)} read {_read_text(runs[0], print_)} "
            f"({source_text(runs[0].provenance)}, {data_kind(runs[0].provenance)})"
            for print_, runs in prints.items()
        ]
        lines.append(f"warning: {task}{' ' + where if where else ''}: {what}: " + "; ".join(parts))
    return lines


def _read_text(entry: RunData, fingerprint: str) -> str:
    own = str((entry.provenance or {}).get("fingerprint"))
    return fingerprint if own == fingerprint else f"{own} (a variant of {fingerprint})"


def benchmark_of(task: str) -> str:
    """The benchmark folder of a registered task name (``finmath_tasks/<name>``: ``<name>``)."""
    return task.rsplit("/", 1)[-1]


def data_section(runs: Sequence[Run]) -> tuple[Section | None, list[str]]:
    """The report's "Data" section (every run's source and fingerprint) and its warnings.

    A setting's repeats (one identity, so one data fingerprint) have one row, named by
    the first repeat's log and the number of repeats."""
    entries = [run_data(run) for run in runs]
    if not entries:
        return None, []
    warnings = mismatches(entries)
    labels: dict[str, str] = {}
    for task in dict.fromkeys(r.task for r in runs):
        labels.update(run_labels([r for r in runs if r.task == task]))
    firsts: dict[str, Run] = {}
    for run in sorted(runs, key=lambda r: (r.created, r.path)):
        firsts.setdefault(identity_key(run), run)
    for run in runs:
        i, k = run.repeat
        if k > 1 and firsts[identity_key(run)] is run:
            labels[run.name] = labels[run.name].replace(f"repeat {i}/{k}", f"{k} repeats")
    kept = {r.name for r in firsts.values()}
    entries = [e for e in entries if e.run in kept]
    rows = [
        [
            labels.get(e.run, e.run),
            e.task,
            " ".join(f"{k}={v}" for k, v in e.data_args),
            source_text(e.provenance),
            str((e.provenance or {}).get("fingerprint", "")),
            upstreamness(e.provenance, benchmark_of(e.task)).text,
        ]
        for e in entries
    ]
    table = Rendered(
        "Data",
        ["run", "task", "data arguments", "source", "fingerprint", "the authors' files?"],
        rows,
        "the authors' files?: whether the files the run read are the authors' (the task "
        "compares each file with the git blob id it pins in upstream.tsv and records the "
        "verdict in the log; logs without it are compared here by file name); a run on "
        "other data meets no published cell.",
        logs={labels[e.run]: e.run for e in entries if e.run in labels},
    )
    return Section("Data", [table], notes=list(warnings)), warnings


# --- the published data: a run's files against the authors' pinned files -------------------


def upstream_blobs(benchmark: str) -> dict[str, set[str]]:
    """File name -> the git blob ids of the authors' files of that name a benchmark pins
    (its ``upstream.tsv``, package data; a name may be pinned in several folders); {} when
    it pins none. Names are the files' last path parts. Read once per benchmark (a report
    asks for every run); the caller gets its own copy."""
    return {name: set(blobs) for name, blobs in _upstream_blobs(benchmark).items()}


@functools.cache
def _upstream_blobs(benchmark: str) -> dict[str, frozenset[str]]:
    import importlib.resources

    try:
        manifest = importlib.resources.files(f"finmath_tasks.tasks.{benchmark}") / "upstream.tsv"
        text = manifest.read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        return {}
    rows = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    if not rows:
        return {}
    header = rows[0]
    blobs: dict[str, set[str]] = {}
    for row in rows[1:]:
        item = dict(zip(header, row, strict=False))
        blobs.setdefault(item["path"].rsplit("/", 1)[-1], set()).add(item["git_blob"])
    return {name: frozenset(ids) for name, ids in blobs.items()}


@dataclass(frozen=True)
class Upstreamness:
    """Whether a run read the authors' pinned files: ``equal`` True (every file the log
    names after an upstream file has its pinned blob id), False (``differing`` lists those
    that do not), or None (the log cannot tell: no provenance, a Hub copy, no file named
    after an upstream one)."""

    equal: bool | None
    text: str
    differing: tuple[str, ...] = ()


def upstreamness(provenance: dict[str, Any] | None, benchmark: str) -> Upstreamness:
    """How a run's data (its log's provenance) compare with the benchmark's pinned files."""
    if not provenance:
        return Upstreamness(None, "not recorded")
    verdict = provenance.get(AUTHORS_KEY)
    if verdict is not None:  # the task's own comparison, recorded in the log
        other = provenance.get(OTHER_FILES_KEY) or {}
        return Upstreamness(bool(verdict), data_kind(provenance), tuple(str(k) for k in other))
    source = provenance.get("source")
    if source == "github":
        # fetched files are checked against their pinned blob ids before use
        return Upstreamness(True, "the pinned upstream files (fetched and verified)")
    if source == "hub":
        return Upstreamness(None, "a Hub copy: not comparable with the upstream files' blobs")
    pinned = upstream_blobs(benchmark)
    files = provenance.get("files")
    if not pinned or not isinstance(files, dict):
        return Upstreamness(None, "no pinned upstream files to compare with")
    named = {str(k): str(v) for k, v in files.items() if str(k).rsplit("/", 1)[-1] in pinned}
    if not named:
        return Upstreamness(None, "no file named after an upstream file")
    differing = tuple(k for k, v in named.items() if v not in pinned[k.rsplit("/", 1)[-1]])
    if differing:
        shown = ", ".join(differing[:3]) + (
            f" and {len(differing) - 3} more" if len(differing) > 3 else ""
        )
        return Upstreamness(False, f"DIFFERS from the pinned upstream files: {shown}", differing)
    return Upstreamness(True, f"equal to the pinned upstream files ({len(named)} compared)")
