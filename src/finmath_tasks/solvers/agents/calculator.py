"""The calculator agent's arithmetic: a small, safe evaluator of model-written equations.

The model lists the calculations of its reasoning as a JSON list of
``<expression>=<result>`` strings (numbers, ``+ - * /`` and parentheses only; plain
``expression = result`` lines are read too); :func:`check_equations` evaluates each
expression itself and says which results the model got wrong, so the corrected
calculations can go back to the model.

The evaluator is a tokenizer and a recursive-descent parser over this grammar, never
Python ``eval``, ``ast`` or the sandbox::

    expr    := term (("+" | "-") term)*
    term    := unary (("*" | "/") unary)*
    unary   := ("+" | "-") unary | primary
    primary := NUMBER | "(" expr ")"

A NUMBER is digits with an optional decimal part, optionally with thousands separators
("1,452.4") and an optional trailing percent sign, which divides it by 100. Anything
else is refused with a reason (:class:`CalculationError`): names (``x``, ``__import__``),
attribute access (``a.b``), exponentiation (``**``, ``^``), other operators, calls,
an expression longer than :data:`MAX_EXPRESSION_CHARS`, more than :data:`MAX_TOKENS`
tokens, parentheses or signs nested deeper than :data:`MAX_DEPTH`, a number with more
than :data:`MAX_NUMBER_DIGITS` digits, an intermediate result whose magnitude exceeds
:data:`MAX_MAGNITUDE`, and division by zero. The work is linear in the (bounded) input.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from finmath_tasks.solvers.agents.answers import last_json_object

MAX_EXPRESSION_CHARS = 400
MAX_TOKENS = 200
MAX_DEPTH = 30
MAX_NUMBER_DIGITS = 30
MAX_MAGNITUDE = 1e30
MAX_EQUATIONS = 40
"""At most this many equation lines of one reply are checked."""
MAX_REPLY_CHARS = 20_000
"""Only the first this many characters of a reply are read for equations."""

RESULT_REL_TOL = 1e-9
"""A claimed result equal to the computed one within this (relative) is correct as well."""


class CalculationError(ValueError):
    """An expression the calculator refuses; ``str()`` is the reason."""


# Characters that mean the same operator, as models write them.
_NORMALISE = str.maketrans(
    {"\u2212": "-", "\u2013": "-", "\u00d7": "*", "\u00f7": "/", "\u2009": "", "\u00a0": " "}
)
_NUMBER = re.compile(r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?%?|\.[0-9]+%?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


@dataclass(frozen=True)
class Token:
    kind: str
    """"num", "op" (+ - * /), "(" or ")"."""
    text: str
    value: float = 0.0


def tokenize(expression: str) -> list[Token]:
    """The tokens of ``expression``; refuses anything outside the grammar, with a reason."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculationError(
            f"expression too long ({len(expression)} characters; limit {MAX_EXPRESSION_CHARS})"
        )
    text = expression.translate(_NORMALISE)
    tokens: list[Token] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if len(tokens) >= MAX_TOKENS:
            raise CalculationError(f"too many tokens (limit {MAX_TOKENS})")
        if ch in "+-/()":
            tokens.append(Token("op" if ch in "+-/" else ch, ch))
            i += 1
            continue
        if ch == "*":
            if text.startswith("**", i):
                raise CalculationError("exponentiation (**) is not allowed")
            tokens.append(Token("op", "*"))
            i += 1
            continue
        if ch == "^":
            raise CalculationError("exponentiation (^) is not allowed")
        if ch in "0123456789.":
            m = _NUMBER.match(text, i)
            if m is None:
                raise CalculationError(f"malformed number at position {i}")
            end = m.end()
            if end < len(text) and (text[end].isalnum() or text[end] in "._,"):
                if text[end] == ".":
                    raise CalculationError(f"attribute access or malformed number at position {i}")
                raise CalculationError(f"malformed number or name at position {i}")
            tokens.append(Token("num", m.group(0), _number_value(m.group(0))))
            i = end
            continue
        name = _NAME.match(text, i)
        if name is not None:
            shown = name.group(0)[:20]
            if name.end() < len(text) and text[name.end()] == ".":
                raise CalculationError(f"attribute access is not allowed ({shown}.)")
            raise CalculationError(f"names are not allowed ({shown!r})")
        raise CalculationError(f"character {ch!r} is not allowed (numbers, + - * / ( ) only)")
    if not tokens:
        raise CalculationError("empty expression")
    return tokens


def _number_value(text: str) -> float:
    digits = text.replace(",", "").rstrip("%")
    if len(digits.replace(".", "")) > MAX_NUMBER_DIGITS:
        raise CalculationError(f"number with too many digits (limit {MAX_NUMBER_DIGITS})")
    value = float(digits)
    if text.endswith("%"):
        value /= 100
    return _bounded(value)


def _bounded(value: float) -> float:
    if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
        raise CalculationError(f"number too large (magnitude limit {MAX_MAGNITUDE:g})")
    return value


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> Token:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CalculationError(f"nesting too deep (limit {MAX_DEPTH})")

    def expr(self) -> float:
        value = self.term()
        while (token := self.peek()) is not None and token.text in "+-" and token.kind == "op":
            self.take()
            right = self.term()
            value = _bounded(value + right if token.text == "+" else value - right)
        return value

    def term(self) -> float:
        value = self.unary()
        while (token := self.peek()) is not None and token.text in "*/" and token.kind == "op":
            self.take()
            right = self.unary()
            if token.text == "*":
                value = _bounded(value * right)
            else:
                if right == 0:
                    raise CalculationError("division by zero")
                value = _bounded(value / right)
        return value

    def unary(self) -> float:
        token = self.peek()
        if token is not None and token.kind == "op" and token.text in "+-":
            self.take()
            self.enter()
            value = self.unary()
            self.depth -= 1
            return -value if token.text == "-" else value
        return self.primary()

    def primary(self) -> float:
        token = self.peek()
        if token is None:
            raise CalculationError("expression ends where a number was expected")
        if token.kind == "num":
            self.take()
            return token.value
        if token.kind == "(":
            self.take()
            self.enter()
            value = self.expr()
            self.depth -= 1
            closing = self.peek()
            if closing is None or closing.kind != ")":
                raise CalculationError("unbalanced parentheses: missing ')'")
            self.take()
            return value
        raise CalculationError(f"unexpected {token.text!r} where a number was expected")


def evaluate(expression: str) -> float:
    """The value of an arithmetic ``expression``; :class:`CalculationError` says why not."""
    parser = _Parser(tokenize(expression))
    value = parser.expr()
    if parser.peek() is not None:
        extra = parser.peek()
        assert extra is not None
        raise CalculationError(f"unexpected {extra.text!r} after a complete expression")
    return value


def safe_evaluate(expression: str) -> tuple[float | None, str]:
    """(value, "") or (None, reason); never raises."""
    try:
        return evaluate(expression), ""
    except CalculationError as e:
        return None, str(e)
    except Exception as e:  # a bug of ours must not end the evaluation
        return None, f"calculator failure: {type(e).__name__}: {e}"


# --- equations in a model's reply ------------------------------------------------------

_BULLET = re.compile(r"^\s*(?:[-*\u2022]\s+|\d{1,2}[.)]\s+|`+)")
_CLAIMED = re.compile(r"^\s*(-?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?|-?\.[0-9]+)\s*(%?)")


@dataclass(frozen=True)
class EquationCheck:
    """One equation line, evaluated."""

    expression: str
    claimed: str
    """The result the model wrote (may be empty)."""
    value: float | None
    """Our value of the expression; None when refused."""
    status: str
    """"correct", "incorrect", "no_result" (nothing claimed) or "refused"."""
    reason: str = ""
    text: str = ""
    """The equation as the model wrote it (with every ``=`` of a chain)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def format_value(value: float) -> str:
    """A computed value as the model should read it: up to 6 decimals, no trailing zeros."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def _claimed_matches(claimed: str, value: float) -> bool:
    m = _CLAIMED.match(claimed)
    if m is None:
        return False
    number = m.group(1).replace(",", "")
    written = float(number) / (100 if m.group(2) else 1)
    if math.isclose(written, value, rel_tol=RESULT_REL_TOL, abs_tol=1e-12):
        return True
    # the claimed result is the true value rounded to the decimals it shows
    decimals = len(number.split(".", 1)[1]) if "." in number else 0
    return abs(written - value) <= 0.5 * 10 ** (-decimals) * (1 + 1e-9)


def equation_lines(reply: str) -> tuple[list[str], bool]:
    """The equations of a calculator reply and whether they came from its JSON list.

    The prompt asks for ``{"answer": ["expr=result", "expr", ...]}`` (the paper's
    format): the last such object's list wins, each entry one equation (an entry without
    ``=`` is an expression whose value we compute). Without that object, every line of
    the reply that holds ``=`` is read as ``expression = result`` (prose lines skipped).
    """
    text = reply[:MAX_REPLY_CHARS]
    try:
        obj = last_json_object(text, "answer")
    except Exception:
        obj = None
    if obj is not None and isinstance(obj.get("answer"), list):
        items = [item for item in obj["answer"] if isinstance(item, str | int | float)]
        return [str(item).strip() for item in items if str(item).strip()], True
    return text.splitlines(), False


def check_equations(reply: str) -> list[EquationCheck]:
    """Every equation of ``reply`` (:func:`equation_lines`), evaluated; never raises.

    From a JSON list every entry counts; from plain lines, lines without ``=`` are
    ignored. A leading bullet or list number is dropped; the expression is the text
    before the first ``=``, the claimed result the text after the last one. At most
    :data:`MAX_EQUATIONS` equations are read.
    """
    checks: list[EquationCheck] = []
    lines, from_json = equation_lines(reply)
    for raw in lines:
        if len(checks) >= MAX_EQUATIONS:
            break
        line = raw.strip().strip("`").strip()
        if line.startswith("```") or ("=" not in line and not from_json):
            continue
        line = _BULLET.sub("", line) if not from_json else line
        expression, _, rest = line.partition("=")
        claimed = rest.rsplit("=", 1)[-1].strip()
        expression = expression.strip()
        if not expression:
            continue
        value, reason = safe_evaluate(expression)
        if value is None:
            checks.append(EquationCheck(expression, claimed, None, "refused", reason, line))
        elif not claimed:
            checks.append(EquationCheck(expression, claimed, value, "no_result", text=line))
        elif _claimed_matches(claimed, value):
            checks.append(EquationCheck(expression, claimed, value, "correct", text=line))
        else:
            checks.append(EquationCheck(expression, claimed, value, "incorrect", text=line))
    return checks


def render_checks(checks: list[EquationCheck]) -> str:
    """The checked calculations as the model reads them back, one per line."""
    lines = []
    for c in checks:
        if c.status == "refused":
            lines.append(f"{c.expression} = {c.claimed}  [not checked: {c.reason}]")
        elif c.status == "correct":
            lines.append(f"{c.expression} = {c.claimed}  [correct]")
        elif c.status == "no_result":
            assert c.value is not None
            lines.append(f"{c.expression} = {format_value(c.value)}  [computed]")
        else:
            assert c.value is not None
            lines.append(
                f"{c.expression} = {format_value(c.value)}  "
                f"[corrected: you wrote {c.claimed}, the correct result is {format_value(c.value)}]"
            )
    return "\n".join(lines)


# --- where an extracted equation's numbers come from ------------------------------------

SOURCE_CONSTANTS = frozenset(Decimal(n) for n in ("1", "100", "1000", "1000000", "1000000000"))
"""Operands an equation may use without the analyst writing them: 1 (a ratio's "- 1"),
100 (a percentage) and the scale factors of thousand, million and billion."""
SCALE_WORDS = {"thousand": 3, "million": 6, "millions": 6, "billion": 9, "billions": 9}
NUMBER_WORDS = {
    w: Decimal(i)
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
}
"""Small numbers a text may spell out ("the average of the two years" divides by 2)."""
_NUMBER_WORD = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)
_SOURCE_NUMBER = re.compile(
    r"(?<![0-9.])(?:[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(?:\.[0-9]+)?|(?<![0-9])\.[0-9]+"
)
_AFTER = re.compile(r"\s*(%|percent\b|thousand\b|millions?\b|billions?\b)", re.IGNORECASE)


def _decimal(text: str) -> Decimal:
    return Decimal(text.replace(",", "")).normalize()


def source_numbers(text: str) -> set[Decimal]:
    """The numbers a text states, each in every form an equation may write it in.

    A number is digits with an optional decimal part, thousands separators allowed
    ("4,454.7" is 4454.7; "2017,2018" is two numbers); written values compare equal
    whatever their trailing zeros (12.50 is 12.5); the sign is not part of it. A number
    followed by "%" or "percent" is also its fraction (41.72% gives 41.72 and 0.4172);
    one followed by "thousand", "million" or "billion" is also the scaled value (1.3
    million gives 1.3 and 1300000); the words "zero" to "twelve" are their numbers.
    """
    found: set[Decimal] = {NUMBER_WORDS[m.group(1).lower()] for m in _NUMBER_WORD.finditer(text)}
    for m in _SOURCE_NUMBER.finditer(text):
        try:
            value = _decimal(m.group(0))
        except InvalidOperation:
            continue
        found.add(value)
        after = _AFTER.match(text, m.end())
        if after is not None:
            word = after.group(1).lower()
            if word in ("%", "percent"):
                found.add((value / 100).normalize())
            else:
                found.add(value.scaleb(SCALE_WORDS[word]).normalize())
    return found


def _numbers_of(expression: str) -> list[str]:
    """The numbers of an expression as written (thousands separators and "%" kept)."""
    text = expression.translate(_NORMALISE)
    return [m.group(0) for m in _NUMBER.finditer(text)]


def _written_value(number: str) -> Decimal:
    value = _decimal(number.rstrip("%"))
    return (value / 100).normalize() if number.endswith("%") else value


def _rounds_to(written: Decimal, value: Decimal) -> bool:
    """``written`` is ``value`` as written to ``written``'s decimal places (or equal)."""
    exponent = written.as_tuple().exponent
    places = -exponent if isinstance(exponent, int) and exponent < 0 else 0
    return abs(written - value) <= Decimal(5).scaleb(-places - 1)


@dataclass(frozen=True)
class EquationSource:
    """Whether one extracted equation's operands come from the analyst's output."""

    equation: str
    unsourced: tuple[str, ...]
    """Operands (as written) found neither in the analyst's output, nor among the results
    of the earlier equations of the reply, nor in :data:`SOURCE_CONSTANTS`."""
    in_examples: bool
    """Every unsourced operand is a number of the extraction prompt's examples (copied)."""

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "unsourced": list(self.unsourced)}


def equation_sources(
    checks: list[EquationCheck], analyst_output: str, examples: str = ""
) -> list[EquationSource]:
    """For each extracted equation, its operands that do not occur in ``analyst_output``.

    The rule: an operand is a number of the expression before the equation's first
    ``=``; it is sourced when :func:`source_numbers` finds its value in the analyst's
    output, when it is one of :data:`SOURCE_CONSTANTS`, or when it is a result of an
    earlier equation of the same reply (a number after one of its ``=``, or the value we
    computed for it), written to any number of decimals it rounds to. The numbers after
    an ``=`` are results (the calculator checks them), never unsourced. ``examples``:
    the examples' text of the extraction prompt, to tell a copy from an invention.
    The rule reads where a number comes from, not its role: years of the output used
    as operands count as sourced.
    """
    source = source_numbers(analyst_output)
    example_numbers = source_numbers(examples) if examples else set()
    results: list[Decimal] = []
    out: list[EquationSource] = []
    for check in checks:
        text = check.text or (
            f"{check.expression}={check.claimed}" if check.claimed else check.expression
        )
        parts = text.translate(_NORMALISE).split("=")
        unsourced: list[str] = []
        for number in _numbers_of(parts[0]):
            try:
                value = _written_value(number)
            except InvalidOperation:
                unsourced.append(number)
                continue
            if value in source or value in SOURCE_CONSTANTS:
                continue
            if any(_rounds_to(value, r) for r in results):
                continue
            unsourced.append(number)
        copied = bool(unsourced) and all(
            _written_value(n) in example_numbers for n in unsourced if _is_number(n)
        )
        out.append(EquationSource(text, tuple(unsourced), copied))
        for part in parts[1:]:
            for number in _numbers_of(part):
                if _is_number(number):
                    results.append(_written_value(number))
        if check.value is not None:
            results.append(Decimal(repr(check.value)))
    return out


def _is_number(text: str) -> bool:
    try:
        _written_value(text)
    except InvalidOperation:
        return False
    return True
