"""Fresh variants of FinanceMath questions: new values in, the gold ``solution()`` run again.

A question's variables are the numeric literals of its gold ``solution()`` written in
the question or a table, in a form the text uses: the literal itself ("0.0075"), a
percent for a fraction ("20%" for ``0.20``), a scale word ("1.2 million" for
``1200000``), with or without thousands separators and currency signs. Every
written occurrence of a variable gets the new value, written as the original was
(precision, separators; the sign, a whole number and the order of magnitude kept).
The gold is the question's program with the new literals, run in the sandbox; a
draw whose program fails, whose answer is not finite, changes sign or moves by more
than a factor of 10, or that breaks a rule of
:mod:`finmath_tasks.tasks.knowledgefmath.variant_rules` (the program traced in the
sandbox: signs, branches; the written numbers' order, totals, range; a gold that
moves) is redrawn (:data:`finmath_tasks.variants.TRIES` draws); when every draw is
rejected, again holding one more value at a time (:func:`narrowed_plans`).

Held (:func:`plan`): a literal value used twice in the program, unless the document
writes it once (:func:`_read_together`), or a written number that two literals read
(its roles cannot be told apart). Left out, with the reason: a question whose program
writes no literal the text writes; a variable written in two forms other than a percent
and its fraction in one part (:func:`_one_quantity`); a number of the document that
equals a varied number combined with another (a total, a difference, a change), which
would contradict the new values; a question whose every draw is rejected.

Literals that are conventions (0, 1, 100, 12, 252, 360, 365, 10000) and four-digit
years are never varied; nor are literals the text does not write in digits
("three years" for ``3``).
"""

from __future__ import annotations

import ast
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.dataset import Sample

from finmath_tasks.sandbox.batch import Runner, in_sandbox
from finmath_tasks.scorers.comparisons import GOLD_WRITTEN_KEY, GoldNumber
from finmath_tasks.tasks.knowledgefmath.dataset import load_dataset
from finmath_tasks.tasks.knowledgefmath.programs import ENTRY_POINT
from finmath_tasks.tasks.knowledgefmath.variant_places import (
    Literal,
    Place,
    Sum,
    Variable,
    _near,
    _sums,
    together_keys,
)
from finmath_tasks.tasks.knowledgefmath.variant_rules import violation
from finmath_tasks.tasks.knowledgefmath.variant_tables import markdown_tables
from finmath_tasks.variant_rules import instrument_python, read_trace
from finmath_tasks.variants import (
    TRIES,
    VARIANT_KEY,
    Instantiation,
    accept_gold,
    close,
    derived_from,
    draw_written,
    factor_of,
    find_numbers,
    format_like,
    gold_like,
    is_year,
    narrowed,
    question_rng,
    replace_spans,
    significant_digits,
    table_too_large,
)

CONVENTIONS = frozenset({0.0, 1.0, 100.0, 12.0, 252.0, 360.0, 365.0, 10000.0})
"""Literal values never varied: units and day-count or period conventions."""

STANDARD_CONSTANTS = frozenset({1.28, 1.282, 1.645, 1.65, 1.96, 2.33, 2.326, 2.575, 2.576, 2.58})
"""Standard normal quantiles a program may write although the text gives a confidence level."""

RULES = "3"
"""The version of the rules that make a variant (the data fingerprint is derived from it):
2 writes each gold at the original's precision (before: the program's float as it came,
``0.5025000000000001``), so variants of 1 are other data; 3 keeps the tables' totals over
runs, three-number relations and short ratios (:mod:`.variant_tables`: a draw breaking
one is redrawn, a value holding it held), so some questions get other documents."""

GOLD_TIMEOUT = 10.0
"""Seconds a gold program may run (the scoring path allows gold programs as long)."""


@dataclass
class Plan:
    variables: list[Variable] = field(default_factory=list)
    reason: str | None = None
    """Why the question is left out (None: it has variables)."""
    held: list[str] = field(default_factory=list)
    """Written values held at their original value, each with the reason."""
    shares: list[tuple[list[int], int, float]] = field(default_factory=list)
    """Varied shares that add up to the whole: the last of each group is the rest."""
    sums: list[Sum] = field(default_factory=list)
    """Written numbers that are a sum or difference of varied ones: recomputed."""


def _exponents(tree: ast.AST) -> set[int]:
    """The ids of the constant nodes written as an exponent (``x ** 3``) or as an argument
    of ``range()``: a count of periods that the document's structure (one row per year)
    fixes, never varied."""
    found: set[int] = set()
    for node in ast.walk(tree):
        operands: list[ast.AST] = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            operands = [node.right]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            operands = list(node.args) if node.func.id == "range" else []
        for operand in operands:
            if isinstance(operand, ast.UnaryOp):
                operand = operand.operand
            if isinstance(operand, ast.Constant):
                found.add(id(operand))
    return found


def literals(program: str) -> list[Literal]:
    """The program's numeric literals (booleans excluded; exponents and ``range()``
    arguments too, see :func:`_exponents`), in source order."""
    found = []
    tree = ast.parse(program)
    structural = _exponents(tree)
    for node in ast.walk(tree):
        if id(node) in structural:
            continue
        if (
            isinstance(node, ast.Constant)
            and not isinstance(node.value, bool)
            and isinstance(node.value, int | float)
            and node.end_lineno == node.lineno
        ):
            found.append(
                Literal(
                    node.lineno,
                    node.col_offset,
                    int(node.end_col_offset or 0),
                    float(node.value),
                    isinstance(node.value, int),
                )
            )
    return sorted(found, key=lambda lit: (lit.line, lit.start))


def _shares(variables: Sequence[Variable]) -> list[tuple[list[int], int, float]]:
    """Varied percents (or fractions) that add up to the whole (a portfolio's weights):
    each group as (the indices drawn, the index computed as the rest, the whole)."""
    groups: list[tuple[list[int], int, float]] = []
    taken: set[int] = set()
    for factor, whole in ((0.01, 100.0), (1.0, 1.0)):
        indices = [
            i
            for i, v in enumerate(variables)
            if v.factor == factor and (factor != 1.0 or abs(v.written.value) < 1)
        ]
        for size in range(min(len(indices), 6), 1, -1):
            for combo in itertools.combinations(indices, size):
                if taken & set(combo):
                    continue
                if close(sum(abs(variables[i].written.value) for i in combo), whole):
                    groups.append((list(combo[:-1]), combo[-1], whole))
                    taken |= set(combo)
    return groups


def link_one_plus(found: Sequence[Literal], variables: Sequence[Variable]) -> None:
    """Attach to each varied rate ``r`` (below 1) the literals the program writes as
    ``1 + r`` or ``1 - r`` by hand (``1.06`` beside ``0.06``): they follow its new value."""
    varied = {v.literal for v in variables}
    for lit in found:
        value = abs(lit.value)
        if lit in varied or value in CONVENTIONS:
            continue
        for variable in variables:
            r = abs(variable.literal.value)
            if r >= 1:
                continue
            if close(value, 1 + r) or close(value, 1 - r):
                variable.linked.append((lit, 1 if value > 1 else -1))
                break


def _computed_outside(
    found: Sequence[Literal], variables: Sequence[Variable], places: Sequence[Place]
) -> str | None:
    """Why the program holds a number worked out by hand from the text, which the new
    values would not follow (None: it holds none): a literal of three or more
    significant digits that the text does not write (a midpoint, a discount factor, a
    yield solved by hand), standard normal quantiles, basis points (``0.0234`` for "234
    basis points") and ``1 + r`` for a varied rate (:func:`link_one_plus`) excepted."""
    known = {v.literal for v in variables} | {lit for v in variables for lit, _ in v.linked}
    known |= {lit for v in variables for lit in v.same}
    written = {abs(p.written.value) for p in places}
    for lit in found:
        value = abs(lit.value)
        if lit in known or value in CONVENTIONS or value in written:
            continue
        if significant_digits(value) >= 3 and value not in STANDARD_CONSTANTS:
            if any(close(value * 10000, w) for w in written):
                continue
            return (
                f"the program holds {value:g}, which the text does not write (worked out "
                "by hand, it would not follow the new values)"
            )
    return None


def _read_together(
    value: float, found: Sequence[tuple[Place, float]], parts: Sequence[str]
) -> bool:
    """Do the program's several literals of ``value`` all read one written number? Yes
    when the document writes it once (its digits appear nowhere else, not even glued to a
    word: "EUR90" and "90 days" are two numbers), and it has two significant digits or
    more (or is 10 or more): a one-digit value may be a constant of the formula too (the 2
    of ``1 / 2``)."""
    if len(found) != 1:
        return False
    digits = re.compile(rf"(?<![\d.,]){re.escape(found[0][0].written.text)}(?![\d]|[.,]\d)")
    if sum(len(digits.findall(text)) for text in parts) != 1:
        return False
    return abs(value) >= 10 or significant_digits(value) >= 2


def _one_quantity(found: Sequence[tuple[Place, float]]) -> bool:
    """Is a literal written in two forms one quantity, every form following its new value?
    Yes when the forms are a percent and its fraction ("40%" and "0.40") written in the
    same part (the question, or one table)."""
    factors = {f for _, f in found}
    return factors <= {1.0, 0.01} and all(p.part == found[0][0].part for p, _ in found)


def plan(
    question: str, tables: Sequence[str], program: str, hold: frozenset[float] = frozenset()
) -> Plan:
    """The question's variables, or the reason it is left out.

    A written value whose role is ambiguous on the program's side (its value is used
    by several literals, or a written number is read by two literals) is held at its
    original value (``Plan.held`` says why), as are the literal values in ``hold``
    (:func:`narrowed_plans`); the question is left out when nothing else varies, or
    first when a table is larger than any real one
    (:func:`finmath_tasks.variants.table_too_large`: its relations are searched on every
    draw)."""
    for text in tables:
        for rows in markdown_tables(text):
            too_large = table_too_large(rows)
            if too_large is not None:
                return Plan(reason=too_large)
    parts = [question, *tables]
    places = [
        Place(i - 1, w)
        for i, text in enumerate(parts)
        for w in find_numbers(text)
        if not is_year(w)
    ]
    by_value: dict[float, list[Literal]] = {}
    for lit in literals(program):
        if abs(lit.value) in CONVENTIONS:
            continue
        by_value.setdefault(abs(lit.value), []).append(lit)
    held: list[str] = []
    located: dict[float, list[tuple[Place, float]]] = {}
    readers: dict[tuple[int, int], list[float]] = {}
    for value, lits in by_value.items():
        matches = [(p, factor_of(value, p.written)) for p in places]
        found = [(p, f) for p, f in matches if f is not None]
        if not found:
            continue
        for p, _ in found:
            readers.setdefault((p.part, p.written.start), []).append(value)
        if value in hold:
            held.append(f"{value:g}: held so that the other values' draws keep the rules")
            continue
        if len(lits) > 1 and not _read_together(value, found, parts):
            held.append(f"{value:g}: used by {len(lits)} literals of the program")
            continue
        forms = {(f, abs(p.written.value)) for p, f in found}
        if len(forms) > 1 and not _one_quantity(found):
            texts = ", ".join(repr(p.written.text) for p, _ in found)
            return Plan(
                reason=f"the literal {value:g} is written in different forms ({texts}): "
                "its roles cannot be told apart"
            )
        # the coarsest form first: the value is drawn at its precision, which every
        # other form writes exactly
        located[value] = sorted(found, key=lambda pf: -(10.0 ** -pf[0].written.decimals) * pf[1])
    variables: list[Variable] = []
    for value, found in located.items():
        shared = sorted(
            {v for p, _ in found for v in readers[(p.part, p.written.start)] if v != value}
        )
        if shared:
            held.append(f"{value:g}: its written number is also read as {shared[0]:g}")
            continue
        lits = by_value[value]
        places_of = [p for p, _ in found]
        variables.append(Variable(lits[0], places_of, found[0][1], same=lits[1:]))
    if not variables:
        if held:
            return Plan(reason="every written literal is ambiguous (" + "; ".join(held) + ")")
        return Plan(reason="no literal of the program is written in the question or its tables")
    link_one_plus(literals(program), variables)
    outside = _computed_outside(literals(program), variables, places)
    if outside is not None:
        return Plan(reason=outside)
    variables.sort(key=lambda v: (v.literal.line, v.literal.start))
    claimed = {(p.part, p.written.start) for v in variables for p in v.places}
    keys = together_keys(parts)
    sums = _sums(
        variables,
        [p for p in places if (p.part, p.written.start) not in claimed],
        by_value,
        keys,
    )
    claimed |= {(t.place.part, t.place.written.start) for t in sums}
    # (a recomputed total is not a source: its parts' relation is the one it keeps)
    others = [p for p in places if (p.part, p.written.start) not in claimed]
    for variable in variables:  # a relation in the same sentence, row or column only
        near = [p for p in others if any(_near(p, q, keys) for q in variable.places)]
        pool = [p.written.value for p in near]
        pool += [v.written.value for v in variables if v is not variable]
        derived = derived_from([variable.written.value], pool, [p.written for p in near])
        if derived is not None:
            written, formula = derived
            return Plan(
                reason=f"the number {written.text!r}, written beside a varied number, equals "
                f"{formula} (it would contradict the new values)"
            )
    return Plan(variables, held=held, shares=_shares(variables), sums=sums)


def narrowed_plans(question: str, tables: Sequence[str], program: str, full: Plan) -> list[Plan]:
    """The plans that hold one more of ``full``'s variables each (in the program's order),
    for a question whose every draw of ``full`` breaks a rule: a value that cannot move
    without breaking one (9% between 8% and a two-digit 10%), or one whose recomputed
    neighbours do, stays as written and the others vary."""
    found = []
    for variable in full.variables:
        held = frozenset({abs(variable.literal.value)})
        narrower = plan(question, tables, program, hold=held)
        if narrower.reason is None and narrower.variables:
            found.append(narrower)
    return found


def _literal_text(variable: Variable, written: float) -> str:
    """The new literal as Python source (its sign stays outside it, a unary minus)."""
    value = abs(written) * variable.factor
    places = variable.draw_decimals - round(math.log10(variable.factor))
    value = round(value, max(places, 0))
    if variable.literal.integer and value == int(value):
        return str(int(value))
    return repr(float(value))


def rewrite_program(program: str, variables: Sequence[Variable], new: Sequence[float]) -> str:
    """``program`` with each variable's literal (and its ``1 + r`` literals) replaced by its
    new value."""
    lines = program.split("\n")
    edits: dict[int, list[tuple[int, int, str]]] = {}
    for variable, value in zip(variables, new, strict=True):
        lit = variable.literal
        text = _literal_text(variable, value)
        for same in [lit, *variable.same]:
            edits.setdefault(same.line - 1, []).append((same.start, same.end, text))
        for other, sign in variable.linked:  # 1 + r written by hand follows r
            linked = repr(round(1 + sign * float(text), 12))
            edits.setdefault(other.line - 1, []).append((other.start, other.end, linked))
    for index, spans in edits.items():
        raw = lines[index].encode("utf-8")
        for start, end, text in sorted(spans, reverse=True):
            raw = raw[:start] + text.encode("utf-8") + raw[end:]
        lines[index] = raw.decode("utf-8")
    return "\n".join(lines)


def rewrite_parts(
    parts: Sequence[str],
    variables: Sequence[Variable],
    new: Sequence[float],
    sums: Sequence[Sum] = (),
) -> list[str]:
    """The question and tables with every written occurrence of each variable replaced."""
    spans: dict[int, list[tuple[int, int, str]]] = {}
    for variable, value in zip(variables, new, strict=True):
        for place in variable.places:
            text = format_like(variable.written_at(place, value), place.written)
            spans.setdefault(place.part + 1, []).append(
                (place.written.start, place.written.end, text)
            )
    for total in sums:
        place = total.place
        text = format_like(total.value(new, variables), place.written)
        spans.setdefault(place.part + 1, []).append((place.written.start, place.written.end, text))
    return [replace_spans(text, spans.get(i, [])) for i, text in enumerate(parts)]


@dataclass
class Draft:
    """One question's draws so far."""

    sample: Sample
    plan: Plan
    original: float = 0.0
    rng: Any = None
    tries: int = 0
    candidate: tuple[list[float], str] | None = None
    rejections: list[str] = field(default_factory=list)
    trace: str | None = None
    """The original program's trace signature."""
    narrower: list[Plan] = field(default_factory=list)
    """Plans holding one more value each (:func:`narrowed_plans`), drawn in turn."""
    first: str = ""
    """The last rejection of the full plan."""


def _traced(program: str) -> str:
    """The program instrumented to print its trace (unchanged when it cannot be parsed)."""
    try:
        return instrument_python(program, ENTRY_POINT)
    except (SyntaxError, ValueError, RecursionError):
        return program


def _parts(metadata: dict[str, Any]) -> list[str]:
    return [metadata["question"], *(metadata.get("tables") or [])]


def _rules(draft: Draft, trace: str | None, gold: GoldNumber) -> str | None:
    """Why the draft's candidate breaks a rule of :mod:`.variant_rules` (None: none)."""
    assert draft.candidate is not None
    metadata = draft.sample.metadata or {}
    before = _parts(metadata)
    after = rewrite_parts(before, draft.plan.variables, draft.candidate[0], draft.plan.sums)
    published = float(metadata["ground_truth"])
    return violation(before, after, (draft.trace, trace), published, gold)


def _candidate(draft: Draft) -> tuple[list[float], str] | None:
    """The next draw: new written values (None where one cannot change) and the program."""
    metadata = draft.sample.metadata or {}
    new = []
    for variable in draft.plan.variables:
        value = draw_written(
            variable.written.value, variable.draw_decimals, draft.rng, spread=narrowed(draft.tries)
        )
        new.append(variable.written.value if value is None else value)
    variables = draft.plan.variables
    for drawn, rest, whole in draft.plan.shares:  # weights still add up to the whole
        left = round(whole - sum(abs(new[i]) for i in drawn), variables[rest].draw_decimals)
        if left > 0:
            new[rest] = left
        else:
            for i in [*drawn, rest]:
                new[i] = variables[i].written.value
    if all(n == v.written.value for n, v in zip(new, draft.plan.variables, strict=True)):
        return None
    return new, rewrite_program(metadata["gold_program"], draft.plan.variables, new)


def _written_gold(draft: Draft, value: float) -> GoldNumber:
    """The variant's gold: the program's ``value`` written at the precision of the
    original's target (:func:`finmath_tasks.variants.gold_like`)."""
    return GoldNumber(gold_like(value, str(draft.sample.target), draft.original))


def _variant_sample(
    draft: Draft, seed: int, new: list[float], gold: GoldNumber, value: float
) -> Sample:
    sample = draft.sample
    metadata = dict(sample.metadata or {})
    parts = [metadata["question"], *(metadata.get("tables") or [])]
    rewritten = rewrite_parts(parts, draft.plan.variables, new, draft.plan.sums)
    program = rewrite_program(metadata["gold_program"], draft.plan.variables, new)
    metadata.update(
        question=rewritten[0],
        tables=rewritten[1:],
        gold_program=program,
        ground_truth=float(gold),
    )
    # the gold as written (its trailing zeros too: "0.50" asks two decimals), in the
    # target and where the scorers look for it
    metadata[GOLD_WRITTEN_KEY] = str(gold.written)
    metadata[VARIANT_KEY] = {
        "seed": seed,
        "replaced": [
            {
                "from": place.written.text,
                "to": format_like(variable.written_at(place, value), place.written),
            }
            for variable, value in zip(draft.plan.variables, new, strict=True)
            for place in variable.places
        ]
        + [
            {
                "from": total.place.written.text,
                "to": format_like(total.value(new, draft.plan.variables), total.place.written),
                "recomputed": True,
            }
            for total in draft.plan.sums
        ],
        "original_ground_truth": (sample.metadata or {}).get("ground_truth"),
        "original_program_value": draft.original,
        "program_value": value,
        "held": list(draft.plan.held),
        "draws": draft.tries,
    }
    return Sample(id=sample.id, input=rewritten[0], target=str(gold.written), metadata=metadata)


def instantiate(samples: Sequence[Sample], seed: int) -> Instantiation:
    """Each sample's fresh variant under ``seed`` (its program run in the sandbox), or the
    reason it has none."""

    async def work(run: Runner) -> Instantiation:
        return await _instantiate(samples, seed, run)

    return in_sandbox(work, entry=ENTRY_POINT, timeout=GOLD_TIMEOUT)


async def _rounds(
    pending: list[Draft],
    seed: int,
    run: Runner,
    accepted: dict[str, Sample],
    left_out: dict[str, str],
) -> list[Draft]:
    """Up to :data:`TRIES` draws of each pending draft (its narrower plans in turn, when it
    has them); the drafts whose every draw was rejected."""
    for _ in range(TRIES):
        batch = []
        for draft in pending:
            if draft.narrower:
                draft.plan = draft.narrower[draft.tries % len(draft.narrower)]
            draft.tries += 1
            draft.candidate = _candidate(draft)
            if draft.candidate is not None:
                batch.append(draft)
            elif draft.narrower:
                draft.rejections.append("no variable can change at its written precision")
            else:
                left_out[str(draft.sample.id)] = "no variable can change at its written precision"
        results = await run([_traced(d.candidate[1]) for d in batch if d.candidate])
        pending = [d for d in pending if d.narrower and d.candidate is None]
        for draft, result in zip(batch, results, strict=True):
            assert draft.candidate is not None
            why = (
                f"the program fails: {result.error}"
                if not result.ok
                else accept_gold(draft.original, result.value)
            )
            gold = None
            value = float(result.value) if result.value is not None else math.nan
            if why is None and result.value is not None:
                gold = _written_gold(draft, value)
                why = accept_gold(draft.original, float(gold))
            if why is None and gold is not None:
                # the rules (the gold moves among them) see the gold as the scorers will
                why = _rules(draft, read_trace(result.stdout), gold)
            if why is None and gold is not None:
                accepted[str(draft.sample.id)] = _variant_sample(
                    draft, seed, draft.candidate[0], gold, value
                )
            else:
                draft.rejections.append(str(why))
                pending.append(draft)
        if not pending:
            break
    return pending


async def _instantiate(samples: Sequence[Sample], seed: int, run: Runner) -> Instantiation:
    drafts: list[Draft] = []
    left_out: dict[str, str] = {}
    originals: dict[str, float | None] = {}
    for sample in samples:
        metadata = sample.metadata or {}
        program = str(metadata.get("gold_program") or "")
        if not program.strip() or metadata.get("ground_truth") is None:
            left_out[str(sample.id)] = "no gold program or answer"
            continue
        try:
            p = plan(metadata["question"], metadata.get("tables") or [], program)
        except (ValueError, SyntaxError, ArithmeticError) as e:
            # one record that breaks the rules never ends the instantiation: it is left out
            p = Plan(reason=f"could not be planned: {e!r}")
        drafts.append(Draft(sample, p, rng=question_rng(seed, str(sample.id))))
    first = await run([str((d.sample.metadata or {})["gold_program"]) for d in drafts])
    pending = []
    for draft, result in zip(drafts, first, strict=True):
        sid = str(draft.sample.id)
        value = result.value if result.ok else None
        originals[sid] = value
        if value is None or not math.isfinite(value):
            left_out[sid] = f"the gold program fails on the original values: {result.error}"
        elif draft.plan.reason:
            left_out[sid] = draft.plan.reason
        else:
            draft.original = value
            pending.append(draft)
    traced = await run([_traced(str((d.sample.metadata or {})["gold_program"])) for d in pending])
    for draft, result in zip(pending, traced, strict=True):
        draft.trace = read_trace(result.stdout) if result.ok else None
    accepted: dict[str, Sample] = {}
    pending = await _rounds(pending, seed, run, accepted, left_out)
    # every draw rejected: again, holding one more value at a time (each draw takes the
    # next narrower plan), before the question is left out
    for draft in pending:
        metadata = draft.sample.metadata or {}
        parts = _parts(metadata)
        draft.narrower = narrowed_plans(parts[0], parts[1:], metadata["gold_program"], draft.plan)
        draft.first = draft.rejections[-1]
        draft.tries = 0
    narrowable = [d for d in pending if d.narrower]
    still = await _rounds(narrowable, seed, run, accepted, left_out)
    for draft in [d for d in pending if not d.narrower] + still:
        left_out[str(draft.sample.id)] = (
            f"every one of {TRIES} draws was rejected (last: {draft.first})"
            + (f"; held one value at a time: {TRIES} more" if draft.narrower else "")
        )
    ordered = [accepted[str(s.id)] for s in samples if str(s.id) in accepted]
    return Instantiation(seed, ordered, left_out, originals, rules=RULES)


DEFAULT_SPLIT = "validation"
"""The split ``finmath variants`` reads by default."""


def describe(metadata: dict[str, Any]) -> tuple[str, str]:
    """A question as ``finmath variants --show`` prints it: (its text, its gold and program)."""
    gold = metadata.get(GOLD_WRITTEN_KEY) or repr(metadata["ground_truth"])
    return _text(metadata), f"gold {gold}\n{metadata['gold_program']}"


def _text(metadata: dict[str, Any]) -> str:
    return "\n\n".join([metadata["question"], *metadata.get("tables", [])])


__all__ = ["DEFAULT_SPLIT", "RULES", "describe", "instantiate", "load_dataset", "plan"]
