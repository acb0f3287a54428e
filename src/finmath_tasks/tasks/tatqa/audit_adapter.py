"""This benchmark's records as the variant audit reads them
(:mod:`finmath_tasks.variant_audit`): a table grid and the texts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from finmath_tasks.variant_audit import Record, from_rows


def record(metadata: Mapping[str, Any]) -> Record:
    """The question and the paragraphs as texts, the table as its grid."""
    texts = [str(metadata["question"]), *map(str, metadata.get("paragraphs") or [])]
    return from_rows([metadata.get("table") or []], texts)
