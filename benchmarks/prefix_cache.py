"""Prompt prefixes a provider's cache can serve, per task, length, placement and order.

    python benchmarks/prefix_cache.py [--release R] [--subset S] [--lengths 32000,...]
        [--placements default,p1,...] [--text] [--others]
    # data: $FINMATH_DATA_DIR, else ../shared/data

MathHay (default: the March-2024-to-September-2024 release, its full set of 602
questions, the paper's placements, lengths 32K/64K/128K): for each length and
placement, the prompt tokens (o200k, each haystack as built between the prompt's
text before and after it) and the prefix OpenAI's rule (>=1,024 tokens,
128-token increments) can serve:

- ``any order``: every earlier prompt cached, one request at a time (this count
  does not depend on the order: each distinct block is computed once);
- ``dataset`` and ``prefix``: the files' order and the task's prefix order, with
  10 requests in flight (Inspect's default) and a prefix dropped when none of the
  last 100 requests used it.

``--text`` also counts the prompts as a provider reads them (the whole prompt text
re-tokenized) for the any-order column, to show what building tokens instead of
re-reading the text changes (slower: every prompt is decoded and encoded).

``--others``: the other benchmarks' default runs (first-turn prompts rendered as
the task builds them): tokens, OpenAI's share, and Anthropic's with Inspect's
cache marks (reads and the writes it pays 1.25x for), and whether caching pays
at claude-3-5-sonnet's prices.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from finmath_tasks.cli.cost import encode, messages_prompt, render_first_turns
from finmath_tasks.cli.prices import BUILT_IN
from finmath_tasks.prefix_cache import ANTHROPIC, IN_FLIGHT, OPENAI, WINDOW, Prompt, serve
from finmath_tasks.tasks.mathhay import cost as mathhay_cost


def _m(n: int) -> str:
    return f"{n / 1e6:.1f}M"


def mathhay_rows(args: argparse.Namespace) -> list[str]:
    lines = [
        "| length | placement | prompts | prompt tokens | any order | dataset order "
        "(10 in flight) | prefix order (10 in flight) |"
        + (" any order, text re-read |" if args.text else ""),
        "|---|---|---|---|---|---|---|" + ("---|" if args.text else ""),
    ]
    totals = [0, 0, 0, 0]
    for length in args.lengths:
        for placement in args.placements:
            task_args: dict[str, Any] = {
                "release": args.release,
                "subset": args.subset,
                "length": length,
            }
            if placement != "default":
                task_args["placement"] = placement
            cells = {}
            for order in ("dataset", "prefix"):
                prompts = list(mathhay_cost.prompts(task_args, files_order=order == "dataset"))
                [free] = serve(prompts, [OPENAI]) if order == "dataset" else [None]
                [timed] = serve(prompts, [OPENAI], WINDOW, IN_FLIGHT)
                cells[order] = (free, timed, prompts)
            free, dataset, prompts = cells["dataset"]
            _, prefix, _ = cells["prefix"]
            assert free is not None
            row = (
                f"| {length // 1000}K | {placement} | {free.prompts} | {_m(free.tokens)} | "
                f"{_m(free.read)} ({free.share:.1%}) | {_m(dataset.read)} ({dataset.share:.1%}) | "
                f"{_m(prefix.read)} ({prefix.share:.1%}) |"
            )
            if args.text:
                [text] = serve(_as_text(task_args), [OPENAI])
                row += f" {_m(text.read)} of {_m(text.tokens)} ({text.share:.1%}) |"
            lines.append(row)
            for k, v in enumerate((free.tokens, free.read, dataset.read, prefix.read)):
                totals[k] += v
    tokens, free_read, dataset_read, prefix_read = totals
    lines.append(
        f"| all | | | {_m(tokens)} | {_m(free_read)} ({free_read / tokens:.1%}) | "
        f"{_m(dataset_read)} ({dataset_read / tokens:.1%}) | "
        f"{_m(prefix_read)} ({prefix_read / tokens:.1%}) |" + (" |" if args.text else "")
    )
    return lines


def _as_text(task_args: dict[str, Any]) -> list[Prompt]:
    """The prompts as the solver writes them, re-tokenized whole (dataset order)."""
    from finmath_tasks.tasks.mathhay.dataset import load_data
    from finmath_tasks.tasks.mathhay.task import (
        in_files_order,
        mathhay,
        prompt_for,
        sample_layout,
        token_pool,
    )

    task = in_files_order(mathhay(**task_args))
    meta = task.metadata or {}
    data = load_data(None, str(meta["release"]), str(meta["subset"]), list(meta["task_types"]))
    pool = token_pool(data)
    out = []
    for sample in task.dataset:
        question, segments, _, _ = sample_layout(
            data, pool, dict(sample.metadata or {}), int(meta["reserve"])
        )
        out.append(Prompt(encode(prompt_for(question, pool.decode(segments)))))
    return out


def other_rows() -> list[str]:
    from finmath_tasks.tasks.finqa.task import finqa
    from finmath_tasks.tasks.knowledgefmath.task import knowledgefmath
    from finmath_tasks.tasks.sara.task import sara
    from finmath_tasks.tasks.tatqa.task import tatqa

    price = BUILT_IN["claude-3-5-sonnet"]
    lines = [
        "| task | prompts | prompt tokens | OpenAI serves | Anthropic reads (Inspect's "
        "default marks) | Anthropic writes | Anthropic cost with / without caching: "
        "Inspect's default | as the task asks |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def ratio(served: Any) -> float:
        plain = served.tokens * price.input
        cached = (
            (served.tokens - served.read) * price.input
            + served.read * price.cache_read
            + served.written * (ANTHROPIC.write_factor - 1) * price.input
        )
        return cached / plain

    for name, build in (
        ("sara", sara),
        ("sara (all_statutes)", lambda: sara(retrieval="all_statutes")),
        ("finqa (rag_cot)", finqa),
        ("knowledgefmath (cot)", knowledgefmath),
        ("tatqa (cot)", tatqa),
    ):
        task = build()
        turns = render_first_turns(task)
        prompts = [messages_prompt(m) for m in turns]
        asked = [messages_prompt(m, task.config.cache_prompt is not False) for m in turns]
        openai, anthropic = serve(prompts, [OPENAI, ANTHROPIC], WINDOW, IN_FLIGHT)
        [own] = serve(asked, [ANTHROPIC], WINDOW, IN_FLIGHT)
        lines.append(
            f"| {name} | {openai.prompts} | {anthropic.tokens:,} | {openai.read:,} "
            f"({openai.share:.1%}) | {anthropic.read:,} ({anthropic.share:.1%}) | "
            f"{anthropic.written:,} | {ratio(anthropic):.2f} | {ratio(own):.2f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", default="March-2024-to-September-2024")
    parser.add_argument("--subset", default="full")
    parser.add_argument("--lengths", default="32000,64000,128000")
    parser.add_argument("--placements", default="default")
    parser.add_argument("--text", action="store_true")
    parser.add_argument("--others", action="store_true")
    args = parser.parse_args()
    args.lengths = [int(x) for x in args.lengths.split(",")]
    args.placements = args.placements.split(",")
    if not os.environ.get("FINMATH_DATA_DIR"):
        os.environ["FINMATH_DATA_DIR"] = str(Path(__file__).resolve().parents[2] / "shared/data")
    start = time.perf_counter()
    print(f"MathHay {args.release} ({args.subset}), OpenAI's rule:")
    print("\n".join(mathhay_rows(args)))
    if args.others:
        print("\nOther benchmarks' default runs (10 in flight, window 100):")
        print("\n".join(other_rows()))
    print(f"\n({time.perf_counter() - start:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
