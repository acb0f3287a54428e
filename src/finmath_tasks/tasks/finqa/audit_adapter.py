"""This benchmark's records as the variant audit reads them
(:mod:`finmath_tasks.variant_audit`): a table grid and the texts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from finmath_tasks.variant_audit import Record, from_rows


def record(metadata: Mapping[str, Any]) -> Record:
    """The question and the text before and after the table as texts, the table as its
    grid (a negative figure is written "-29 ( 29 )": its first number is read)."""
    texts = [
        str(metadata["question"]),
        *map(str, metadata.get("pre_text") or []),
        *map(str, metadata.get("post_text") or []),
    ]
    return from_rows([metadata.get("table") or []], texts)
