"""Generic number comparisons: when does a predicted number match the gold number?

A comparison is a function ``(predicted: ParsedNumber, gold: float) -> Match``;
every comparison returns the rule that decided it, so a score can say why.
A gold that knows how the data writes it is a :class:`GoldNumber` (a float
that keeps its text); comparisons that need the written digits read them with
:func:`gold_written`, and a plain float stands for its shortest repr.
A benchmark's official comparison (with the paper's quirks) lives in the
benchmark's folder and has the same signature; a task offers its users the
comparisons in :data:`COMPARISONS` plus its own.

``tolerant`` (our default, strict about what matters)
    The prediction is read as stated (scale word applied, "5%" read as 5),
    as written without its scale word ("1.2 million" read as 1.2, for golds
    stated in millions), and, only where a percentage is in play, each of
    those divided or multiplied by 100 (percent vs fraction: 12.5 or 0.125
    for a growth rate). A percentage is in play when the benchmark's record
    says the gold is a percentage or a ratio (the gold's ``percent`` flag, from
    the sample metadata's :data:`PERCENT_IN_PLAY_KEY`), else when the question
    asks for one by its words (:func:`asks_for_percent`); a prediction written
    with a percent sign ("5%") may always be read as its fraction (0.05), which
    is what it says. A money amount answered 100 times too small or too large
    is never credited. A reading matches when it equals the gold, is within
    0.2% relative of it, or equals the gold rounded to the precision the
    reading shows, provided that precision keeps at least 3 significant
    digits (0.578 matches 0.5782; 0.58 does not). Never a sign flip, never
    any other power-of-ten rescaling.

``rounding`` (the financial-agents paper, "Evaluation Metric")
    The estimate equals the gold, or the ESTIMATE rounded to the gold's last
    written place equals the gold: -22.222222222222225 and -22.22 for a gold
    -22.22 (a program's full-precision float is accepted), never -22.2 (an
    estimate coarser than the gold is not rounded up to it). See
    :func:`rounding` for the rounding mode, integers, negatives, percentages
    and scale words. The gold's places come from its text as the data writes
    it (:class:`GoldNumber`), never from its float.

``exact``
    Numeric equality of the value as stated with the gold.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any

from finmath_tasks.scorers.extraction import ParsedNumber

GOLD_WRITTEN_KEY = "gold_as_written"
"""Sample metadata key: the gold number as the data writes it (its decimal places decide
``rounding``); without it the target text is taken as written."""

PERCENT_IN_PLAY_KEY = "percent_in_play"
"""Sample metadata key: True where the gold is a percentage or a ratio by the benchmark's own
record (a question's scale field, a gold program's last step), False where the record says
it is an amount; absent: the question's words decide (:func:`asks_for_percent`)."""

TOLERANT_REL_TOL = 0.002
TOLERANT_MIN_SIG_DIGITS = 3

PERCENT_WORDS_RE = re.compile(
    r"\bper\s*cent|\bpercentage|\bbasis\s+points?\b|\bbps\b|\bmarket\s+share\b"
    r"|\b(?:rates?|ratios?|returns?|yields?|margins?|growth|proportions?|probability|likelihood"
    r"|probabilities|fractions?|portions?|weights?|volatility|correlation"
    r"|standard\s+deviation|variance|cost\s+of\s+(?:capital|equity|debt))\b"
    r"|\b(?:ROE|ROA|ROI|ROIC|IRR|MIRR|WACC|CAGR|APR|APY|EAR|YTM|HPR)\b",
    re.IGNORECASE,
)
"""Words of a question that put a percentage in play (a rate, a ratio, a return, a share):
where the benchmark's record does not say, these decide whether ``tolerant`` reads an
answer as a percent of a fraction gold or the reverse."""


PERCENT_UNIT_RE = re.compile(
    r"\b(?:in|as\s+an?|expressed\s+as\s+an?)\s+(?:percent(?:age)?s?|per\s*cent|%)"
    r"|\(\s*%\s*\)|\bin\s+basis\s+points\b",
    re.IGNORECASE,
)
"""The asked clause names a percentage as its unit ("(in percent)", "as a percentage")."""
AMOUNT_UNIT_RE = re.compile(
    r"\bin\s+(?:\w+\s+){0,2}?(?:dollars?|\$|usd|eur|euros?|pounds?|yen|cents?"
    r"|thousands?|millions?|billions?|trillions?|units|shares|years|months|days)\b"
    r"|\bhow\s+many\b",
    re.IGNORECASE,
)
"""The asked clause names an amount as its unit ("(in dollars)", "in thousands", "how many")."""
_SENTENCE_END_RE = re.compile(r"(?<=[.?!])\s+")
_ASKING_RE = re.compile(
    r"\b(?:what|how|which|calculate|compute|estimate|determine|find)\b", re.IGNORECASE
)
_GIVEN_RE = re.compile(
    r"[,;:]|\b(?:if|given|assuming|applying|using|with|when|where|at\s+an?|under|based\s+on"
    r"|that\s+(?:will|is|was|has|pays)|invested|after)\b",
    re.IGNORECASE,
)


def asked_clause(question: str) -> str:
    """What the question asks for: in its asking sentence (the last one with a question
    mark, else the last one), from the last asking word ("what", "how", "calculate", ...)
    to the first figure it is given ("if", "given", "at a", "using", a comma). The figures
    a question gives ("at a rate of 9%", "a 5% discount rate") say nothing of the answer."""
    asked = _asking_tail(question)
    given = _GIVEN_RE.search(asked, 1)
    return asked[: given.start()] if given else asked


def _asking_tail(question: str) -> str:
    """The asking sentence from its last asking word to its end (where its unit is named)."""
    sentences = [part for part in _SENTENCE_END_RE.split(question or "") if part.strip()]
    asking = [part for part in sentences if "?" in part]
    sentence = (asking or sentences or [""])[-1]
    starts = [m.start() for m in _ASKING_RE.finditer(sentence)]
    return sentence[starts[-1] :] if starts else sentence


def asks_for_percent(question: str) -> bool:
    """Whether the question asks for a percentage or a ratio: its asking sentence names a
    percent unit (:data:`PERCENT_UNIT_RE`), or names no amount unit (:data:`AMOUNT_UNIT_RE`)
    and what it asks for (:func:`asked_clause`) has one of :data:`PERCENT_WORDS_RE` (a
    rate, a ratio, a return, a share). A heuristic where the record does not say."""
    tail = _asking_tail(question)
    if PERCENT_UNIT_RE.search(tail):
        return True
    if AMOUNT_UNIT_RE.search(tail):
        return False
    return bool(PERCENT_WORDS_RE.search(asked_clause(question)))


def percent_in_play(metadata: Mapping[str, Any]) -> bool:
    """Whether a sample's gold is a percentage or a ratio: the record's own word
    (:data:`PERCENT_IN_PLAY_KEY`) where it has one, else the question's
    (``metadata["question"]``); False without either."""
    recorded = metadata.get(PERCENT_IN_PLAY_KEY)
    if isinstance(recorded, bool):
        return recorded
    question = metadata.get("question")
    return isinstance(question, str) and asks_for_percent(question)


@dataclass(frozen=True)
class Match:
    correct: bool
    rule: str
    """The rule that matched, or "no_match"."""


def number_from_float(value: float) -> ParsedNumber:
    """A number computed by a program: every digit of its shortest repr counts.

    Never raises: NaN and infinities give a number that matches nothing
    (``compare`` answers "prediction_not_finite").
    """
    text = repr(float(value))
    if not math.isfinite(value):
        return ParsedNumber(
            text=text,
            written=Decimal(text),
            scale_exp=0,
            percent=False,
            quantum_exp=0,
            sig_digits=0,
        )
    exact = Decimal(text)
    exponent = exact.as_tuple().exponent
    assert isinstance(exponent, int)
    digits = exact.as_tuple().digits
    sig = len("".join(map(str, digits)).lstrip("0")) or 1
    return ParsedNumber(
        text=text, written=exact, scale_exp=0, percent=False, quantum_exp=exponent, sig_digits=sig
    )


class GoldNumber(float):
    """A gold number that keeps its text as the data writes it (its written decimal places).

    ``GoldNumber("-22.22")`` is the float -22.22 whose last written place is the
    hundredths; ``GoldNumber("114.0")`` keeps one decimal place, ``"94"`` none.
    It is a float everywhere else, so every comparison accepts it.

    ``percent``: a percentage is in play for this gold (:func:`percent_in_play`), so
    ``tolerant`` may read a fraction as its percent or the reverse.
    """

    written: Decimal
    percent: bool

    def __new__(cls, text: str, percent: bool = False) -> GoldNumber:
        cleaned = str(text).strip()
        try:
            written = Decimal(cleaned)
        except InvalidOperation:
            raise ValueError(f"gold {text!r} is not a number as written") from None
        if not written.is_finite():
            raise ValueError(f"gold {text!r} is not a finite number")
        number = super().__new__(cls, float(written))
        number.written = written
        number.percent = bool(percent)
        return number

    def __repr__(self) -> str:
        return f"GoldNumber({str(self.written)!r})"

    def __str__(self) -> str:
        """The number as written (``"15.0"``), so ``Decimal(str(gold))`` and an f-string
        read it as the data writes it (a float subclass's ``str`` is otherwise its repr)."""
        return str(self.written)


def gold_from_float(value: float, percent: bool = False) -> float:
    """A computed gold (a program's value) as a :class:`GoldNumber` of its shortest repr,
    flagged ``percent``; a value that is not finite stays a float (no comparison matches it)."""
    value = float(value)
    return GoldNumber(repr(value), percent) if math.isfinite(value) else value


def gold_percent(gold: float) -> bool:
    """Whether a percentage is in play for ``gold`` (a :class:`GoldNumber`'s flag; a plain
    float: no)."""
    return bool(getattr(gold, "percent", False))


def gold_written(gold: float) -> Decimal:
    """The gold as written: a :class:`GoldNumber`'s text, else a float's shortest repr."""
    if isinstance(gold, GoldNumber):
        return gold.written
    return Decimal(repr(float(gold)))


def _gold_decimal(gold: float) -> Decimal:
    return Decimal(repr(float(gold)))


def _rounds_to(gold: float, quantum_exp: int, value: Decimal) -> bool:
    g = _gold_decimal(gold)
    exponent = g.as_tuple().exponent
    assert isinstance(exponent, int)
    if quantum_exp <= exponent:
        # rounding to a finer quantum than the gold's last digit leaves it unchanged
        # (and quantize could need more digits than the context's precision)
        return g == value
    quantum = Decimal(1).scaleb(quantum_exp)
    return any(
        g.quantize(quantum, rounding=mode) == value for mode in (ROUND_HALF_UP, ROUND_HALF_EVEN)
    )


def _tolerant(pred: ParsedNumber, gold: float) -> Match:
    stated = pred.written.scaleb(pred.scale_exp)
    readings: list[tuple[str, Decimal, int]] = [("", stated, pred.quantum_exp + pred.scale_exp)]
    if pred.scale_exp:
        readings.append(("without_scale_word", pred.written, pred.quantum_exp))
    in_play = gold_percent(gold)
    for name, value, q in list(readings):
        prefix = f"{name}+" if name else ""
        if in_play or pred.percent:  # "5%" is 0.05 as written
            readings.append((f"{prefix}percent_as_fraction", value.scaleb(-2), q - 2))
        if in_play:
            readings.append((f"{prefix}fraction_as_percent", value.scaleb(2), q + 2))
    for name, value, quantum_exp in readings:
        suffix = f" ({name})" if name else ""
        v = float(value)
        if v == gold:
            return Match(True, f"equal{suffix}")
        if gold != 0 and abs(v - gold) <= TOLERANT_REL_TOL * abs(gold):
            return Match(True, f"relative_tolerance_0.2%{suffix}")
        if pred.sig_digits >= TOLERANT_MIN_SIG_DIGITS and _rounds_to(gold, quantum_exp, value):
            return Match(True, f"gold_rounded_to_shown_precision{suffix}")
    return Match(False, "no_match")


def _rounding(pred: ParsedNumber, gold: float) -> Match:
    """The financial-agents paper's rule (see :data:`rounding`)."""
    stated = pred.written.scaleb(pred.scale_exp)
    if float(stated) == gold:
        return Match(True, "equal")
    written = gold_written(gold)
    exponent = written.as_tuple().exponent
    assert isinstance(exponent, int)
    if not stated.is_finite():
        return Match(False, "no_match")
    try:
        with localcontext() as ctx:
            # enough digits for any estimate at the gold's quantum (never a rounding error)
            ctx.prec = max(28, stated.adjusted() - exponent + 3)
            rounded = stated.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_HALF_UP)
    except InvalidOperation:
        return Match(False, "no_match")
    if rounded == written:
        return Match(True, f"estimate_rounded_to_{_places(exponent)}")
    return Match(False, "no_match")


def _places(exponent: int) -> str:
    if exponent <= 0:
        return f"{-exponent}_decimals"
    return f"1e{exponent}"


def _exact(pred: ParsedNumber, gold: float) -> Match:
    return Match(True, "equal") if pred.value == gold else Match(False, "no_match")


Comparison = Callable[[ParsedNumber, float], Match]
"""``(predicted, gold) -> Match``; ``gold`` is finite, and so is ``predicted.value``."""

tolerant: Comparison = _tolerant
rounding: Comparison = _rounding
"""The financial-agents paper's comparison: equal, or the estimate rounds to the gold.

- Places: the gold's last written place (its text as the data writes it, through
  :class:`GoldNumber`; a plain float counts the digits of its shortest repr). A gold
  written "-22.22" takes the estimate to hundredths, "114.0" to tenths, "94" to units.
- Mode: ROUND_HALF_UP on the estimate's decimal digits as written (a program's float
  by its shortest repr, so 2.675 is 2.675, not the binary 2.67499...). A tie goes away
  from zero, the way financial statements and spreadsheets round; one mode, so an
  estimate exactly halfway rounds to one gold, never to both neighbours.
- Integers: a gold written without decimals takes the estimate to units (-94.3 is
  accepted for -94, 94.5 is not).
- Negatives: rounded by magnitude (half away from zero), symmetric with positives;
  a sign is never dropped.
- Percentages: a "%" on the estimate is dropped ("-22.22%" reads -22.22), so it
  matches a gold written as a number of percent (a percent-scale gold); never
  rescaled by 100 (a fraction against a percent gold is wrong, as in the paper,
  which compares numbers and rescales nothing).
- Scale words: applied ("1.2 million" is 1200000) and never removed: the paper's
  answers are plain numbers in the document's units, and a scaled answer is a
  different number.
- The estimate must be at least as precise as the gold: -22.2 for -22.22 is wrong
  (the estimate is rounded, never the gold).
"""
exact: Comparison = _exact

COMPARISONS: Mapping[str, Comparison] = {"tolerant": tolerant, "rounding": rounding, "exact": exact}
"""The generic comparisons every numeric task can offer (``-T profile=``)."""


def compare(comparison: Comparison, pred: ParsedNumber, gold: float) -> Match:
    """Does ``pred`` match ``gold`` under ``comparison``?

    Never raises for any numbers: a non-finite gold (an input error) or
    prediction is a no-match whose rule says so.
    """
    if not math.isfinite(gold):
        return Match(False, "gold_not_finite")
    if not math.isfinite(pred.value):
        return Match(False, "prediction_not_finite")
    return comparison(pred, gold)


def gold_number(target: str, metadata: Mapping[str, Any]) -> float:
    """The numeric gold, keeping its written digits: ``metadata[GOLD_WRITTEN_KEY]`` when it
    states the same number as the target, else the target text; flagged where a percentage
    is in play (:func:`percent_in_play`)."""
    written = metadata.get(GOLD_WRITTEN_KEY)
    target = target.strip()
    percent = percent_in_play(metadata)
    if isinstance(written, str) and written.strip():
        try:
            gold = GoldNumber(written, percent)
        except ValueError:
            gold = None
        if gold is not None and float(gold) == float(target):
            return gold
    try:
        return GoldNumber(target, percent)
    except ValueError:
        return float(target)
