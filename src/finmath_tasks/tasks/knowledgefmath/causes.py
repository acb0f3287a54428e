"""FinanceMath's evidence for the causes of a wrong answer: its gold ``solution()``.

The gold program's literals are the question's inputs; the question and its tables are the
document (:func:`finmath_tasks.scorers.causes_gold.gold_findings` re-runs the gold in the
sandbox with one input replaced or rescaled, its intermediate values and its rounding, and
audits its literals). The reply's inputs (operands no earlier step produced) and a PoT
program's literals that the document, the gold and usual constants do not account for are
invented (``misread``, :mod:`finmath_tasks.scorers.causes_inputs`); a PoT program is traced
against the gold in the sandbox (where they part). Under a knowledge setting that retrieves
from the bank, a prompt whose knowledge holds none of the question's annotated terms
(``oracle_terms.json``) is ``retrieval``. What it cannot decide: a reply that states no
calculation and whose answer no re-run gives (``unexplained``); retrieval for a question
with no annotation, or under ``llm_kb`` (nothing retrieved from the bank).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from finmath_tasks.scorers.causes import RETRIEVAL, CauseInput, Finding, evidence
from finmath_tasks.scorers.causes_gold import gold_findings
from finmath_tasks.scorers.causes_inputs import input_findings
from finmath_tasks.tasks.knowledgefmath.knowledge import METADATA_KEY as KNOWLEDGE_KEY
from finmath_tasks.tasks.knowledgefmath.programs import ENTRY_POINT


def document_of(metadata: Mapping[str, Any]) -> str:
    """The question and its tables, as the prompt shows them."""
    tables = metadata.get("tables") or []
    return "\n\n".join([str(metadata.get("question") or ""), *(str(t) for t in tables)])


def retrieval_finding(metadata: Mapping[str, Any]) -> Finding | None:
    """``retrieval`` where a knowledge setting that retrieves from the bank put none of the
    terms the question needs (its oracle annotation) into the prompt."""
    record = metadata.get(KNOWLEDGE_KEY)
    if not isinstance(record, Mapping):
        return None
    needed = record.get("needed")
    found = record.get("needed_retrieved")
    if not isinstance(needed, list) or not needed or not isinstance(found, Mapping):
        return None  # no annotation for the question (or no retrieval): nothing decided
    if any(bool(found.get(term)) for term in needed):
        return None
    terms = [str(t) for t in record.get("terms") or []]
    return Finding(
        RETRIEVAL,
        evidence(
            f"the knowledge retrieved into the prompt ({len(terms)} terms) holds none of the "
            f"{len(needed)} the question needs: {', '.join(map(str, needed))}",
            needed=needed,
            retrieved=terms,
        ),
    )


async def knowledgefmath_causes(data: CauseInput) -> Sequence[Finding]:
    """The gold program's findings for a wrong answer of one sample, the inputs the reply or
    program invents, the program traced against the gold, the knowledge retrieved."""
    metadata = data.metadata
    program = data.program or {}
    model_program = program.get("program") if data.program is not None else None
    model_source = str(model_program) if isinstance(model_program, str) else None
    gold = str(metadata.get("gold_program") or "")
    document = document_of(metadata)
    findings = await gold_findings(
        data, gold, document, entry=ENTRY_POINT, model_program=model_source
    )
    findings = await input_findings(
        data, gold, document, findings, entry=ENTRY_POINT, model_program=model_source
    )
    retrieval = retrieval_finding(metadata)
    return [*findings, retrieval] if retrieval is not None else findings


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
