"""FinanceMath's evidence for the causes of a wrong answer: its gold ``solution()``.

The gold program's literals are the question's inputs; the question and its tables are the
document (:func:`finmath_tasks.scorers.causes_gold.gold_findings` re-runs the gold in the
sandbox with one input replaced or rescaled, its intermediate values and its rounding, and
audits its literals). A PoT answer's program is set against the document too (every
number it writes). What it cannot decide: a reply that states no calculation and whose
answer no re-run gives (``unexplained``); an input the reply invents (not claimed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from finmath_tasks.scorers.causes import CauseInput, Finding
from finmath_tasks.scorers.causes_gold import gold_findings
from finmath_tasks.tasks.knowledgefmath.programs import ENTRY_POINT


def document_of(metadata: Mapping[str, Any]) -> str:
    """The question and its tables, as the prompt shows them."""
    tables = metadata.get("tables") or []
    return "\n\n".join([str(metadata.get("question") or ""), *(str(t) for t in tables)])


async def knowledgefmath_causes(data: CauseInput) -> Sequence[Finding]:
    """The gold program's findings for a wrong answer of one sample."""
    metadata = data.metadata
    program = data.program or {}
    model_program = program.get("program") if data.program is not None else None
    return await gold_findings(
        data,
        str(metadata.get("gold_program") or ""),
        document_of(metadata),
        entry=ENTRY_POINT,
        model_program=str(model_program) if isinstance(model_program, str) else None,
    )


PAPER_CATEGORIES = {
    "method": "misinterpretation of required knowledge",
    "arithmetic": "errors in complex computation",
    "precision": "errors in complex computation",
    "misread": "table or question misunderstanding",
    "unit": "table or question misunderstanding",
    "partial": "table or question misunderstanding",
}
"""Our causes onto the error categories of KnowledgeFMATH's Table 6 (the report's causes
table names them); the other causes are not among its categories."""
