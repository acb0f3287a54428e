"""Fresh variants of MathHay questions: new values in the relevant documents, ``solve()``
run again.

The quantities a variant changes are the numeric literals of the question's gold
``solve()`` that its relevant documents write (:mod:`.variant_places` locates them and
says which are held, and why). Each draw gives every variable a new written value (the
sign, the written precision, a whole number whole and the order of magnitude kept:
:func:`finmath_tasks.variants.draw_written`), rewrites every place the documents and the
question write it (as it was written: "$13,485" becomes "$12,907"), and runs the
rewritten ``solve()`` in the bubblewrap sandbox, traced. A draw is redrawn
(:data:`finmath_tasks.variants.TRIES` draws, the later ones moving less) unless:

- the program takes the same path: every intermediate value keeps its sign, every branch
  and ``max``/``min`` choice goes the same way (:func:`finmath_tasks.variant_rules.
  instrument_python`);
- the recomputed answer is accepted (:func:`finmath_tasks.variants.accept_gold`: finite,
  same sign, within a factor of 10);
- the numbers of the question and of each document keep their relations: within a
  sentence, numbers of one form keep their order (equal ones equal); a figure of three
  or more significant digits written in several places reads the same everywhere; a
  percentage between 0 and 100 stays there (:func:`finmath_tasks.variant_rules.
  written_violation`);
- the gold moves: the published answer does not score against the new gold under the
  official exact match nor ``tolerant`` (so reciting the published answers scores
  nothing).

The gold is written at the published answer's precision (:func:`finmath_tasks.variants.
gold_like`). The haystack of a variant is the original's (same pool order, same
irrelevant tokens, same insertion offsets) with the changed documents spliced in
(``MathHayData.fresh``; :func:`finmath_tasks.tasks.mathhay.task.sample_layout`).
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from inspect_ai.dataset import MemoryDataset, Sample

from finmath_tasks.loading import attach_provenance, dataset_provenance
from finmath_tasks.sandbox.batch import Runner, in_sandbox
from finmath_tasks.scorers.comparisons import asks_for_percent, gold_from_float
from finmath_tasks.tasks.mathhay.dataset import TASK_TYPES, MathHayData, Question, load_data
from finmath_tasks.tasks.mathhay.scoring import exact_match, tolerant_match
from finmath_tasks.tasks.mathhay.variant_places import (
    Plan,
    Variable,
    find_written,
    literals,
    plan,
)
from finmath_tasks.variant_rules import (
    Number,
    instrument_python,
    read_trace,
    trace_violation,
    written_violation,
)
from finmath_tasks.variants import (
    TRIES,
    VARIANT_KEY,
    Instantiation,
    accept_gold,
    apply_fresh,
    draw_written,
    factor_of,
    format_like,
    gold_like,
    is_fresh,
    narrowed,
    question_rng,
    replace_spans,
)

ENTRY_POINT = "solve"
RULES = "2"
"""The version of the rules that make a MathHay variant (its data fingerprint derives
from it). 2: a number written beside a quantity that is its share of another number there
in percent (or that number's share of it) holds the quantity; 1 varied it and left the
share stale (2s2d-017 of v1 verified, seed 1)."""
GOLD_TIMEOUT = 10.0
"""Seconds a gold program may run."""
DOCUMENTS_KEY = "relevant_documents"
"""Sample metadata key of the relevant documents' texts, on the samples
:func:`load_dataset` gives (``finmath variants``) and while a task instantiates its
variants; a task's samples never carry it (their haystacks are built at solve time)."""
QUESTION_KEY = "question_text"
"""Beside :data:`DOCUMENTS_KEY`: the question's text (for :func:`describe`)."""
DEFAULT_SPLIT = "verified"
"""The set ``finmath variants mathhay`` reads by default (v1's human-verified questions)."""
RELEASE = "v1"


def task_arguments(split: str, data_dir: str | None) -> dict[str, Any]:
    """The ``mathhay`` task's arguments for ``finmath variants --split``: a v1 set."""
    return {"subset": split, "data_dir": data_dir, "release": RELEASE}


def with_documents(samples: Sequence[Sample], data: MathHayData) -> list[Sample]:
    """``samples`` with their relevant documents' texts in :data:`DOCUMENTS_KEY`."""
    out = []
    for sample in samples:
        metadata = dict(sample.metadata or {})
        question = data.questions[str(metadata["question_key"])]
        metadata[DOCUMENTS_KEY] = list(question.documents)
        metadata[QUESTION_KEY] = question.question
        out.append(sample.model_copy(update={"metadata": metadata}))
    return out


def load_dataset(split: str = DEFAULT_SPLIT, data_dir: str | None = None) -> MemoryDataset:
    """A v1 set's questions, every task type, with their documents (for ``finmath
    variants``)."""
    data = load_data(data_dir, RELEASE, split, list(TASK_TYPES))
    samples = with_documents(list(data.dataset), data)
    dataset = MemoryDataset(samples, name=data.dataset.name, location=data.dataset.location)
    return attach_provenance(dataset, data.provenance)


def fresh_questions(data: MathHayData, samples: Sequence[Sample]) -> MathHayData:
    """``data`` with the variants' questions (their documents taken out of the samples'
    metadata into :attr:`MathHayData.fresh`) and the variant dataset's samples."""
    fresh: dict[str, Question] = {}
    for sample in samples:
        metadata = sample.metadata or {}
        key = str(metadata["question_key"])
        fresh[key] = replace(
            data.questions[key],
            question=str(sample.input),
            documents=tuple(metadata[DOCUMENTS_KEY]),
            solution=str(metadata["solution"]),
            answer=float(metadata["answer"]),
        )
    return replace(data, fresh=fresh)


def strip_documents(samples: Sequence[Sample]) -> list[Sample]:
    out = []
    for sample in samples:
        metadata = {
            k: v
            for k, v in (sample.metadata or {}).items()
            if k not in (DOCUMENTS_KEY, QUESTION_KEY)
        }
        out.append(sample.model_copy(update={"metadata": metadata}))
    return out


def apply_variant(
    data: MathHayData, variant: str, seed: int, subset: str
) -> tuple[MathHayData, dict[str, Any] | None]:
    """The data a task evaluates under ``-T variant=``/``-T variant_seed=`` and the summary
    for its metadata: ``data`` itself for the published questions; for a fresh variant,
    the questions instantiated under ``seed`` (:func:`finmath_tasks.variants.apply_fresh`:
    the counts in the dataset's name, the variant's provenance and rules version) with
    their documents in :attr:`MathHayData.fresh`."""
    if not is_fresh(variant, seed):
        return data, None
    base = MemoryDataset(
        with_documents(list(data.dataset), data),
        name=data.dataset.name,
        location=data.dataset.location,
    )
    attach_provenance(base, data.provenance)
    dataset, summary = apply_fresh("mathhay", base, variant, seed, subset, instantiate, RULES)
    samples = list(dataset)
    fresh = fresh_questions(data, samples)
    stripped = MemoryDataset(strip_documents(samples), name=dataset.name, location=dataset.location)
    provenance = dataset_provenance(dataset) or data.provenance
    return replace(fresh, dataset=stripped, provenance=provenance), summary


# ---- one draw --------------------------------------------------------------------------


def rewrite_program(program: str, variables: Sequence[Variable], new: Sequence[float]) -> str:
    """``program`` with each variable's literals replaced by its new value."""
    lines = program.split("\n")
    edits: dict[int, list[tuple[int, int, str]]] = {}
    for variable, value in zip(variables, new, strict=True):
        text = variable.literal_text(value)
        for lit in variable.literals:
            edits.setdefault(lit.line - 1, []).append((lit.start, lit.end, text))
    for index, spans in edits.items():
        raw = lines[index].encode("utf-8")
        for start, end, text in sorted(spans, reverse=True):
            raw = raw[:start] + text.encode("utf-8") + raw[end:]
        lines[index] = raw.decode("utf-8")
    return _rewrite_comments("\n".join(lines), variables, new)


def _rewrite_comments(program: str, variables: Sequence[Variable], new: Sequence[float]) -> str:
    """The program's comments with each variable's value rewritten where they write it
    ("# roughly 220,000 staff" beside the literal): the judge reads the gold solution, and
    a comment keeping the published number would contradict the new literal."""
    import io
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(program).readline))
    except (tokenize.TokenError, SyntaxError):
        return program
    lines = program.split("\n")
    for token in reversed([t for t in tokens if t.type == tokenize.COMMENT]):
        row, col = token.start
        spans = []
        for w in find_written(token.string):
            for variable, value in zip(variables, new, strict=True):
                factor = factor_of(variable.value, w)
                if factor is not None:
                    text = format_like(written_at(variable, factor, w.value, value), w)
                    spans.append((col + w.start, col + w.end, text))
                    break
        if spans:
            lines[row - 1] = replace_spans(lines[row - 1], spans)
    return "\n".join(lines)


def written_at(variable: Variable, place_factor: float, place_value: float, new: float) -> float:
    """The new value as a place writes it (its own form and sign)."""
    return math.copysign(abs(new) * variable.factor / place_factor, place_value)


def replacements(
    variables: Sequence[Variable], new: Sequence[float]
) -> dict[int, list[tuple[int, int, str]]]:
    """Per part (0 the question, 1.. the documents), the spans rewritten and their text."""
    spans: dict[int, list[tuple[int, int, str]]] = {}
    for variable, value in zip(variables, new, strict=True):
        for place in variable.places:
            factor = factor_of(variable.value, place.written) or variable.factor
            text = format_like(
                written_at(variable, factor, place.written.value, value), place.written
            )
            spans.setdefault(place.part, []).append((place.written.start, place.written.end, text))
    return spans


def rewrite_parts(
    parts: Sequence[str], variables: Sequence[Variable], new: Sequence[float]
) -> list[str]:
    spans = replacements(variables, new)
    return [replace_spans(text, spans.get(i, [])) for i, text in enumerate(parts)]


def written_numbers(before: Sequence[str], after: Sequence[str]) -> list[Number] | None:
    """The numbers of the question and documents, original and variant, each with its
    sentence and form (numbers of one form in one sentence keep their order). None: they
    do not align (a variant changes digits only)."""
    ends = re.compile(r"[.!?](?=\s)|\n")
    out: list[Number] = []
    for part, (old, new) in enumerate(zip(before, after, strict=True)):
        a, b = find_written(old), find_written(new)
        if len(a) != len(b):
            return None
        stops = [m.start() for m in ends.finditer(old)]
        for x, y in zip(a, b, strict=True):
            key: Hashable = (
                "sentence",
                part,
                bisect.bisect_left(stops, x.start),
                x.percent,
                x.scale,
            )
            out.append(Number(x.value, y.value, x.decimals, x.percent, (key,), x.text))
    return out


def recites(published: float, gold: float, question: str) -> bool:
    """Does the published answer still score on the new gold (exact match or tolerant)?"""
    target = gold_from_float(gold, asks_for_percent(question))
    return exact_match(target, published) or tolerant_match(target, published)[0]


@dataclass
class Draft:
    sample: Sample
    plan: Plan
    rng: Any
    original: float = 0.0
    trace: str | None = None
    tries: int = 0
    candidate: tuple[list[float], str] | None = None
    rejections: list[str] = field(default_factory=list)


def _parts(sample: Sample) -> list[str]:
    metadata = sample.metadata or {}
    return [str(sample.input), *metadata[DOCUMENTS_KEY]]


def _candidate(draft: Draft) -> tuple[list[float], str] | None:
    new = []
    for variable in draft.plan.variables:
        value = draw_written(
            variable.written.value, variable.draw_decimals, draft.rng, spread=narrowed(draft.tries)
        )
        new.append(variable.written.value if value is None else value)
    if all(n == v.written.value for n, v in zip(new, draft.plan.variables, strict=True)):
        return None
    program = str((draft.sample.metadata or {})["solution"])
    return new, rewrite_program(program, draft.plan.variables, new)


def _traced(program: str) -> str:
    try:
        return instrument_python(program, ENTRY_POINT)
    except (SyntaxError, ValueError, RecursionError):
        return program


def _rules(draft: Draft, trace: str | None, gold: float) -> str | None:
    """Why the candidate breaks a rule (None: it keeps them all)."""
    assert draft.candidate is not None
    if draft.trace is None or trace is None:
        return "the gold program's trace could not be read"
    why = trace_violation(draft.trace, trace)
    if why is not None:
        return why
    before = _parts(draft.sample)
    after = rewrite_parts(before, draft.plan.variables, draft.candidate[0])
    numbers = written_numbers(before, after)
    if numbers is None:
        return "the variant's numbers do not align with the original's"
    why = written_violation(numbers)
    if why is not None:
        return why
    published = float((draft.sample.metadata or {})["answer"])
    if asks_for_percent(after[0]) and 0 <= published <= 100 and not 0 <= gold <= 100:
        return f"the percentage asked for becomes {gold:g}, out of its range"
    if recites(published, gold, after[0]):
        return "the gold does not move (the published answer would still score)"
    return None


def _variant_sample(draft: Draft, seed: int, value: float, gold: str) -> Sample:
    assert draft.candidate is not None
    new, program = draft.candidate
    sample = draft.sample
    metadata = dict(sample.metadata or {})
    before = _parts(sample)
    after = rewrite_parts(before, draft.plan.variables, new)
    spans = replacements(draft.plan.variables, new)
    metadata.update(solution=program, answer=float(gold))
    metadata[DOCUMENTS_KEY] = after[1:]
    metadata[QUESTION_KEY] = after[0]
    metadata[VARIANT_KEY] = {
        "seed": seed,
        "replaced": [
            {
                "where": "question" if part == 0 else f"document {part}",
                "at": start,
                "from": before[part][start:end],
                "to": text,
            }
            for part in sorted(spans)
            for start, end, text in sorted(spans[part])
        ],
        "original_answer": (sample.metadata or {})["answer"],
        "original_solution": (sample.metadata or {})["solution"],
        "original_program_value": draft.original,
        "program_value": value,
        "held": list(draft.plan.held),
        "draws": draft.tries,
    }
    return Sample(id=sample.id, input=after[0], target=gold, metadata=metadata)


async def _rounds(
    pending: list[Draft], seed: int, run: Runner, accepted: dict[str, Sample]
) -> list[Draft]:
    for _ in range(TRIES):
        batch = []
        for draft in pending:
            draft.tries += 1
            draft.candidate = _candidate(draft)
            if draft.candidate is None:
                draft.rejections.append("no quantity can change at its written precision")
            else:
                batch.append(draft)
        results = await run([_traced(d.candidate[1]) for d in batch if d.candidate])
        pending = [d for d in pending if d.candidate is None]
        for draft, result in zip(batch, results, strict=True):
            value = float(result.value) if result.ok and result.value is not None else math.nan
            why = (
                f"the program fails: {result.error}"
                if not result.ok
                else accept_gold(draft.original, result.value)
            )
            gold = ""
            if why is None:
                gold = gold_like(value, str(draft.sample.target), draft.original)
                why = accept_gold(draft.original, float(gold)) or _rules(
                    draft, read_trace(result.stdout), float(gold)
                )
            if why is None:
                accepted[str(draft.sample.id)] = _variant_sample(draft, seed, value, gold)
            else:
                draft.rejections.append(why)
                pending.append(draft)
        if not pending:
            break
    return pending


def instantiate(samples: Sequence[Sample], seed: int) -> Instantiation:
    """Each question's fresh variant under ``seed`` (its ``solve()`` run in the sandbox),
    or the reason it has none. The samples carry their documents (:data:`DOCUMENTS_KEY`,
    as :func:`load_dataset` and :func:`with_documents` give them)."""

    async def work(run: Runner) -> Instantiation:
        return await _instantiate(samples, seed, run)

    return in_sandbox(work, entry=ENTRY_POINT, timeout=GOLD_TIMEOUT)


async def _instantiate(samples: Sequence[Sample], seed: int, run: Runner) -> Instantiation:
    drafts: list[Draft] = []
    left_out: dict[str, str] = {}
    for sample in samples:
        metadata = sample.metadata or {}
        program = str(metadata.get("solution") or "")
        if not program.strip() or DOCUMENTS_KEY not in metadata:
            left_out[str(sample.id)] = "no gold solve() or no documents"
            continue
        try:
            p = plan(str(sample.input), list(metadata[DOCUMENTS_KEY]), program)
        except (ValueError, SyntaxError, ArithmeticError, RecursionError) as e:
            # one record that cannot be planned never ends the instantiation
            p = Plan(reason=f"could not be planned: {e!r}")
        drafts.append(Draft(sample, p, rng=question_rng(seed, str(sample.id))))
    first = await run([_traced(str((d.sample.metadata or {})["solution"])) for d in drafts])
    originals: dict[str, Any] = {}
    pending = []
    for draft, result in zip(drafts, first, strict=True):
        sid = str(draft.sample.id)
        value = result.value if result.ok else None
        originals[sid] = value
        if value is None or not math.isfinite(value):
            left_out[sid] = f"the gold solve() fails on the original values: {result.error}"
        elif draft.plan.reason:
            left_out[sid] = draft.plan.reason
        else:
            draft.original = float(value)
            draft.trace = read_trace(result.stdout)
            pending.append(draft)
    accepted: dict[str, Sample] = {}
    for draft in await _rounds(pending, seed, run, accepted):
        left_out[str(draft.sample.id)] = (
            f"every one of {TRIES} draws was rejected (last: {draft.rejections[-1]})"
        )
    ordered = [accepted[str(s.id)] for s in samples if str(s.id) in accepted]
    return Instantiation(seed, ordered, left_out, originals, rules=RULES)


def describe(metadata: dict[str, Any]) -> tuple[str, str]:
    """A question as ``finmath variants --show`` prints it: (the question and the document
    lines that write the quantities its solve() reads, its gold and solve())."""
    values = [abs(lit.value) for lit in literals(str(metadata["solution"]))]
    lines = [str(metadata.get(QUESTION_KEY) or "")]
    for n, document in enumerate(metadata.get(DOCUMENTS_KEY) or [], start=1):
        for line in str(document).split("\n"):
            if any(factor_of(v, w) for w in find_written(line) for v in values if v > 4):
                lines.append(f"[document {n}] {line.strip()[:400]}")
    return "\n".join(lines), f"gold {metadata['answer']!r}\n{metadata['solution']}"


__all__ = ["DEFAULT_SPLIT", "RULES", "describe", "instantiate", "load_dataset", "task_arguments"]
