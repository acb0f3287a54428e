"""Answer extraction on 1 MB of adversarial text: prints the time per pattern.

Usage: python benchmarks/extraction_adversarial.py
Every pattern must take under 100 ms (extraction scans at most
MAX_SCAN_CHARS of the end, and is linear in that length). Prints the best of 5
wall-clock times and the best of 5 CPU times of the thread (the latter does
not count waiting for a core on a loaded machine).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from finmath_tasks.scorers.extraction import extract_answer, parse_reply_number

MB = 1_000_000
LIMIT_S = 0.1

PATTERNS = {
    "\\boxed{ repeated": "\\boxed{",
    "\\boxed{x1 repeated": "\\boxed{x1 ",
    "unbalanced braces": "{{{{}",
    '"answer is" markers': "the answer is ",
    '"answer is" + digits in words': "the answer is x1\n",
    '"answer": json markers': '"answer": ',
    '"answer": open json strings': '"answer": "a1',
    "Answer: lines": "Answer: \n",
    "a million digits": "1",
    "digits and commas": "1,",
    "broken thousands": "1,000,00",
    "spaces": "x" + " " * 9999,
    "newlines and quote marks": "> " + "\n" * 9998,
    "open paren and spaces": "(" + " " * 999,
    "signs and spaces": "- ",
    "currency and spaces": "$ ",
    "dots": "1.",
    "exponents": "1e",
    "hedges": "5 or 6 ",
    "equals chains": "the answer is 1 = ",
    "unicode minus and nbsp": "\u2212\u00a0",
}


def main() -> None:
    worst = 0.0
    print(f"{'pattern (1 MB)':34s} {'wall':>8s}    {'cpu':>8s}")
    for name, unit in PATTERNS.items():
        text = (unit * (MB // len(unit) + 1))[:MB]
        wall = min(_timed(extract_answer, text, time.perf_counter) for _ in range(5))
        cpu = min(_timed(extract_answer, text, time.thread_time) for _ in range(5))
        worst = max(worst, wall)
        over = "  OVER 100 ms" if wall > LIMIT_S else ""
        print(f"{name:34s} {wall * 1000:8.1f} ms {cpu * 1000:8.1f} ms{over}")
    reply = "9" * MB
    wall = _timed(parse_reply_number, reply, time.perf_counter)
    print(f"{'parse_reply_number, 1 MB digits':34s} {wall * 1000:8.1f} ms")
    print(f"worst extraction: {worst * 1000:.1f} ms wall per MB (limit {LIMIT_S * 1000:.0f} ms)")


def _timed(fn: Callable[[str], object], text: str, clock: Callable[[], float]) -> float:
    start = clock()
    fn(text)
    return clock() - start


if __name__ == "__main__":
    main()
