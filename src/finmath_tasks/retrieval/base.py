"""Common pieces of the retrieval package: hits, tokenization, the missing-extra error."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from finmath_tasks.errors import Unavailable

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric runs: "Price/Earnings (P/E)" -> price, earnings, p, e."""
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True)
class Hit:
    """One retrieved passage: its index in the indexed list, 1-based rank and score."""

    index: int
    rank: int
    score: float


class RetrievalUnavailable(Unavailable):
    """An optional retrieval dependency is not installed; the message says how to install it."""


def top_hits(scores: Any, k: int) -> list[Hit]:
    """The ``k`` best of ``scores`` (a 1-d array), best first; equal scores keep index order."""
    import numpy as np

    values = np.asarray(scores, dtype=float)
    order = np.argsort(-values, kind="stable")[: max(k, 0)]
    return [Hit(index=int(i), rank=r, score=float(values[i])) for r, i in enumerate(order, 1)]
