"""This benchmark's records as the variant audit reads them
(:mod:`finmath_tasks.variant_audit`): a table grid and the texts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from finmath_tasks.variant_audit import Record, from_rows, markdown_rows


def record(metadata: Mapping[str, Any]) -> Record:
    """The question as text, each markdown table as a grid of its own (two tables written
    in one part, a blank line between them, are two grids: validation-174's yields and its
    premiums are not one column)."""
    tables = [
        rows
        for t in metadata.get("tables") or []
        for block in re.split(r"\n\s*\n", str(t))
        if (rows := markdown_rows(block))
    ]
    return from_rows(tables, [str(metadata["question"])])
