"""This benchmark's records as the variant audit reads them
(:mod:`finmath_tasks.variant_audit`): a table grid and the texts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from finmath_tasks.variant_audit import Record, from_rows, markdown_rows


def record(metadata: Mapping[str, Any]) -> Record:
    """The question as text, each markdown table as a grid of its own."""
    tables = [markdown_rows(str(t)) for t in metadata.get("tables") or []]
    return from_rows(tables, [str(metadata["question"])])
