"""What our CoT task costs over Inspect's floor: whole ``inspect eval`` processes, side by side.

``ours``: ``inspect eval finmath_tasks/knowledgefmath -T split=validation`` (CoT, 200
questions) with Inspect's instant ``mockllm/model``. ``bare``: a plain Inspect task file
whose dataset holds the very prompts ours sent (read back from ours's log: the system and
user messages of every sample), with Inspect's ``generate()`` and ``match(numeric=True)``.
Both are whole processes (interpreter start, Inspect's imports and its entry points, which
load our ``_registry`` in both, task build, dataset, the 200 samples, scoring, the log),
run in pairs, alternately first, and the script prints each pair's ratio ours / bare and
their median (the figure the project keeps at or under 1.10).

``shaped``: the same prompts in a bare task of our task's shape: three solver steps
(Inspect's ``system_message``, a step that changes nothing, ``generate()``) and three
scorers (``match(numeric=True)`` three times). Inspect records a span and a state event
for every solver step and a span and a score event for every scorer, so the ratio ours /
shaped is what our own code costs, and shaped / bare what the task's shape costs in
Inspect itself. ``steps`` (the three solver steps, one scorer) and ``scorers`` (one step,
the three scorers) split that cost between the two.

    FINMATH_DATA_DIR=/path/to/data python benchmarks/cot_overhead.py [--pairs 5]

With ``--profile`` it runs ours once under cProfile and prints the 25 costliest functions
(cumulative time), to see where the extra time goes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BARE_TASK = """
import json
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import match
from inspect_ai.solver import generate, solver, system_message

ROLES = {"system": ChatMessageSystem, "user": ChatMessageUser}


@task
def bare():
    with open(PROMPTS, encoding="utf-8") as f:
        records = json.load(f)
    samples = [
        Sample(
            id=r["id"],
            input=[ROLES[m["role"]](content=m["content"]) for m in r["messages"]],
            target=r["target"],
        )
        for r in records
    ]
    return Task(dataset=MemoryDataset(samples), solver=generate(), scorer=match(numeric=True))


@solver
def unchanged():
    async def solve(state, generate):
        return state

    return solve


@task
def shaped():
    with open(PROMPTS, encoding="utf-8") as f:
        records = json.load(f)
    [system] = {r["messages"][0]["content"] for r in records}
    samples = [
        Sample(id=r["id"], input=[ChatMessageUser(content=r["messages"][1]["content"])],
               target=r["target"])
        for r in records
    ]
    return Task(
        dataset=MemoryDataset(samples),
        solver=[system_message(system.replace("{", "{{").replace("}", "}}")), unchanged(),
                generate()],
        scorer=[match(numeric=True), match(numeric=True), match(numeric=True)],
    )


@task
def steps():
    three = shaped()
    return Task(dataset=three.dataset, solver=three.solver, scorer=match(numeric=True))


@task
def scorers():
    return Task(
        dataset=bare().dataset,
        solver=generate(),
        scorer=[match(numeric=True), match(numeric=True), match(numeric=True)],
    )
"""

OURS = ["finmath_tasks/knowledgefmath", "-T", "split=validation", "-T", "solver=cot"]
LIMIT = 200


def inspect_eval(
    task: list[str], log_dir: Path, env: dict[str, str], cwd: Path
) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one whole ``inspect eval`` process (it must
    end with a successful log)."""
    command = [
        sys.executable, "-m", "inspect_ai", "eval", *task, "--model", "mockllm/model",
        "--limit", str(LIMIT), "--display", "none", "--log-dir", str(log_dir),
        "--log-format", "json",
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(task)} failed:\n{done.stdout}{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu


def last_log(log_dir: Path) -> dict[str, Any]:
    path = max(log_dir.glob("*.json"), key=lambda p: p.stat().st_mtime)
    log = json.loads(path.read_text(encoding="utf-8"))
    if log["status"] != "success":
        sys.exit(f"{path}: status {log['status']}")
    return log


def bare_prompts(log: dict[str, Any], path: Path) -> int:
    """Our log's prompts (every message before the model's reply) as the bare dataset."""
    records = []
    for sample in log["samples"]:
        messages = [
            {"role": m["role"], "content": m["content"]}
            for m in sample["messages"]
            if m["role"] in ("system", "user")
        ]
        target = sample["target"]
        records.append(
            {
                "id": sample["id"],
                "messages": messages,
                "target": target if isinstance(target, str) else ",".join(target),
            }
        )
    path.write_text(json.dumps(records), encoding="utf-8")
    return len(records)


def as_installed(root: Path, env: dict[str, str]) -> str:
    """Make the processes see the package under test as an installed distribution.

    Inspect looks up the distribution that ships a packaged task once per run
    (``get_distribution_for_object``): 1 ms when the package is imported from where its
    distribution says, but a scan of every installed distribution's files (1.2 s here)
    when it is imported from elsewhere, as from a checkout on ``PYTHONPATH`` ahead of an
    install of another copy. Users run an installed package, so the processes get a
    distribution record (metadata and entry points, copied from the installed one) on
    the path ahead of it, naming the imported copy. Returns what was done."""
    import importlib.metadata

    import finmath_tasks

    source = Path(finmath_tasks.__file__).resolve().parents[1]
    installed = importlib.metadata.distribution("finmath-tasks")
    overlay = root / "site"
    info = overlay / f"finmath_tasks-{installed.version}.dist-info"
    info.mkdir(parents=True)
    for name in ("METADATA", "entry_points.txt"):
        (info / name).write_text(installed.read_text(name) or "", encoding="utf-8")
    (info / "direct_url.json").write_text(
        json.dumps({"url": source.as_uri(), "dir_info": {"editable": True}}), encoding="utf-8"
    )
    env["PYTHONPATH"] = os.pathsep.join([str(overlay), str(source)])
    return f"package from {source}, recorded as installed ({info.name})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    from finmath_tasks.tiktoken_offline import write_cache

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = dict(os.environ)
        write_cache(root / "tiktoken")
        env["TIKTOKEN_CACHE_DIR"] = str(root / "tiktoken")
        print(as_installed(root, env))
        # first run: the prompts (and a warm data cache and page cache for both sides)
        inspect_eval(OURS, root / "warm", env, root)
        prompts = root / "prompts.json"
        n = bare_prompts(last_log(root / "warm"), prompts)
        task_file = root / "bare_task.py"
        task_file.write_text(f"PROMPTS = {str(prompts)!r}\n{BARE_TASK}", encoding="utf-8")
        bare = [f"{task_file.name}@bare"]  # relative to the folder it runs in (cwd)
        shaped = [f"{task_file.name}@shaped"]
        inspect_eval(bare, root / "warm_bare", env, root)
        inspect_eval(shaped, root / "warm_shaped", env, root)
        if args.profile:
            out = root / "ours.prof"
            subprocess.run(
                [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "inspect_ai", "eval",
                 *OURS, "--model", "mockllm/model", "--limit", str(LIMIT), "--display",
                 "none", "--log-dir", str(root / "prof")],
                env=env, check=True, cwd=root,
            )  # fmt: skip
            import pstats

            pstats.Stats(str(out)).sort_stats("cumulative").print_stats(25)
            return
        print(f"{n} samples, instant model (mockllm/model), whole `inspect eval` processes")
        sides = {
            "ours": OURS,
            "bare": bare,
            "shaped": shaped,
            "steps": [f"{task_file.name}@steps"],
            "scorers": [f"{task_file.name}@scorers"],
        }
        ratios: dict[str, list[float]] = {}
        for i in range(args.pairs):
            # each round runs every side, in a rotated order
            order = list(sides)[i % len(sides) :] + list(sides)[: i % len(sides)]
            got = {
                name: inspect_eval(sides[name], root / f"{name}{i}", env, root) for name in order
            }
            line = []
            pairs = [("ours", "bare"), ("ours", "shaped"), ("shaped", "bare")]
            for a, b in [*pairs, ("steps", "bare"), ("scorers", "bare")]:
                for kind, k in (("wall", 0), ("cpu", 1)):
                    ratios.setdefault(f"{a} / {b}, {kind}", []).append(got[a][k] / got[b][k])
                line.append(f"{a}/{b} {got[a][0] / got[b][0]:.3f}")
            times = ", ".join(
                f"{name} {got[name][0]:.2f} s ({got[name][1]:.2f} cpu)" for name in sides
            )
            print(f"round {i + 1}: {times}; wall {'; '.join(line)}")
        for name, values in ratios.items():
            print(f"median ratio {name} time: {statistics.median(values):.3f}")
        print(f"({args.pairs} rounds; cpu time is the steadier on a shared machine)")


if __name__ == "__main__":
    main()
