"""Time and peak memory of ``finmath report`` over many logs (default 1,000).

    python benchmarks/report_many_logs.py [--logs 1000] [--settings K] [--plots] [--keep DIR]
    python benchmarks/report_many_logs.py --suite


Makes one real log (a scripted ``mockllm`` run of knowledgefmath's demo split, 3
samples, with a grader role and token usage on every output), then writes N
copies of it into a fresh directory by rewriting only the log's header entries
in the ``.eval`` zip (model name, task arguments, ids, token counts), so the
copies are distinct runs (50 models x 20 ``top_n`` values) for the report; with
``--settings K``, the copies are repeats of K settings (K models, one ``top_n``; each copy
its own Inspect task id, so every copy is a repeat, not an attempt). ``--suite`` runs, each
in its own process, 10,000 logs over 4 settings (2,500 repeats each) and 300 repeats of
one setting, the two shapes whose report once grew with the square of the repeats.
Then runs ``finmath report`` over them in this process and prints the wall
seconds and the process's peak resident memory; then, apart, the seconds and
peak traced Python memory (tracemalloc) of reading the headers and building
the usage tables (the part the usage section adds). ``--plots`` draws the plots too (by default tables only, so
the figure is the reading and tabulating, not matplotlib).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zipfile
from importlib.resources import files
from pathlib import Path
from typing import Any

MODELS = 50
VARIANTS = 20
SUITE = [(10_000, 4), (300, 1)]
"""(logs, settings) of ``--suite``: many repeats of a few settings, and of one."""


def seed_log(where: Path) -> Path:
    from inspect_ai import eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from finmath_tasks.tasks.knowledgefmath import knowledgefmath

    demo = json.loads(
        files("finmath_tasks.tasks.knowledgefmath").joinpath("data/demo.json").read_text()
    )

    def output(name: str, text: str, usage: ModelUsage) -> ModelOutput:
        out = ModelOutput.from_content(name, text)
        out.usage = usage
        return out

    usage = ModelUsage(input_tokens=300, output_tokens=80, total_tokens=380)
    evaluated = [
        output("mockllm/model", f"Therefore, the answer is {demo[i]['ground_truth']}.", usage)
        for i in range(3)
    ]
    graded = [output("mockllm/grader", str(demo[i]["ground_truth"]), usage) for i in range(3)]
    [log] = eval(
        knowledgefmath(split="demo", extractor="model"),
        model=get_model("mockllm/model", custom_outputs=evaluated),
        model_roles={"grader": get_model("mockllm/grader", custom_outputs=graded)},
        limit=3,
        log_dir=str(where),
        display="none",
    )
    return Path(log.location.removeprefix("file://"))


def _rewrite(
    header: dict[str, Any], model: str, top_n: int, i: int, repeats: bool = False
) -> dict[str, Any]:
    header = json.loads(json.dumps(header))
    ev = header["eval"]
    if repeats:  # its own Inspect task id: a repeat of its setting, not an attempt
        ev["task_id"] = f"REPEAT{i:016d}"
    ev["model"] = model
    ev["task_args"] = {**ev.get("task_args", {}), "top_n": top_n}
    ev["task_args_passed"] = {**ev.get("task_args_passed", {}), "top_n": top_n}
    ev["eval_id"] = f"copy{i:05d}"
    ev["run_id"] = f"run{i:05d}"
    stats = header.get("stats")
    if stats:
        usage = stats.get("model_usage", {})
        if "mockllm/model" in usage:
            entry = usage.pop("mockllm/model")
            entry["input_tokens"] = 300 + i
            usage[model] = entry
    return header


def copy_logs(seed: Path, out: Path, count: int, settings: int = 0) -> None:
    with zipfile.ZipFile(seed) as z:
        entries = {name: z.read(name) for name in z.namelist()}
    header = json.loads(entries["header.json"])
    start = json.loads(entries["_journal/start.json"]) if "_journal/start.json" in entries else None
    out.mkdir(parents=True)
    for i in range(count):
        if settings:
            model, top_n = f"mockllm/model{i % settings:02d}", 3
        else:
            model = f"mockllm/model{i % MODELS:02d}"
            top_n = 1 + (i // MODELS) % VARIANTS
        new = _rewrite(header, model, top_n, i, repeats=bool(settings))
        name = out / f"{seed.name.split('_')[0]}_knowledgefmath_copy{i:05d}.eval"
        with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as z:
            for entry, data in entries.items():
                if entry == "header.json":
                    data = json.dumps(new).encode()
                elif entry == "_journal/start.json" and start is not None:
                    data = json.dumps({**start, "eval": new["eval"]}).encode()
                z.writestr(entry, data)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--logs", type=int, default=MODELS * VARIANTS)
    parser.add_argument("--settings", type=int, default=0, help="repeats of K settings")
    parser.add_argument("--suite", action="store_true", help="10,000 logs / 4 settings; 300 / 1")
    parser.add_argument("--plots", action="store_true")
    parser.add_argument("--keep", type=Path, help="write the logs and report here")
    args = parser.parse_args()
    if args.suite:
        for count, settings in SUITE:
            command = [sys.executable, __file__, "--logs", str(count), "--settings", str(settings)]
            subprocess.run(command + (["--plots"] if args.plots else []), check=True)
        return
    root = args.keep or Path(tempfile.mkdtemp(prefix="finmath-report-bench-"))
    began = time.perf_counter()
    seed = seed_log(root / "seed")
    copy_logs(seed, root / "logs", args.logs, args.settings)
    shape = f"{args.settings} setting(s), repeats" if args.settings else "distinct runs"
    print(
        f"made {args.logs} logs ({shape}) in {time.perf_counter() - began:.1f} s ({root / 'logs'})"
    )

    from finmath_tasks.cli.report import read_logs, report
    from finmath_tasks.cli.usage import usage_tables

    began = time.perf_counter()
    code = report(str(root / "logs"), root / "report", plots=args.plots)
    seconds = time.perf_counter() - began
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    text = (root / "report" / "report.md").read_text()
    html_mb = (root / "report" / "report.html").stat().st_size / 1e6
    with (root / "report" / "paired.csv").open() as f:
        paired_rows = sum(1 for _ in f) - 1
    print(
        f"finmath report over {args.logs} logs ({shape}; plots "
        f"{'on' if args.plots else 'off'}): exit {code}, {seconds:.1f} s, process peak RSS "
        f"{rss:.0f} MiB; report.html {html_mb:.1f} MB, paired.csv {paired_rows} rows; "
        f"usage section present: {'Usage and cost in total' in text}"
    )
    # the part the usage section adds: the headers (which every report reads) and the usage tables
    tracemalloc.start()
    began = time.perf_counter()
    logs = read_logs(str(root / "logs"))
    read = time.perf_counter() - began
    tables = usage_tables(logs.runs)
    total = time.perf_counter() - began
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"headers of {len(logs.runs)} logs read in {read:.1f} s, usage tables "
        f"({sum(len(t.rows) for t in tables)} rows) in {total - read:.2f} s more; peak traced "
        f"Python memory {peak / 2**20:.0f} MiB (tracemalloc on: slower than without)"
    )
    if args.keep is None:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
