"""Where a MathHay question's quantities are written, and which of them a fresh variant may
change (:mod:`finmath_tasks.tasks.mathhay.variants` draws and checks them).

A question's quantities are the numeric literals of its gold ``solve()``. Each is located
by value, at its written precision, in the question's relevant documents and its text:
the number itself ("13,485", "RMB24.42": a currency code glued to the digits is not part
of the number), a percent for a fraction ("15%" for ``0.15``), a scale word for the
amount ("5.9 million" for ``5900000``). A literal becomes a *variable* (drawn anew,
rewritten everywhere it is written, documents and question) when the documents write it
and its role can be told:

- one written form only (a literal written both as "15%" and "0.15" is held: two forms,
  perhaps two quantities);
- written once in the documents, or, written several times, with three or more
  significant digits (a restated figure: "13,485" in an earnings release's text and its
  tables is one quantity); a shorter number written twice ("6%", "75") is held, its
  occurrences may mean different things;
- no other literal reads the same written number;
- no number written beside it (its sentence, or the cells around it in a table flattened
  one cell a line) is a sum, difference, product, ratio or percent change of it and
  another number there, nor a share in percent of one of them in the other, nor is it part
  of a column or row total of such a table: changing it would leave that derived number
  stale;
- no literal of the program that the text does not write is derived from it by hand
  (``1.05`` for a varied 5%, ``24420`` for "24.42 billion" in millions).

Held values stay as written (the variant's record lists each with the reason); a
question with no variable is left out with the reasons. Literals that are conventions
(0, 1, 2, 3, 4, 12, 52, 100, 360, 365, 1000, a million, a billion) and four-digit
years are never varied.
"""

from __future__ import annotations

import ast
import bisect
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from finmath_tasks.variant_rules import sum_relations
from finmath_tasks.variants import (
    Written,
    close,
    factor_of,
    find_numbers,
    is_year,
    relation_of,
    significant_digits,
)

CONVENTIONS = frozenset(
    {0.0, 1.0, 2.0, 3.0, 4.0, 12.0, 52.0, 100.0, 360.0, 365.0, 1e3, 1e6, 1e9, 1e12}
)
"""Literal values never varied: units, counts of an average's terms, period conventions."""

_GLUED = re.compile(
    r"(?<![A-Za-z])(?:RMB|USD|US\$|EUR|GBP|JPY|CNY|HKD|HK\$|INR|Rs\.?|NT\$|A\$|C\$|S\$|R\$)(?=\d)"
)
"""Currency codes written against the digits ("RMB221.87"): blanked before the numbers
are found, so the number after them is found at its own offsets."""

_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n")

NEIGHBOURS = 8
"""A number on a line of its own (a table flattened one cell a line) is written together
with this many numbers before and after it."""
MAX_STRIDE = 8
"""Columns of a flattened table looked at for totals: every k-th number, k up to this."""
TOTAL_WINDOW = 12
"""Cells of such a column before and after the number looked at for a total over it."""
RELATED_DIGITS = 3
"""A number written beside a varied one is checked for being derived from it when it has
this many significant digits or more: a shorter one (a day, a note number, "10" beside 6
and 4) equals a sum of two numbers there by chance too often."""


def find_written(text: str) -> list[Written]:
    """The numbers of ``text`` (:func:`finmath_tasks.variants.find_numbers`), a currency
    code glued to the digits not hiding the number, four-digit years left out."""
    shadow = _GLUED.sub(lambda m: " " * len(m.group()), text)
    return [w for w in find_numbers(shadow) if not is_year(w)]


@dataclass(frozen=True)
class Literal:
    """One numeric literal of the program (byte offsets in its line, as ``ast`` gives)."""

    line: int
    start: int
    end: int
    value: float
    integer: bool


def literals(program: str) -> list[Literal]:
    """The program's numeric literals (booleans, exponents and ``range()`` arguments
    excluded), in source order."""
    tree = ast.parse(program)
    structural: set[int] = set()
    for node in ast.walk(tree):
        operands: list[ast.AST] = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            operands = [node.right]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            operands = list(node.args) if node.func.id in ("range", "round") else []
        for operand in operands:
            if isinstance(operand, ast.UnaryOp):
                operand = operand.operand
            structural.add(id(operand))
    found = [
        Literal(
            node.lineno,
            node.col_offset,
            int(node.end_col_offset or 0),
            float(node.value),
            isinstance(node.value, int),
        )
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and id(node) not in structural
        and not isinstance(node.value, bool)
        and isinstance(node.value, int | float)
        and node.end_lineno == node.lineno
    ]
    return sorted(found, key=lambda lit: (lit.line, lit.start))


@dataclass(frozen=True)
class Place:
    """A written number: in the question (``part`` 0) or relevant document ``part`` (1..3),
    at position ``index`` among that part's numbers."""

    part: int
    index: int
    written: Written


@dataclass
class Variable:
    """A quantity of the program and everywhere the question and documents write it."""

    value: float
    """The literal's absolute value."""
    literals: list[Literal]
    places: list[Place]
    factor: float
    """literal = |written| * factor."""

    @property
    def written(self) -> Written:
        return self.places[0].written

    @property
    def draw_decimals(self) -> int:
        if all(lit.integer for lit in self.literals) and self.factor >= 1:
            return 0  # a whole-number literal read from "19.0" stays whole
        return self.written.decimals

    def literal_text(self, written: float) -> str:
        """The program's literal for the new written value (its sign stays outside it)."""
        value = abs(written) * self.factor
        places = self.draw_decimals - round(math.log10(self.factor))
        value = round(value, max(places, 0))
        if all(lit.integer for lit in self.literals) and value == int(value):
            return str(int(value))
        return repr(float(value))


@dataclass
class Plan:
    variables: list[Variable] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    """Values kept as written, each with the reason."""
    reason: str | None = None
    """Why the question is left out (None: it has variables)."""


def _sentence_keys(text: str, numbers: Sequence[Written]) -> list[int]:
    """Each number's sentence (the count of sentence ends before it)."""
    ends = [m.start() for m in _SENTENCE_END.finditer(text)]
    return [bisect.bisect_left(ends, w.start) for w in numbers]


def _alone_on_line(text: str, w: Written) -> bool:
    start = text.rfind("\n", 0, w.start) + 1
    end = text.find("\n", w.end)
    line = text[start : len(text) if end < 0 else end]
    return len(line.strip()) <= len(w.text) + 6  # "$", "(", ")", "%" around a cell


def neighbours(
    text: str, numbers: Sequence[Written], k: int, sentences: Sequence[int] | None = None
) -> list[int]:
    """The numbers written together with number ``k`` of ``text``: its sentence, and for a
    number alone on its line (a flattened table cell) the :data:`NEIGHBOURS` numbers
    around it. ``sentences``: each number's sentence (computed when not given)."""
    sentences = _sentence_keys(text, numbers) if sentences is None else sentences
    near = {i for i, s in enumerate(sentences) if s == sentences[k] and i != k}
    if _alone_on_line(text, numbers[k]):
        near |= {i for i in range(k - NEIGHBOURS, k + NEIGHBOURS + 1) if 0 <= i < len(numbers)}
        near.discard(k)
    return sorted(near)


def derived_beside(
    text: str, numbers: Sequence[Written], k: int, sentences: Sequence[int] | None = None
) -> str | None:
    """Why number ``k`` cannot change alone (None: it can): a number written beside it is
    derived from it and another number there, or it is part (or the total) of a column
    or row total of a flattened table."""
    near = neighbours(text, numbers, k, sentences)
    for i in near:
        operands = [numbers[k].value, *(numbers[j].value for j in near if j != i)]
        relation = relation_of(numbers[i], operands, 1, min_digits=RELATED_DIGITS)
        if relation is None:
            continue
        result = relation.apply(operands)
        if result is not None and (result > 0) == (numbers[i].value > 0):
            return (
                f"{numbers[i].text!r} written beside it equals {relation.formula(operands)} "
                "(it would contradict the new value)"
            )
    share = _share_beside(numbers, k, near)
    if share is not None:
        return share
    if _alone_on_line(text, numbers[k]):
        for stride in range(1, MAX_STRIDE + 1):
            line = list(range(k % stride, len(numbers), stride))
            at = line.index(k)
            window = line[max(0, at - TOTAL_WINDOW) : at + TOTAL_WINDOW + 1]
            values = [numbers[i].value for i in window]
            decimals = [numbers[i].decimals for i in window]
            for total, parts in sum_relations(values, decimals):
                members = {window[total], *(window[p] for p in parts)}
                if k in members and len(parts) >= 2:
                    apart = "next to each other" if stride == 1 else f"{stride} numbers apart"
                    return (
                        f"the table's {numbers[window[total]].text!r} is a total over it "
                        f"(cells {apart}); it would no longer add up"
                    )
    return None


def _share_beside(numbers: Sequence[Written], k: int, near: Sequence[int]) -> str | None:
    """A number beside number ``k`` that is its share of another number there, or that
    number's share of it, in percent ("876 ... 5.0" of 17,336 tested), at its written
    precision (:data:`RELATED_DIGITS` significant digits or more), which
    :func:`finmath_tasks.variants.relation_of` does not look for."""
    x = numbers[k].value
    for i in near:
        share = numbers[i]
        digits = len(share.text.replace(",", "").replace(".", "").lstrip("-0"))
        if digits < RELATED_DIGITS or not 0 < abs(share.value) <= 100:
            continue
        for j in near:
            y = numbers[j].value
            if j == i or not y or not x:
                continue
            for a, b in ((x, y), (y, x)):
                if round(abs(a / b) * 100, share.decimals) == round(
                    abs(share.value), share.decimals
                ):
                    return (
                        f"{share.text!r} written beside it is {a:g} as a percentage of {b:g} "
                        "(it would contradict the new value)"
                    )
    return None


def _context(text: str, w: Written) -> tuple[str, ...]:
    """The two words before a number and the word after it (lower case): a short number
    written twice in the same words ("GOOG down 6%" in the text and its summary) is one
    quantity restated."""
    before = re.findall(r"[A-Za-z]+", text[max(0, w.start - 40) : w.start])[-2:]
    after = re.findall(r"[A-Za-z]+", text[w.end : w.end + 25])[:1]
    return tuple(word.lower() for word in (*before, "#", *after))


def _derived_by_hand(value: float, unwritten: Sequence[float]) -> float | None:
    """An unwritten literal of the program worked out by hand from ``value``, if any."""
    for other in unwritten:
        for derived in (
            value * 1000, value / 1000, value * 1e6, value / 1e6, value * 100, value / 100,
            1 + value, 1 - value, 1 + value / 100, 1 - value / 100,
        ):  # fmt: skip
            if close(abs(derived), abs(other), 1e-9):
                return other
    return None


def plan(question: str, documents: Sequence[str], program: str) -> Plan:
    """The question's variables, what is held and why, or why it is left out."""
    parts = [question, *documents]
    numbers = [find_written(text) for text in parts]
    places = [Place(p, i, w) for p, found in enumerate(numbers) for i, w in enumerate(found)]
    sentences = [_sentence_keys(text, found) for text, found in zip(parts, numbers, strict=True)]
    by_value: dict[float, list[Literal]] = {}
    for lit in literals(program):
        by_value.setdefault(abs(lit.value), []).append(lit)
    located: dict[float, list[tuple[Place, float]]] = {}
    for value in by_value:
        if value in CONVENTIONS:
            continue
        found = [(p, f) for p in places if (f := factor_of(value, p.written)) is not None]
        if found:
            located[value] = found
    unwritten = [v for v in by_value if v not in CONVENTIONS and v not in located]
    readers: dict[tuple[int, int], list[float]] = {}
    for value, found in located.items():
        for p, _ in found:
            readers.setdefault((p.part, p.index), []).append(value)
    held: list[str] = []
    variables: list[Variable] = []
    for value, found in located.items():
        in_documents = [p for p, _ in found if p.part > 0]
        forms = {(f, p.written.text.lstrip("-"), p.written.percent) for p, f in found}
        shared = sorted({v for p, _ in found for v in readers[(p.part, p.index)] if v != value})
        why: str | None = None
        if not in_documents:
            why = "written in the question only (a parameter of the question, not a document's)"
        elif len(forms) > 1:
            texts = ", ".join(
                sorted(
                    {repr(p.written.text + ("%" if p.written.percent else "")) for p, _ in found}
                )
            )
            why = f"written in several forms ({texts}): its roles cannot be told apart"
        elif (
            len(in_documents) > 1
            and significant_digits(value) < 3
            and len({_context(parts[p.part], p.written) for p in in_documents}) > 1
        ):
            why = (
                f"written {len(in_documents)} times in the documents with fewer than 3 "
                "significant digits: which one the question reads cannot be told"
            )
        elif shared:
            why = f"its written number is also read as {shared[0]:g}"
        else:
            by_hand = _derived_by_hand(value, unwritten)
            if by_hand is not None:
                why = f"the program holds {by_hand:g}, worked out from it by hand"
        if why is None:
            for p, _ in found:
                why = derived_beside(parts[p.part], numbers[p.part], p.index, sentences[p.part])
                if why is not None:
                    break
        if why is not None:
            held.append(f"{value:g}: {why}")
            continue
        factor = found[0][1]
        # the coarsest form first: drawn at its precision, which the others write exactly
        ordered = sorted(found, key=lambda pf: -(10.0 ** -pf[0].written.decimals) * pf[1])
        variables.append(Variable(value, by_value[value], [p for p, _ in ordered], factor))
    variables.sort(key=lambda v: (v.literals[0].line, v.literals[0].start))
    if not variables:
        if held:
            return Plan(held=held, reason="no quantity can change (" + "; ".join(held) + ")")
        return Plan(reason="no literal of solve() is written in the relevant documents")
    return Plan(variables, held)
