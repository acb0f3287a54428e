"""Crafted agent answers over real TAT-QA dev questions (the paper's rounding rule and
change analysis), for the realdata tests
and ``benchmarks/agents_metrics.py``.

Every case's verdict follows from how it is built, from the paper's words, not from our
scorer: ``rounding`` (an answer counts when it equals the gold or rounds to it) and the
change analysis (a flip is minor when the steps stay the same, major when they change; no
flip, no class). Nothing here copies a record: the cases are built at run time from the
data directory.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from inspect_ai.dataset import Sample

ROUNDING_KINDS: tuple[tuple[str, bool], ...] = (
    ("as_written", True),  # the gold itself
    ("finer_rounds_to_gold", True),  # 0.314159 of a unit further from zero, more digits
    ("finer_other_side", True),  # 0.49 of a unit nearer to zero
    ("coarser", False),  # the gold rounded one place coarser (-22.2 for -22.22)
    ("beyond_half_unit", False),  # 0.51 of a unit off
    ("percent_sign", True),  # the gold with a % sign (percent-scale golds)
    ("fraction_not_percent", False),  # the gold / 100 (percent-scale golds)
    ("sign_flipped", False),
)
PER_KIND = 6
"""6 questions per kind: 48 cases."""


@dataclass(frozen=True)
class RoundingCase:
    sample_id: str
    gold: str
    kind: str
    answer: str
    correct: bool
    """The paper's verdict."""


def _unit(gold: str) -> Decimal:
    exponent = Decimal(gold).as_tuple().exponent
    assert isinstance(exponent, int)
    return Decimal(1).scaleb(exponent)


def _away(gold: Decimal, amount: Decimal) -> Decimal:
    """``amount`` further from zero than ``gold``."""
    return gold + amount if gold >= 0 else gold - amount


def crafted_answer(gold: str, kind: str) -> str:
    g, u = Decimal(gold), _unit(gold)
    if kind == "as_written":
        return gold
    if kind == "finer_rounds_to_gold":
        return str(_away(g, Decimal("0.314159") * u))
    if kind == "finer_other_side":
        return str(_away(g, Decimal("-0.49") * u))
    if kind == "coarser":
        coarser = Decimal(1).scaleb(g.as_tuple().exponent + 1)  # type: ignore[operator]
        return str(g.quantize(coarser, rounding=ROUND_HALF_UP))
    if kind == "beyond_half_unit":
        return str(_away(g, Decimal("0.51") * u))
    if kind == "percent_sign":
        return f"{gold}%"
    if kind == "fraction_not_percent":
        return str(g.scaleb(-2))
    if kind == "sign_flipped":
        return str(-g)
    raise ValueError(kind)


def _usable(sample: Sample) -> bool:
    gold = str(sample.target)
    g = Decimal(gold)
    # a last digit that is not 0 (so "coarser" differs from the gold), never zero
    return g != 0 and gold.rstrip("0") == gold and "e" not in gold.lower()


def rounding_cases(samples: list[Sample]) -> list[RoundingCase]:
    """48 cases: each kind on 6 distinct questions, in dataset order (percent kinds on
    percent-scale questions, the others on questions of every scale)."""
    usable = [s for s in samples if _usable(s)]
    percent = [s for s in usable if (s.metadata or {}).get("scale") == "percent"]
    taken: set[str] = set()
    cases: list[RoundingCase] = []
    for kind, correct in ROUNDING_KINDS:
        pool = percent if kind in ("percent_sign", "fraction_not_percent") else usable
        chosen = [s for s in pool if str(s.id) not in taken][:PER_KIND]
        assert len(chosen) == PER_KIND, kind
        for s in chosen:
            taken.add(str(s.id))
            gold = str(s.target)
            cases.append(RoundingCase(str(s.id), gold, kind, crafted_answer(gold, kind), correct))
    order = {str(s.id): i for i, s in enumerate(samples)}
    return sorted(cases, key=lambda c: order[c.sample_id])


# --- the change analysis: CoT + critic ---------------------------------------------------

CHANGE_KINDS: tuple[tuple[str, str, str], ...] = (
    # (name, flip from the first to the final answer, the paper's class)
    ("cw_same_steps", "correct_to_wrong", "minor"),
    ("cw_same_steps_reformatted", "correct_to_wrong", "minor"),
    ("cw_same_calculation_other_result", "correct_to_wrong", "minor"),
    ("cw_other_data", "correct_to_wrong", "major"),
    ("wc_same_steps", "wrong_to_correct", "minor"),
    ("wc_same_steps_reformatted", "wrong_to_correct", "minor"),
    ("wc_other_calculation", "wrong_to_correct", "major"),
    ("wc_other_data", "wrong_to_correct", "major"),
    ("cc_other_steps", "correct_to_correct", "none"),
    ("ww_other_steps", "wrong_to_wrong", "none"),
    ("ww_same_steps", "wrong_to_wrong", "none"),
    ("cc_same_steps", "correct_to_correct", "none"),
)
PER_CHANGE_KIND = 3
"""3 questions per kind: 36 runs."""


@dataclass(frozen=True)
class ChangeCase:
    sample_id: str
    gold: str
    kind: str
    flip: str
    change: str
    """The paper's class: minor, major, or none (no flip)."""
    outputs: tuple[str, str, str]
    """The analyst's first reply, the critique, the analyst's revised reply."""


def _reply(steps: Any, answer: str) -> str:
    return json.dumps({"steps": steps, "answer": answer})


def _wrong(gold: str, k: int = 1) -> str:
    """A wrong answer: at least 7 away from the gold (so no rounding reaches it)."""
    g = Decimal(gold)
    return str(g + k * (abs(g) + 7))


def _steps(derivation: str) -> list[str]:
    return [
        "Read the figures the question needs from the table and the text.",
        f"Compute {derivation.strip()}.",
    ]


def _reformat_number(m: re.Match[str]) -> str:
    text = m.group(0)
    if "." in text:
        return text + "0"  # a trailing zero
    return f"{int(text):,}" if len(text) > 3 else text  # thousands separators


def _reformatted(derivation: str) -> list[str]:
    # the same steps with other spacing, case and number formatting
    spaced = re.sub(r"\d+(?:\.\d+)?", _reformat_number, derivation)
    spaced = re.sub(r"([-+*/()])", r" \1 ", spaced)
    return [
        "READ the figures the question needs from the table   and the text",
        f"compute  {spaced}",
    ]


def _other_data(derivation: str) -> list[str]:
    return [
        "Read the figures the question needs from the table and the text.",
        f"Compute {derivation.strip()} using the previous year's figure instead.",
    ]


def _other_calculation(derivation: str) -> list[str]:
    return [
        "Read the figures the question needs from the table and the text.",
        f"Compute ({derivation.strip()}) / 2.",
    ]


def change_case(sample: Sample, kind: str, flip: str, change: str) -> ChangeCase:
    gold = str(sample.target)
    wrong = _wrong(gold)
    derivation = str((sample.metadata or {}).get("derivation") or "the difference")
    first_right = flip.startswith("correct")
    final_right = flip.endswith("to_correct")
    first_answer = gold if first_right else wrong
    final_answer = gold if final_right else wrong
    if flip == "wrong_to_wrong":
        final_answer = _wrong(gold, 2)
    steps = _steps(derivation)
    first_steps: Any = steps
    final_steps: Any = steps
    if kind.endswith("reformatted"):
        final_steps = _reformatted(derivation)
    elif kind == "cw_same_calculation_other_result":
        first_steps = [*steps, f"The result is {first_answer}."]
        final_steps = [*steps, f"The result is {final_answer}."]
    elif kind.endswith("other_data"):
        final_steps = _other_data(derivation)
    elif kind.endswith("other_calculation") or kind.endswith("other_steps"):
        final_steps = _other_calculation(derivation)
    outputs = (
        _reply(first_steps, first_answer),
        "Check the figures and the arithmetic once more.",
        _reply(final_steps, final_answer),
    )
    return ChangeCase(str(sample.id), gold, kind, flip, change, outputs)


def change_cases(samples: list[Sample]) -> list[ChangeCase]:
    """36 cases: each kind on 3 distinct questions with a derivation, in dataset order."""
    usable = [
        s for s in samples if (s.metadata or {}).get("derivation") and Decimal(str(s.target)) != 0
    ]
    cases: list[ChangeCase] = []
    for i, (kind, flip, change) in enumerate(CHANGE_KINDS):
        for s in usable[i * PER_CHANGE_KIND : (i + 1) * PER_CHANGE_KIND]:
            cases.append(change_case(s, kind, flip, change))
    order = {str(s.id): i for i, s in enumerate(samples)}
    return sorted(cases, key=lambda c: order[c.sample_id])
