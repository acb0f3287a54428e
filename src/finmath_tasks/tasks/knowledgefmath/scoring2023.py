"""``knowledgefmath2023``: the scoring of the KnowledgeFMATH paper's Tables 4 and 5.

The paper (26 models, checkpoints of December 2023) was scored by the first
release of the reference evaluation (yale-nlp/FinanceMath 3166a77,
2024-01-05); ``financemath`` follows the camera-ready release (bdddc58). This
module is our own code for the first release's rules, in its order:

Chain of thought (``-T extractor=model``): the extractor is asked for the
final number; while its reply mentions "none" (any case) it is asked again,
at most 3 more times. The last reply is read with ``float()`` alone: no
normalisation ("7 years", "approximately 7", "$1,234", "12%" and "1,234" are
not numbers; "1e3", " 7 " and "1_000" are, as Python reads them). A reply
mentioning "none" is no answer.

Program of thought: the program is cut by the first release's rules
(:func:`..programs.january_program`), run in our sandbox; a run without an
exception is executed, and its result is read with ``float()`` (a returned
string "12.5" counts, None does not). The gold is the re-executed gold
program's value, and the first release's type check credits only a gold
whose type is ``float`` (or numpy's ``float64``): its branch for integers
names ``'integer'`` where Python says ``'int'``, so an ``int`` gold is never
credited (kept: see the README's quirks table; flagged ``integer_gold``).
Chain-of-thought golds are always floats.

The comparison (:func:`compare_2023`), on the value read and the gold ``g``:
within 4% of ``g`` (relative to ``|g|``); ``|p| <= |g|/50`` and ``100|p|``
within 4% of ``|g|``; ``|g| <= |p|/50`` and ``|p|`` within 4% of ``100|g|``;
opposite signs with ``|p|`` within 4% of ``|g|``. Its x1000 and x1,000,000
rules are written so that their guard and their tolerance exclude each other
(``|g| <= |p|/500`` with ``1000|p|`` near ``|g|``, and the mirror): they match
only 0 against 0, which the 4% rule matches anyway. NaN and infinities match
nothing.
"""

from __future__ import annotations

from finmath_tasks.scorers.comparisons import Match
from finmath_tasks.scorers.error_classes import declare_band
from finmath_tasks.scorers.extraction import ParsedNumber
from finmath_tasks.scorers.numeric import Reading, ReadingInput
from finmath_tasks.tasks.knowledgefmath.reading import (
    ARGPARSE,
    NONE_MARKER,
    program_record,
    program_value,
)

KNOWLEDGEFMATH2023 = "knowledgefmath2023"
"""Score key of the first release's scoring (the paper's Tables 4 and 5)."""
TOLERANCE_2023 = 0.04
CREDITED_GOLD_TYPES = ("float", "float64")
"""The gold types whose branch of the first release's type check compares numbers."""
FLAGS_2023 = ["integer_gold", "not_a_float"]
"""Flags of the ``knowledgefmath2023`` reading, counted beside its accuracy."""
ASKS_2023 = 4
"""The first release asks once, then up to 3 more times while the reply mentions "none"."""


def _within(pred: float, gold: float) -> bool:
    eps = abs(gold) * TOLERANCE_2023
    return gold - eps <= pred <= gold + eps


def compare_2023(p: float, gt: float) -> Match:
    """The first release's number comparison, with the same float operations, in its order."""
    ap, ag = abs(p), abs(gt)
    if ap <= ag / 50 and _within(ap * 100, ag):
        return Match(True, "x100 (prediction 100 times smaller)")
    if ag <= ap / 500 and _within(ap * 1000, ag):
        return Match(True, "x1000 rule (zero only)")
    if ag <= ap / 500000 and _within(ap * 1000000, ag):
        return Match(True, "x1000000 rule (zero only)")
    if ag <= ap / 50 and _within(ap, ag * 100):
        return Match(True, "x100 (prediction 100 times larger)")
    if ap <= ag / 500 and _within(ap, ag * 1000):
        return Match(True, "x1000 rule (zero only)")
    if ap <= ag / 500000 and _within(ap, ag * 1000000):
        return Match(True, "x1000000 rule (zero only)")
    if gt * p < 0 and _within(ap, ag):
        return Match(True, "sign ignored, within 4%")
    if _within(p, gt):
        return Match(True, "relative_tolerance_4%")
    return Match(False, "no_match")


def knowledgefmath2023(pred: ParsedNumber, gold: float) -> Match:
    """The comparison on a number our rules read (``-T extractor=rules``: as written)."""
    return compare_2023(pred.written_value, gold)


# a rescaled answer is a scale error under this key only within its own 4% band
declare_band(knowledgefmath2023, TOLERANCE_2023)


def _shown(text: str) -> str:
    return text.strip()[:80]


def read_reply_2023(data: ReadingInput) -> Reading | None:
    """The first release's reading of the extractor's replies (None without a reply)."""
    if data.reply is None:
        return None
    replies = data.replies or (data.reply,)
    index = min(len(replies), ASKS_2023) - 1
    reply = replies[index]
    asked = f"reply {index + 1} of {len(replies)}"
    if NONE_MARKER in reply.lower():
        return Reading(
            None,
            f'no answer: the reply "{_shown(reply)}" mentions None ({asked})',
            reply_index=index,
        )
    try:
        value = float(reply)
    except ValueError:
        return Reading(
            None,
            f'float() cannot read "{_shown(reply)}" (no normalisation in 2023): incorrect ({asked})',
            flags=("not_a_float",),
            reply_index=index,
        )
    return Reading(
        value, f'read {value!r} from "{_shown(reply)}" with float() ({asked})', reply_index=index
    )


def read_program_2023(data: ReadingInput) -> Reading | None:
    """The first release's reading of a program run and its type check of the gold."""
    program = data.program
    if program is None:
        return None
    if ARGPARSE in (data.output or ""):
        return Reading(
            None, "program discarded: the output mentions argparse: not executed", executed=False
        )
    record = program_record(program, KNOWLEDGEFMATH2023)
    value, executed, how = program_value(record)
    if value is None:
        return Reading(None, how, executed=executed)
    gold_type = str(program.get("gold_value_type") or "")
    short_type = gold_type.rsplit(".", 1)[-1]
    if gold_type and short_type not in CREDITED_GOLD_TYPES:
        is_int = short_type == "int"
        return Reading(
            value,
            how,
            executed=executed,
            flags=("integer_gold",) if is_int else (),
            rejected=(
                "integer gold: never credited in 2023 (its type check names 'integer')"
                if is_int
                else f"gold of type {gold_type}: not compared in 2023 (type check)"
            ),
        )
    return Reading(value, how, executed=executed)
