"""Why FinanceMath's leaderboard models are wrong: the error classes of their recorded
validation outputs, replayed through ``knowledgefmath``.

Usage: FINMATH_DATA_DIR=../shared/data python benchmarks/error_classes_replay.py
           [--kind cot|pot|both] [--models NAME,NAME,...] [--score financemath,tolerant]

Each model's recorded outputs (``financemath/reference_outputs/validation/{cot,pot}/``)
run through one real Inspect eval each, as ``benchmarks/leaderboard_replay.py`` runs them
(CoT: the reference's recorded extractor replies as the grader; PoT: the programs in our
bwrap sandbox). From each log's samples: the share of the 200 questions in each error
class of each ``--score`` (default both ``financemath``, the official comparison, and
``tolerant``, ours), per model and kind, the sub-reasons of ``no_answer``, ``harness`` and
``program_failed`` summed over the models; each model's causes (scorers.causes) as shares
of its wrong answers, the golds the audit suspects, and a check that no cause contradicts
its evidence (``method`` with a wrong stated step, ``program_failed`` for a harness
artefact); how many ``tolerant`` verdicts differ from the
rule before it read a fraction as a percent only where a percentage is in play (every
answer re-compared with the percent/fraction readings allowed); and a check: a sample the
reference scored correct (its recorded ``acc``) has no class under ``financemath``. Exit
status 1 when one does.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
COLUMNS = [
    "scale",
    "sign",
    "within_1pct",
    "within_10pct",
    "wrong",
    "no_answer",
    "harness",
    "program_failed",
    "rejected",
]
"""The classes shown as columns (no_answer, harness and program_failed summed over their
reasons)."""


def _replay() -> Any:
    spec = importlib.util.spec_from_file_location(
        "leaderboard_replay", HERE / "leaderboard_replay.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _tolerant_before(meta: dict[str, Any], kind: str) -> bool | None:
    """``tolerant``'s verdict under its earlier rule (a fraction read as a percent and the
    reverse whatever the question): the same reading compared with a gold flagged percent."""
    from finmath_tasks.scorers.comparisons import (
        compare,
        gold_from_float,
        number_from_float,
        tolerant,
    )
    from finmath_tasks.scorers.extraction import parse_number

    gold = meta.get("gold")
    if not isinstance(gold, int | float):
        return None
    if kind == "pot":
        value = meta.get("extracted_value")
        number = number_from_float(value) if isinstance(value, int | float) else None
    else:
        text = meta.get("extracted")
        number = parse_number(text) if isinstance(text, str) else None
    if number is None:
        return False
    return compare(tolerant, number, gold_from_float(gold, percent=True)).correct


CAUSE_COLUMNS = [
    "truncated",
    "no_answer",
    "over_budget",
    "format",
    "program_failed",
    "arithmetic",
    "misread",
    "unit",
    "partial",
    "precision",
    "retrieval",
    "gold_suspect",
    "method",
    "unexplained",
]
"""The causes (scorers.causes.CAUSES), as columns."""
CAUSES_FOUND: dict[str, Counter[str]] = {}
"""score -> cause -> count of the last model_classes call."""
CAUSE_PROBLEMS: list[str] = []
"""Samples whose cause contradicts its evidence (method with a wrong stated step,
program_failed for a harness artefact)."""
TRACES: Counter[str] = Counter()
"""PoT ``method`` answers by their trace against the gold (inputs the gold's or not, a
step where they part or none) and invented inputs (``misread`` with no re-run), summed."""
SUSPECT_GOLDS: dict[str, str] = {}
"""question id -> the gold_suspect evidence (first seen)."""


def _check_cause(sample_id: str, meta: dict[str, Any], output: str, kind: str) -> None:
    from finmath_tasks.scorers.causes_arithmetic import check_arithmetic

    cause = meta.get("error_cause")
    cls = str(meta.get("error_class") or "")
    if cause == "method" and kind == "cot" and check_arithmetic(output).wrong is not None:
        CAUSE_PROBLEMS.append(f"{sample_id}: method with a wrong stated step")
    if cause == "program_failed" and cls.startswith("harness:"):
        CAUSE_PROBLEMS.append(f"{sample_id}: program_failed for {cls}")
    found = meta.get("error_evidence") or {}
    if cause == "method" and kind == "pot" and "inputs_match" in found:
        inputs = "inputs the gold's" if found["inputs_match"] else "other inputs"
        parts = "no step parts" if found.get("parts_at") is None else "parts at a step"
        TRACES[f"pot method: {inputs}, {parts}"] += 1
    if cause == "misread" and "invented" in found:
        TRACES[f"{kind} misread: an invented input"] += 1
    if cause == "gold_suspect":
        SUSPECT_GOLDS.setdefault(sample_id, str((meta.get("error_evidence") or {}).get("why")))


def model_classes(
    data_dir: Path, model: str, kind: str, log_dir: Path, scores_shown: list[str]
) -> tuple[dict[str, Counter[str]], int, list[str], Counter[str]]:
    """(score -> class -> count, samples, ids the reference scored correct that have a
    ``financemath`` class, ``tolerant`` verdict changes "before->now") of one model's
    replayed outputs; each score's causes in :data:`CAUSES_FOUND`."""
    from inspect_ai.log import read_eval_log

    replay = _replay()
    replay.replay_model(data_dir, model, kind, log_dir)
    [path] = sorted(log_dir.glob("*.eval"))
    log = read_eval_log(str(path))
    records = json.loads((data_dir / replay.OUTPUTS / kind / f"{model}.json").read_text("utf-8"))
    accepted = {r["question_id"] for r in records if r["result"]["acc"]}
    counts: dict[str, Counter[str]] = {score: Counter() for score in scores_shown}
    CAUSES_FOUND.clear()
    CAUSES_FOUND.update({score: Counter() for score in scores_shown})
    changes: Counter[str] = Counter()
    wrongly_classed: list[str] = []
    for sample in log.samples or []:
        scores = sample.scores or {}
        official = (scores["financemath"].metadata or {}).get("error_class")
        if str(sample.id) in accepted and official is not None:
            wrongly_classed.append(str(sample.id))
        for score in scores_shown:
            found = (scores[score].metadata or {}).get("error_class")
            counts[score][found if isinstance(found, str) else "correct"] += 1
            meta = scores[score].metadata or {}
            CAUSES_FOUND[score][str(meta.get("error_cause") or "correct")] += 1
            output = sample.output.completion if sample.output else ""
            _check_cause(str(sample.id), meta, output, kind)
        now = scores["tolerant"].value == 1.0
        before = _tolerant_before(scores["financemath"].metadata or {}, kind)
        if before is not None and before != now:
            cls = (scores["tolerant"].metadata or {}).get("error_class") or "correct"
            changes[f"{'correct' if before else 'wrong'} -> {cls}"] += 1
    return counts, len(log.samples or []), wrongly_classed, changes


def column(counts: Counter[str], name: str) -> int:
    return sum(v for k, v in counts.items() if k == name or k.startswith(f"{name}:"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=["cot", "pot", "both"], default="both")
    parser.add_argument("--models", default="", help="comma-separated (default: all recorded)")
    parser.add_argument(
        "--score", default="financemath,tolerant", help="comma-separated: financemath, tolerant"
    )
    args = parser.parse_args()
    shown = [s for s in args.score.split(",") if s]
    unknown = sorted(set(shown) - {"financemath", "tolerant"})
    if unknown:
        parser.error(f"--score: unknown {', '.join(unknown)} (financemath, tolerant)")
    replay = _replay()
    data_dir = replay.data_dir_from_env()
    kinds = ["cot", "pot"] if args.kind == "both" else [args.kind]
    wanted = [m for m in args.models.split(",") if m]
    problems = 0
    for kind in kinds:
        models = wanted or replay.recorded_models(data_dir, kind)
        rows: dict[str, list[str]] = {score: [] for score in shown}
        cause_rows: dict[str, list[str]] = {score: [] for score in shown}
        cause_totals: dict[str, Counter[str]] = {score: Counter() for score in shown}
        reasons: dict[str, Counter[str]] = {score: Counter() for score in shown}
        changes: Counter[str] = Counter()
        total = 0
        started = time.monotonic()
        for model in models:
            with tempfile.TemporaryDirectory() as tmp:
                counts, n, wrongly, changed = model_classes(data_dir, model, kind, Path(tmp), shown)
            problems += len(wrongly)
            total += n
            changes.update(changed)
            for score in shown:
                reasons[score].update({k: v for k, v in counts[score].items() if ":" in k})
                cells = [f"{100 * column(counts[score], c) / n:.1f}" for c in ["correct", *COLUMNS]]
                rows[score].append(f"| {model} | {n} | " + " | ".join(cells) + " |")
                found = CAUSES_FOUND[score]
                cause_totals[score].update(found)
                wrong = n - found["correct"]
                shares = [f"{100 * found[c] / wrong:.1f}" if wrong else "-" for c in CAUSE_COLUMNS]
                cause_rows[score].append(f"| {model} | {wrong} | " + " | ".join(shares) + " |")
            print(f"{kind} {model}: done ({time.monotonic() - started:.0f} s)", flush=True)
            if wrongly:
                print(f"  {model}: reference-correct samples with a class: {wrongly[:5]}")
        for score in shown:
            print(f"\n### validation {kind.upper()}: error classes of {score} (% of questions)\n")
            print("| model | n | correct | " + " | ".join(COLUMNS) + " |")
            print("|---|---|---|" + "---|" * len(COLUMNS))
            print("\n".join(rows[score]))
            print(f"\nSub-reasons of {score} over the {len(models)} models ({kind.upper()}):\n")
            print("| class | samples |\n|---|---|")
            for name, count in sorted(reasons[score].items()):
                print(f"| {name} | {count} |")
        for score in shown:
            print(f"\n### validation {kind.upper()}: causes of {score} (% of wrong answers)\n")
            print("| model | wrong | " + " | ".join(CAUSE_COLUMNS) + " |")
            print("|---|---|" + "---|" * len(CAUSE_COLUMNS))
            print("\n".join(cause_rows[score]))
            summed = cause_totals[score]
            print(f"\nAll models ({score}): {dict(summed.most_common())}")
        print(
            f"\ntolerant verdicts that differ from the earlier rule ({kind.upper()}): "
            f"{sum(changes.values())} of {total}"
        )
        for name, count in sorted(changes.items()):
            print(f"  {name}: {count}")
        print(f"\n({len(models)} models in {time.monotonic() - started:.0f} s)")
    print("\nTraces and invented inputs (every score shown, all models):")
    for name, count in sorted(TRACES.items()):
        print(f"  {name}: {count}")
    print(f"\nGolds the audit suspects ({len(SUSPECT_GOLDS)}):")
    for question, why in sorted(SUSPECT_GOLDS.items()):
        print(f"  {question}: {why}")
    print(
        f"causes that contradict their evidence: {len(CAUSE_PROBLEMS)}"
        + (" (none, as it must be)" if not CAUSE_PROBLEMS else f" {CAUSE_PROBLEMS[:5]}")
    )
    problems += len(CAUSE_PROBLEMS)
    print(
        f"\nreference-correct samples with a financemath class: {problems}"
        + (" (none, as it must be)" if not problems else " (DIFFERS)")
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
