"""Rule-based extraction of a final numeric answer from free text.

Rules, in order (the method used is recorded on every score):

1. Answer markers, the LAST one in the text that carries a number wins:
   ``\\boxed{...}``, a JSON ``"answer": ...`` field, "the answer is",
   "final answer", and "Answer:"/"ANSWER:" at the start of a line.
   The answer is the first number after the marker (after the last ``=`` or
   ``≈`` in the marker's sentence, so "the answer is 2 * 3 = 6" gives 6).
   A marker whose sentence offers two different numbers joined by "or",
   "to", "and", "/", "-" or "~" (a hedge or a range) gives no answer.
2. Otherwise the last number in the text; but when the model stopped for
   length (``truncated=True``) no number: "no final answer (truncated)".

Only the last ``MAX_SCAN_CHARS`` characters are searched, and the work is
linear in them: numbers are read once, a marker's span is at most
``MARKER_WINDOW`` characters, and the patterns never backtrack over a run.

A number may carry: a sign (ASCII, unicode minus), accounting parentheses
for negatives "(1,234)", a currency prefix ($, US$, USD, €, £, ¥), thousands
separators, a decimal part, scientific notation (1.2e5, 1.2 × 10^5), a
percent sign ("%", "percent"), a scale word (thousand, million, billion,
trillion; k/m/mn/b/bn attached after a currency amount) and any trailing unit,
which is ignored. A minus followed by a space after an operand
("(1 + r) - 1", "x - 1") is an operator, not the number's sign.
:func:`parse_reply_number` is the strict reading of a reply that must be one
number and nothing else (a grader's reply). The parsed number keeps how it
was written (digits after the decimal point, significant digits, percent,
scale) because the matching profiles need the precision the model showed.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

# Only this much of an output is searched (the end, where answers are):
# bounded work for enormous or hostile outputs.
MAX_SCAN_CHARS = 100_000
# How far after a marker its answer may start.
MARKER_WINDOW = 300

SCALE_WORDS = {
    "thousand": 3,
    "k": 3,
    "million": 6,
    "mn": 6,
    "m": 6,
    "billion": 9,
    "bn": 9,
    "b": 9,
    "trillion": 12,
    "tn": 12,
}

_NUMBER_RE = re.compile(
    r"""
    (?=[-+(.\d$€£¥ueg])                           # cheap test of the first character
    (?<![\w.])                                   # not inside a word or number
    (?P<open>\(\s*)?                             # accounting negative
    (?P<sign1>[-+]\s*)?                          # (no two optional \s* runs side by side:
    (?P<cur>(?:US\$|USD\s?|\$|€|£|¥|EUR\s|GBP\s)\s*)?  #  that backtracks cubically)
    (?P<sign2>[-+])?
    (?P<num>(?:(?<!\d,)\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)  # no restart inside "1,000,00"
    (?!,*\d)                                     # not followed by more digits ("1,23")
    (?:
        [eE](?P<exp>[-+]?\d+)
      | \s*[x×*]\s*10\s*\^\s*\{?(?P<exp2>[-+]?\d+)\}?
    )?
    (?P<close>\s*\))?
    (?P<pct>\s*(?:%|percent\b|per\s+cent\b|pct\b))?
    (?P<scale>\s+(?:thousand|million|billion|trillion)\b
      | (?:thousand|million|billion|trillion|mn|bn|tn|k|m|b)\b)?
    """,
    re.VERBOSE | re.IGNORECASE,
)

_MARKER_RE = re.compile(
    r"""
    (?P<boxed>\\boxed\s*\{)
  | (?P<json>"answer"\s*:\s*)
  | (?P<text>(?:final\s+answer|the\s+answer)(?:\s+(?:is|would\s+be|will\s+be|should\s+be))?\s*(?::|=|is\b)?\s*:?)
  | (?P<line>^[ \t\r\f\v>*#_]*answer\s*[:=])
    """,
    re.VERBOSE | re.IGNORECASE | re.MULTILINE,
)

_HEDGE_JOIN_RE = re.compile(
    r"^\s*(?:,?\s*(?:or|to|and|and/or|versus|vs\.?)\s+|\s*[/~–-]\s*)", re.IGNORECASE
)
# The end of an operand: a digit, a closing bracket, a percent sign, a single
# letter ("x - 1") or a LaTeX command ("\\pi - 1"); not a word ("is - 5").
_OPERAND_END_RE = re.compile(r"(?:[\d)\]}|%!']|(?<![^\W\d_])[^\W\d_]|\\[A-Za-z]+)$")
_GLUED_DIGIT_RE = re.compile(r"\.?\d")
_SENTENCE_END_RE = re.compile(r"(?:\.(?=\s|$)|\n\s*\n|[;!?](?=\s|$))")


@dataclass(frozen=True)
class ParsedNumber:
    """A number as written in the text."""

    text: str
    written: Decimal
    """The value as written, without scale word or percent (e.g. 1.2 for "1.2 million")."""
    scale_exp: int
    """Power of ten of the scale word (6 for "million"), 0 without one."""
    percent: bool
    quantum_exp: int
    """Power of ten of the last digit shown, of the written value (-2 for "1.25")."""
    sig_digits: int

    @property
    def value(self) -> float:
        """The value with its scale word applied (percent kept as written: "5%" is 5)."""
        return float(self.written.scaleb(self.scale_exp))

    @property
    def written_value(self) -> float:
        return float(self.written)


@dataclass(frozen=True)
class Extraction:
    """Result of extracting a final answer from an output."""

    number: ParsedNumber | None
    method: str
    """boxed | json | marker | last_number | hedged | none | empty"""
    detail: str = ""


def _normalise(text: str) -> str:
    return (
        text.replace("\u2212", "-")  # unicode minus
        .replace("\u2012", "-")
        .replace("\u2013", "–")
        .replace("\u00a0", " ")
        .replace("\u2009", "")
        .replace("{,}", ",")
        .replace("\\,", "")
        .replace("\\!", "")
        .replace("\\%", "%")
        .replace("\\$", "$")
        .replace("\\text{", "{")
    )


def _parse_match(m: re.Match[str]) -> ParsedNumber | None:
    raw = m.group("num")
    digits = raw.replace(",", "")
    try:
        written = Decimal(digits)
    except InvalidOperation:
        return None
    decimals = len(digits.split(".", 1)[1]) if "." in digits else 0
    exp_text = m.group("exp") or m.group("exp2")
    if exp_text and len(exp_text.lstrip("+-0")) > 3:
        return None  # |exponent| >= 1000 (and int() refuses more than 4300 digits)
    exp = int(exp_text) if exp_text else 0
    if abs(exp) > 400:
        return None
    if exp:
        written = written.scaleb(exp)
    sig = len(digits.replace(".", "").lstrip("0")) or 1
    negative = False
    for sign in (m.group("sign1"), m.group("sign2")):
        if sign and sign[0] == "-":
            negative = not negative
    if m.group("open") and m.group("close"):
        negative = True
    elif m.group("close") and not m.group("open"):
        # a closing parenthesis that belongs to surrounding text, not to the number
        pass
    scale_exp = 0
    scale = (m.group("scale") or "").strip().lower()
    if scale:
        short = scale in {"k", "m", "mn", "b", "bn", "tn"}
        if short and not m.group("cur"):
            scale = ""  # "5m" without a currency is more likely metres or months
        else:
            scale_exp = SCALE_WORDS[scale]
    if negative:
        written = -written
    text = m.group(0)
    if m.group("open") and not m.group("close"):
        text = text[len(m.group("open")) :]  # "(1 + r)": the parenthesis is not the number's
    if not scale and m.group("scale"):
        text = text[: text.lower().rfind(m.group("scale").lower())]
    return ParsedNumber(
        text=text.strip(),
        written=written,
        scale_exp=scale_exp,
        percent=bool(m.group("pct")),
        quantum_exp=exp - decimals,
        sig_digits=sig,
    )


def _number_matches(text: str) -> Iterator[re.Match[str]]:
    """Matches of every number in normalised ``text``."""
    for m in _NUMBER_RE.finditer(text):
        sign = m.group("sign1")
        if sign and sign != sign.rstrip() and not m.group("open"):
            before = text[max(0, m.start() - 40) : m.start()].rstrip()
            if _OPERAND_END_RE.search(before):
                # "f(x) - 1": a spaced minus after an operand is an operator, not a sign
                m = _NUMBER_RE.match(text, m.start() + len(sign)) or m
        yield m


def parse_numbers(text: str) -> list[tuple[int, int, ParsedNumber]]:
    """All numbers in ``text`` as (start, end, number)."""
    found = []
    for m in _number_matches(_normalise(text)):
        parsed = _parse_match(m)
        if parsed is not None:
            found.append((m.start(), m.end(), parsed))
    return found


def parse_number(text: str) -> ParsedNumber | None:
    """The single number a short answer string states (None if none or ambiguous)."""
    numbers = parse_numbers(text)
    if not numbers:
        return None
    first = numbers[0][2]
    if any(n.value != first.value for _, _, n in numbers[1:]):
        return None
    return first


def parse_reply_number(text: str) -> ParsedNumber | None:
    """The number a reply consists of, or None when the whole reply is not one number.

    Strict counterpart of :func:`parse_number` for grader replies: surrounding
    whitespace, one trailing period, a sign, currency, thousands separators,
    percent and scale words are allowed as in :func:`parse_number`; anything
    else ("0x1A", "1_000", "12abc", "5 or 6", "7 years") is a parse failure.
    """
    stripped = _normalise(text).strip()
    if stripped.endswith("."):
        stripped = stripped[:-1].rstrip()
    m = _NUMBER_RE.fullmatch(stripped)
    if m is None:
        return None
    parsed = _parse_match(m)
    if parsed is None or parsed.text != stripped:
        return None  # part of the reply was not read as the number ("(5", "5m")
    return parsed


def _boxed_content(text: str, start: int) -> str:
    """The braces' content, at most MARKER_WINDOW characters of it (bounded work per marker)."""
    text = text[: start + MARKER_WINDOW]
    depth = 1
    i = start
    while i < len(text) and depth:
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
        i += 1
    return text[start : i - 1] if depth == 0 else text[start:]


def _answer_from_span(span: str) -> tuple[ParsedNumber | None, str]:
    """First number of a marker's sentence; detects hedges and equation chains."""
    numbers = parse_numbers(span)
    if not numbers:
        return None, "no number after marker"
    # restrict to the sentence in which the first number stands
    first_start = numbers[0][0]
    end_match = _SENTENCE_END_RE.search(_normalise(span), numbers[0][1])
    sentence_end = end_match.start() if end_match else len(span)
    sentence = _normalise(span)[:sentence_end]
    for sep in ("=", "≈"):
        cut = sentence.rfind(sep, first_start)
        if cut != -1 and parse_numbers(sentence[cut + 1 :]):
            sentence = sentence[cut + 1 :]
    numbers = parse_numbers(sentence)
    if not numbers:
        return None, "no number after marker"
    _, end, answer = numbers[0]
    for start2, _, other in numbers[1:]:
        gap = sentence[end:start2]
        if other.text[:1] in "-–" and not gap.strip():
            gap += other.text[0]  # "100 - 120": the dash was read as the second number's sign
        if len(gap) <= 12 and _HEDGE_JOIN_RE.match(gap) and not _same_quantity(answer, other):
            return None, f"hedged between {answer.text} and {other.text}"
        break
    return answer, ""


def hedge_of(text: str) -> str | None:
    """Whether a text that is an answer as a whole (an agent's JSON ``answer`` field) offers
    two different numbers ("-12.6 or -11.6"), read as the span after an answer marker: the
    hedge's description, or None."""
    _, detail = _answer_from_span(text[-MAX_SCAN_CHARS:])
    return detail if detail.startswith("hedged") else None


def _same_quantity(a: ParsedNumber, b: ParsedNumber) -> bool:
    """Two renderings of one quantity ("0.05, or 5%")?"""
    if a.value == b.value:
        return True
    return (b.percent and b.value / 100 == a.value) or (a.percent and a.value / 100 == b.value)


def extract_answer(output: str, truncated: bool = False) -> Extraction:
    """Extract the final numeric answer of a model output (see module docstring).

    ``truncated``: the model stopped for length; without an answer marker the
    result is "no final answer (truncated)" instead of the last-number guess.

    Linear in the scanned length: the text is read for numbers once, each
    marker's span is at most ``MARKER_WINDOW`` characters, and a marker whose
    span holds no number is skipped without parsing it.
    """
    if not output or not output.strip():
        return Extraction(None, "empty", "the output is empty")
    text = _normalise(output[-MAX_SCAN_CHARS:])
    matches = list(_number_matches(text))
    match_ends = [n.end() for n in matches]
    hedge_detail = ""
    for m in reversed(list(_MARKER_RE.finditer(text))):
        start = m.end()
        # Parse the span only when a number of the whole text overlaps it, or a
        # digit is glued to the marker ("answer5", which the whole text does not read).
        nxt = bisect.bisect_right(match_ends, start)
        glued = _GLUED_DIGIT_RE.match(text, start)
        if (nxt == len(matches) or matches[nxt].start() >= start + MARKER_WINDOW) and not glued:
            continue
        if m.group("boxed"):
            method, span = "boxed", _boxed_content(text, start)
        elif m.group("json"):
            method, span = "json", _json_value(text[start : start + MARKER_WINDOW])
        else:
            method, span = "marker", text[start : start + MARKER_WINDOW]
        number, detail = _answer_from_span(span)
        if number is not None:
            return Extraction(number, method, f"{method}: {m.group(0).strip()!r}")
        if detail.startswith("hedged"):
            hedge_detail = detail
            break
    if hedge_detail:
        return Extraction(None, "hedged", hedge_detail)
    if truncated:
        return Extraction(
            None, "truncated", "no final answer (truncated): stopped at max_tokens without a marker"
        )
    for n in reversed(matches):
        number = _parse_match(n)
        if number is not None:
            return Extraction(number, "last_number", "no answer marker; last number taken")
    return Extraction(None, "none", "no number found in the output")


def _json_value(rest: str) -> str:
    """The raw JSON value that follows ``"answer":`` (number or string)."""
    try:
        value, _ = json.JSONDecoder().raw_decode(rest.strip())
    except (ValueError, RecursionError):
        return rest[:MARKER_WINDOW]
    return str(value) if not isinstance(value, str) else value
