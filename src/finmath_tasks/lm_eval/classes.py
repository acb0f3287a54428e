"""lm_eval's per-task error-class counts: for each score a task reports, a metric
``<score>_error_classes`` beside it whose value in ``results.json`` is each class's count
over the task's scored documents (``{"correct": 4, "scale": 1, "within_10pct": 1}``).

Each document's value is the class its verdict gives the score (the task's scorer's,
:mod:`finmath_tasks.scorers.error_classes`), ``correct`` for a correct answer, or
``unclassified`` for one that is not correct and carries no class (a score without classes,
such as ``execution_rate``, or a fractional value); a list when ``repeats`` gives several
verdicts, each counted. A document left out of the score (unscored, or the sandbox failed
under it) is left out of its counts, as of its mean. The counts are an lm_eval aggregation
registered by name (:data:`AGGREGATION`), so the results file records its name, and lm_eval
gives them no standard error (``N/A``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

SUFFIX = "_error_classes"
"""A score's class-count metric is named ``<score>_error_classes``."""
AGGREGATION = "finmath_error_class_counts"
CORRECT = "correct"
UNCLASSIFIED = "unclassified"


def metric_name(score: str) -> str:
    return score + SUFFIX


def class_of(verdict: Mapping[str, Any], score: str) -> str | None:
    """The class one verdict gives ``score``; None where the score has no value (unscored,
    a sandbox failure: NaN)."""
    value = (verdict.get("scores") or {}).get(score)
    if value is None or value != value:
        return None
    found = (verdict.get("error_classes") or {}).get(score)
    if isinstance(found, str):
        return found
    return CORRECT if float(value) >= 1 else UNCLASSIFIED


def document_classes(verdicts: Iterable[Mapping[str, Any]], score: str) -> list[str]:
    """The classes of one document's verdicts for ``score`` (one per repeat scored)."""
    return [c for v in verdicts if (c := class_of(v, score)) is not None]


def class_counts(items: Sequence[Any]) -> dict[str, int]:
    """The aggregation: each class's count over the documents' values (a class, or a list
    of them), correct first, then the classes by name, ``unclassified`` last."""
    counts: Counter[str] = Counter()
    for item in items:
        counts.update(str(c) for c in (item if isinstance(item, list) else [item]))
    order = sorted(counts, key=lambda c: (c != CORRECT, c == UNCLASSIFIED, c))
    return {c: counts[c] for c in order}


def register() -> None:
    """Register :func:`class_counts` with lm_eval under :data:`AGGREGATION` (once)."""
    import lm_eval.api.metrics  # noqa: F401  (fills the registry before we look in it)
    from lm_eval.api.registry import AGGREGATION_REGISTRY, register_aggregation

    if AGGREGATION not in AGGREGATION_REGISTRY:
        register_aggregation(AGGREGATION)(class_counts)
