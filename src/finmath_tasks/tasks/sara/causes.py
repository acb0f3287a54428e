"""SARA's evidence for the causes of a wrong answer: the statutes the prompt held, the reply.

SARA ships no gold program: a case is its facts, a question and the label or the tax.
What the evidence decides, after the causes read from the class (``truncated``,
``no_answer``, ``over_budget``) and the reply's stated arithmetic (``arithmetic``, the
first wrong step):

``retrieval``
    The statutes the case needs were not in the prompt: ``-T retrieval=none`` or a
    selection that failed, for an entailment case (the units its question cites) and a tax
    case (its tax is computed under every section). The citing strategies put every cited
    unit in the prompt, and a cited section the statutes lack is refused at loading, so
    under them no case is a ``retrieval`` error; a unit the cited one refers to and
    ``mentioned_only`` leaves out is not counted (the case does not cite it). Read from what the retrieval recorded at solve time (the ``sara_retrieval``
    store record; none recorded: no statute reached the prompt).
``method``
    Entailment: the cited statutes were in the prompt and the reply's stated calculations
    hold, yet the verdict is the other label: the statute was applied wrongly (Mavi et
    al.'s "logical error"). Tax: the reply states calculations, all hold, and every number
    they use is the case's, the statutes', a usual constant or an earlier result, yet the
    tax differs.
``unit``
    A tax amount that a power of ten makes right (class ``scale``).

What it cannot decide: a wrong tax whose reply states no calculation, or uses a number
written in neither the case nor the statutes (``unexplained``: without the case's gold
derivation, no input can be named as misread); an entailment label that is itself wrong
(the paper's "annotation error": no check reads the label against the statutes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from finmath_tasks.scorers.causes import METHOD, RETRIEVAL, CauseInput, Finding, evidence
from finmath_tasks.scorers.causes_arithmetic import check_arithmetic
from finmath_tasks.scorers.causes_gold import is_written, written_forms

RETRIEVAL_KEY = "sara_retrieval"
"""Store key: what retrieval gave the sample (units, citations, fallback), set at solve
time by the task's retrieval step."""
RETRIEVAL_RECORD = "retrieval_record"
""":class:`CauseInput` metadata key the scorer fills: the retrieval's store record (None:
none recorded)."""
PROMPT_KEY = "prompt"
""":class:`CauseInput` metadata key the scorer fills: the case's own turn of the prompt."""


def _missing(metadata: Mapping[str, Any]) -> tuple[str, list[str]] | None:
    """(why, the cited units not in the prompt) or None (they were there)."""
    record = metadata.get(RETRIEVAL_RECORD)
    cited = [str(c) for c in metadata.get("citations") or []]
    kind = metadata.get("kind")
    if not isinstance(record, Mapping):
        if kind == "tax":
            why = "the tax is computed under the statutes (section 1 and those it draws on)"
        else:
            why = "the case's question turns on the statutes it cites"
        return f"{why}, and no statute was in the prompt", cited
    # the citing strategies retrieve every cited unit (a cited section the statutes lack
    # is refused when the data is loaded); all_statutes retrieves all of them
    return None


def _tax_inputs_written(data: CauseInput, check: Any) -> list[float] | None:
    """The numbers the reply's calculations use that no text of the prompt accounts for
    (None: no calculation stated)."""
    from finmath_tasks.variants import find_numbers

    if check.checked == 0:
        return None
    case = written_forms(find_numbers(str(data.metadata.get("text") or "")))
    statutes = written_forms(find_numbers(str(data.metadata.get(PROMPT_KEY) or "")))
    results = list(check.results)

    def accounted(value: float) -> bool:
        if any(value == r or abs(value - r) <= 1e-9 * abs(r) for r in results):
            return True
        # sums and ratios of the case's own numbers; the statutes' numbers as written
        return is_written(value, case) or any(is_written(value, [form]) for form in statutes)

    return [v for v in check.operands if not accounted(v)]


async def sara_causes(data: CauseInput) -> Sequence[Finding]:
    """The findings for a wrong answer of one SARA case (see the module)."""
    metadata = data.metadata
    missing = _missing(metadata)
    if missing is not None:
        why, units = missing
        return [
            Finding(
                RETRIEVAL,
                evidence(why, missing=units, cited=list(metadata.get("citations") or []),
                         statutes_in_prompt=False),
            )
        ]  # fmt: skip
    check = data.arithmetic or check_arithmetic(data.output)
    if check.wrong is not None:
        return []
    if metadata.get("kind") == "entailment":
        return [
            Finding(
                METHOD,
                evidence(
                    "the statutes the case cites were in the prompt and the reply's stated "
                    f"calculations ({check.checked}) hold, yet the verdict is the other label: "
                    "the statute was applied wrongly",
                    cited=list(metadata.get("citations") or []),
                    steps_checked=check.checked,
                ),
            )
        ]
    unaccounted = _tax_inputs_written(data, check)
    if unaccounted is None or unaccounted:
        return []
    return [
        Finding(
            METHOD,
            evidence(
                f"the reply's {check.checked} stated calculations hold and every number they "
                "use is the case's, the statutes', a usual constant or an earlier result, yet "
                "the tax differs: the law was applied wrongly",
                steps_checked=check.checked,
                inputs=sorted(set(check.operands))[:12],
            ),
        )
    ]


PAPER_CATEGORIES = {
    "arithmetic": "arithmetic errors",
    "method": "logical errors",
    "over_budget": "context too long",
    "retrieval": "retrieval error",
    "gold_suspect": "annotation error",
}
"""Our causes onto the error categories of Mavi et al.'s SARA analysis (their Table 6:
arithmetic, logical, context too long, retrieval; annotation errors from their FinQA
Table 7). SARA's checks find no ``gold_suspect`` (no gold derivation to audit)."""
