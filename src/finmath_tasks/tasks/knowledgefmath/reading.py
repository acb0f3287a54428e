"""How FinanceMath's reference evaluation reads an answer before comparing it.

Our own code for the reference's behaviour (yale-nlp/FinanceMath,
``utils/evaluation_utils.py`` and ``evaluation.py``), step by step and in its
order; each step that changes the text is named in the score's explanation.

Chain of thought (:func:`read_extractor_reply`): an LLM extracts the final
number; a reply mentioning "none" is no answer. Otherwise the reply is
normalised: surrounding space and trailing periods dropped; currency signs and
scale words (``£ € ¥ million billion thousand US USD RMB``, case as written)
dropped; the right side of ``=`` and of ``≈`` taken; backticks, ``%``, ``$`` and
``°`` dropped; yes/no/true/false read as 1/0; "approximately" dropped; the part
before " or " kept; one word before or after the number, or one or two other
characters, dropped; ``10^k``, `` x `` and `` × `` turned into arithmetic;
thousands separators of a plain number dropped; an option "(a)".."(d)" is not a
number; and the rest evaluated as a Python expression.

Where the reference's ``eval`` fails it uses 0, which a gold answer of 0
matches (one validation question): we count such a reply as unreadable,
incorrect and in the denominator, flagged ``unreadable`` (README, audit).

Program of thought (:func:`read_program_result`): the run of the program as
the reference cuts it out of the output (``programs.reference_program``; where
that differs from our cut, the solver ran it too); a run counts as executed
when ``solution()`` returned without an exception, whatever it returned; its
result is read with ``float()`` (a string "-8184.0" counts; None or a list is
executed but wrong); an output that mentions ``argparse`` is discarded before
running (not executed). A NaN result, which the reference's comparison credits
whatever the gold, is counted incorrect here and flagged ``nan_result``.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

from finmath_tasks.scorers.numeric import Reading, ReadingInput
from finmath_tasks.solvers.pot import ALTERNATIVES_KEY
from finmath_tasks.tasks.knowledgefmath.scoring import OFFICIAL

NONE_MARKER = "none"
SCALE_AND_CURRENCY = ("£", "€", "¥", "million", "billion", "thousand", "US", "USD", "RMB")
DROPPED_SYMBOLS = (("`", "backticks"), ("%", "percent sign"), ("$", "dollar sign"), ("°", "°"))
ARGPARSE = "argparse"

_N = r"[-+]?(?:[\d,]*\.*\d+)"  # the reference's number shape: sign, digits/commas, point(s)
_UNIT_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(rf"({_N}) [^0-9 ]+$"), "unit dropped"),
    (re.compile(rf"[^0-9 ]+ ({_N})$"), "word before the number dropped"),
    (re.compile(rf"({_N})[^\d]{{1,2}}$"), "trailing characters dropped"),
    (re.compile(r"[^-+\d]{1,2}((?:[\d,]*\.*\d+))$"), "leading characters dropped"),
)
_PLAIN_NUMBER = re.compile(r"[-+]?(\d{1,3}(,\d{3})*|(\d+))(\.\d+)?$")
_POWER_OF_TEN = re.compile(r"10\^(-?\d+)")
_OPTION = re.compile(r"\([a-d]\)")
MAX_EXPONENT = 4096
"""An evaluated power with a larger exponent is not read (the reference would compute it)."""


class Unreadable(ValueError):
    """The reply is not a number by the reference's rules."""


# --- a safe stand-in for the reference's eval() of the normalised text ----------------

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _evaluate(node: ast.AST) -> Any:
    """Literal arithmetic as Python evaluates it (numbers, + - * / // % **, unary signs,
    tuples and lists, True/False, ``math.pow``); anything else is :class:`Unreadable`."""
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | complex | str):
        return node.value
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [_evaluate(e) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if (
            isinstance(node.op, ast.Pow)
            and isinstance(right, int | float)
            and abs(right) > MAX_EXPONENT
        ):
            raise Unreadable("exponent too large")
        return _BINARY[type(node.op)](left, right)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and (node.func.value.id, node.func.attr) == ("math", "pow")
        and len(node.args) == 2
        and not node.keywords
    ):
        base, exponent = (_evaluate(a) for a in node.args)
        if abs(exponent) > MAX_EXPONENT:
            raise Unreadable("exponent too large")
        return math.pow(base, exponent)
    raise Unreadable(f"not arithmetic: {type(node).__name__}")


def evaluate_expression(text: str) -> Any:
    """What Python's ``eval`` gives for a plain arithmetic ``text``; Unreadable otherwise."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise Unreadable("not an expression") from exc
    try:
        return _evaluate(tree)
    except Unreadable:
        raise
    except (ArithmeticError, TypeError, ValueError, RecursionError) as exc:
        raise Unreadable(f"{type(exc).__name__}") from exc


# --- chain of thought: the extractor's reply ----------------------------------------


def normalise_reply(reply: str) -> tuple[Any, list[str]]:
    """(the value the reference compares, the names of the steps that changed the text).

    Raises :class:`Unreadable` where the reference's final ``eval`` fails."""
    steps: list[str] = []
    text = reply.strip()
    if text.endswith("."):
        text = text.rstrip(".")
        steps.append("trailing period dropped")
    removed = [w for w in SCALE_AND_CURRENCY if w in text]
    for word in SCALE_AND_CURRENCY:
        text = text.replace(word, "")
    if removed:
        steps.append(f"{'/'.join(removed)} dropped")
    for sign, name in (("=", "right of '=' taken"), ("≈", "right of '≈' taken")):
        if sign in text:
            text = text.split(sign)[-1].strip()
            steps.append(name)
    for symbol, name in DROPPED_SYMBOLS:
        if symbol in text:
            text = text.replace(symbol, "")
            steps.append(f"{name} dropped")
    if text in ("true", "yes", "false", "no"):
        text = "True" if text in ("true", "yes") else "False"
    if "True" in text or "False" in text:
        text = "True" if "True" in text else "False"
        steps.append(f"read as the boolean {text} (1 or 0)")
    if "approximately" in text:
        text = text.replace("approximately", "").strip()
        steps.append("'approximately' dropped")
    if " or " in text:
        text = text.split(" or ")[0]
        steps.append("first of 'or' kept")
    for pattern, name in _UNIT_RULES:
        found = pattern.match(text)  # '$' as the reference writes it
        if found:
            text = found.group(1)
            steps.append(name)
    if "10^" in text:
        text = _POWER_OF_TEN.sub(r"math.pow(10, \1)", text)
        steps.append("10^k read as a power")
    for times in (" x ", " × "):
        if times in text:
            text = text.replace(times, "*")
            steps.append(f"'{times.strip()}' read as multiplication")
    if _PLAIN_NUMBER.match(text) and "," in text:
        text = text.replace(",", "")
        steps.append("thousands separators dropped")
    if _OPTION.search(text):
        return _OPTION.search(text).group(0), [*steps, "an option letter, not a number"]  # type: ignore[union-attr]
    if not text:
        raise Unreadable("nothing left after normalisation")
    value = evaluate_expression(text)
    if isinstance(value, complex):
        value = value.real
        steps.append("real part taken")
    return value, steps


def _as_number(value: Any) -> float | None:
    """The number the reference's comparison sees, or None where it returns False."""
    if isinstance(value, bool):
        return float(value)  # an int subclass: compared as 1 or 0
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:
            return None
    return None  # a list/tuple (e.g. "1, 2"), a string, None: never equal


def read_extractor_reply(data: ReadingInput) -> Reading | None:
    """The official reading of the ``grader``'s reply; None without one (rules extractor).

    ``executed`` is the leaderboard's CoT execution rate: a reply that does not mention
    "none" counts, read or not (its recorded validation verdicts, 8,000 of 8,000)."""
    reply = data.reply
    if reply is None:
        return None
    shown = reply.strip()[:80]
    index = data.reply_index
    if NONE_MARKER in reply.lower():
        return Reading(
            None,
            f'no answer: the reply "{shown}" mentions None',
            executed=False,
            reply_index=index,
        )
    try:
        value, steps = normalise_reply(reply)
    except Unreadable as exc:
        return Reading(
            None,
            f'cannot read "{shown}" as a number ({exc}): incorrect',
            executed=True,
            flags=("unreadable",),
            reply_index=index,
        )
    number = _as_number(value)
    how = "; ".join(steps) if steps else "as written"
    if number is None:
        return Reading(
            None,
            f'"{shown}" reads as {value!r}, not a number ({how}): incorrect',
            executed=True,
            reply_index=index,
        )
    return Reading(
        number, f'read {number!r} from "{shown}" ({how})', executed=True, reply_index=index
    )


# --- program of thought: the sandbox's result ---------------------------------------


def program_record(program: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """The run of reading ``name``'s own cut of the program where it differs from ours."""
    alternatives = program.get(ALTERNATIVES_KEY) or {}
    return alternatives.get(name) or program


def program_value(record: Mapping[str, Any]) -> tuple[float | None, bool, str]:
    """(the value ``float()`` gives for the run's result, executed, how it was read).

    Executed: ``solution()`` returned without an exception, whatever it returned.
    The value is None where ``float()`` fails (None, a list) or the run failed; a
    NaN or infinite result is returned as such (the comparison decides)."""
    if record.get("ok"):
        return float(record["value"]), True, "value returned by the program"
    if not record.get("returned"):
        return None, False, f"not executed: {record.get('error') or 'no result'}"
    float_text = record.get("float_text") or ""
    value_type = record.get("value_type") or "a value"
    if float_text:
        number = float(float_text)
        return number, True, f"read {number!r} from the returned {value_type} with float()"
    if "NaN" in (record.get("error") or ""):  # a numpy NaN: never converted by the runner
        return math.nan, True, "returned NaN"
    return None, True, f"returned {value_type}, which float() cannot read: executed, incorrect"


def read_program_result(data: ReadingInput) -> Reading | None:
    """The official reading of a program run (value and execution, as the reference)."""
    program = data.program
    if program is None:
        return None
    if ARGPARSE in (data.output or ""):
        return Reading(
            None,
            "program discarded: the output mentions argparse (reference rule): not executed",
            executed=False,
            flags=("argparse_discarded",),
        )
    record = program_record(program, OFFICIAL)
    cut = " (the reference's cut of the output)" if record is not program else ""
    number, executed, how = program_value(record)
    if number is not None and math.isnan(number):
        return Reading(
            None,
            "returned NaN: executed; the reference's comparison credits NaN, "
            f"counted incorrect here{cut}",
            executed=True,
            flags=("nan_result",),
        )
    if number is not None and math.isinf(number):
        return Reading(None, f"returned an infinite value: executed, incorrect{cut}", executed=True)
    return Reading(number, how + cut, executed=executed)


READING_FLAGS = ["unreadable", "argparse_discarded", "nan_result"]
"""Flags the official readings set, counted beside the official accuracy."""
