"""Fresh variants of a benchmark's questions: the pieces every benchmark shares.

A fresh variant re-instantiates a question with new values for the numbers its
gold program reads from the text, and recomputes the gold with that program.
What a variable is and how the gold is recomputed are each benchmark's own
(``tasks/<name>/variants.py``); this module holds what they share:

- :func:`find_numbers`: the numbers written in a text, each with its span, its
  written value and precision, and the form around it (a thousands separator, a
  percent sign, a scale word such as "million");
- :func:`draw_written`: a new written value that keeps the original's sign,
  integer-ness, written precision and order of magnitude;
- :func:`format_like`: a value written the way an original number was;
- :func:`question_rng`: the seeded draw of one question (the same on any machine:
  Python's ``random.Random`` seeded with a string hashes it with SHA-512);
- :func:`derived_from`: whether a number of the document is derived exactly (at its
  written precision) from a varied number and another number of the document, in
  which case the variant would contradict itself and the question is left out;
- :func:`accept_gold`: the rejection rule for a recomputed gold (finite, same sign,
  within a factor of 10 of the original);
- :func:`gold_like`: a recomputed gold written at the original gold's precision (never
  a program's float noise: ``0.5025000000000001`` is no gold).

``variant="original"`` (the default of every task) leaves the data untouched; a fresh
variant needs ``variant_seed`` of 1 or more (:func:`check_variant` refuses seed 0, which
would be the published questions under the fresh variant's name).
"""

from __future__ import annotations

import logging
import math
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any, Literal

from inspect_ai.dataset import MemoryDataset

from finmath_tasks.loading import attach_provenance, dataset_provenance

logger = logging.getLogger(__name__)

Variant = Literal["original", "fresh"]
VARIANTS: tuple[str, ...] = ("original", "fresh")
VARIANT_KEY = "variant"
"""Sample metadata key of a fresh variant's record (seed, replacements, original gold)."""

TRIES = 50
"""Draws tried per question before it is left out (each rejected draw is redrawn)."""
SPREAD = 0.3
"""A new value is the original times a factor drawn uniformly in [1 - SPREAD, 1 + SPREAD]."""
MAX_FACTOR = 10.0
"""A recomputed gold more than this factor away from the original's is rejected."""

SCALE_WORDS = {
    "thousand": 1e3,
    "million": 1e6,
    "billion": 1e9,
    "trillion": 1e12,
    "k": 1e3,
    "m": 1e6,
    "mn": 1e6,
    "bn": 1e9,
}

_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>-)?(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<frac>\d+))?(?![\d])"
    r"(?P<suffix>\s?%|\s(?:thousand|million|billion|trillion)\b|(?:k|m|mn|bn)\b)?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Written:
    """A number as a text writes it."""

    start: int
    """Where the number's text (sign and digits, not the suffix) starts and ends."""
    end: int
    text: str
    value: float
    """The written number itself (``20`` for "20%", ``1.2`` for "1.2 million")."""
    decimals: int
    grouped: bool
    """Written with thousands separators."""
    percent: bool
    scale: float
    """1, or the scale word's factor."""

    @property
    def integer(self) -> bool:
        return self.decimals == 0


def find_numbers(text: str) -> list[Written]:
    """Every number written in ``text``, left to right."""
    found = []
    for m in _NUMBER.finditer(text):
        digits = m.group("int").replace(",", "")
        frac = m.group("frac") or ""
        value = float(f"{digits}.{frac}" if frac else digits)
        if m.group("sign"):
            value = -value
        suffix = (m.group("suffix") or "").strip().lower()
        end = m.end("frac") if frac else m.end("int")
        found.append(
            Written(
                start=m.start(),
                end=end,
                text=text[m.start() : end],
                value=value,
                decimals=len(frac),
                grouped="," in m.group("int"),
                percent=suffix == "%",
                scale=SCALE_WORDS.get(suffix, 1.0),
            )
        )
    return found


YEARS = (1950, 2035)
"""A four-digit whole number in this range, written without a separator, is taken for a
year (never varied); outside it, 2097 in a table is an amount."""


def is_year(written: Written) -> bool:
    """A four-digit whole number in :data:`YEARS` written without a separator."""
    return written.integer and not written.grouped and YEARS[0] <= written.value <= YEARS[1]


def format_like(value: float, like: Written) -> str:
    """``value`` written with ``like``'s precision and thousands separators."""
    text = f"{abs(value):,.{like.decimals}f}" if like.grouped else f"{abs(value):.{like.decimals}f}"
    return f"-{text}" if value < 0 else text


def question_rng(seed: int, sample_id: str) -> random.Random:
    """The draw of one question under ``seed``: the same on any machine and Python version."""
    return random.Random(f"{seed}:{sample_id}")


def _magnitude(value: float) -> int:
    return math.floor(math.log10(abs(value)))


def _unit(value: float, decimals: int) -> float:
    """The written precision: the last decimal place written, or for a whole number the
    last nonzero digit (3,700,000 is written to the hundred thousand)."""
    if decimals:
        return 10.0**-decimals
    digits = str(int(abs(value)))
    zeros = len(digits) - len(digits.rstrip("0"))
    return 10.0 ** min(zeros, len(digits) - 1)


def narrowed(draw: int) -> float:
    """The spread of the ``draw``-th draw (from 1): :data:`SPREAD` for the first 5, then
    halved every 5 draws, so a question whose rules hold only near its values (a column of
    close discount factors that must keep their order) still finds a variant."""
    return SPREAD * 0.5 ** ((max(draw, 1) - 1) // 5)


def draw_written(
    value: float, decimals: int, rng: random.Random, tries: int = 50, spread: float = SPREAD
) -> float | None:
    """A new written value for ``value`` (written with ``decimals`` places): within a
    factor [1 - SPREAD, 1 + SPREAD] of it, with the same sign, written precision and
    order of magnitude (a whole number stays whole, with as many trailing zeros where
    one that near exists: 20 may become 14, not 10 or 30; a small number written to its
    last digit may move by one unit: 3 becomes 2 or 4), different from the original;
    None when no such value exists (1 with no decimals)."""
    if value == 0:
        return None
    unit = _unit(value, decimals)
    finest = 10.0**-decimals
    while unit >= finest * 0.5:
        for _ in range(tries):
            factor = rng.uniform(1 - spread, 1 + spread)
            new = round(round(value * factor / unit) * unit, decimals)
            near = abs(new / value - 1) <= spread or (
                # a small number written to its last digit may move by one unit (3 -> 2 or 4)
                unit == finest and abs(new - value) <= finest and abs(value) >= 2 * finest
            )
            looks_like_year = decimals == 0 and YEARS[0] <= abs(new) <= YEARS[1]
            if looks_like_year and not YEARS[0] <= abs(value) <= YEARS[1]:
                continue  # 2013 in a column of amounts would read as a year
            if new != value and new != 0 and near and _magnitude(new) == _magnitude(value):
                return new
        unit /= 10
    if spread < SPREAD:  # too narrow to move at the written precision: the full spread
        return draw_written(value, decimals, rng, tries, SPREAD)
    return None


def close(a: float, b: float, rel: float = 1e-9) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


def factor_of(literal: float, written: Written) -> float | None:
    """How ``written`` gives a program's ``literal``: 1 (as written), 0.01 (a percent
    read as its fraction), a scale word's factor ("2.5 million" read as 2500000); None
    where it does not give it."""
    magnitude = abs(written.value)
    if close(magnitude, abs(literal)):
        return 1.0
    if written.percent and close(magnitude / 100, abs(literal)):
        return 0.01
    if written.scale != 1 and close(magnitude * written.scale, abs(literal)):
        return written.scale
    return None


def _rounds_to(result: float, written: Written) -> bool:
    """Does ``result`` (in absolute value) round to ``written`` at its written precision?"""
    return round(abs(result), written.decimals) == round(abs(written.value), written.decimals)


def _significant(written: Written) -> int:
    return len(written.text.replace(",", "").replace(".", "").lstrip("-").lstrip("0"))


@dataclass(frozen=True)
class Relation:
    """``x op y`` over two numbers of a document (their indices in a list of operands):
    ``+``, ``-``, ``%`` (the percent change from ``y`` to ``x``), ``*`` or ``/``."""

    op: str
    x: int
    y: int

    def apply(self, values: Sequence[float]) -> float | None:
        """The relation on ``values`` (None: a division by zero)."""
        x, y = values[self.x], values[self.y]
        if self.op == "+":
            return x + y
        if self.op == "-":
            return x - y
        if self.op == "*":
            return x * y
        if not y:
            return None
        return (x - y) / y * 100 if self.op == "%" else x / y

    def formula(self, values: Sequence[float]) -> str:
        x, y = values[self.x], values[self.y]
        if self.op == "%":
            return f"({x:g} - {y:g}) / {y:g} %"
        return f"{x:g} {self.op} {y:g}"


def relation_of(
    written: Written,
    operands: Sequence[float],
    changing: int,
    min_digits: int = 2,
    exact_digits: int | None = None,
) -> Relation | None:
    """A relation giving ``written`` (at its written precision) from two of ``operands``,
    one of the first ``changing`` among them (the numbers that change), or None.

    A sum or a difference (either order; equal exactly) for a number with at least
    ``exact_digits`` significant digits (by default ``min_digits``); for a number written
    with a percent sign a percent change (either way), for one with at least
    ``min_digits``; a product or a ratio for one with at least ``min_digits + 1`` (the
    rounded relations: shorter numbers equal some percent change or product of two others
    by chance too often). A result equal to one of its own operands (adding a tiny
    number) does not count. Sums and differences are tried first."""
    digits = _significant(written)
    exact_digits = min_digits if exact_digits is None else exact_digits
    if digits < min(min_digits, exact_digits):
        return None
    # The search tries every pair (a table's column holds dozens of numbers, and every draw
    # asks it again for each number beside a changed one): each candidate is first held
    # to a cheap necessary condition (its distance to the written number), and only a
    # candidate that passes is rounded and checked as the rules state it, in their order.
    n = len(operands)
    target = written.value
    if digits >= exact_digits:
        wanted = round(target, 9)
        near = 1e-6 + 1e-12 * abs(target)  # round(r, 9) == round(w, 9) needs |r - w| < near
        low, high = target - near, target + near
        for i in range(changing):
            x = operands[i]
            for j in range(n):
                if j == i:
                    continue
                y = operands[j]
                r = x + y
                if low <= r <= high and round(r, 9) == wanted and r not in (x, y):
                    return Relation("+", i, j)
                r = x - y
                if low <= r <= high and round(r, 9) == wanted and r not in (x, y):
                    return Relation("-", i, j)
                r = y - x
                if low <= r <= high and round(r, 9) == wanted and r not in (x, y):
                    return Relation("-", j, i)
    if digits < min_digits:
        return None
    decimals = written.decimals
    wanted = round(abs(target), decimals)
    # rounding both to `decimals` places can make them equal only this near
    near = 1.000001 * 10.0**-decimals + 1e-9 * abs(target)
    low, high = abs(target) - near, abs(target) + near

    def holds(result: float, a: int, b: int) -> bool:
        """``result`` (already within ``near``) is the written number at its precision,
        and neither operand is."""
        return (
            round(abs(result), decimals) == wanted
            and round(abs(operands[a]), decimals) != wanted
            and round(abs(operands[b]), decimals) != wanted
        )

    if written.percent:
        for i in range(changing):
            x = operands[i]
            for j in range(n):
                if j == i:
                    continue
                y = operands[j]
                if y:
                    r = (x - y) / y * 100
                    if (low <= r <= high or -high <= r <= -low) and holds(r, i, j):
                        return Relation("%", i, j)
                if x:
                    r = (y - x) / x * 100
                    if (low <= r <= high or -high <= r <= -low) and holds(r, j, i):
                        return Relation("%", j, i)
    if digits > min_digits:
        for i in range(changing):
            x = operands[i]
            if abs(x) == 1:
                continue
            for j in range(n):
                y = operands[j]
                if j == i or abs(y) == 1:
                    continue
                r = x * y
                if (low <= r <= high or -high <= r <= -low) and holds(r, i, j):
                    return Relation("*", i, j)
                if y:
                    r = x / y
                    if (low <= r <= high or -high <= r <= -low) and holds(r, i, j):
                        return Relation("/", i, j)
                if x:
                    r = y / x
                    if (low <= r <= high or -high <= r <= -low) and holds(r, j, i):
                        return Relation("/", j, i)
    return None


def derived_from(
    varied: Sequence[float],
    others: Sequence[float],
    candidates: Iterable[Written],
    min_digits: int = 2,
) -> tuple[Written, str] | None:
    """The first number in ``candidates`` (numbers that stay as written) equal, at its
    written precision, to ``a op b`` for a varied value ``a`` and another value ``b`` of
    the document (:func:`relation_of`), with the formula; None when there is none."""
    operands = [*varied, *others]
    for written in candidates:
        relation = relation_of(written, operands, len(varied), min_digits)
        if relation is not None:
            return written, relation.formula(operands)
    return None


MAX_TABLE_ROWS = 60
"""A question whose table has more rows than this is left out of a fresh variant: its
checks (every total, every number computed from the numbers beside it) search pairs and
runs of a table's cells on every draw, and grow faster than the table (measured in
``benchmarks/variant_table_size.py``). The benchmarks' largest real tables have 27 rows."""
MAX_TABLE_CELLS = 300
"""The same for a table's cells (the largest real tables have 150)."""


def table_too_large(table: Sequence[Sequence[Any]]) -> str | None:
    """Why a question with this table (rows of cells) is left out of a fresh variant, or
    None: more than :data:`MAX_TABLE_ROWS` rows or :data:`MAX_TABLE_CELLS` cells."""
    rows = len(table)
    cells = sum(len(row) for row in table)
    if rows > MAX_TABLE_ROWS:
        return f"table too large to check its totals ({rows} rows)"
    if cells > MAX_TABLE_CELLS:
        return f"table too large to check its totals ({cells} cells)"
    return None


def accept_gold(original: float, new: object) -> str | None:
    """Why a recomputed gold is rejected (None: accepted)."""
    if isinstance(new, bool) or not isinstance(new, int | float):
        return f"the program's answer is not a number: {new!r}"
    if not math.isfinite(new):
        return "the program's answer is not finite"
    if original and new and (original > 0) != (new > 0):
        return "the answer's sign flips"
    if original and not new:
        return "the answer becomes 0"
    if original and max(abs(new / original), abs(original / new)) > MAX_FACTOR:
        return f"the answer moves by more than a factor of {MAX_FACTOR:g}"
    return None


GOLD_CLOSE = 1e-3
"""How near (relative) a recomputed gold written at the original's decimals must be to the
program's value, where the original is the program's value itself (see :func:`gold_like`)."""


def _quantized(value: float, exponent: int) -> Decimal:
    """``value`` (its shortest repr) rounded half away from zero to ``10**exponent``."""
    with localcontext() as ctx:
        ctx.prec = 60
        return Decimal(repr(float(value))).quantize(Decimal(1).scaleb(exponent), ROUND_HALF_UP)


def gold_like(value: float, original: str, original_value: float | None) -> str:
    """A recomputed gold ``value`` written at the precision of the original gold, as the
    original's target text writes it (``original``; ``original_value`` is the program's value
    on the original numbers, None where no program ran).

    - The original is the program's value rounded (``0.798`` for 0.79794): the new value
      keeps as many significant digits (``0.736`` for 0.73583), so the scorers' rounding
      asks of it what they asked of the original.
    - The original is the program's value itself (``0.54``; a float's noise aside): the new
      value keeps the original's decimals and never fewer significant digits (``0.02`` for
      0.020000000000000018 where the original is ``0.1``); where that would write it more
      than :data:`GOLD_CLOSE` away from the program's value (the original was exact, the
      new value is not short), one more decimal at a time (``0.503`` for 0.5025), so that
      the program's own value still scores against it under a rounding comparison, as the
      original's did.

    The text is plain decimal notation, trailing zeros kept (``0.50``: two decimals asked)."""
    if not math.isfinite(value):
        raise ValueError(f"a gold must be finite, got {value!r}")
    written = Decimal(original.strip())
    exponent = written.as_tuple().exponent
    assert isinstance(exponent, int)
    digits = max(len("".join(map(str, written.as_tuple().digits)).lstrip("0")), 1)
    magnitude = _magnitude(value) if value else 0
    rounded = original_value is not None and not close(original_value, float(written))
    if rounded:
        places = magnitude - digits + 1
    else:
        places = min(exponent, magnitude - digits + 1)
        while (
            abs(float(_quantized(value, places)) - value) > GOLD_CLOSE * abs(value) and places > -20
        ):
            places -= 1
    quantized = _quantized(value, places)
    return format(quantized if quantized else abs(quantized), "f")  # never "-0.00"


def replace_spans(text: str, replacements: Sequence[tuple[int, int, str]]) -> str:
    """``text`` with each (start, end) span replaced (spans do not overlap)."""
    out = []
    at = 0
    for start, end, new in sorted(replacements):
        out.append(text[at:start])
        out.append(new)
        at = end
    out.append(text[at:])
    return "".join(out)


MAX_SEED = 2**31 - 1


def check_variant(task: str, variant: object, seed: object) -> tuple[str, int]:
    """``-T variant=`` and ``-T variant_seed=`` checked; (variant, seed)."""
    from finmath_tasks import params

    chosen = params.choice(task, "variant", variant, Variant)
    number = params.integer_in_range(task, "variant_seed", seed, 0, MAX_SEED)
    if number and chosen == "original":
        raise params.TaskParameterError(
            f"{task}: -T variant_seed={number} draws new values for -T variant=fresh only "
            "(variant=original reads the questions as published)"
        )
    if chosen == "fresh" and not number:
        # seed 0 would be the published questions under the name of a fresh variant
        raise params.TaskParameterError(
            f"{task}: -T variant=fresh needs -T variant_seed=N with N from 1 to {MAX_SEED} "
            "(the draw of new values; the published questions are variant=original)"
        )
    return str(chosen), int(number)


def is_fresh(variant: str, seed: int) -> bool:
    """Does this setting change the data? (:func:`check_variant` refuses ``fresh`` with
    seed 0; ``variant_seed=0`` is the original questions.)"""
    return variant == "fresh" and seed != 0


def significant_digits(value: float) -> int:
    """How many significant digits ``value`` has as written to 10 (0 for zero):
    ``105`` 3, ``100`` 1, ``0.0050`` 1, ``1e-05`` 1."""
    if value == 0 or not math.isfinite(value):
        return 0
    return len(Decimal(f"{abs(value):.10g}").normalize().as_tuple().digits)


@dataclass
class Instantiation:
    """A split's fresh variants under one seed: the questions instantiated, each left-out
    question's id with the reason, and (where a benchmark recomputes golds by running
    programs) each question's program value on the original numbers (None: it failed)."""

    seed: int
    samples: list[Any]
    left_out: dict[str, str]
    originals: dict[str, Any] = field(default_factory=dict)
    rules: str = ""
    """The version of the benchmark's rules that made these variants (none: its first)."""

    @property
    def total(self) -> int:
        return len(self.samples) + len(self.left_out)

    def summary(self) -> dict[str, Any]:
        return {
            "variant": "fresh",
            "variant_seed": self.seed,
            "instantiated": len(self.samples),
            "of": self.total,
            "left_out": dict(self.left_out),
        }


def summary_line(task: str, split: str, summary: dict[str, object]) -> str:
    """One line for the dataset's name and the log: how many questions were instantiated."""
    return (
        f"{task}-{split} fresh seed {summary['variant_seed']}: "
        f"{summary['instantiated']} of {summary['of']} instantiated"
    )


def variant_provenance(
    provenance: dict[str, object], seed: int, rules: str = ""
) -> dict[str, object]:
    """``provenance`` of the questions a fresh variant re-instantiated from it: the same
    files read, but other questions and golds, so another data fingerprint (derived from
    the original's, the seed and the benchmark's ``rules`` version: equal on every
    machine); the original's is kept beside it. Runs on a variant and on the original are
    then never taken for one data identity (the report pairs them only in its
    memorisation-gap table), nor variants instantiated by other rules."""
    original = str(provenance.get("fingerprint", ""))
    variant: dict[str, object] = {"name": "fresh", "seed": seed, "original_fingerprint": original}
    if rules:
        variant["rules"] = rules
    return {
        **provenance,
        "fingerprint": derived_fingerprint(original, seed, rules),
        "variant": variant,
    }


def derived_fingerprint(original: str, seed: int, rules: str = "") -> str:
    """The data fingerprint of the fresh variant of seed ``seed`` drawn from data of
    fingerprint ``original`` by a benchmark's ``rules`` version (none: its first rules):
    derived from them, equal on every machine."""
    import hashlib

    key = f"{original}:fresh:{seed}" + (f":rules {rules}" if rules else "")
    derived = hashlib.sha256(key.encode()).hexdigest()
    return derived[: len(original) or 16]


def require_some(task: str, split: str, summary: dict[str, object]) -> None:
    """Refuse, in one line, a fresh variant of which no question could be instantiated
    (Inspect would otherwise fail on an empty dataset with a traceback)."""
    if not summary.get("instantiated"):
        from finmath_tasks.errors import UsageError

        left = summary.get("left_out") or {}
        reasons = sorted({str(r).split(" (")[0] for r in dict(left).values()})  # type: ignore[call-overload]
        seed = summary.get("variant_seed")
        raise UsageError(
            f"{task}-{split} fresh seed {seed}: none of "
            f"{summary.get('of')} questions could be instantiated"
            + (f" (e.g. {reasons[0][:160]})" if reasons else "")
            + f"; `finmath variants {task} --seed {seed} --split {split}` lists why"
        )


def benchmark_rules(instantiate: Callable[..., Any]) -> str:
    """The rules version (``RULES``) of the module that defines ``instantiate`` ("" where it
    has none: the benchmark's first rules)."""
    import sys

    module = sys.modules.get(getattr(instantiate, "__module__", "") or "")
    return str(getattr(module, "RULES", "") or "")


def instantiation_from(payload: dict[str, Any]) -> Instantiation:
    """An :class:`Instantiation` as :mod:`finmath_tasks.variant_cache` keeps it."""
    from finmath_tasks.variant_cache import sample_from

    return Instantiation(
        seed=int(payload["seed"]),
        samples=[sample_from(record) for record in payload["samples"]],
        left_out={str(k): str(v) for k, v in dict(payload["left_out"]).items()},
        originals=dict(payload["originals"]),
        rules=str(payload["rules"]),
    )


def instantiate_once(
    task: str,
    split: str,
    seed: int,
    samples: list[Any],
    instantiate: Callable[[list[Any], int], Instantiation],
    provenance: dict[str, Any] | None,
    rules: str = "",
) -> Instantiation:
    """``instantiate(samples, seed)`` made once per data, questions, seed, rules version and
    code, and read back from the fresh-variant cache after (:mod:`finmath_tasks.variant_cache`:
    where it lives, how to turn it off). ``provenance``: the original data's."""
    from finmath_tasks import variant_cache

    fingerprint = str((provenance or {}).get("fingerprint", ""))
    return variant_cache.instantiated(
        task,
        split,
        seed,
        fingerprint,
        samples,
        rules or benchmark_rules(instantiate),
        instantiate,
        instantiation_from,
    )


def apply_fresh(
    task: str,
    dataset: Any,
    variant: str,
    seed: int,
    split: str,
    instantiate: Callable[[list[Any], int], Instantiation],
    rules: str = "",
) -> tuple[Any, dict[str, Any] | None]:
    """The dataset a task evaluates under ``-T variant=``/``-T variant_seed=`` and the
    summary for the task's metadata: ``dataset`` itself and None for the original
    questions; for a fresh variant, the questions ``instantiate`` (the benchmark's own)
    re-instantiated under ``seed``, in a dataset named with how many of the split were,
    carrying the variant's provenance (:func:`variant_provenance`, with the benchmark's
    ``rules`` version, or the one its instantiation records, where its rules changed what
    a seed gives). A split of which no
    question could be instantiated is refused in one line (:func:`require_some`); the
    number left out is logged with the command that lists them with the reason."""
    if not is_fresh(variant, seed):
        return dataset, None
    provenance = dataset_provenance(dataset)
    result = instantiate_once(task, split, seed, list(dataset), instantiate, provenance, rules)
    rules = rules or result.rules
    summary = result.summary()
    require_some(task, split, summary)
    fresh = MemoryDataset(
        result.samples, name=summary_line(task, split, summary), location=dataset.location
    )
    if provenance is not None:
        attach_provenance(fresh, variant_provenance(provenance, seed, rules))
    from finmath_tasks import variant_resume  # a resume keeps this variant's samples only

    variant_resume.guard()
    logger.warning(
        "%s; `finmath variants %s --seed %d --split %s` lists the %d left out with the reason",
        fresh.name,
        task,
        seed,
        split,
        len(result.left_out),
    )
    return fresh, summary
