"""Relations of the originals that fresh variants break, by the independent audit
(:mod:`finmath_tasks.variant_audit`), on the real files.

Usage: FINMATH_DATA_DIR=../shared/data python benchmarks/variant_relations.py
       [--only tatqa:dev,finqa:test] [--seeds 1-5] [--list]

For each benchmark split and seed: the split's questions, the variants made and their
coverage, the relations found in the originals of those variants (real and chance, each
counted once per variant), and how many variants break at least one real relation and
at least one chance-level one (``--list`` prints each broken real relation). The gate is
the real column: a chance-level equality (a row equal to two others by chance) is
reported for information only.
"""

from __future__ import annotations

import argparse
import logging
import os
import time

from finmath_tasks.variant_audit import audit_split

DEFAULT = "tatqa:dev,tatqa:test,finqa:test,finqa:dev,finqa:train"


def _seeds(text: str) -> list[int]:
    if "-" in text:
        low, high = text.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(s) for s in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=DEFAULT, help=f"benchmark:split,... ({DEFAULT})")
    parser.add_argument("--seeds", default="1-5", help="1-5 or 1,3")
    parser.add_argument("--list", action="store_true", help="print each broken real relation")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # a local copy's provenance warning, once per load
    data_dir = os.environ.get("FINMATH_DATA_DIR")
    header = (
        f"{'benchmark':<14} {'split':<6} {'seed':>4} {'questions':>9} {'variants':>8} "
        f"{'coverage':>8} {'rel real':>8} {'rel chance':>10} {'break real':>10} "
        f"{'break chance':>12} {'split s':>7}"
    )
    print(header)
    for item in args.only.split(","):
        benchmark, split = item.split(":")
        started = time.monotonic()
        rows = audit_split(benchmark, split, _seeds(args.seeds), data_dir)
        seconds = f"{time.monotonic() - started:.0f}"  # every seed of the split
        for row in rows:
            print(
                f"{benchmark:<14} {split:<6} {row.seed:>4} {row.questions:>9} {row.variants:>8} "
                f"{row.coverage:>8.1%} {row.relations_real:>8} {row.relations_chance:>10} "
                f"{len(row.broken_real):>10} {len(row.broken_chance):>12} {seconds:>7}",
                flush=True,
            )
            seconds = ""
            if args.list:
                for sid, broken in row.broken_real.items():
                    for relation in broken:
                        print(f"    {sid}: {relation}")
                for sid, why in row.shape.items():
                    print(f"    {sid}: not compared: {why}")


if __name__ == "__main__":
    main()
