"""How often the gold re-run causes (misread, unit, partial, precision) explain an answer by
chance, on FinQA's and TAT-QA's real dev records and knowledgefmath's validation records.

Usage: FINMATH_DATA_DIR=../shared/data python benchmarks/cause_chance.py
       [--only finqa,tatqa,knowledgefmath] [--records 300] [--seed 1]

knowledgefmath's gold is a Python program: its inputs are its literals (not the units and
day counts the causes never vary), and its planted misread is the gold re-run in the
bubblewrap sandbox with one literal replaced (its re-runs, like the causes', never run in
this process); it needs bubblewrap.

For each numeric record with a gold that re-runs, three answers go through the causes'
own path (:func:`finmath_tasks.scorers.causes.explain` with the benchmark's gold check, a
reply that states nothing, class ``wrong``):

- ``factor``: the gold times a random factor (log-uniform in 1/5 .. 5, not within 2% of 1
  nor of a power of ten), written to 2 decimals as replies mostly write it: no re-run
  stands behind it, so any misread/unit/partial/precision cause is a chance explanation
  (an answer that is the gold itself at its 2 decimals, a small gold, is drawn again);
- ``document``: another number the document writes (not the gold): the same;
- ``planted``: the gold re-run with one input read as another number of the document,
  written to 2 decimals: a real misread, which the cause should name (its recall).

It prints, per benchmark and kind, how many answers got each re-run cause. Run it at two
commits to compare a change of the matching rule.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import os
import random
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

from finmath_tasks.scorers.causes import agreement, explain

RERUN = ("misread", "unit", "partial", "precision")


def _finqa(n: int) -> Iterator[tuple[dict[str, Any], float, Any, list[Any]]]:
    from finmath_tasks.tasks.finqa.causes import (
        _numbers,
        document_of,
        finqa_causes,
        gold_expression,
    )
    from finmath_tasks.tasks.finqa.dataset import load_dataset

    count = 0
    for sample in load_dataset("dev", os.environ["FINMATH_DATA_DIR"] + "/finqa", None):
        meta = dict(sample.metadata or {})
        if isinstance(meta.get("exe_ans"), str) or not meta.get("program"):
            continue
        try:
            gold = gold_expression(str(meta["program"]), meta["table"])
            value = float(gold.run({}, None)[0])
        except Exception:
            continue
        if not gold.inputs or not math.isfinite(value) or value == 0:
            continue
        yield meta, value, (finqa_causes, gold), _numbers(document_of(meta))
        count += 1
        if count >= n:
            return


def _tatqa(n: int) -> Iterator[tuple[dict[str, Any], float, Any, list[Any]]]:
    from finmath_tasks.tasks.tatqa import tatqa
    from finmath_tasks.tasks.tatqa.causes import document_of, gold_expression, tatqa_causes
    from finmath_tasks.variants import find_numbers, is_year

    count = 0
    data_dir = os.environ["FINMATH_DATA_DIR"] + "/tatqa"
    for sample in tatqa(data_dir=data_dir, solver="cot").dataset:
        meta = dict(sample.metadata or {})
        if meta.get("answer_type") != "arithmetic":
            continue
        try:
            gold = gold_expression(str(meta["derivation"]), float(meta["answer"]))
            value = float(gold.run({}, None)[0])
        except Exception:
            continue
        if not gold.inputs or not math.isfinite(value) or value == 0:
            continue
        numbers = [w for w in find_numbers(document_of(meta)) if not is_year(w)]
        yield meta, value, (tatqa_causes, gold), numbers
        count += 1
        if count >= n:
            return


class _Program:
    """A knowledgefmath gold program as the planting needs it: its inputs (literals) and a
    ``run`` that re-runs it with one replaced, in the sandbox."""

    def __init__(self, program: str) -> None:
        from finmath_tasks.scorers.causes_gold import CONVENTIONS, program_literals

        self.program = program
        self.literals = [x for x in program_literals(program) if abs(x[3]) not in CONVENTIONS]
        self.inputs = [_Input(x[3]) for x in self.literals]

    def run(self, replaced: dict[int, float], _rounding: Any) -> tuple[float, list[float]]:
        from finmath_tasks.scorers.causes_gold import (
            PROBE_MARK,
            _probe_result,
            _replace,
            run_probe,
        )
        from finmath_tasks.tasks.knowledgefmath.programs import ENTRY_POINT

        source = self.program
        for i, value in replaced.items():
            source = _replace(source, self.literals[i], value)
        code = (
            f"{source}\n\nimport json as _j\n_run = {ENTRY_POINT}\n"
            f"def _fm_plant():\n    print({PROBE_MARK!r} + ' ' + _j.dumps({{'v': float(_run())}}))\n"
            "    return 0.0\n"
        )
        found = _probe_result(asyncio.run(run_probe(code, "_fm_plant")))
        return float(found["v"]), []


class _Input:
    def __init__(self, value: float) -> None:
        self.value = value


def _knowledgefmath(n: int) -> Iterator[tuple[dict[str, Any], float, Any, list[Any]]]:
    from finmath_tasks.tasks.knowledgefmath.causes import document_of, knowledgefmath_causes
    from finmath_tasks.tasks.knowledgefmath.dataset import load_dataset
    from finmath_tasks.variants import find_numbers, is_year

    count = 0
    data_dir = os.environ["FINMATH_DATA_DIR"] + "/financemath"
    for sample in load_dataset("validation", data_dir, None):
        meta = dict(sample.metadata or {})
        gold = meta.get("ground_truth")
        program = str(meta.get("gold_program") or "")
        if not isinstance(gold, int | float) or gold == 0 or not program.strip():
            continue
        expression = _Program(program)
        if not expression.inputs:
            continue
        numbers = [w for w in find_numbers(document_of(meta)) if not is_year(w)]
        yield meta, float(gold), (knowledgefmath_causes, expression), numbers
        count += 1
        if count >= n:
            return


SOURCES = {"finqa": _finqa, "tatqa": _tatqa, "knowledgefmath": _knowledgefmath}


def _factor(rng: random.Random, gold: float) -> float:
    while True:
        f = math.exp(rng.uniform(math.log(0.2), math.log(5.0)))
        e = math.log10(f)
        if abs(f - 1) > 0.02 and abs(e - round(e)) > 0.01:
            answer = round(gold * f, 2)
            if answer != 0 and agreement(gold, answer) is None:  # a small gold rounded is
                return answer  # the gold at the answer's precision: precision, no chance


def _planted(rng: random.Random, gold: Any, value: float, numbers: list[Any]) -> float | None:
    for _ in range(20):
        i = rng.randrange(len(gold.inputs))
        other = rng.choice(numbers).value if numbers else None
        if other is None or abs(other - gold.inputs[i].value) <= 1e-9 * abs(other):
            continue
        try:
            wrong = float(gold.run({i: other}, None)[0])
        except Exception:
            continue
        answer = round(wrong, 2)
        if math.isfinite(wrong) and answer != 0 and abs(answer - value) > 0.02 * abs(value):
            return answer
    return None


async def _cause(check: Any, meta: dict[str, Any], gold: float, answer: float) -> str:
    causes, _ = await explain(
        {"k": "wrong"}, {"k": answer}, output="", gold=gold, metadata=meta, gold_check=check
    )
    return causes["k"]


def run(name: str, records: int, seed: int) -> dict[str, Counter[str]]:
    rng = random.Random(seed)
    source = SOURCES[name]
    counts: dict[str, Counter[str]] = {k: Counter() for k in ("factor", "document", "planted")}
    for meta, value, (check, gold), numbers in source(records):
        others = [w.value for w in numbers if abs(w.value - value) > 1e-9 * abs(value)]
        answers = {
            "factor": _factor(rng, value),
            "document": rng.choice(others) if others else None,
            "planted": _planted(rng, gold, value, numbers),
        }
        for kind, answer in answers.items():
            if answer is None:
                continue
            counts[kind]["n"] += 1
            counts[kind][asyncio.run(_cause(check, meta, value, answer))] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="finqa,tatqa")
    parser.add_argument("--records", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--chance-max",
        type=float,
        default=None,
        help="the causes' CHANCE_MAX for this run (where the code has one)",
    )
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    if args.chance_max is not None:
        from finmath_tasks.scorers import causes

        causes.CHANCE_MAX = args.chance_max
    for name in args.only.split(","):
        start = time.perf_counter()
        counts = run(name, args.records, args.seed)
        took = time.perf_counter() - start
        split = "validation" if name == "knowledgefmath" else "dev"
        print(f"{name} {split}, {args.records} records, seed {args.seed} ({took:.1f} s)")
        print(f"  {'answer':<9} {'n':>4} " + " ".join(f"{c:>9}" for c in (*RERUN, "any rerun")))
        for kind, c in counts.items():
            n = c["n"] or 1
            fired = sum(c[x] for x in RERUN)
            cells = " ".join(f"{100 * c[x] / n:8.1f}%" for x in RERUN)
            print(f"  {kind:<9} {c['n']:>4} {cells} {100 * fired / n:8.1f}%")
            rest = {k: v for k, v in c.items() if k not in (*RERUN, "n")}
            print(f"  {'':<9} other causes: {dict(sorted(rest.items()))}")


if __name__ == "__main__":
    main()
