"""What FinQA's scorer and its cause check read of a reply: its last ``Program:`` and
``Final answer:`` lines (one module both import, so neither imports the other)."""

from __future__ import annotations

import re

from finmath_tasks.tasks.finqa.dsl import MAX_PROGRAM_CHARS

MAX_SCAN_CHARS = 100_000
"""A reply is read in its last this many characters."""

PROGRAM_LINE = re.compile(r"^[ \t>*#_`-]*program[ \t*_`]*:[ \t*_`]*(?P<body>.*)$", re.I | re.M)
FINAL_LINE = re.compile(
    r"^[ \t>*#_`-]*final[ \t]+answer[ \t*_`]*:[ \t*_`]*(?P<body>.*)$", re.I | re.M
)


def last_line(pattern: re.Pattern[str], output: str) -> str | None:
    """The body of the last line matching ``pattern`` (markdown emphasis and code ticks trimmed).

    A label alone on its line ("Program:" then the program below it, perhaps
    in a code fence) takes the next line with text.
    """
    text = output[-MAX_SCAN_CHARS:]
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    last = matches[-1]
    body = _trim(last.group("body"))
    if not body:
        for line in text[last.end() :].splitlines():
            if _trim(line) and not line.strip().startswith("```"):
                return _trim(line)
    return body


def _trim(text: str) -> str:
    return text.strip().strip("`*_").strip()


def predicted_program(output: str) -> str | None:
    """The reply's last ``Program:`` line (cut one past the longest program run)."""
    body = last_line(PROGRAM_LINE, output)
    return body[: MAX_PROGRAM_CHARS + 1] if body is not None else None
