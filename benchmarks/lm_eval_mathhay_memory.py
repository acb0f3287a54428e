"""Peak memory of ``lm_eval run --tasks finmath_mathhay_32k --limit 2``, and where it goes.

    PYTHONPATH=src python benchmarks/lm_eval_mathhay_memory.py [--data-dir DIR]
    # default data: $FINMATH_DATA_DIR, else ../shared/data; needs the lm-eval extra

Each run is lm_eval's own CLI in a child process (``local-chat-completions`` against
the scripted OpenAI-compatible endpoint of the tests, which answers every request), with
our configs on ``--include_path``, as a user runs it. In the same child, wrappers around
the steps of the run record its resident memory (``VmRSS``) as each step starts and ends:
the breakdown below is that timeline, printed beside the child's peak (``ru_maxrss``,
the kernel's figure, read by a small launcher when it ends), so the steps and the peak
are from one run.

Runs:

1. torch hidden from the import system (as where it is not installed: the ``lm-eval``
   extra installs none); this is the figure the acceptance test checks;
2. the same with ``--log_samples --output_path`` (the samples file written);
3. torch as installed, where it is (lm_eval then imports it itself: nearly all of the
   difference).

After the timeline, the sizes of what the run holds for MathHay: the token pool (as
``uint32`` arrays, beside what Python int lists of the same tokens take), the document
texts (each held once), and tiktoken's o200k_base ranks.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests" / "lm_eval_bridge"))

from scripted_lm import HIDE_TORCH, PEAK_OF, peak_kib, scripted_server  # noqa: E402

from finmath_tasks.lm_eval import config_dir  # noqa: E402

TASK = "finmath_mathhay_32k"
REPORT_ENV = "FINMATH_MEMORY_REPORT"

CHILD = """
import atexit, functools, json, os, sys

def status():
    found = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                found[line[:5]] = int(line.split()[1])
    return found

events = []

def mark(label):
    now = status()
    events.append({"label": label, "rss_kib": now["VmRSS"], "hwm_kib": now["VmHWM"],
                   "inspect": "inspect_ai" in sys.modules})

def wrap(owner, attribute, label, once):
    *path, name = attribute.split(".")
    for part in path:
        owner = getattr(owner, part)
    function = getattr(owner, name)
    done = []

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        record = not (once and done)
        if record:
            mark("start: " + label)
        try:
            return function(*args, **kwargs)
        finally:
            if record:
                done.append(True)
                mark("end: " + label)

    setattr(owner, name, wrapper)

STEPS = {
    "lm_eval.tasks.manager": [("TaskManager.__init__", "lm_eval's task index", False)],
    "lm_eval.evaluator": [("simple_evaluate", "simple_evaluate", False)],
    "lm_eval.api.task": [("ConfigurableTask.build_all_requests",
                          "requests built (prompts rendered)", False)],
    "lm_eval.utils": [("make_table", "results table", False)],
    "finmath_tasks.lm_eval.bridge": [("Bridge.__init__", "Inspect task built (Bridge)", False)],
    "finmath_tasks.tasks.mathhay.task": [
        ("load_data", "MathHay questions and pool texts", False),
        ("prefix_sorted", "all 673 haystacks laid out (prefix order)", False),
    ],
    "tiktoken": [("get_encoding", "tiktoken o200k_base loaded", True)],
    "finmath_tasks.tasks.mathhay.haystack": [("TokenPool._analyse", "pool tokenized", True)],
}

class WrapOnImport:
    # wraps a module's steps once the run imports it (importing nothing itself)

    def find_spec(self, name, path=None, target=None):
        if name not in STEPS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        run_module = spec.loader.exec_module

        def exec_module(module):
            run_module(module)
            for attribute, label, once in STEPS.pop(name, []):
                wrap(module, attribute, label, once)

        spec.loader.exec_module = exec_module
        return spec

mark("interpreter started")
sys.meta_path.insert(0, WrapOnImport())

def report():
    mark("exit")
    with open(os.environ["FINMATH_MEMORY_REPORT"], "w") as f:
        json.dump({"events": events, "torch_imported": "torch" in sys.modules}, f)

atexit.register(report)
import runpy
sys.argv[0] = "lm_eval"
runpy.run_module("lm_eval", run_name="__main__")
"""


def run(server_url: str, hide_torch: bool, extra: list[str]) -> dict[str, Any]:
    args = (
        f"model=scripted,base_url={server_url},num_concurrent=1,max_retries=1,"
        "tokenized_requests=False"
    )
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = [
            sys.executable, "-c", (HIDE_TORCH if hide_torch else "") + CHILD,
            "run", "--model", "local-chat-completions", "--model_args", args,
            "--include_path", str(config_dir()), "--tasks", TASK, "--apply_chat_template",
            "--limit", "2",
            *[a.replace("{tmp}", tmp) for a in extra],
        ]  # fmt: skip
        # through a small launcher: a process's ru_maxrss also counts a larger process
        # that started it (scripted_lm.PEAK_OF)
        process = subprocess.run(
            [sys.executable, "-c", PEAK_OF, *command],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, REPORT_ENV: str(report)},
        )
        if process.returncode != 0:
            raise SystemExit(f"lm_eval failed ({process.returncode}):\n{process.stderr[-3000:]}")
        found: dict[str, Any] = json.loads(report.read_text())
        found["peak_kib"] = peak_kib(process.stderr)
        return found


def mib(kib: float) -> str:
    return f"{kib / 1024:7.1f} MiB"


def show(title: str, found: dict[str, Any]) -> None:
    print(f"\n== {title}: peak {mib(found['peak_kib']).strip()} "
          f"({found['peak_kib'] * 1024 / 1e6:.0f} MB), torch imported: "
          f"{found['torch_imported']}")  # fmt: skip
    print(f"   {'resident':>11}  {'change':>11}  {'peak so far':>11}  step")
    previous = 0
    inspect_seen = False
    for event in found["events"]:
        rss = event["rss_kib"]
        label = event["label"]
        if event["inspect"] and not inspect_seen:
            label += " (inspect_ai imported by now: our task class)"
            inspect_seen = True
        print(f"   {mib(rss)}  {mib(rss - previous)}  {mib(event['hwm_kib'])}  {label}")
        previous = rss
    last = found["events"][-1]["hwm_kib"]
    if found["peak_kib"] > last + 1024:
        print(
            f"   the peak came after the last step (interpreter teardown): +{mib(found['peak_kib'] - last).strip()}"
        )


def structure_sizes() -> dict[str, Any]:
    """What the run holds for MathHay, rebuilt here the way the task builds it (sizes of
    objects; this process's own memory is not measured)."""
    from finmath_tasks.tasks.mathhay.dataset import TASK_TYPES, load_data
    from finmath_tasks.tasks.mathhay.haystack import TokenPool

    data = load_data(None, "v1", "verified+unverified", list(TASK_TYPES))
    pool = TokenPool(data.pool_documents, data.pool_size)
    pool.prepare()
    docs = list(pool._docs.values())
    as_lists = 0
    for doc in docs:
        listed = doc.tokens.tolist()
        # a list's pointers, and an int object for each token above the small-int cache
        as_lists += sys.getsizeof(listed) + sum(sys.getsizeof(t) for t in listed if t > 256)
    uses = [d for q in data.questions.values() for d in q.documents]
    held = {id(d): d for d in uses}
    ranks = pool.encoding._mergeable_ranks
    return {
        "pool": {
            "documents": len(docs),
            "tokens": sum(len(d.tokens) for d in docs),
            "token_arrays_bytes": sum(len(d.tokens) * d.tokens.itemsize for d in docs),
            "as_python_int_lists_bytes": as_lists,
            "byte_offsets_bytes": sum(len(d.offsets) * d.offsets.itemsize for d in docs),
            "utf8_bytes": sum(len(d.data) for d in docs),
        },
        "documents": {
            "uses": len(uses),
            "distinct_texts": len(set(uses)),
            "distinct_objects": len(held),
            "held_chars": sum(len(d) for d in held.values()),
            "chars_if_each_use_held": sum(len(d) for d in uses),
        },
        "tiktoken_ranks": {
            "entries": len(ranks),
            "python_bytes": sys.getsizeof(ranks) + sum(sys.getsizeof(k) for k in ranks),
        },
    }


def show_sizes(sizes: dict[str, Any]) -> None:
    pool = sizes.get("pool")
    if pool:
        print(
            f"\ntoken pool: {pool['documents']} documents, {pool['tokens']:,} tokens: "
            f"uint32 arrays {pool['token_arrays_bytes'] / 2**20:.1f} MiB (as Python int lists "
            f"{pool['as_python_int_lists_bytes'] / 2**20:.1f} MiB); byte offsets "
            f"{pool['byte_offsets_bytes'] / 2**20:.1f} MiB; UTF-8 text "
            f"{pool['utf8_bytes'] / 2**20:.1f} MiB"
        )
    docs = sizes.get("documents")
    if docs:
        print(
            f"question documents: {docs['uses']} uses of {docs['distinct_texts']} texts, held "
            f"as {docs['distinct_objects']} objects: {docs['held_chars'] / 2**20:.1f} M "
            f"characters (each use held apart: {docs['chars_if_each_use_held'] / 2**20:.1f} M)"
        )
    ranks = sizes.get("tiktoken_ranks")
    if ranks:
        print(
            f"tiktoken o200k_base ranks (Python side): {ranks['entries']:,} entries, "
            f"{ranks['python_bytes'] / 2**20:.1f} MiB (its Rust tables come on top)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    options = parser.parse_args()
    data = options.data_dir or os.environ.get("FINMATH_DATA_DIR")
    os.environ["FINMATH_DATA_DIR"] = data or str(REPO_ROOT.parent / "shared" / "data")
    reply = json.dumps({"relevant_quantity_cells": [], "reasoning": "r", "answer": 1.0})
    torch_installed = importlib.util.find_spec("torch") is not None
    with scripted_server(lambda messages: reply) as server:
        plain = run(server.base_url, True, [])
        show(f"{TASK} --limit 2, torch hidden", plain)
        logged = run(server.base_url, True, ["--log_samples", "--output_path", "{tmp}/out"])
        show(f"{TASK} --limit 2 --log_samples, torch hidden", logged)
        if torch_installed:
            with_torch = run(server.base_url, False, [])
            show(f"{TASK} --limit 2, torch installed (lm_eval imports it)", with_torch)
        else:
            print("\n(torch is not installed here: no run with it)")
    show_sizes(structure_sizes())


if __name__ == "__main__":
    main()
