"""TAT-QA's evidence for the causes of a wrong answer: its gold derivation.

An arithmetic question carries its ``derivation``, plain arithmetic over the figures of
the table and the paragraphs (:mod:`finmath_tasks.tasks.tatqa.derivation`): its numbers are
the gold's inputs, evaluated here (no model code) in the reading that reproduces the
published answer (a number alone in parentheses negative or not, a fraction given in
percent), with one input replaced by another figure of the document or rescaled, each
operation's result read or rounded (:mod:`finmath_tasks.scorers.causes_expression`). The
document is the question, the paragraphs and the table's cells. An answer written with the
question's scale word (``subset=all``: "1,496.5 million") is compared with the re-runs in
that scale too. The ``pot`` agent's program that ran is traced against the derivation's
inputs and operation values (where it parts, on the ``method`` evidence), and a literal of
it accounted for by nothing the document or the derivation holds is ``misread`` (invented
data).

What it cannot decide: a span, multi-span or count question (no derivation to re-run:
``unexplained`` unless its class decides); a derivation that is not plain arithmetic;
TAT-QA's prompt holds the whole document, so no answer is a ``retrieval`` error.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from finmath_tasks.scorers.causes import CauseInput, Finding
from finmath_tasks.scorers.causes_expression import (
    FACTORS,
    GoldExpression,
    GoldInput,
    Rounding,
    expression_findings,
    reply_findings,
)
from finmath_tasks.solvers.agents.solvers import POT_ENTRY
from finmath_tasks.tasks.tatqa.derivation import (
    SCALE_WORDS,
    DerivationError,
    Node,
    evaluate,
    leaves,
    parse,
    reading_of,
)


def _postorder(node: Node) -> Iterator[Node]:
    """The nodes in the order :func:`evaluate` records their values."""
    for child in node.children:
        yield from _postorder(child)
    yield node


def gold_expression(derivation: str, answer: float | None) -> GoldExpression:
    """The derivation as a :class:`GoldExpression` (its written numbers the inputs), in the
    reading that reproduces ``answer`` (else as written)."""
    node = parse(derivation)
    reading = reading_of(node, answer) if answer is not None else None
    negative = reading.negative_alone if reading is not None else False
    factor = reading.factor if reading is not None else 1.0
    found = leaves(node)
    inputs = [
        GoldInput(
            leaf.text + ("%" if leaf.factor == 0.01 else ""),
            (-1 if leaf.alone and negative else 1) * leaf.value * leaf.factor,
            f"characters {leaf.start}-{leaf.end} of {derivation[:80]!r}",
        )
        for leaf in found
    ]
    operations = [n.op not in ("num", "neg") for n in _postorder(node)]

    def run(replaced: Mapping[int, float], rounding: Rounding | None) -> tuple[float, list[float]]:
        values = {
            (found[i].start, found[i].end): abs(float(v)) / found[i].factor
            for i, v in replaced.items()
        }
        value, trace = evaluate(node, negative, values, rounding)
        # the intermediate values in the document's units; the value as the answer is given
        steps = [v for v, op in zip(trace, operations, strict=True) if op][:-1]
        return value * factor, [*steps, value * factor]

    return GoldExpression(inputs, run, derivation)


def document_of(metadata: Mapping[str, Any]) -> str:
    """The question, the paragraphs and the table's cells."""
    cells = [" ; ".join(str(c) for c in row) for row in metadata.get("table") or []]
    return "\n".join(
        [
            str(metadata.get("question") or ""),
            *map(str, metadata.get("paragraphs") or []),
            *cells,
        ]
    )


def _answer(metadata: Mapping[str, Any]) -> float | None:
    try:
        return float(metadata.get("answer"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


async def tatqa_causes(data: CauseInput) -> Sequence[Finding]:
    """The gold derivation's findings for a wrong numeric answer of one sample."""
    from finmath_tasks.variants import find_numbers, is_year

    metadata = data.metadata
    derivation = str(metadata.get("derivation") or "")
    if metadata.get("answer_type") != "arithmetic" or not derivation.strip():
        return []
    try:
        gold = gold_expression(derivation, _answer(metadata))
    except DerivationError:
        return []
    scale = SCALE_WORDS.get(str(metadata.get("scale") or ""))
    factors = (*FACTORS, scale) if scale else FACTORS
    numbers = [w for w in find_numbers(document_of(metadata)) if not is_year(w)]
    # a derivation's 100 is mostly its x100 for a percent: never replaced or rescaled
    conventions = frozenset({100.0})
    findings = expression_findings(data, gold, numbers, factors=factors, conventions=conventions)
    return await reply_findings(data, gold, numbers, findings, POT_ENTRY, conventions)
