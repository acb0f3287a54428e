"""FinQA's evidence for the causes of a wrong answer: its gold DSL program and retrieval.

The gold program's numeric arguments are its inputs (``const_*`` are constants, a
``table_*`` step reads a row by name); it is evaluated here by the DSL's executor
(:func:`finmath_tasks.tasks.finqa.dsl.execute`: a calculator over the arguments, no model
code), step by step so that a re-run may replace an input or round each step's value
(:mod:`finmath_tasks.scorers.causes_expression`). The document is the question, the
sentences and the table. Under ``retrieval=bm25`` a gold fact (``gold_inds``) that was not
retrieved, where the prompt's facts and the question write none of the gold inputs that
fact holds, is ``retrieval``. rag_cot's ``Program:`` line is the reply's stated program: one
that runs on numbers of the document only, while the answer is wrong, is ``method``. The
``pot`` agent's program that ran is traced against the gold program's inputs and step values
(where it parts, on the ``method`` evidence), and a literal of it accounted for by nothing
the document or the gold holds is ``misread`` (invented data).

What it cannot decide: a yes/no question (``greater``: no number to re-run); an answer no
re-run gives from a reply that states no calculation and no program (``unexplained``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from finmath_tasks.scorers.causes import RETRIEVAL, CauseInput, Finding, evidence
from finmath_tasks.scorers.causes_expression import (
    GoldExpression,
    GoldInput,
    Rounding,
    expression_findings,
    reply_findings,
)
from finmath_tasks.solvers.agents.solvers import POT_ENTRY
from finmath_tasks.tasks.finqa.dsl import (
    TABLE_OPS,
    DSLError,
    Step,
    constant_value,
    execute,
    parse_number,
    parse_program,
)
from finmath_tasks.tasks.finqa.reply import predicted_program

_REF = re.compile(r"#(\d+)")


def gold_expression(program: str, table: Sequence[Sequence[str]]) -> GoldExpression:
    """The gold program as a :class:`GoldExpression` (its numeric arguments the inputs)."""
    steps = parse_program(program)
    inputs: list[GoldInput] = []
    at: dict[tuple[int, int], int] = {}
    for s, step in enumerate(steps):
        if step.op in TABLE_OPS:
            continue
        for a, arg in enumerate(step.args):
            if arg.startswith("#") or constant_value(arg) is not None:
                continue
            value = parse_number(arg)
            if value is not None:
                at[(s, a)] = len(inputs)
                inputs.append(GoldInput(arg, value, f"step {s}: {step.text()}"))

    def run(replaced: Mapping[int, float], rounding: Rounding | None) -> tuple[float, list[float]]:
        results: list[float] = []
        for s, step in enumerate(steps):
            args = list(step.args)
            for a, arg in enumerate(args):
                k = at.get((s, a))
                if k is not None and k in replaced:
                    args[a] = repr(float(replaced[k]))
                elif (ref := _REF.fullmatch(arg)) is not None:
                    args[a] = repr(results[int(ref.group(1))])
            one = execute([Step(step.op, (args[0], args[1]))], table)
            if not one.ok or not one.steps or isinstance(one.steps[0], str):
                raise ValueError(one.error or "not a number")
            value = float(one.steps[0])
            last = s == len(steps) - 1
            results.append(rounding(value) if rounding is not None and not last else value)
        return results[-1], results

    return GoldExpression(inputs, run, program)


def document_of(metadata: Mapping[str, Any]) -> str:
    """The question, the sentences and the table's cells."""
    cells = [" ; ".join(str(c) for c in row) for row in metadata.get("table") or []]
    return "\n".join(
        [
            str(metadata.get("question") or ""),
            *map(str, metadata.get("pre_text") or []),
            *map(str, metadata.get("post_text") or []),
            *cells,
        ]
    )


def _numbers(text: str) -> list[Any]:
    from finmath_tasks.variants import find_numbers, is_year

    return [w for w in find_numbers(text) if not is_year(w)]


def stated_program_numbers(output: str, table: Sequence[Sequence[str]]) -> list[float] | None:
    """The numeric arguments of the reply's ``Program:`` line where it runs (else None)."""
    program = predicted_program(output)
    if program is None or not execute(program, table).ok:
        return None
    try:
        steps = parse_program(program)
    except DSLError:
        return None
    return [
        v
        for step in steps
        if step.op not in TABLE_OPS
        for arg in step.args
        if not arg.startswith("#")
        and constant_value(arg) is None
        and (v := parse_number(arg)) is not None
    ]


def _shown(value: float, numbers: Sequence[Any]) -> bool:
    v = abs(value)
    return any(
        abs(v - x) <= 1e-9 * max(v, 1.0)
        for w in numbers
        for x in (abs(w.value), abs(w.value) / 100, abs(w.value) * w.scale)
    )


def retrieval_finding(metadata: Mapping[str, Any], gold: GoldExpression) -> Finding | None:
    """``retrieval``: a gold fact bm25 left out, holding a gold input the prompt writes nowhere."""
    from finmath_tasks.tasks.finqa.retrieval import facts_for

    record = metadata.get("retrieval")
    if not isinstance(record, Mapping) or record.get("strategy") != "bm25":
        return None
    retrieved = [str(k) for k in record.get("retrieved") or []]
    missing = [str(k) for k in record.get("gold") or [] if str(k) not in retrieved]
    if not missing:
        return None
    shown = _numbers(
        "\n".join([str(metadata.get("question") or ""), *facts_for(metadata, retrieved)])
    )
    facts = dict(zip(missing, facts_for(metadata, missing), strict=False))
    unseen = [
        x.text
        for x in gold.inputs
        if not _shown(x.value, shown)
        and any(_shown(x.value, _numbers(text)) for text in facts.values())
    ]
    if not unseen:
        return None
    return Finding(
        RETRIEVAL,
        evidence(
            f"the gold reads {', '.join(unseen)} from facts retrieval left out of the prompt "
            f"({', '.join(missing)})",
            missing=missing,
            inputs=unseen,
            retrieved=retrieved,
            recall=record.get("recall"),
        ),
    )


async def finqa_causes(data: CauseInput) -> Sequence[Finding]:
    """The gold program's findings for a wrong numeric answer of one sample."""
    metadata = data.metadata
    table = metadata.get("table") or []
    program = str(metadata.get("program") or "")
    if not program or isinstance(metadata.get("exe_ans"), str):
        return []  # a yes/no question: no number to re-run
    gold = gold_expression(program, table)
    stated = stated_program_numbers(data.output, table) if data.program is None else None
    numbers = _numbers(document_of(metadata))
    # its constants are const_* apart from its inputs: every numeric argument may be misread
    findings = expression_findings(
        data, gold, numbers, stated_program=stated, conventions=frozenset()
    )
    findings = await reply_findings(data, gold, numbers, findings, POT_ENTRY, frozenset())
    found = retrieval_finding(metadata, gold)
    return [*findings, *([found] if found is not None else [])]


PAPER_CATEGORIES = {
    "arithmetic": "arithmetic error",
    "precision": "arithmetic error",
    "method": "logical error",
    "misread": "logical error",
    "unit": "logical error",
    "partial": "logical error",
    "over_budget": "context too long",
    "retrieval": "retrieval error",
    "gold_suspect": "annotation error",
}
"""Our causes onto the error categories of Mavi et al.'s FinQA error analysis (its Table 7:
arithmetic, logical, annotation and retrieval errors; its SARA table adds "context too
long"), which the report's causes table names. A misread input, a wrong unit and another
quantity than the one asked are reasoning over the right facts gone wrong: the paper's
"logical" errors; the other causes are not among its categories."""
