"""``finmath mathhay build``: quality control's sandbox throughput and the haystack stage.

    python benchmarks/mathhay_build.py [data_dir] [--max-samples 8] [--sandbox bwrap]
    # default data_dir: $FINMATH_DATA_DIR, else ../shared/data

Each part runs in a child process (its peak memory is that process's ``ru_maxrss``):

1. ``qc``: the qc stage over the shared ``generated_questions_{sssd,2ssd,ss2d}.json``
   (310 tasks) with a scripted quality-control model whose reply holds no JSON, so
   that exactly one program per task runs in the sandbox: the 310 generated (first)
   solutions. Reported: wall time of the stage (an Inspect eval per task type,
   sandbox start-up included), programs per second, and the programs' own run time
   as the sandbox measured it.
2. ``haystack``: the haystack stage for the 602 released questions: the seven
   ``full_haystack_question_<type>.json`` turned back into quality-controlled
   groups (one task each, consistency 1) over the 552-document pool; the output is
   checked to equal the released files.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PERIOD = "March-2024-to-September-2024"
QC_TYPES = ["sssd", "2ssd", "ss2d"]


def _data_dir(arg: str | None) -> Path:
    chosen = arg or os.environ.get("FINMATH_DATA_DIR")
    path = Path(chosen) if chosen else Path(__file__).resolve().parents[2] / "shared" / "data"
    if not (path / "mathhay").is_dir():
        sys.exit(f"no mathhay data under {path}")
    return path / "mathhay"


def part_qc(shared: Path, max_samples: int, sandbox_name: str) -> dict:
    from inspect_ai.model import ModelOutput, get_model

    from finmath_tasks.sandbox.resolve import resolve_sandbox
    from finmath_tasks.tasks.mathhay.build.calls import read_checkpoint
    from finmath_tasks.tasks.mathhay.build.layout import Layout
    from finmath_tasks.tasks.mathhay.build.qc import run_qc
    from finmath_tasks.tiktoken_offline import our_cache_dir, write_cache

    # Inspect's mockllm counts tokens with tiktoken: this script reads our offline copies
    os.environ["TIKTOKEN_CACHE_DIR"] = str(our_cache_dir())
    write_cache(our_cache_dir())
    tmp = Path(tempfile.mkdtemp())
    layout = Layout(tmp, PERIOD)
    layout.folder.mkdir(parents=True)
    n = 0
    for t in QC_TYPES:
        shutil.copy(shared / "pipeline" / PERIOD / f"generated_questions_{t}.json", layout.folder)
        n += sum(len(g["tasks"]) for g in json.loads(layout.generated(t).read_text()))
    no_json = ModelOutput.from_content("mockllm/model", "no JSON here")
    qc_model = get_model("mockllm/model", custom_outputs=[no_json] * n)
    start = time.perf_counter()
    run_qc(
        layout, QC_TYPES, model="mockllm/model", qc_model=qc_model, mode="reference",
        sandbox=resolve_sandbox(sandbox_name), max_samples=max_samples,
    )  # fmt: skip
    wall = time.perf_counter() - start
    executed = 0
    for t in QC_TYPES:
        for record in read_checkpoint(layout.checkpoint("qc", t)).values():
            executed += record["first"]["how"] in {"executed", "call failed", "returned None"}
    shutil.rmtree(tmp)
    return {"programs": n, "ran": executed, "wall_s": round(wall, 2),
            "programs_per_s": round(n / wall, 1), "max_samples": max_samples}  # fmt: skip


def part_haystack(shared: Path) -> dict:
    from finmath_tasks.tasks.mathhay.build.haystack import run_haystack
    from finmath_tasks.tasks.mathhay.build.layout import Layout, write_json
    from finmath_tasks.tasks.mathhay.dataset import TASK_TYPES

    tmp = Path(tempfile.mkdtemp())
    layout = Layout(tmp, PERIOD)
    layout.folder.mkdir(parents=True)
    shutil.copy(shared / PERIOD / "documents_reconstructed.json", layout.folder)
    released = {}
    for t in TASK_TYPES:
        rows = json.loads((shared / PERIOD / f"full_haystack_question_{t}.json").read_text())
        released[t] = rows
        groups = [
            {"Topic": r["Topic"], "Subtopic": r["Subtopic"], "decomposable_query": r["Query"],
             "atomic_queries": [], "doc_id": r["Document_ID"], "document": r["Documents"],
             "tasks": [r["Task"]]}
            for r in rows
        ]  # fmt: skip
        write_json(layout.high_quality(t), groups)
    start = time.perf_counter()
    results = run_haystack(layout, list(TASK_TYPES))
    wall = time.perf_counter() - start
    same = all(json.loads(layout.haystack(t).read_text()) == released[t] for t in TASK_TYPES)
    shutil.rmtree(tmp)
    return {"questions": sum(r.kept for r in results), "wall_s": round(wall, 3),
            "equal_to_release": same}  # fmt: skip


def child(part: str, shared: Path, args: argparse.Namespace) -> None:
    result = (
        part_qc(shared, args.max_samples, args.sandbox) if part == "qc" else part_haystack(shared)
    )
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(result))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data_dir", nargs="?")
    p.add_argument("--max-samples", type=int, default=8)
    p.add_argument("--sandbox", default="bwrap")
    p.add_argument("--part", choices=("qc", "haystack"))
    args = p.parse_args()
    shared = _data_dir(args.data_dir)
    if args.part:
        child(args.part, shared, args)
        return
    for part in ("haystack", "qc"):
        argv = [sys.executable, __file__, str(shared.parent), "--part", part,
                "--max-samples", str(args.max_samples), "--sandbox", args.sandbox]  # fmt: skip
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        print(part, out.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
