"""Measurements on real TAT-QA dev data: the paper's ``rounding`` and its change
analysis against the rules they replaced.

Usage (from the repository root, the data in $FINMATH_DATA_DIR or ../shared/data):

    PYTHONPATH=src:tests python benchmarks/agents_metrics.py

Prints:
1. the 48 crafted CoT answers (tests/tasks/tatqa/agents_cases.py): how many verdicts
   follow the paper under the old and the new ``rounding``;
2. the 36 scripted CoT + critic runs: how many classifications follow the paper under
   the old change rule (every sample, by how far the number moved) and the new one
   (flips only, by the steps);
3. TAT-QA dev PoT accuracy (718 arithmetic questions) of the oracle program (returns the
   gold's float) and of a replayed run (a program per question that computes the gold's
   derivation at full float precision, x100 for a percent-scale gold when that is the
   nearer reading), under the old and the new ``rounding``, and how many verdicts moved.

The old rules are restated here (as they were before the paper's rules replaced them)
only to measure them.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from inspect_ai.model import ModelName
from inspect_ai.scorer import Target
from inspect_ai.solver import TaskState

from finmath_tasks.scorers.comparisons import GoldNumber, compare, number_from_float, rounding
from finmath_tasks.scorers.extraction import ParsedNumber
from finmath_tasks.solvers.agents.answers import parse_reply
from finmath_tasks.solvers.agents.calculator import safe_evaluate
from finmath_tasks.solvers.agents.scoring import (
    change_kind,
    numeric_check,
    read_number,
)
from finmath_tasks.tasks.tatqa.dataset import load_dataset
from tasks.tatqa.agents_cases import change_cases, rounding_cases

# --- the rules before the paper's ---------------------------------------------------------


def old_rounding(pred: ParsedNumber, gold: float) -> Any:
    """Equal, or equal to the GOLD rounded to 0..15 decimals (half-up or half-even)."""
    from finmath_tasks.scorers.comparisons import Match

    stated = pred.written.scaleb(pred.scale_exp)
    if float(stated) == gold:
        return Match(True, "equal")
    g = Decimal(repr(float(gold)))
    exponent = g.as_tuple().exponent
    assert isinstance(exponent, int)
    for places in range(16):
        if -places <= exponent:
            if g == stated:
                return Match(True, "equal")
            continue
        quantum = Decimal(1).scaleb(-places)
        for mode in (ROUND_HALF_UP, ROUND_HALF_EVEN):
            if g.quantize(quantum, rounding=mode) == stated:
                return Match(True, f"gold_rounded_to_{places}_decimals")
    return Match(False, "no_match")


def old_change(before: str | None, after: str | None) -> str:
    """Every sample: none when the number stayed, minor within 1% or x100, else major."""
    a, b = (before or "").strip(), (after or "").strip()
    if not a and not b:
        return "none"
    if not a or not b:
        return "major"
    x, y = read_number(a), read_number(b)
    if x is None or y is None:
        return "none" if a.lower() == b.lower() else "major"
    u, v = x.value, y.value
    if u == v:
        return "none"
    for scaled in (v, v * 100, v / 100):
        if math.isclose(u, scaled, rel_tol=0.01):
            return "minor"
    return "major"


# --- measurements -------------------------------------------------------------------------


def _state(target: str, metadata: dict[str, Any]) -> TaskState:
    return TaskState(
        model=ModelName("mockllm/model"),
        sample_id="s",
        epoch=1,
        input="q",
        messages=[],
        target=Target(target),
        metadata=metadata,
    )


NEW = numeric_check({"rounding": rounding})
OLD = numeric_check({"rounding": old_rounding})


def crafted(samples: list[Any]) -> None:
    cases = rounding_cases(samples)
    by_id = {str(s.id): s for s in samples}
    follow = {"old": 0, "new": 0}
    for c in cases:
        state = _state(c.gold, dict(by_id[c.sample_id].metadata or {}))
        follow["new"] += NEW(c.answer, state).correct == c.correct
        follow["old"] += OLD(c.answer, state).correct == c.correct
    print(
        f"1. {len(cases)} crafted CoT answers: follow the paper: "
        f"old rounding {follow['old']}, new rounding {follow['new']}"
    )


def changes(samples: list[Any]) -> None:
    cases = change_cases(samples)
    by_id = {str(s.id): s for s in samples}
    follow = {"old": 0, "new": 0}
    for c in cases:
        state = _state(c.gold, dict(by_id[c.sample_id].metadata or {}))
        first, final = parse_reply(c.outputs[0]), parse_reply(c.outputs[2])
        stages = [{"answer": r.answer, "steps": r.fields.get("steps")} for r in (first, final)]
        a, b = NEW(first.answer, state).correct, NEW(final.answer, state).correct
        flip = "correct_to_wrong" if a and not b else "wrong_to_correct" if b and not a else "none"
        new = change_kind(flip, stages[0], stages[1])
        # the old rule classified every sample, flip or not, by how far the number moved
        old = old_change(str(first.answer), str(final.answer))
        follow["new"] += new == c.change
        follow["old"] += old == c.change
    print(
        f"2. {len(cases)} scripted CoT + critic runs: follow the paper's change analysis: "
        f"old rule {follow['old']}, new rule {follow['new']}"
    )


_NUMBER_COMMAS = re.compile(r"(?<=\d),(?=\d{3})")


def replay_value(metadata: dict[str, Any], gold: float) -> float | None:
    """The derivation evaluated at full float precision (None when it does not evaluate)."""
    text = str(metadata.get("derivation") or "")
    text = _NUMBER_COMMAS.sub("", text).replace("[", "(").replace("]", ")")
    text = text.replace("%", "").replace("$", "").replace("×", "*").replace("÷", "/")
    if not text.strip():
        return None
    value, _ = safe_evaluate(text)
    if value is None or not math.isfinite(value):
        return None
    if metadata.get("scale") == "percent" and abs(value * 100 - gold) < abs(value - gold):
        value *= 100
    return value


def pot(samples: list[Any]) -> None:
    n = len(samples)
    oracle = {"old": 0, "new": 0}
    replay = {"old": 0, "new": 0}
    replayed = moved = moved_up = 0
    pot_case = None
    for s in samples:
        gold_text = str(s.target)
        meta = dict(s.metadata or {})
        gold = GoldNumber(meta.get("gold_as_written") or gold_text)
        oracle_number = number_from_float(float(gold_text))
        oracle["new"] += compare(rounding, oracle_number, gold).correct
        oracle["old"] += compare(old_rounding, oracle_number, float(gold_text)).correct
        value = replay_value(meta, float(gold_text))
        if value is None:
            continue
        replayed += 1
        number = number_from_float(value)
        new = compare(rounding, number, gold).correct
        old = compare(old_rounding, number, float(gold_text)).correct
        replay["new"] += new
        replay["old"] += old
        moved += new != old
        moved_up += new and not old
        if gold_text == "-22.22" and pot_case is None:
            pot_case = (repr(value), old, new)
    print(
        f"3. TAT-QA dev PoT ({n} arithmetic questions): oracle program: old rounding "
        f"{oracle['old']}/{n} = {oracle['old'] / n:.4f}, new {oracle['new']}/{n} = "
        f"{oracle['new'] / n:.4f}"
    )
    print(
        f"   replayed derivations ({replayed} of {n} evaluate; the others count wrong): "
        f"old rounding {replay['old']}/{n} = {replay['old'] / n:.4f}, new {replay['new']}/{n} "
        f"= {replay['new'] / n:.4f}; verdicts moved: {moved} ({moved_up} wrong -> right, "
        f"{moved - moved_up} right -> wrong)"
    )
    if pot_case is not None:
        print(
            f"   the PoT case (gold -22.22, a full-precision program value): program value {pot_case[0]}: "
            f"old rounding {pot_case[1]}, new {pot_case[2]}"
        )


def main() -> None:
    samples = list(load_dataset("dev", "arithmetic", None, None))
    crafted(samples)
    changes(samples)
    pot(samples)


if __name__ == "__main__":
    assert Path("src/finmath_tasks").is_dir(), "run from the repository root"
    main()
