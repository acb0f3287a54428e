"""The commands a user types, run for real in subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from finmath_tasks.tiktoken_offline import cache_file_name

HEAVY = (
    "sympy",
    "docker",
    "scipy",
    "torch",
    "sentence_transformers",
    "numpy_financial",
    "datasets",
)


@pytest.mark.slow
def test_registry_import_is_light() -> None:
    code = (
        "import sys, finmath_tasks._registry; "
        f"print([m for m in sys.modules if m.split('.')[0] in {HEAVY!r}])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


NO_NETWORK = {
    # tiktoken downloads with requests, which honours these: every download fails at once
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "",
}
ENCODE = "import tiktoken; print(len(tiktoken.get_encoding('o200k_base').encode('NPV: $1,234.5')))"


def test_write_cache_fills_a_folder_tiktoken_reads_offline(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(cache), **NO_NETWORK}
    # without the copies, tiktoken cannot get the encoding here (so the test can fail)
    bare = subprocess.run([sys.executable, "-c", ENCODE], capture_output=True, text=True, env=env)
    assert bare.returncode != 0
    subprocess.run(
        [sys.executable, "-m", "finmath_tasks.tiktoken_offline", str(cache)], env=env, check=True
    )
    out = subprocess.run(
        [sys.executable, "-c", ENCODE], capture_output=True, text=True, env=env, check=True
    )
    assert int(out.stdout) > 3
    assert (cache / cache_file_name("o200k_base")).is_file()


@pytest.mark.slow
def test_our_token_counts_never_write_tiktokens_cache(tmp_path: Path) -> None:
    tiktoken_cache, ours = tmp_path / "tiktoken-cache", tmp_path / "finmath-cache"
    env = {
        **os.environ,
        "TIKTOKEN_CACHE_DIR": str(tiktoken_cache),
        "FINMATH_CACHE_DIR": str(ours),
        **NO_NETWORK,
    }
    code = (
        "import os; from finmath_tasks.solvers.budget import count_tokens; "
        "print(count_tokens('NPV: $1,234.5'), os.environ['TIKTOKEN_CACHE_DIR'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    count, seen = out.stdout.split()
    assert int(count) > 3
    assert seen == str(tiktoken_cache)  # put back after our loading
    assert not tiktoken_cache.exists()
    assert (ours / "tiktoken" / cache_file_name("o200k_base")).is_file()


@pytest.mark.slow
def test_registry_import_has_no_side_effects(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(cache)}
    subprocess.run([sys.executable, "-c", "import finmath_tasks._registry"], env=env, check=True)
    assert not cache.exists()


README_OFFLINE_COMMAND = [
    "inspect", "eval", "finmath_tasks/knowledgefmath",
    "-T", "split=demo", "-T", "solver=oracle", "--model", "mockllm/model",
]  # fmt: skip


def run_readme_command(tmp_path: Path, *extra: str, **env_overrides: str) -> Path:
    """Run the README's offline command in a subprocess; return its log file."""
    env = {**os.environ, **env_overrides}
    env.pop("FINMATH_DATA_DIR", None)
    logs = tmp_path / "logs"
    cmd = [*README_OFFLINE_COMMAND, "--log-dir", str(logs), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [log_file] = list(logs.glob("*.eval"))
    return log_file


@pytest.mark.slow
def test_readme_offline_command(tmp_path: Path) -> None:
    tiktoken_cache = tmp_path / "empty-cache"
    log_file = run_readme_command(tmp_path, TIKTOKEN_CACHE_DIR=str(tiktoken_cache), **NO_NETWORK)
    assert not tiktoken_cache.exists()  # no task writes into tiktoken's cache
    log = read_eval_log(str(log_file))
    assert log.status == "success"
    assert log.results is not None
    values = {s.name: s.metrics["accuracy"].value for s in log.results.scores}
    assert values == {"financemath": 1.0, "knowledgefmath2023": 1.0, "tolerant": 1.0}


@pytest.mark.slow
def test_export_predictions_generic_and_submission(tmp_path: Path) -> None:
    log_file = run_readme_command(tmp_path, "--limit", "3")

    def export(*args: str) -> list[dict]:
        out = tmp_path / "out.json"
        cmd = [sys.executable, "-m", "finmath_tasks.cli", "export", str(log_file), "-o", str(out)]
        subprocess.run([*cmd, *args], capture_output=True, text=True, check=True)
        rows: list[dict] = json.loads(out.read_text())
        return rows

    rows = export()
    assert [r["id"] for r in rows] == ["demo-0", "demo-1", "demo-2"]
    assert rows[0]["output"] == "Therefore, the answer is 14685.0."
    # every scorer is exported, not only the first (one scorer per score, official first)
    assert rows[0]["scores"] == {
        "financemath": {"answer": "14685.0", "value": 1.0},
        "knowledgefmath2023": {"answer": "14685.0", "value": 1.0},
        "tolerant": {"answer": "14685.0", "value": 1.0},
    }
    rows = export("--format", "submission")
    assert [r["question_id"] for r in rows] == ["demo-0", "demo-1", "demo-2"]
    assert rows[0]["output"] == ["Therefore, the answer is 14685.0."]
    assert rows[0]["extracted_answer"] == "14685.0"
