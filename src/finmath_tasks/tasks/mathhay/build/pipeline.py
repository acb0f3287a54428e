"""``finmath mathhay build``: the stages in order, their counts, and the build report.

Each stage reads the files an earlier stage (of this build, an earlier one, or
the reference) left in the folder, and writes its own; a stage whose file
exists stops the build unless ``--overwrite`` (finished model calls are reused
even then). At the end a table of counts, calls, tokens and wall time per stage
is printed and written to ``<period>/build_report.md``.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.model import Model

from finmath_tasks.tasks.mathhay.build import documents as documents_stage
from finmath_tasks.tasks.mathhay.build import filter as filter_stage
from finmath_tasks.tasks.mathhay.build import search as search_stage
from finmath_tasks.tasks.mathhay.build.calls import GENERATOR_ROLE
from finmath_tasks.tasks.mathhay.build.haystack import PER_TOPIC, run_haystack
from finmath_tasks.tasks.mathhay.build.layout import (
    STAGES,
    TOPICS_FILE,
    BuildError,
    Layout,
    read_json,
    write_json,
)
from finmath_tasks.tasks.mathhay.build.qc import DEFAULT_TIMEOUT, QC_MODES, QC_ROLE, run_qc
from finmath_tasks.tasks.mathhay.build.queries import (
    DEFAULT_QUERIES,
    DEFAULT_SUBTOPICS,
    read_queries,
    run_queries,
)
from finmath_tasks.tasks.mathhay.build.questions import DEFAULT_PER_GROUP, run_questions
from finmath_tasks.tasks.mathhay.build.topics import DEFAULT_TOPICS, read_topics, run_topics
from finmath_tasks.tasks.mathhay.dataset import TASK_TYPES

DEFAULT_TASK_TYPES = ("sssd", "2ssd", "3ssd", "ss2d", "2s2d", "3s2d", "3s3d")


@dataclass
class BuildOptions:
    out: Path
    period: str
    model: str | Model | None = None
    roles: dict[str, str | Model] = field(default_factory=dict)
    documents: Path | None = None
    search: str | None = None
    search_timeout: float = search_stage.DEFAULT_TIMEOUT
    search_retries: int = search_stage.DEFAULT_RETRIES
    task_types: tuple[str, ...] = DEFAULT_TASK_TYPES
    stages: tuple[str, ...] = STAGES
    limit_topics: int | None = None
    topics: int = DEFAULT_TOPICS
    subtopics: int = DEFAULT_SUBTOPICS
    queries: int = DEFAULT_QUERIES
    per_group: int = DEFAULT_PER_GROUP
    limit_groups: int | None = None
    thresholds: filter_stage.Thresholds = field(default_factory=filter_stage.Thresholds)
    max_document_mb: float = documents_stage.DEFAULT_MAX_DOCUMENT_MB
    qc: str = "strict"
    qc_timeout: float = DEFAULT_TIMEOUT
    sandbox: Any = None
    per_topic: int | None = PER_TOPIC
    overwrite: bool = False
    max_samples: int | None = None
    display: str = "none"


@dataclass
class StageRow:
    stage: str
    counts: str
    dropped: str = ""
    calls: int = 0
    resumed: int = 0
    tokens: int = 0
    seconds: float = 0.0


def _reasons(counter: Counter[str] | dict[str, int]) -> str:
    return "; ".join(f"{why}: {n}" for why, n in sorted(counter.items(), key=lambda x: -x[1]))


def check_options(o: BuildOptions) -> None:
    Layout(o.out, o.period)  # checks the period name
    unknown = [s for s in o.stages if s not in STAGES]
    if unknown or not o.stages:
        raise BuildError(f"--stages {','.join(o.stages)}: choose among {','.join(STAGES)}")
    bad = [t for t in o.task_types if t not in TASK_TYPES]
    if bad or not o.task_types:
        raise BuildError(
            f"--task-types {','.join(o.task_types)}: choose among {','.join(TASK_TYPES)}"
        )
    if o.qc not in QC_MODES:
        raise BuildError(f"--qc {o.qc!r} is not one of {', '.join(QC_MODES)}")
    model_stages = {"topics", "queries", "questions", "qc"} & set(o.stages)
    if model_stages and o.model is None:
        raise BuildError(f"--model is needed for the stages {', '.join(sorted(model_stages))}")
    if o.documents is not None and o.search is not None:
        raise BuildError("--documents and --search are exclusive: choose one source of documents")
    if o.search is not None and o.search not in search_stage.SEARCHES:
        raise BuildError(f"--search {o.search!r}: choose among {', '.join(search_stage.SEARCHES)}")
    if "documents" in o.stages:
        if o.documents is None and o.search is None:
            raise BuildError(
                "the documents stage needs --documents DIR (a local collection) or --search tavily"
            )
        if o.search is not None:
            search_stage.api_key()  # a missing key stops the build before any model call
    if o.search_retries < 0 or o.search_timeout <= 0:
        raise BuildError("--search-retries must be at least 0 and --search-timeout positive")
    for name, value in (
        ("--limit-topics", o.limit_topics),
        ("--limit-groups", o.limit_groups),
        ("--topics", o.topics),
    ):
        if value is not None and value < 1:
            raise BuildError(f"{name} {value} must be at least 1")
    unknown_roles = set(o.roles) - {GENERATOR_ROLE, QC_ROLE}
    if unknown_roles:
        raise BuildError(f"--model-role {sorted(unknown_roles)}: the roles are generator and qc")


def check_paths(o: BuildOptions) -> None:
    """The folders given exist as folders, and every file a stage of this run reads from a
    stage left out of it is there: all checked before the first model call or search (a
    paid stage never runs to find a later one cannot start)."""
    if o.out.exists() and not o.out.is_dir():
        raise BuildError(f"--out {o.out}: is a file; give the folder that holds the build")
    if o.documents is not None and not o.documents.is_dir():
        what = "is not a folder" if o.documents.exists() else "no such folder"
        raise BuildError(f"--documents {o.documents}: {what} (the local document collection)")
    layout = Layout(o.out, o.period)
    needs: dict[str, tuple[str, list[Path]]] = {
        "queries": ("topics", [layout.topics]),
        "documents": ("queries", [layout.queries]),
        "filter": ("documents", [layout.collected]),
        "questions": ("filter", [layout.filtered]),
        "qc": ("questions", [layout.generated(t) for t in o.task_types]),
        "haystack": ("qc", [layout.high_quality(t) for t in o.task_types]),
    }
    for stage, (producer, paths) in needs.items():
        if stage not in o.stages or producer in o.stages:
            continue
        missing = [p for p in paths if not p.is_file()]
        # qc and haystack take the task types whose files are there: one is enough
        if missing and (stage not in ("qc", "haystack") or len(missing) == len(paths)):
            raise BuildError(
                f"--stages {','.join(o.stages)}: the {stage} stage reads {missing[0]}, which "
                f"is not there (add the {producer} stage, or build it first)"
            )
    if not o.overwrite:  # a later stage's finished file would stop the build after paid calls
        for path in finished_outputs(o, layout):
            layout.check_writable(path, overwrite=False)


def finished_outputs(o: BuildOptions, layout: Layout) -> list[Path]:
    """The files the run's stages would write that a finished build already holds."""
    types = list(o.task_types)

    def made(stage: str, read: Callable[[str], Path], t: str) -> bool:
        # qc and haystack take a type whose input is there or is made in this run
        return stage in o.stages or read(t).is_file()

    outputs: dict[str, list[Path]] = {
        "topics": [layout.topics],
        "queries": [layout.queries],
        "documents": [layout.collected],
        "filter": [layout.filtered, layout.pool],
        "questions": [layout.generated(t) for t in types],
        "qc": [layout.high_quality(t) for t in types if made("questions", layout.generated, t)],
        "haystack": [layout.haystack(t) for t in types if made("qc", layout.high_quality, t)],
    }
    return [p for stage in o.stages for p in outputs.get(stage, []) if p.exists()]


def check_folder(layout: Layout) -> None:
    """An output folder holding another period's build is refused."""
    marker = layout.state / "build.json"
    if marker.is_file():
        stamp = read_json(marker, "the build's stamp")
        if isinstance(stamp, dict) and stamp.get("period") != layout.period:
            raise BuildError(f"{layout.folder} holds a build of period {stamp.get('period')!r}")


def run_build(o: BuildOptions) -> list[StageRow]:
    check_options(o)
    check_paths(o)
    layout = Layout(o.out, o.period)
    check_folder(layout)
    layout.state.mkdir(parents=True, exist_ok=True)
    write_json(layout.state / "build.json", {"period": o.period, "topics_file": TOPICS_FILE})
    eval_args: dict[str, Any] = {
        "model": o.model,
        "roles": dict(o.roles) or None,
        "max_samples": o.max_samples,
        "display": o.display,
    }
    rows: list[StageRow] = []
    types = list(o.task_types)
    for stage in STAGES:
        if stage not in o.stages:
            continue
        start = time.monotonic()
        row = StageRow(stage, "")
        if stage == "topics":
            topics, run = run_topics(layout, n=o.topics, overwrite=o.overwrite, **eval_args)
            row.counts = f"{len(topics)} topics"
            row.calls, row.resumed, row.tokens = run.calls, run.resumed, run.tokens
        elif stage == "queries":
            topics = read_topics(layout)[: o.limit_topics]
            queries, run, dropped = run_queries(
                layout,
                topics,
                n_subtopics=o.subtopics,
                n_queries=o.queries,
                overwrite=o.overwrite,
                **eval_args,
            )
            n_sub = sum(len(s) for s in queries.values())
            n_q = sum(len(s["Queries"]) for subs in queries.values() for s in subs)
            n_a = sum(
                len(q["atomic_queries"])
                for subs in queries.values()
                for s in subs
                for q in s["Queries"]
            )
            row.counts = f"{len(queries)} topics, {n_sub} subtopics, {n_q} queries, {n_a} atomic"
            row.dropped = _reasons(dropped)
            row.calls, row.resumed, row.tokens = run.calls, run.resumed, run.tokens
        elif stage == "documents" and o.search is not None:
            queries = read_queries(layout)
            if o.limit_topics:
                queries = dict(list(queries.items())[: o.limit_topics])
            searched = search_stage.run_search(
                layout,
                queries,
                overwrite=o.overwrite,
                timeout=o.search_timeout,
                retries=o.search_retries,
            )
            row.counts = (
                f"Tavily: {searched.found} of {searched.atomic} atomic queries found one "
                f"({searched.searches} searches, {searched.resumed} reused)"
            )
        elif stage == "documents":
            assert o.documents is not None
            queries = read_queries(layout)
            if o.limit_topics:
                queries = dict(list(queries.items())[: o.limit_topics])
            found = documents_stage.run_documents(
                layout, queries, o.documents, max_mb=o.max_document_mb, overwrite=o.overwrite
            )
            assert found.collection is not None
            row.counts = (
                f"{len(found.collection.texts)} documents read; {found.found} of "
                f"{found.atomic} atomic queries found one"
            )
            row.dropped = _reasons(found.collection.skipped)
        elif stage == "filter":
            collected = read_json(layout.collected, "the collected documents")
            if not isinstance(collected, dict):
                raise BuildError(f"{layout.collected}: expected an object topic -> subtopics")
            kept = filter_stage.run_filter(layout, collected, o.thresholds, overwrite=o.overwrite)
            row.counts = f"{kept.kept} of {kept.results} results kept; pool {kept.pool}"
            row.dropped = _reasons(kept.dropped)
        elif stage == "questions":
            results, run = run_questions(
                layout,
                types,
                per_group=o.per_group,
                limit_groups=o.limit_groups,
                overwrite=o.overwrite,
                **eval_args,
            )
            row.counts = ", ".join(f"{r.task_type} {r.tasks}" for r in results)
            row.dropped = _reasons(sum((r.dropped for r in results), Counter()))
            row.calls, row.resumed, row.tokens = run.calls, run.resumed, run.tokens
        elif stage == "qc":
            qc = run_qc(
                layout,
                types,
                model=o.model,
                qc_model=o.roles.get(QC_ROLE),
                mode=o.qc,
                sandbox=o.sandbox,
                timeout=o.qc_timeout,
                overwrite=o.overwrite,
                max_samples=o.max_samples,
                display=o.display,
            )
            row.counts = ", ".join(f"{r.task_type} {r.consistent} of {r.tasks}" for r in qc)
            row.dropped = _reasons(sum((r.reasons for r in qc), Counter()))
            row.calls = sum(r.calls for r in qc)
            row.resumed = sum(r.resumed for r in qc)
            row.tokens = sum(r.tokens for r in qc)
        elif stage == "haystack":
            hs = run_haystack(layout, types, per_topic=o.per_topic, overwrite=o.overwrite)
            row.counts = ", ".join(f"{r.task_type} {r.kept}" for r in hs)
            row.dropped = _reasons(sum((r.dropped for r in hs), Counter()))
        row.seconds = time.monotonic() - start
        rows.append(row)
        write_report(layout, rows)
    return rows


def report_markdown(layout: Layout, rows: list[StageRow]) -> str:
    lines = [
        f"# MathHay build: {layout.period}",
        "",
        f"Folder: `{layout.folder}`; logs of the model calls: `{layout.log_dir()}`.",
        "",
        "| stage | counts | dropped (why) | model calls | resumed | tokens | seconds |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.stage} | {r.counts} | {r.dropped or '-'} | {r.calls} | {r.resumed} | "
            f"{r.tokens} | {r.seconds:.1f} |"
        )
    total = sum(r.seconds for r in rows)
    lines += [
        "",
        f"Wall time: {total:.1f} s; model calls: {sum(r.calls for r in rows)} "
        f"({sum(r.resumed for r in rows)} reused from an earlier run); tokens: "
        f"{sum(r.tokens for r in rows)}.",
        "",
    ]
    return "\n".join(lines)


def write_report(layout: Layout, rows: list[StageRow]) -> None:
    """The report of every stage built so far: this run's rows replace earlier runs' rows
    of the same stage (kept in ``.build/report.json``)."""
    saved = layout.state / "report.json"
    earlier: dict[str, StageRow] = {}
    if saved.is_file():
        try:
            earlier = {r["stage"]: StageRow(**r) for r in json.loads(saved.read_text("utf-8"))}
        except (ValueError, TypeError, KeyError):
            earlier = {}
    earlier.update({r.stage: r for r in rows})
    merged = [earlier[s] for s in STAGES if s in earlier]
    write_json(saved, [asdict(r) for r in merged])
    layout.report.write_text(report_markdown(layout, merged), encoding="utf-8")
