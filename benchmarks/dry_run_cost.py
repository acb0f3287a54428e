"""Wall time of ``finmath grid --dry-run`` over every benchmark's every grid, together.

    python benchmarks/dry_run_cost.py [--model openai/gpt-4o]   # data: $FINMATH_DATA_DIR

One fresh process (imports, declarations, datasets, tokenizer included) runs the
dry run of each named grid of each benchmark in turn, as ``finmath grid
<benchmark> --grid <name> --model M --dry-run`` would, and prints the seconds of
each and in total, then each grid's total line. The target: under 30 s, so a dry run
stays a quick check.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time

START = time.perf_counter()

from finmath_tasks.cli.declare import declarations  # noqa: E402
from finmath_tasks.cli.main import main as finmath  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="openai/gpt-4o")
    args = parser.parse_args()
    totals: list[str] = []
    timings: list[tuple[str, float]] = []
    for name, declaration in declarations().items():
        for grid in declaration.grids:
            began = time.perf_counter()
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                code = finmath(["grid", name, "--grid", grid, "--model", args.model, "--dry-run"])
            seconds = time.perf_counter() - began
            timings.append((f"{name} --grid {grid}", seconds))
            lines = buffer.getvalue().splitlines()
            total = next((x.strip() for x in lines if x.strip().startswith("total:")), "")
            failed = sum(". not counted:" in x for x in lines)
            totals.append(
                f"{name} --grid {grid} (exit {code}): {total}"
                + (f"; {failed} run(s) not counted" if failed else "")
            )
    for label, seconds in timings:
        print(f"{seconds:7.2f} s  {label}")
    print(f"{time.perf_counter() - START:7.2f} s  all, including imports (target: < 30 s)")
    print("totals (samples | calls | first-turn prompt tokens | input tokens | output | cost):")
    for line in totals:
        print(f"  {line}")


if __name__ == "__main__":
    main()
