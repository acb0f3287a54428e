"""The FinanceMath leaderboard, replayed through ``knowledgefmath``.

Usage: FINMATH_DATA_DIR=../shared/data python benchmarks/leaderboard_replay.py
           [--kind cot|pot|both] [--models NAME,NAME,...]

For every model whose recorded validation outputs are in
``financemath/reference_outputs/validation/{cot,pot}/`` (the reference's
bdddc58 release), one real Inspect eval of ``knowledgefmath`` on the
validation split, with a scripted model that answers each question with that
model's recorded output:

- CoT: ``-T extractor=model``; the ``grader`` is scripted with the reference's
  recorded extractor reply (``extracted_pred_answer``) for that output.
- PoT: ``-T solver=pot``; the recorded output is the model's answer, its
  program runs in our bwrap sandbox.

Prints per model and kind our ``financemath`` accuracy, the published one
(``reference_results/validation_{cot,pot}_results.json``), the difference, the
execution rates, the number of sample verdicts that differ from the
recorded ones, and ``knowledgefmath2023`` (the paper's 2023 scoring of the
same outputs: for CoT read from the same extractor replies, which came from
the later extractor), then a summary line per kind. Exit status 1 when any
model differs.

Further replays (other benchmarks' published results) run at the end: see
``MORE_REPLAYS``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("cot", "pot")
OUTPUTS = Path("financemath") / "reference_outputs" / "validation"
RESULTS = Path("financemath") / "reference_results"

MORE_REPLAYS: list[tuple[str, str]] = [("MathHay", "mathhay_replay")]
"""(title, module in benchmarks/): each module's ``run(data_dir: Path) -> int``
(prints its own table and summary; returns the number of records that differ) runs
after the FinanceMath replay. A module that is not there is reported as not run."""


@dataclass
class ModelReplay:
    model: str
    kind: str
    ours: float
    published: float
    ours_execution: float
    published_execution: float
    knowledgefmath2023: float
    samples: int
    differing: list[str] = field(default_factory=list)
    """Question ids whose verdict differs from the recorded one."""
    quirks: Counter[str] = field(default_factory=Counter)
    """How many samples show each of the quirks of ``QUIRKS`` (read from the scores)."""

    @property
    def difference(self) -> float:
        return round(self.ours - self.published, 2)


QUIRKS: dict[str, str] = {
    "one_fence": "PoT: exactly one fence and `def solution():`, where the reference's cut "
    "differs from ours (financemath runs the reference's)",
    "other_cut": "PoT: other outputs where the reference's cut differs from ours",
    "cut_2023": "PoT: the first release's cut differs from the camera-ready one's",
    "argparse": "PoT: output mentions argparse (discarded, not executed)",
    "integer_gold": "PoT: integer gold, never credited in 2023 (program executed)",
    "integer_gold_credited": "PoT: ... of which financemath credits the answer",
    "not_a_float": "CoT: reply float() cannot read (2023: incorrect)",
    "normalised_only": "CoT: ... of which financemath's normalisation reads a number",
    "unreadable": "CoT: reply financemath's normalisation cannot read (incorrect)",
    "within_4pct_only": "verdict: 2023 correct, financemath not",
    "financemath_only": "verdict: financemath correct, 2023 not",
    "sign_2023": "2023 credits a sign flip (|p| within 4% of |g|)",
}
"""Quirk -> what it counts, per sample of the replay."""


def tally(output: str, metadata: dict[str, Any], values: dict[str, float]) -> list[str]:
    """The quirks of ``QUIRKS`` one replayed sample shows."""
    found = []
    alternatives = (metadata.get("program") or {}).get("alternatives") or {}
    if "financemath" in alternatives:
        single = output.count("```") == 1 and "def solution():" in output
        found.append("one_fence" if single else "other_cut")
    if "knowledgefmath2023" in alternatives and (
        alternatives.get("financemath", {}).get("program")
        != alternatives["knowledgefmath2023"].get("program")
    ):
        found.append("cut_2023")
    found += [flag for flag in ("integer_gold", "not_a_float", "unreadable") if metadata.get(flag)]
    if metadata.get("integer_gold") and values["financemath"] == 1.0:
        found.append("integer_gold_credited")
    if metadata.get("argparse_discarded"):
        found.append("argparse")
    if metadata.get("not_a_float"):
        official = (metadata.get("readings") or {}).get("financemath") or {}
        if official.get("value") is not None:
            found.append("normalised_only")
    if values["knowledgefmath2023"] > values["financemath"]:
        found.append("within_4pct_only")
    if values["financemath"] > values["knowledgefmath2023"]:
        found.append("financemath_only")
    if (metadata.get("rules") or {}).get("knowledgefmath2023", "").startswith("sign ignored"):
        found.append("sign_2023")
    return found


def data_dir_from_env() -> Path:
    chosen = os.environ.get("FINMATH_DATA_DIR")
    path = Path(chosen) if chosen else ROOT.parent / "shared" / "data"
    if not (path / OUTPUTS).is_dir():
        sys.exit(f"no {OUTPUTS} under {path}: set FINMATH_DATA_DIR")
    return path


def recorded_models(data_dir: Path, kind: str) -> list[str]:
    return sorted(p.stem for p in (data_dir / OUTPUTS / kind).glob("*.json"))


def published_results(data_dir: Path, kind: str) -> dict[str, dict[str, Any]]:
    path = data_dir / RESULTS / f"validation_{kind}_results.json"
    return {row["model_name"]: row for row in json.loads(path.read_text("utf-8"))}


def _output(content: str) -> Any:
    from inspect_ai.model import ModelOutput, ModelUsage

    out = ModelOutput.from_content("mockllm/model", content)
    out.usage = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)  # no token count
    return out


def _answering(by_text: dict[str, str], what: str) -> Any:
    """A mockllm model that answers a request by the text of its last message."""
    from inspect_ai.model import get_model

    def answer(messages: list[Any], *_: Any) -> Any:
        text = messages[-1].text
        if text not in by_text:
            raise LookupError(f"no recorded {what} for this request: {text[:120]!r}")
        return _output(by_text[text])

    return get_model("mockllm/model", custom_outputs=answer)


def replay_model(
    data_dir: Path, model: str, kind: str, log_dir: Path, sandbox: Any = "bwrap"
) -> ModelReplay:
    """One real eval of ``knowledgefmath`` with ``model``'s recorded outputs (``kind``);
    ``sandbox``: where PoT programs run (a ``sandbox.resolve`` name)."""
    from inspect_ai import eval

    from finmath_tasks.sandbox.resolve import resolve_sandbox
    from finmath_tasks.scorers.model_extraction import extraction_messages
    from finmath_tasks.tasks.knowledgefmath import knowledgefmath
    from finmath_tasks.tasks.knowledgefmath.dataset import render_prompt
    from finmath_tasks.tasks.knowledgefmath.scoring import ANSWER_EXTRACTION

    records = json.loads((data_dir / OUTPUTS / kind / f"{model}.json").read_text("utf-8"))
    by_id = {r["question_id"]: r for r in records}
    published = published_results(data_dir, kind)[model]
    if kind == "cot":
        task = knowledgefmath(
            split="validation", solver="cot", extractor="model", data_dir=str(data_dir)
        )
    else:
        task = knowledgefmath(split="validation", solver="pot", data_dir=str(data_dir))
    samples = [s for s in task.dataset if s.id in by_id]
    if len(samples) != len(by_id):
        raise ValueError(f"{model} ({kind}): recorded ids not in the validation split")
    answers: dict[str, str] = {}
    replies: dict[str, str] = {}
    for sample in samples:
        record = by_id[str(sample.id)]
        output = record["output"][0] if isinstance(record["output"], list) else record["output"]
        meta = sample.metadata or {}
        answers[render_prompt(meta["question"], meta.get("tables") or [], kind)] = output  # type: ignore[arg-type]
        if kind == "cot":
            [*_, solution] = extraction_messages(str(sample.input), output, ANSWER_EXTRACTION)
            replies[solution.text] = record["extracted_pred_answer"]
    task.dataset = task.dataset.filter(lambda s: s.id in by_id)
    roles = {"grader": _answering(replies, "extractor reply")} if kind == "cot" else None
    [log] = eval(
        task,
        model=_answering(answers, "output"),
        model_roles=roles,
        sandbox=resolve_sandbox(sandbox) if kind == "pot" else None,
        log_dir=str(log_dir),
        display="none",
        log_level="error",
        log_realtime=False,  # no per-event sample buffer: the log is read once at the end
        max_samples=16,
    )
    if log.status != "success":
        raise RuntimeError(f"{model} ({kind}): the eval ended {log.status}: {log.error}")
    assert log.samples is not None
    verdicts: dict[str, dict[str, float]] = {}
    quirks: Counter[str] = Counter()
    for logged in log.samples:
        scores = logged.scores or {}
        values = {name: float(s.value) for name, s in scores.items()}  # type: ignore[arg-type]
        verdicts[str(logged.id)] = values
        output = logged.output.completion if logged.output else ""
        quirks.update(tally(output, scores["financemath"].metadata or {}, values))
    differing = sorted(
        qid
        for qid, v in verdicts.items()
        if v["financemath"] != float(by_id[qid]["result"]["acc"])
        or v["execution_rate"] != float(by_id[qid]["result"]["execution_rate"])
    )
    n = len(verdicts)

    def pct(key: str) -> float:
        return round(100 * sum(v[key] for v in verdicts.values()) / n, 2)

    return ModelReplay(
        model=model,
        kind=kind,
        ours=pct("financemath"),
        published=float(published["accuracy"]),
        ours_execution=pct("execution_rate"),
        published_execution=float(published["execution_rate"]),
        knowledgefmath2023=pct("knowledgefmath2023"),
        samples=n,
        differing=differing,
        quirks=quirks,
    )


def print_table(rows: Sequence[ModelReplay], kind: str) -> None:
    head = "| model | ours (financemath) | published | difference | ours exec | published exec |"
    rule = "|---|---|---|---|---|---|"
    head += " verdicts differing | knowledgefmath2023 |"
    rule += "---|---|"
    print(f"\n### validation {kind.upper()}\n\n{head}\n{rule}")
    for r in rows:
        line = f"| {r.model} | {r.ours:.2f} | {r.published:.2f} | {r.difference:+.2f} |"
        line += f" {r.ours_execution:.2f} | {r.published_execution:.2f} |"
        shown = ", ".join(r.differing[:3]) + (" ..." if len(r.differing) > 3 else "")
        line += (
            f" {len(r.differing)}{f' ({shown})' if shown else ''} | {r.knowledgefmath2023:.2f} |"
        )
        print(line)


def print_quirks(rows: Sequence[ModelReplay], kind: str) -> None:
    total: Counter[str] = Counter()
    for r in rows:
        total.update(r.quirks)
    samples = sum(r.samples for r in rows)
    print(f"\nQuirks in the {kind.upper()} replay ({len(rows)} models, {samples} samples):\n")
    print("| quirk | samples |\n|---|---|")
    for key, what in QUIRKS.items():
        if total[key]:
            print(f"| {what} | {total[key]} |")


def summary(rows: Sequence[ModelReplay], kind: str) -> str:
    equal = sum(r.difference == 0 for r in rows)
    executions = sum(r.ours_execution == r.published_execution for r in rows)
    verdicts = sum(r.samples for r in rows)
    differing = sum(len(r.differing) for r in rows)
    return (
        f"{kind.upper()}: {equal} of {len(rows)} models equal their published validation "
        f"accuracy, {executions} of {len(rows)} their execution rate; {differing} of "
        f"{verdicts} sample verdicts (accuracy, execution) differ from the recorded ones"
    )


def run_more_replays(data_dir: Path, replays: Sequence[tuple[str, str]] = MORE_REPLAYS) -> int:
    """The other benchmarks' replays (``MORE_REPLAYS``); returns how many records differ."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    differing = 0
    for title, module_name in replays:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            print(f"\n{title}: not run (benchmarks/{module_name}.py is not there)")
            continue
        run: Callable[[Path], int] = module.run
        print(f"\n## {title}")
        differing += run(data_dir)
    return differing


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=[*KINDS, "both"], default="both")
    parser.add_argument("--models", default="", help="comma-separated names (default: all)")
    parser.add_argument(
        "--sandbox", default="bwrap", help="where PoT programs run: bwrap (default), docker, local"
    )
    args = parser.parse_args(argv)
    data_dir = data_dir_from_env()
    kinds = KINDS if args.kind == "both" else (args.kind,)
    chosen = [m for m in args.models.split(",") if m]
    lines = []
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            models = chosen or recorded_models(data_dir, kind)
            started = time.perf_counter()
            rows = []
            for model in models:
                rows.append(replay_model(data_dir, model, kind, Path(tmp) / kind, args.sandbox))
                r = rows[-1]
                print(f"{kind} {model}: {r.ours:.2f} vs {r.published:.2f}", file=sys.stderr)
            print_table(rows, kind)
            print_quirks(rows, kind)
            lines.append(summary(rows, kind) + f" ({time.perf_counter() - started:.0f} s)")
            failed |= any(
                r.difference != 0 or r.ours_execution != r.published_execution or r.differing
                for r in rows
            )
    print("\n## Summary\n")
    for line in lines:
        print(line)
    if args.models == "":
        failed |= run_more_replays(data_dir) > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
