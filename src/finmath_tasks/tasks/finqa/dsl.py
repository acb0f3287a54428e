"""FinQA's program DSL: a tokenizer, a parser, an executor and symbolic program equivalence.

A FinQA program is a flat list of steps, each ``op(arg1, arg2)``, separated
by a comma and whitespace::

    subtract(5829, 5735), divide(#0, 5735)

Grammar (our own statement of what the reference evaluation,
czyssrs/FinQA ``code/evaluate/evaluate.py``, accepts)::

    program   := step (SEP step)*
    step      := OP "(" argument SEP argument ")"
    OP        := add | subtract | multiply | divide | exp | greater
               | table_max | table_min | table_sum | table_average
    SEP       := "," followed by whitespace
    argument  := any text without "(" or ")" and without a SEP, trimmed

An argument is a step reference ``#k`` (the result of step k, k earlier than
the current step), a constant ``const_<n>`` (``const_m1`` is -1), a number
(thousands commas dropped; a trailing ``%`` divides by 100), or, as the first
argument of a ``table_*`` operation, the text of a table row's first cell
(the second argument of a table operation, ``none`` in the data, is ignored
when executing). ``greater`` gives "yes" or "no". A table operation reads its
row's other cells: ``$`` removed, anything from the first ``(`` on dropped,
then read as a number; a cell that is not a number makes the program invalid.
The program's value is its last step's, rounded to 5 decimals (Python's
``round``) when it is a number.

Like the reference: nested calls are not part of the language (``(`` inside an
argument is a parse error), a comma without a following space does not
separate arguments (``add(1,2)`` has one argument), and a result of
``greater`` used in arithmetic makes the program invalid. Where we differ, only
on inputs the reference would crash or misread: whitespace before ``(`` is
allowed; ``nan``/``inf`` are not numbers; a non-finite or complex result, an
overflow or a division by zero is an invalid program with the reason; a table
operation on a ``#k`` reference is invalid. Programs longer than
:data:`MAX_PROGRAM_CHARS` or with more than :data:`MAX_STEPS` steps are
refused (bounded work on hostile input).

Checked against a re-statement of the reference's reading on 28,400 programs
(every gold program of the three real subsets, 20 random mutations of each,
20,000 random programs): wherever both accept a program the values agree. We
accept more only in whitespace (spaces around a step, before ``(``, or doubled
between steps). We refuse what the reference's string splitting lets through
on malformed text: the completed steps of a truncated program ("add(1, 2),
add(#0, 3" is 3 upstream), empty arguments ("divide(, 4, 2)"), "const" or
"%" inside a number ("0const_", "49.9%0"), a trailing ", ".

Nothing here calls Python's ``eval``; every error is a :class:`DSLError`
whose message says what is wrong and where.

Program accuracy (:func:`equivalent_programs`) follows the reference's
definition: every distinct literal argument of the gold program and every
distinct table step becomes a symbol; the predicted program may use only
those literals and table steps (a number written differently, ``100`` for
``const_100``, is a different symbol) and ``#k`` references to earlier steps;
both programs' last steps are expanded into expressions, simplified with
sympy and compared. A predicted program whose expression, written out as a
tree, has more than :data:`MAX_EXPANDED_SIZE` terms is not compared (gold
programs have at most 11; ``exp(#k, #k)`` chains double the size at each step
and would keep sympy busy for hours).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

ARITHMETIC_OPS = ("add", "subtract", "multiply", "divide", "exp", "greater")
TABLE_OPS = ("table_max", "table_min", "table_sum", "table_average")
OPS = ARITHMETIC_OPS + TABLE_OPS

MAX_PROGRAM_CHARS = 4000
MAX_STEPS = 40
MAX_EXPANDED_SIZE = 64
"""Program equivalence: a predicted program whose expression tree is larger is not equal."""
ROUND_DECIMALS = 5

Value = float | str
"""A step's value: a number, or "yes"/"no" (``greater``)."""


class DSLError(ValueError):
    """A program that cannot be parsed or executed; the message says why."""


# --- tokenizer --------------------------------------------------------------------------

OPEN, CLOSE, SEP, TEXT = "(", ")", "sep", "text"

_SEP_RE = re.compile(r",\s+|,$")


@dataclass(frozen=True)
class Token:
    kind: str
    """OPEN, CLOSE, SEP or TEXT."""
    text: str
    pos: int
    """Offset in the program text."""


def tokenize(program: str) -> list[Token]:
    """The program's tokens: ``(``, ``)``, separators (comma + whitespace) and text runs."""
    tokens: list[Token] = []
    i, n = 0, len(program)
    start = 0

    def flush(end: int) -> None:
        if end > start and program[start:end].strip():
            tokens.append(Token(TEXT, program[start:end], start))

    while i < n:
        c = program[i]
        if c in "()":
            flush(i)
            tokens.append(Token(OPEN if c == "(" else CLOSE, c, i))
            i += 1
            start = i
        elif c == "," and (m := _SEP_RE.match(program, i)):
            flush(i)
            tokens.append(Token(SEP, m.group(0), i))
            i = m.end()
            start = i
        else:
            i += 1
    flush(n)
    return tokens


# --- parser -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    op: str
    args: tuple[str, str]

    def text(self) -> str:
        return f"{self.op}({self.args[0]}, {self.args[1]})"


def _describe(token: Token | None) -> str:
    return "the end of the program" if token is None else f"{token.text!r} at offset {token.pos}"


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.i = 0

    def peek(self) -> Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def expect(self, kind: str, what: str) -> Token:
        token = self.peek()
        if token is None or token.kind != kind:
            raise DSLError(f"expected {what}, found {_describe(token)}")
        self.i += 1
        return token

    def program(self) -> list[Step]:
        if not self.tokens:
            raise DSLError("the program is empty")
        steps = [self.step(0)]
        while self.peek() is not None:
            self.expect(SEP, "', ' between steps")
            if len(steps) >= MAX_STEPS:
                raise DSLError(f"more than {MAX_STEPS} steps")
            steps.append(self.step(len(steps)))
        return steps

    def step(self, index: int) -> Step:
        name_token = self.expect(TEXT, f"an operation name (step {index})")
        op = name_token.text.strip()
        if op not in OPS:
            raise DSLError(
                f"step {index}: unknown operation {op[:60]!r} (expected one of {', '.join(OPS)})"
            )
        self.expect(OPEN, f"'(' after {op}")
        first = self.argument(op, index)
        self.expect(SEP, f"', ' between the arguments of {op} (step {index})")
        second = self.argument(op, index)
        token = self.peek()
        if token is not None and token.kind == SEP:
            raise DSLError(f"step {index}: {op} takes two arguments, found more")
        self.expect(CLOSE, f"')' closing {op} (step {index})")
        return Step(op, (first, second))

    def argument(self, op: str, index: int) -> str:
        token = self.peek()
        if token is not None and token.kind == OPEN:
            raise DSLError(
                f"step {index}: nested '(' at offset {token.pos}: arguments are numbers, "
                "constants, #k references or row names, not calls"
            )
        text = self.expect(TEXT, f"an argument of {op} (step {index})").text.strip()
        after = self.peek()
        if after is not None and after.kind == OPEN:
            raise DSLError(
                f"step {index}: nested call {text[:40]}( at offset {after.pos}: arguments are "
                "numbers, constants, #k references or row names, not calls"
            )
        return text


def parse_program(program: str) -> list[Step]:
    """The steps of ``program``; a :class:`DSLError` says what is malformed and where."""
    if not isinstance(program, str):
        raise DSLError(f"a program is text, not {type(program).__name__}")
    if len(program) > MAX_PROGRAM_CHARS:
        raise DSLError(f"the program is longer than {MAX_PROGRAM_CHARS} characters")
    return _Parser(tokenize(program.strip())).program()


# --- executor ---------------------------------------------------------------------------

_NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_REF_RE = re.compile(r"#(\d+)")
_CONST_RE = re.compile(r"const_(m1|\d+(?:\.\d+)?)")


def parse_number(text: str) -> float | None:
    """A number as the reference reads one: commas dropped, ``n%`` is n/100; else None."""
    text = text.replace(",", "").strip()
    if _NUMBER_RE.fullmatch(text):
        return float(text)
    if text.endswith("%") and _NUMBER_RE.fullmatch(text[:-1].strip()):
        return float(text[:-1].strip()) / 100.0
    return None


def constant_value(text: str) -> float | None:
    m = _CONST_RE.fullmatch(text)
    if m is None:
        return None
    return -1.0 if m.group(1) == "m1" else float(m.group(1))


def cell_value(cell: str) -> float | None:
    """A table cell's number as the reference reads it: ``$ -19.8 ( 19.8 )`` is -19.8."""
    return parse_number(cell.replace("$", "").strip().split("(")[0])


def _reference(arg: str, index: int) -> int | None:
    m = _REF_RE.fullmatch(arg)
    if m is None:
        if "#" in arg:
            raise DSLError(f"step {index}: malformed step reference {arg[:40]!r}")
        return None
    k = int(m.group(1))
    if k >= index:
        raise DSLError(f"step {index}: #{k} refers to a step that is not earlier")
    return k


def _operand(arg: str, index: int, results: Sequence[Value]) -> float:
    k = _reference(arg, index)
    if k is not None:
        value = results[k]
        if isinstance(value, str):
            raise DSLError(f"step {index}: #{k} is {value!r}, not a number")
        return value
    constant = constant_value(arg)
    if constant is not None:
        return constant
    if arg.startswith("const_"):
        raise DSLError(f"step {index}: unknown constant {arg[:40]!r}")
    number = parse_number(arg)
    if number is None:
        raise DSLError(f"step {index}: {arg[:60]!r} is not a number, constant or #k reference")
    return number


def _row(table: Sequence[Sequence[str]], name: str, index: int) -> list[float]:
    rows: dict[str, Sequence[str]] = {}
    for row in table:
        if row:
            rows[str(row[0])] = row[1:]  # a repeated row name: the last row wins, as upstream
    if name not in rows:
        raise DSLError(f"step {index}: no table row named {name[:80]!r}")
    values: list[float] = []
    for cell in rows[name]:
        number = cell_value(str(cell))
        if number is None:
            raise DSLError(
                f"step {index}: cell {str(cell)[:40]!r} of row {name[:60]!r} is not a number"
            )
        values.append(number)
    if not values:
        raise DSLError(f"step {index}: row {name[:60]!r} has no cells")
    return values


def _apply(
    step: Step, index: int, results: Sequence[Value], table: Sequence[Sequence[str]]
) -> Value:
    op, (a, b) = step.op, step.args
    if op in TABLE_OPS:
        if _reference(a, index) is not None:
            raise DSLError(f"step {index}: {op} needs a row name, not a step reference")
        row = _row(table, a, index)
        if op == "table_max":
            return max(row)
        if op == "table_min":
            return min(row)
        if op == "table_sum":
            return sum(row)
        return sum(row) / len(row)
    x, y = _operand(a, index, results), _operand(b, index, results)
    if op == "greater":
        return "yes" if x > y else "no"
    try:
        if op == "add":
            value: Any = x + y
        elif op == "subtract":
            value = x - y
        elif op == "multiply":
            value = x * y
        elif op == "divide":
            value = x / y
        else:
            value = x**y
    except ZeroDivisionError as e:
        raise DSLError(f"step {index}: division by zero") from e
    except OverflowError as e:
        raise DSLError(f"step {index}: {op} overflows") from e
    if not isinstance(value, float) or not math.isfinite(value):
        raise DSLError(f"step {index}: {op} gives {value!r}, not a finite number")
    return value


@dataclass(frozen=True)
class Execution:
    ok: bool
    value: Value | None
    """The rounded final value ("yes"/"no" for greater); None when not ok."""
    error: str = ""
    steps: tuple[Value, ...] = ()


def execute(program: str | Sequence[Step], table: Sequence[Sequence[str]]) -> Execution:
    """Run ``program`` against ``table``; never raises for any program text."""
    try:
        steps = parse_program(program) if isinstance(program, str) else list(program)
        results: list[Value] = []
        for index, step in enumerate(steps):
            results.append(_apply(step, index, results, table))
    except DSLError as e:
        return Execution(False, None, str(e))
    except RecursionError:  # pragma: no cover - the parser is iterative; belt and braces
        return Execution(False, None, "the program is too deeply nested")
    final = results[-1]
    if not isinstance(final, str):
        final = round(final, ROUND_DECIMALS)
    return Execution(True, final, "", tuple(results))


def same_value(value: Value | None, gold: Value) -> bool:
    """The reference's execution check: the rounded value equals ``exe_ans``."""
    if value is None:
        return False
    if isinstance(value, str) or isinstance(gold, str):
        return value == gold
    return float(value) == float(gold)


# --- program equivalence ----------------------------------------------------------------


def _expression(steps: Sequence[Step], symbols: dict[str, Any]) -> Any:
    """The sympy expression of the last step, built iteratively from the first."""
    import sympy

    exprs: list[Any] = []
    for index, step in enumerate(steps):
        if step.op in TABLE_OPS:
            exprs.append(symbols[_table_key(step)])
            continue
        operands = []
        for arg in step.args:
            k = _reference(arg, index)
            operands.append(exprs[k] if k is not None else symbols[arg])
        x, y = operands
        if step.op == "add":
            exprs.append(x + y)
        elif step.op == "subtract":
            exprs.append(x - y)
        elif step.op == "multiply":
            exprs.append(x * y)
        elif step.op == "divide":
            exprs.append(x / y)
        elif step.op == "exp":
            exprs.append(x**y)
        else:
            exprs.append(sympy.StrictGreaterThan(x, y))
    return exprs[-1]


def expanded_size(steps: Sequence[Step]) -> int:
    """Leaves and operations of the last step's expression written out as a tree.

    ``#k`` references share work in the program but not in the expression:
    ``exp(#0, #0)`` doubles it, so a few dozen steps can expand beyond what
    sympy can simplify. Computed on the steps, without building anything.
    """
    sizes: list[int] = []
    for index, step in enumerate(steps):
        if step.op in TABLE_OPS:
            sizes.append(1)
            continue
        total = 1
        for arg in step.args:
            k = _reference(arg, index)
            total += sizes[k] if k is not None else 1
        sizes.append(total)
    return sizes[-1] if sizes else 0


def _table_key(step: Step) -> str:
    return f"{step.op}({step.args[0]}|{step.args[1]})"


def _symbol_table(steps: Sequence[Step]) -> dict[str, Any]:
    import sympy

    names: dict[str, Any] = {}
    for step in steps:
        if step.op in TABLE_OPS:
            keys = [_table_key(step)]
        else:
            keys = [arg for arg in step.args if not arg.startswith("#")]
        for key in keys:
            if key not in names:
                names[key] = sympy.Symbol(f"a{len(names)}")
    return names


def equivalent_programs(gold: str, predicted: str) -> tuple[bool, str]:
    """Is ``predicted`` symbolically the gold program? (result, reason)."""
    import sympy

    gold_steps = parse_program(gold)
    try:
        pred_steps = parse_program(predicted)
    except DSLError as e:
        return False, f"predicted program does not parse: {e}"
    symbols = _symbol_table(gold_steps)
    for index, step in enumerate(pred_steps):
        if step.op in TABLE_OPS:
            if _table_key(step) not in symbols:
                return (
                    False,
                    f"step {index}: {step.text()[:80]} is not a table step of the gold program",
                )
            continue
        for arg in step.args:
            try:
                k = _reference(arg, index)
            except DSLError as e:
                return False, str(e)
            if k is None and arg not in symbols:
                return (
                    False,
                    f"step {index}: argument {arg[:40]!r} does not occur in the gold program",
                )
    size = expanded_size(pred_steps)
    if size > MAX_EXPANDED_SIZE:
        return False, (
            f"the predicted program expands to {size} terms (more than {MAX_EXPANDED_SIZE}): "
            "not compared"
        )
    gold_expr = _expression(gold_steps, symbols)
    pred_expr = _expression(pred_steps, symbols)
    if gold_expr == pred_expr:
        return True, "same expression"
    equal = sympy.simplify(gold_expr) == sympy.simplify(pred_expr)
    return bool(equal), "equal after simplification" if equal else "different expressions"
