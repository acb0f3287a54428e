"""``finmath mathhay build``: MathHay's construction pipeline for a new time window.

finmath mathhay build --period January-2026-to-June-2026 --out /data/mathhay \\
    --model openai/gpt-4o (--documents DIR | --search tavily) [--task-types sssd,2ssd] \\
    [--stages topics,queries,documents,filter,questions,qc,haystack] [--limit-topics N]

Kept light: the pipeline is imported when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from finmath_tasks.cli.declare import Command

STAGES = "topics,queries,documents,filter,questions,qc,haystack"
TYPES = "sssd,2ssd,3ssd,ss2d,2s2d,3s2d,3s3d"


def _csv(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--period", required=True, help="the time window, one folder name")
    p.add_argument(
        "--out", required=True, type=Path, help="the build folder (main_topics.json, <period>/)"
    )
    p.add_argument("--model", help="the model of every role (an Inspect model name)")
    p.add_argument(
        "--model-role",
        action="append",
        default=[],
        metavar="ROLE=MODEL",
        help="a model for one role: generator (topics, queries, questions) or qc",
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--documents", type=Path, help="a local collection (text, Markdown, HTML, JSON lines)"
    )
    source.add_argument(
        "--search",
        choices=("tavily",),
        help="web search, top result per atomic query (TAVILY_API_KEY; TAVILY_BASE_URL)",
    )
    p.add_argument("--search-timeout", type=float, default=30.0, help="seconds per request")
    p.add_argument(
        "--search-retries", type=int, default=5, help="retries on 429, 5xx, timeouts (5)"
    )
    p.add_argument("--task-types", default=TYPES, help=f"comma-separated (default {TYPES})")
    p.add_argument("--stages", default=STAGES, help=f"comma-separated (default all: {STAGES})")
    p.add_argument("--limit-topics", type=int, help="use the first N topics only")
    p.add_argument("--limit-groups", type=int, help="first N document groups per type")
    p.add_argument("--topics", type=int, default=10, help="topics to ask for (default 10)")
    p.add_argument("--subtopics", type=int, default=9, help="subtopics per topic (default 9)")
    p.add_argument("--queries", type=int, default=2, help="queries per subtopic (default 2)")
    p.add_argument("--questions-per-group", type=int, default=2, help="default 2")
    p.add_argument("--min-numbers", type=int, default=10, help="more than N distinct numbers (10)")
    p.add_argument("--min-sentences", type=int, default=5, help="default 5")
    p.add_argument("--min-words", type=int, default=100, help="default 100")
    p.add_argument("--min-entities", type=int, default=5, help="default 5; 0 skips spaCy")
    p.add_argument("--max-document-mb", type=float, default=10.0, help="larger files are skipped")
    p.add_argument(
        "--qc",
        choices=("strict", "reference"),
        default="strict",
        help="strict (default): a missing answer fails; reference: it passes",
    )
    p.add_argument("--qc-timeout", type=float, default=10.0, help="seconds per solution")
    p.add_argument("--sandbox", default="auto", help="auto, bwrap, docker, inspect_docker, local")
    p.add_argument("--per-topic", type=int, help="cap records per topic and type (the script's 12)")
    p.add_argument("--overwrite", action="store_true", help="replace finished stages' files")
    p.add_argument("--max-samples", type=int, help="concurrent calls per stage")
    p.add_argument("--display", default="full", help="Inspect's display (full, rich, plain, none)")


def run(args: Any) -> int:
    from finmath_tasks.errors import UsageError
    from finmath_tasks.sandbox.resolve import resolve_sandbox
    from finmath_tasks.tasks.mathhay.build.filter import Thresholds
    from finmath_tasks.tasks.mathhay.build.layout import Layout
    from finmath_tasks.tasks.mathhay.build.pipeline import BuildOptions, report_markdown, run_build

    roles: dict[str, Any] = {}
    for pair in args.model_role:
        role, sep, model = pair.partition("=")
        if not sep or not role or not model:
            print(f"finmath: --model-role {pair!r} must be ROLE=MODEL", file=sys.stderr)
            return 2
        roles[role] = model
    stages = _csv(args.stages)
    try:
        options = BuildOptions(
            out=args.out,
            period=args.period,
            model=args.model,
            roles=roles,
            documents=args.documents,
            search=args.search,
            search_timeout=args.search_timeout,
            search_retries=args.search_retries,
            task_types=_csv(args.task_types),
            stages=stages,
            limit_topics=args.limit_topics,
            topics=args.topics,
            subtopics=args.subtopics,
            queries=args.queries,
            per_group=args.questions_per_group,
            limit_groups=args.limit_groups,
            thresholds=Thresholds(
                args.min_numbers, args.min_sentences, args.min_words, args.min_entities
            ),
            max_document_mb=args.max_document_mb,
            qc=args.qc,
            qc_timeout=args.qc_timeout,
            # without --model the build stops on that first (an argument error), before the
            # environment is looked at
            sandbox=resolve_sandbox(args.sandbox, "--sandbox {}".format)
            if "qc" in stages and args.model
            else None,
            per_topic=args.per_topic,
            overwrite=args.overwrite,
            max_samples=args.max_samples,
            display=args.display,
        )
        rows = run_build(options)
    except (UsageError, ValueError, RuntimeError) as e:
        print(f"finmath mathhay build: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a folder that cannot be created or written
        where = f"{e.filename}: " if e.filename else ""
        print(f"finmath mathhay build: {where}{e.strerror or e}", file=sys.stderr)
        return 2
    print(report_markdown(Layout(args.out, args.period), rows))
    return 0


COMMANDS = {
    "build": Command(
        help="build a MathHay release for a new time window (the paper's pipeline)",
        add_arguments=add_arguments,
        run=run,
    )
}
