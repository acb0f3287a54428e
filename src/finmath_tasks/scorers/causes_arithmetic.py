"""The calculations a reply states, checked: the first step whose result is wrong.

A reply's stated calculation is ``a op b = c`` (a chain ``a × b × c = d``, ``x = a + b =
c``, ``≈`` for ``=``), with numbers written with thousands separators, currency signs
or codes, percent signs, and the operators ``+ - − × * x · / ÷ ^ **``, parentheses,
``sqrt()`` / ``√``, superscripts ``²`` ``³`` and the LaTeX forms ``\\times``, ``\\cdot``,
``\\div``, ``\\frac{a}{b}``. A line that begins with ``=`` continues the line before.

A step is two neighbouring sides of a chain, at least one of them holding an operator;
each side that is an arithmetic expression is evaluated over intervals. An operand is
exact when it is a whole number, has at most :data:`EXACT_DIGITS` significant digits or is
a number of the document (``exact=``); a longer one, and one that an earlier step stated as
its result, stands for what rounds to it. A stated result stands for every value that
rounds to it (half a unit of its last written digit) or is cut after it (up to a unit away
from zero); a whole number with three trailing zeros or more is shown to that unit, rounded
and never cut ("44,000" is 43,500 to 44,500, not 44,999). A step whose operands include an earlier result gets :data:`CHAINED_SLACK`
(intermediate rounding along a chain). A percent sign is read
both ways (``5%`` as 0.05 and as 5) on each side, since replies write
``0.125 × 100 = 12.5%``: a step is wrong only when no reading makes the sides agree.
Text around a chain's ends is cut (``Interest = 1000 × 0.05 = 50 dollars``); a side cut
from words counts only when it holds an operator, and a middle side must be a whole
expression. A division by an interval holding zero, or a power of a negative interval,
is not checked.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

REL_SLACK = 1e-9
"""Relative slack of every step beyond the written digits' units (float noise)."""
CHAINED_SLACK = 2e-3
"""Relative slack of a step with an operand that an earlier step stated as its result."""
MAX_STEPS = 400
"""Stated calculations checked per reply (a longer reply: the first ones)."""
MAX_LINE = 2000
"""A longer line is not read (no stated calculation is that long)."""

_CURRENCY = re.compile(
    r"(?:\b(?:USD|EUR|GBP|JPY|CHF|CAD|AUD|NZD|HKD|CNY|RMB|INR|SGD|SEK|NOK|DKK|MXN|BRL|ZAR|Rs\.?)\b"
    r"|[$€£¥₹])\s?"
)
_LATEX = [
    (re.compile(r"\\(?:times|cdot)"), "×"),
    (re.compile(r"\\div"), "/"),
    (re.compile(r"\\approx"), "≈"),
    (re.compile(r"\\%"), "%"),
    (re.compile(r"\\left|\\right|\\,|\\!|\\;"), ""),
    (re.compile(r"\\text\{[^{}]*\}"), ""),
    (re.compile(r"\\sqrt"), "√"),
    (re.compile(r"\\[()\[\]]"), " "),
    (re.compile(r"\^\{([^{}]*)\}"), r"^(\1)"),
]
_FRAC = re.compile(r"\\d?frac\{([^{}]*)\}\{([^{}]*)\}")
_SUPERSCRIPT = {"²": "^2", "³": "^3"}
_NUMBER = r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)%?"
_TOKEN = re.compile(rf"\s*(?:(?P<num>{_NUMBER})|(?P<op>\*\*|sqrt|√|[-+*/^()]))")
_TIMES_X = re.compile(r"(?<=[\d%)])\s*[xX]\s*(?=[\d(.$])")
_EXPR_CHARS = re.compile(r"[\d.,%\s+\-*/^()√]|sqrt")
_OPERATOR = re.compile(r"(?<![eE])[-+*/^√]|sqrt|\*\*")
_EQUALS = re.compile(r"=|≈")
_YEARS = re.compile(r"\b(?:19|20)\d\d\s?[-–]\s?(?:19|20)?\d\d\b")
"""A range of years ("2012-2015"), never a subtraction."""


@dataclass(frozen=True)
class Step:
    """One stated step: its text, the stated result and what its left side computes."""

    text: str
    stated: float
    computed: float
    line: int


@dataclass(frozen=True)
class Operand:
    """A number a checked step computes with that no earlier step stated as its result."""

    text: str
    """As written ("5%", "1,000.5")."""
    value: float
    """As computed (a percent as its fraction)."""
    step: str
    """The step it is used in."""
    earlier: tuple[float, ...]
    """The results stated before that step (both sides of each earlier step)."""
    line: int = 0
    """The reply's line the step is on (its first line, for a chain continued on the next)."""


@dataclass(frozen=True)
class ArithmeticCheck:
    """The stated calculations of a reply: how many steps were checked, the first wrong."""

    checked: int
    wrong: Step | None
    operands: tuple[float, ...] = ()
    """The numbers the checked steps compute with (as written; a percent as its fraction)."""
    results: tuple[float, ...] = ()
    """The results the checked steps state."""
    inputs: tuple[Operand, ...] = ()
    """The operands of the checked steps that no earlier step produced, in order: the
    reply's inputs (a number it derived and stated before is not one). Only a line's first
    side that writes numbers gives inputs, when it has an operator: the sides after it
    rewrite it (``2.5 × 1.05 / 0.07 = 2.625 / 0.07``), their numbers its values."""


class _Unreadable(Exception):
    pass


@dataclass(frozen=True)
class _Interval:
    lo: float
    hi: float

    @property
    def mid(self) -> float:
        return (self.lo + self.hi) / 2

    def __add__(self, o: _Interval) -> _Interval:
        return _Interval(self.lo + o.lo, self.hi + o.hi)

    def __sub__(self, o: _Interval) -> _Interval:
        return _Interval(self.lo - o.hi, self.hi - o.lo)

    def __mul__(self, o: _Interval) -> _Interval:
        c = [self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi]
        return _Interval(min(c), max(c))

    def __truediv__(self, o: _Interval) -> _Interval:
        if o.lo <= 0 <= o.hi:
            raise _Unreadable("division by an interval holding zero")
        return self * _Interval(1 / o.hi, 1 / o.lo)

    def __pow__(self, o: _Interval) -> _Interval:
        if self.lo < 0:
            if self.lo == self.hi and o.lo == o.hi and float(o.lo).is_integer():
                v = self.lo ** int(o.lo)
                return _Interval(v, v)
            raise _Unreadable("a power of a negative number")
        c = [a**b for a in (self.lo, self.hi) for b in (o.lo, o.hi)]
        return _Interval(min(c), max(c))

    def neg(self) -> _Interval:
        return _Interval(-self.hi, -self.lo)

    def sqrt(self) -> _Interval:
        if self.lo < 0:
            raise _Unreadable("a root of a negative number")
        return _Interval(math.sqrt(self.lo), math.sqrt(self.hi))


EXACT_DIGITS = 3
"""An operand written as a whole number or with at most this many significant digits is
taken as exact (a count, a rate, a price as given); a longer one as rounded to its last written digit (a
value the reply carried with more digits than it wrote), as is every stated result."""


def _significant(digits: str) -> int:
    return len(digits.replace(".", "").lstrip("0").rstrip("0" if "." not in digits else "")) or 1


def _number(
    text: str,
    percent_as_fraction: bool,
    rounded: bool,
    exact: frozenset[float],
    point: bool = False,
) -> tuple[_Interval, float]:
    """The interval a written number stands for, and its value: exact, or (``rounded``)
    from half a unit of its last digit toward zero to a whole unit away from it (a result
    rounded, or cut after its last digit: 6.89% for 6.8966%)."""
    percent = text.endswith("%")
    digits = text.rstrip("%").replace(",", "")
    value = float(digits)
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    scale = 0.01 if percent and percent_as_fraction else 1.0
    if not rounded and (
        decimals == 0 or _significant(digits) <= EXACT_DIGITS or value in exact or point
    ):
        return _Interval(value * scale, value * scale), value * scale
    unit = 10.0**-decimals
    zeros = len(digits) - len(digits.rstrip("0"))
    if decimals == 0 and value and zeros >= 3:
        # 44,000: shown to the thousand, rounded (a thousands figure is not cut: 7,000 is
        # no result of 50,000 x 0.15), and strictly within half a thousand (7,500 rounds up)
        unit = 10.0**zeros
        half = 0.5 * unit * (1 - 1e-6)
        return _Interval((value - half) * scale, (value + half) * scale), value * scale
    # the sign is applied by the parser (a negated interval): away from zero is upward
    return _Interval((value - 0.5 * unit) * scale, (value + unit) * scale), value * scale


class _Parser:
    def __init__(
        self,
        text: str,
        percent_as_fraction: bool,
        rounded: bool = False,
        exact: frozenset[float] = frozenset(),
        results: tuple[float, ...] = (),
        point: bool = False,
    ) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                raise _Unreadable(f"unreadable at {text[pos : pos + 10]!r}")
            kind = "num" if m.group("num") else "op"
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0
        self.percent = percent_as_fraction
        self.rounded = rounded
        self.exact = exact
        self.results = results
        self.point = point
        self.values: list[float] = []
        self.fresh: list[tuple[str, float]] = []

    def peek(self) -> str | None:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        if self.i >= len(self.tokens):
            raise _Unreadable("the expression ends early")
        token = self.tokens[self.i]
        self.i += 1
        return token

    def parse(self) -> _Interval:
        value = self.expr()
        if self.i != len(self.tokens):
            raise _Unreadable("text after the expression")
        return value

    def expr(self) -> _Interval:
        value = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            value = value + self.term() if op == "+" else value - self.term()
        return value

    def term(self) -> _Interval:
        value = self.unary()
        while self.peek() in ("*", "/"):
            op = self.take()[1]
            value = value * self.unary() if op == "*" else value / self.unary()
        return value

    def unary(self) -> _Interval:
        if self.peek() == "-":
            self.take()
            return self.unary().neg()
        if self.peek() == "+":
            self.take()
            return self.unary()
        return self.power()

    def power(self) -> _Interval:
        base = self.primary()
        if self.peek() in ("^", "**"):
            self.take()
            return base ** self.unary()
        return base

    def primary(self) -> _Interval:
        kind, text = self.take()
        if kind == "num":
            plain = float(text.rstrip("%").replace(",", ""))
            chained = any(math.isclose(plain, r, rel_tol=1e-9) for r in self.results)
            interval, value = _number(
                text, self.percent, self.rounded or chained, self.exact, self.point
            )
            self.values.append(value)
            if not chained:
                self.fresh.append((text, value))
            return interval
        if text == "(":
            inner = self.expr()
            if self.take()[1] != ")":
                raise _Unreadable("unbalanced parenthesis")
            return inner
        if text in ("sqrt", "√"):
            return self.primary().sqrt()
        raise _Unreadable(f"unexpected {text!r}")


def _normalise(line: str) -> str:
    for pattern, repl in _LATEX:
        line = pattern.sub(repl, line)
    for _ in range(3):
        line = _FRAC.sub(r"((\1)/(\2))", line)
    line = line.replace("{", "(").replace("}", ")")
    for sup, repl in _SUPERSCRIPT.items():
        line = line.replace(sup, repl)
    line = _YEARS.sub(" years ", line)
    line = line.replace("−", "-").replace("–", "-").replace("÷", "/")
    line = line.replace("×", "*").replace("·", "*").replace("⋅", "*")
    line = _CURRENCY.sub("", line)
    line = _TIMES_X.sub(" * ", line).replace("sqrt", "√")
    return line.replace("**", "^")


def _is_expression(text: str) -> bool:
    stripped = text.strip()
    return bool(stripped) and _EXPR_CHARS.sub("", stripped) == "" and bool(re.search(r"\d", text))


def _suffix(text: str) -> str:
    """The longest arithmetic expression that ends ``text`` (a chain's first side)."""
    best = ""
    for start in range(len(text) - 1, -1, -1):
        if _EXPR_CHARS.sub("", text[start:].strip()):
            break
        best = text[start:]
    best = best.lstrip(" ,")
    best = best.lstrip("*/^+)").strip()
    while best.startswith("(") and best.count("(") > best.count(")"):
        best = best[1:].strip()
    return best


def _prefix(text: str) -> str:
    """The number or expression that begins ``text`` (a chain's last side)."""
    m = re.match(
        r"\s*-?\s*(?:" + _NUMBER + r")(?:\s*[-+*/^]\s*(?:\(?\s*" + _NUMBER + r"\)?))*", text
    )
    if not m:
        return ""
    found = m.group(0)
    if re.match(r"\s*[-+*/^(√]", text[m.end() :]):
        return ""  # the expression goes on past the line ("= 2 × " and a line break)
    return found.strip().rstrip(",.")


def _evaluations(
    side: str, rounded: bool, exact: frozenset[float], results: tuple[float, ...]
) -> list[tuple[_Interval, list[float], list[tuple[str, float]]]]:
    """The side's values under both readings of a percent sign (one when it has none), each
    with its operands' values and the operands no earlier result gives."""
    out = []
    for fraction in (True, False) if "%" in side else (True,):
        parser = _Parser(side, fraction, rounded, exact, results)
        out.append((parser.parse(), parser.values, parser.fresh))
    return out


def _point(side: str) -> float:
    """The side's value with every number as written (a percent as its fraction)."""
    return _Parser(side, True, point=True).parse().mid


def _agree(left: _Interval, right: _Interval, slack: float) -> bool:
    pad = slack * max(abs(left.mid), abs(right.mid))
    return left.lo - pad <= right.hi and right.lo - pad <= left.hi


def _lines(text: str) -> list[tuple[int, str]]:
    """The reply's lines, a line that begins with ``=`` joined to the one before."""
    out: list[tuple[int, str]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"^\s*(?:[-*•]|\d+[.)]|#+)\s+", "", raw).strip()
        if out and line.startswith(("=", "≈")):
            out[-1] = (out[-1][0], f"{out[-1][1]} {line}")
        else:
            out.append((number, line))
    return out


def _from_earlier(text: str, value: float, earlier: tuple[float, ...]) -> bool:
    """Whether an operand is a result stated before, within its shown digits."""
    digits = text.rstrip("%").replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    unit = 0.5 * 10.0**-decimals * (0.01 if text.endswith("%") else 1.0) if decimals else 0.0
    return any(abs(value - r) <= unit + 1e-9 * abs(r) for r in earlier)


def check_arithmetic(text: str, exact: Iterable[float] = ()) -> ArithmeticCheck:
    """Every stated calculation of ``text`` checked; the first wrong step named. Never
    raises (a side that cannot be read is skipped). ``exact``: numbers of the document
    (an operand equal to one is exact whatever its digits)."""
    written = frozenset(float(v) for v in exact)
    checked = 0
    results: list[float] = []
    operands: list[float] = []
    stated_results: list[float] = []
    inputs: list[Operand] = []
    stated_points: list[float] = []
    for number, line in _lines(text or ""):
        if len(line) > MAX_LINE or not _EQUALS.search(line):
            continue
        normal = _normalise(line.replace("**", "^").replace("\\*", "*"))
        sides = _EQUALS.split(normal)
        if len(sides) < 2:
            continue
        cut = [_suffix(sides[0]), *[s.strip() for s in sides[1:-1]], _prefix(sides[-1])]
        # a side after one that writes numbers (read or not) rewrites it: no inputs there
        inputs_taken = False
        rewrites = [any(ch.isdigit() for ch in "".join(cut[:i])) for i in range(len(cut))]
        whole = [sides[0].strip() == cut[0], *([True] * (len(sides) - 2)), False]
        for i in range(len(cut) - 1):
            if checked >= MAX_STEPS:
                return ArithmeticCheck(
                    checked, None, tuple(operands), tuple(stated_results), tuple(inputs)
                )
            left, right = cut[i], cut[i + 1]
            if not (_is_expression(left) and _is_expression(right)):
                continue
            has_op = [bool(_OPERATOR.search(s.lstrip(" -"))) for s in (left, right)]
            if not any(has_op):
                continue
            if (not whole[i] and not has_op[0]) or (
                not whole[i + 1] and not has_op[1] and i + 1 < len(cut) - 1
            ):
                continue
            try:
                known = tuple(results)
                lefts = _evaluations(left, not has_op[0], written, known)
                rights = _evaluations(right, not has_op[1], written, known)
            except (_Unreadable, ArithmeticError, ValueError, OverflowError):
                continue
            used = [v for _, values, _ in lefts + rights for v in values]
            chained = any(any(math.isclose(v, r, rel_tol=1e-9) for r in results) for v in used)
            slack = CHAINED_SLACK if chained else REL_SLACK
            checked += 1
            if not any(_agree(a, b, slack) for a, _, _ in lefts for b, _, _ in rights):
                shown = f"{left} = {right}"
                computed, stated = (left, right) if has_op[0] else (right, left)
                return ArithmeticCheck(
                    checked, Step(shown, _point(stated), _point(computed), number)
                )
            before = (*results, *stated_points)
            results.extend(b.mid for b, _, _ in rights)
            results.extend(a.mid for a, _, _ in lefts)
            # the inputs' earlier results: the sides as stated too (a rounded result's
            # interval has its mid above it)
            for side in (left, right):
                with contextlib.suppress(_Unreadable, ArithmeticError, ValueError, OverflowError):
                    stated_points.append(_point(side))
            for side, values, op in ((left, lefts, has_op[0]), (right, rights, has_op[1])):
                if op:
                    operands.extend(values[0][1])
                    if not inputs_taken and not rewrites[i if side is left else i + 1]:
                        inputs.extend(
                            Operand(text, value, f"{left} = {right}", before, number)
                            for text, value in values[0][2]
                            if not _from_earlier(text, value, before)
                        )
                    inputs_taken = True
                else:
                    stated_results.append(_point(side))
    return ArithmeticCheck(checked, None, tuple(operands), tuple(stated_results), tuple(inputs))


def operands_of(text: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The numbers ``text``'s checked calculations compute with, and the results they state."""
    check = check_arithmetic(text)
    return check.operands, check.results
