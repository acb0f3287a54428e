"""TAT-QA's gold derivations: the arithmetic expression each arithmetic question carries.

A derivation is written by the annotators in plain arithmetic over the document's
figures: ``(73,260-57,768)/57,768``, ``$5,121 +$(-5,946) + $17,592``,
``[(166+178)/2] - [(57+44)/2]``, ``(1-15%)*($2.2/15%)``, ``60.3 million + 32,137
thousand``. Written forms: thousands separators, a currency sign (ignored), a ``%``
(x0.01), a scale word after a number, ``[ ]`` as parentheses, ``x``/``×``/``*`` for a
product, ``÷`` for a quotient, and a number alone in parentheses, which some
annotators write for a negative figure as the report does (``3 + (13) + 26`` is 16).
Which reading the annotator meant is decided by the published answer
(:func:`reading_of`).

:func:`evaluate` returns the value with every intermediate value (each operation's
result, in evaluation order), which the variants' sign rule compares.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9}

_TOKEN = re.compile(
    r"\s*(?:(?P<number>\d[\d,]*(?:\.\d+)?|\.\d+)(?P<percent>\s*%)?"
    r"(?:\s*(?P<scale>thousand|million|billion)\b)?|(?P<op>[-+*/x×÷()\[\]−–]))",
    re.IGNORECASE,
)


class DerivationError(ValueError):
    """A derivation that is not plain arithmetic over written numbers."""


@dataclass(frozen=True)
class Leaf:
    """A number written in the derivation."""

    start: int
    end: int
    """The span of its digits in the derivation text."""
    text: str
    value: float
    """The magnitude as written (5.3 for "5.3%"), before its factor."""
    decimals: int
    factor: float
    """0.01 for a percent, a scale word's factor, else 1."""
    alone: bool = False
    """Written alone in parentheses ("(13)"): negative in the negative reading."""


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    leaf: Leaf | None = None


def tokenize(text: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    at = 0
    body = text.replace("$", " ").replace("€", " ").replace("£", " ")
    while at < len(body):
        if body[at:].strip() == "":
            break
        m = _TOKEN.match(body, at)
        if m is None or m.end() == at:
            raise DerivationError(f"derivation {text!r}: cannot read {body[at:].strip()[:20]!r}")
        if m.group("number"):
            digits = m.group("number")
            plain = digits.replace(",", "")
            decimals = len(plain.split(".")[1]) if "." in plain else 0
            factor = 0.01 if m.group("percent") else 1.0
            if m.group("scale"):
                factor *= SCALE_WORDS[m.group("scale").lower()]
            leaf = Leaf(m.start("number"), m.end("number"), digits, float(plain), decimals, factor)
            tokens.append(_Tok("num", digits, leaf))
        else:
            op = m.group("op").lower()
            op = {"[": "(", "]": ")", "x": "*", "×": "*", "÷": "/", "−": "-", "–": "-"}.get(op, op)
            tokens.append(_Tok(op, op))
        at = m.end()
    return tokens


@dataclass
class Node:
    op: str
    """"num", "neg", "+", "-", "*", "/"."""
    children: tuple[Node, ...] = ()
    leaf: Leaf | None = None


class _Parser:
    def __init__(self, tokens: Sequence[_Tok], text: str) -> None:
        self.tokens = list(tokens)
        self.at = 0
        self.text = text

    def peek(self) -> str | None:
        return self.tokens[self.at].kind if self.at < len(self.tokens) else None

    def take(self) -> _Tok:
        if self.at >= len(self.tokens):
            raise DerivationError(f"derivation {self.text!r} ends early")
        token = self.tokens[self.at]
        self.at += 1
        return token

    def expression(self) -> Node:
        node = self.term()
        while self.peek() in ("+", "-"):
            op = self.take().kind
            node = Node(op, (node, self.term()))
        return node

    def term(self) -> Node:
        node = self.unary()
        while self.peek() in ("*", "/", "(", "num"):
            # "(a)(b)" and "2(a)" are products
            op = self.take().kind if self.peek() in ("*", "/") else "*"
            node = Node(op, (node, self.unary()))
        return node

    def unary(self) -> Node:
        if self.peek() == "-":
            self.take()
            return Node("neg", (self.unary(),))
        if self.peek() == "+":
            self.take()
            return self.unary()
        return self.atom()

    def atom(self) -> Node:
        token = self.take()
        if token.kind == "num" and token.leaf is not None:
            return Node("num", leaf=token.leaf)
        if token.kind == "(":
            start = self.at
            inner = self.expression()
            if self.take().kind != ")":
                raise DerivationError(f"derivation {self.text!r}: unbalanced parentheses")
            if self.at - start == 2 and inner.op == "num" and inner.leaf is not None:
                leaf = inner.leaf
                return Node("num", leaf=Leaf(**{**leaf.__dict__, "alone": True}))
            return inner
        raise DerivationError(f"derivation {self.text!r}: unexpected {token.text!r}")


def parse(text: str) -> Node:
    """The derivation's expression tree (:class:`DerivationError` when it is none)."""
    parser = _Parser(tokenize(text), text)
    if parser.peek() is None:
        raise DerivationError(f"derivation {text!r} is empty")
    node = parser.expression()
    if parser.peek() is not None:
        raise DerivationError(f"derivation {text!r}: unexpected {parser.take().text!r}")
    return node


def leaves(node: Node) -> list[Leaf]:
    if node.op == "num" and node.leaf is not None:
        return [node.leaf]
    return [leaf for child in node.children for leaf in leaves(child)]


Values = dict[tuple[int, int], float]
"""A leaf's span -> the magnitude to use in its place (the new values)."""


def evaluate(
    node: Node,
    negative_alone: bool = False,
    values: Values | None = None,
    rounding: Callable[[float], float] | None = None,
) -> tuple[float, list[float]]:
    """(the value, every intermediate value in evaluation order, the leaves' included).

    ``values`` replaces leaves' magnitudes by span; ``negative_alone`` reads a number
    alone in parentheses as negative; ``rounding``, where given, is applied to each
    operation's result but the last (the error causes' re-run of a gold rounded step by
    step).
    Division by zero raises ZeroDivisionError."""
    trace: list[float] = []

    def walk(n: Node) -> float:
        if n.op == "num" and n.leaf is not None:
            leaf = n.leaf
            magnitude = (values or {}).get((leaf.start, leaf.end), leaf.value)
            value = magnitude * leaf.factor
            if leaf.alone and negative_alone:
                value = -value
        elif n.op == "neg":
            value = -walk(n.children[0])
        else:
            a, b = walk(n.children[0]), walk(n.children[1])
            if n.op == "+":
                value = a + b
            elif n.op == "-":
                value = a - b
            elif n.op == "*":
                value = a * b
            else:
                value = a / b
            if rounding is not None and n is not node:
                value = rounding(value)
        trace.append(value)
        return value

    result = walk(node)
    return result, trace


@dataclass(frozen=True)
class Reading:
    """How the published answer follows from the derivation's value."""

    negative_alone: bool
    factor: float
    """The answer is ``round(value * factor, decimals)`` (100: a fraction given in percent)."""
    decimals: int


def answer_decimals(answer: float | int) -> int:
    text = repr(float(answer)) if isinstance(answer, float) else str(answer)
    if "e" in text or "E" in text:
        return 10
    return len(text.split(".")[1].rstrip("0")) if "." in text else 0


def rounded(value: float, decimals: int) -> float:
    """``value`` at ``decimals`` places as the annotators rounded: Python's ``round`` (it
    reproduces every published answer of dev and test that a reading reproduces at all,
    0.295 -> 0.29 among them)."""
    return round(value, decimals)


def reading_of(node: Node, answer: float) -> Reading | None:
    """The reading that reproduces ``answer`` (None: none does).

    The annotators round to 2 decimal places (a whole value written whole), some to
    fewer or more: the precision is 2 when the answer is the value at 2 places, else the
    answer's own written places. A fraction may be given in percent (x100)."""
    written = answer_decimals(answer)
    for negative_alone in (False, True):
        if negative_alone and not any(leaf.alone for leaf in leaves(node)):
            continue
        try:
            value, _ = evaluate(node, negative_alone)
        except ZeroDivisionError:
            return None
        for factor in (1.0, 100.0):
            for decimals in dict.fromkeys((max(2, written), written)):
                if math.isclose(rounded(value * factor, decimals), answer, abs_tol=1e-9):
                    return Reading(negative_alone, factor, decimals)
    return None


def rewrite(text: str, spans: Sequence[tuple[int, int, str]]) -> str:
    out, at = [], 0
    for start, end, new in sorted(spans):
        out += [text[at:start], new]
        at = end
    return "".join(out) + text[at:]
