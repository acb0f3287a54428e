"""Time and peak memory of ``finmath report`` over many logs (default 1,000), before and after.

    python benchmarks/report_many_logs.py [--logs 1000] [--settings K] [--plots] [--keep DIR]
        [--before REV]
    python benchmarks/report_many_logs.py --suite [--before REV]


Makes one real log (a scripted ``mockllm`` run of knowledgefmath's demo split, 3
samples, with a grader role and token usage on every output), then writes N
copies of it into a fresh directory by rewriting only the log's header entries
in the ``.eval`` zip (model name, task arguments, ids, token counts), so the
copies are distinct runs (50 models x 20 ``top_n`` values) for the report; with
``--settings K``, the copies are repeats of K settings (K models, one ``top_n``; each copy
its own Inspect task id, so every copy is a repeat, not an attempt). ``--suite`` runs, each
in its own process, 10,000 logs over 4 settings (2,500 repeats each) and 300 repeats of
one setting, the two shapes whose report once grew with the square of the repeats.
Then runs ``finmath report`` over them, each time in a fresh process, with the package
as it is at git revision ``--before`` (its ``src/`` exported to a temporary folder and put
first on ``PYTHONPATH``; default ``HEAD``) and as checked out, one after the other on the
same logs, and prints for each the wall seconds, the process's peak resident memory, the
size of ``report.html`` and the rows of ``paired.csv``, then the ratio of the two times and
whether the two ``report.md`` are the same. ``--before none`` runs the checkout only.
``--plots`` draws the plots too (by default tables only, so the figure is the reading and
tabulating, not matplotlib).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
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


def export_src(revision: str, into: Path) -> Path:
    """The package's ``src/`` at git ``revision``, written under ``into``."""
    repo = Path(__file__).resolve().parents[1]
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", revision, "src"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def timed_report(logs: Path, out: Path, plots: bool, src: Path | None) -> dict[str, Any]:
    """``finmath report`` over ``logs`` in a fresh process (the package from ``src`` when
    given, else the checkout): its figures."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    command = [sys.executable, __file__, "--report-only", str(logs), "--out", str(out)]
    done = subprocess.run(
        command + (["--plots"] if plots else []), env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"the report failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def report_only(logs: Path, out: Path, plots: bool) -> None:
    """The child of :func:`timed_report`: one report, its figures as one JSON line."""
    import finmath_tasks
    from finmath_tasks.cli.report import report

    began = time.perf_counter()
    code = report(str(logs), out, plots=plots)
    seconds = time.perf_counter() - began
    with (out / "paired.csv").open() as f:
        paired_rows = sum(1 for _ in f) - 1
    figures = {
        "exit": code,
        "seconds": seconds,
        "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "html_mb": (out / "report.html").stat().st_size / 1e6,
        "paired_rows": paired_rows,
        "package": str(Path(finmath_tasks.__file__).parent),
    }
    print(json.dumps(figures))


def _line(name: str, figures: dict[str, Any]) -> str:
    return (
        f"  {name}: exit {figures['exit']}, {figures['seconds']:.1f} s, process peak RSS "
        f"{figures['rss_mib']:.0f} MiB; report.html {figures['html_mb']:.1f} MB, paired.csv "
        f"{figures['paired_rows']} rows"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--logs", type=int, default=MODELS * VARIANTS)
    parser.add_argument("--settings", type=int, default=0, help="repeats of K settings")
    parser.add_argument("--suite", action="store_true", help="10,000 logs / 4 settings; 300 / 1")
    parser.add_argument("--plots", action="store_true")
    parser.add_argument("--keep", type=Path, help="write the logs and report here")
    parser.add_argument("--before", default="HEAD", help="git revision to compare with, or none")
    parser.add_argument("--report-only", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.report_only is not None:
        report_only(args.report_only, args.out, args.plots)
        return
    if args.suite:
        for count, settings in SUITE:
            command = [sys.executable, __file__, "--logs", str(count), "--settings", str(settings)]
            command += ["--before", args.before] + (["--plots"] if args.plots else [])
            subprocess.run(command, check=True)
        return
    root = args.keep or Path(tempfile.mkdtemp(prefix="finmath-report-bench-"))
    began = time.perf_counter()
    seed = seed_log(root / "seed")
    copy_logs(seed, root / "logs", args.logs, args.settings)
    shape = f"{args.settings} setting(s), repeats" if args.settings else "distinct runs"
    print(
        f"made {args.logs} logs ({shape}) in {time.perf_counter() - began:.1f} s ({root / 'logs'})"
    )
    print(f"finmath report over {args.logs} logs ({shape}; plots {'on' if args.plots else 'off'}):")
    before = None
    if args.before != "none":
        src = export_src(args.before, root / "before")
        before = timed_report(root / "logs", root / "report-before", args.plots, src)
        print(_line(f"before ({args.before})", before))
    after = timed_report(root / "logs", root / "report", args.plots, None)
    print(_line("after (this checkout)", after))
    if before is not None:
        same = (root / "report-before" / "report.md").read_text().replace(
            "report-before", "report"
        ) == (root / "report" / "report.md").read_text()
        print(f"  {before['seconds'] / after['seconds']:.1f}x faster; report.md the same: {same}")
    if args.keep is None:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
