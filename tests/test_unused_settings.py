"""A task parameter that the chosen settings do not read is refused when the task is built,
naming what it applies to (Inspect only warns about names that are no parameter at all);
a parameter left at its default, or set to it, is never refused. MathHay's length and
reserve are checked against each other and against the smallest haystack."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmark_list import BENCHMARKS
from finmath_tasks import params
from finmath_tasks.cli.declare import declarations
from finmath_tasks.params import TaskParameterError

TASKS = BENCHMARKS
"""Every benchmark: each declares ``APPLIES`` in its ``task.py`` (``{}`` when its settings
read every parameter)."""


def task_module(name: str) -> Any:
    return importlib.import_module(f"finmath_tasks.tasks.{name}.task")


def task_function(name: str) -> Any:
    return getattr(task_module(name), name)


REFUSED: dict[str, tuple[str, dict[str, Any], str]] = {
    "finqa-retrieval-with-an-agent": (
        "finqa",
        {"solver": "cot", "retrieval": "gold"},
        "finqa: -T retrieval='gold' applies only to solver=rag_cot or oracle (here solver=cot)",
    ),
    "finqa-top-k-with-an-agent": (
        "finqa",
        {"solver": "critic", "top_k": 7},
        "finqa: -T top_k=7 applies only to solver=rag_cot or oracle with retrieval=bm25 "
        "(here solver=critic, retrieval=bm25)",
    ),
    "finqa-top-k-without-bm25": (
        "finqa",
        {"retrieval": "gold", "top_k": 7},
        "-T top_k=7 applies only to solver=rag_cot or oracle with retrieval=bm25 "
        "(here solver=rag_cot, retrieval=gold)",
    ),
    "tatqa-profile-with-all": (
        "tatqa",
        {"subset": "all", "profile": "exact"},
        "tatqa: -T profile='exact' applies only to subset=arithmetic (here subset=all)",
    ),
    "knowledgefmath-folder-with-demo": (
        "knowledgefmath",
        {"split": "demo", "data_dir": "/nonexistent"},
        "knowledgefmath: -T data_dir='/nonexistent' applies only to split=validation or test "
        "(here split=demo)",
    ),
    "knowledgefmath-repair-with-cot": (
        "knowledgefmath",
        {"split": "demo", "program_repair": True},
        "-T program_repair=True applies only to solver=pot (here solver=cot)",
    ),
    "knowledgefmath-messages-with-rules": (
        "knowledgefmath",
        {"split": "demo", "extractor_messages": "user"},
        "-T extractor_messages='user' applies only to extractor=model (here extractor=rules)",
    ),
    "knowledgefmath-top-n-without-retrieval": (
        "knowledgefmath",
        {"split": "demo", "knowledge": "oracle", "top_n": 5},
        "-T top_n=5 applies only to knowledge=bm25 or dense or rerank or instructed "
        "(here knowledge=oracle)",
    ),
    "knowledgefmath-retriever-with-bm25": (
        "knowledgefmath",
        {"split": "demo", "knowledge": "bm25", "retriever": "dense"},
        "-T retriever='dense' applies only to knowledge=rerank or instructed (here knowledge=bm25)",
    ),
    "knowledgefmath-bank-without-knowledge": (
        "knowledgefmath",
        {"split": "demo", "knowledge_bank": "/bank.json"},
        "-T knowledge_bank='/bank.json' applies only to knowledge=oracle or llm_kb",
    ),
    "knowledgefmath-embedding-without-dense": (
        "knowledgefmath",
        {"split": "demo", "knowledge": "rerank", "embedding_model": "/model"},
        "-T embedding_model='/model' applies only to knowledge=dense, or retriever=dense "
        "(here knowledge=rerank, retriever=bm25)",
    ),
    "mathhay-reserve-below-128k": (
        "mathhay",
        {"length": 32000, "reserve": 20000},
        "mathhay: -T reserve=20000 applies only to length=128000 (here length=32000)",
    ),
    "mathhay-reserve-over-the-length": (
        "mathhay",
        {"task_type": "sssd", "length": 128000, "reserve": 130000},
        "mathhay: -T reserve=130000 is not smaller than the length 128000 it is taken from",
    ),
    "mathhay-length-below-every-question": (
        "mathhay",
        {"task_type": "sssd", "length": 10},
        "mathhay: -T length=10 leaves 10 tokens for the documents and the prompt, fewer than "
        "any question needs",
    ),
    "mathhay-reserve-leaving-no-room": (
        "mathhay",
        {"task_type": "sssd", "length": [32000, 128000], "reserve": 127990},
        "mathhay: -T length=128000 less -T reserve=127990 leaves 10 tokens",
    ),
}


@pytest.mark.realdata
@pytest.mark.parametrize("case", REFUSED.values(), ids=list(REFUSED))
def test_a_setting_that_does_nothing_is_refused(
    data_dir: Path, case: tuple[str, dict[str, Any], str]
) -> None:
    task, kwargs, says = case
    with pytest.raises(TaskParameterError) as info:
        task_function(task)(**kwargs)
    message = str(info.value)
    assert says in message, message
    assert "\n" not in message


ACCEPTED: dict[str, tuple[str, dict[str, Any]]] = {
    # set to the default: the run is the default's, nothing to refuse
    "finqa-agent-with-default-retrieval": (
        "finqa",
        {"solver": "cot", "split": "dev", "retrieval": "bm25", "top_k": 3},
    ),
    "finqa-bm25-top-k": ("finqa", {"retrieval": "bm25", "top_k": 7}),
    "finqa-oracle-gold": ("finqa", {"solver": "oracle", "retrieval": "gold"}),
    "tatqa-all-default-profile": ("tatqa", {"subset": "all", "profile": "tolerant"}),
    "knowledgefmath-demo-default-folder": ("knowledgefmath", {"split": "demo", "data_dir": None}),
    "knowledgefmath-pot-repair": (
        "knowledgefmath",
        {"split": "demo", "solver": "pot", "program_repair": True},
    ),
    "knowledgefmath-rerank-dense": (
        "knowledgefmath",
        {"split": "demo", "knowledge": "rerank", "retriever": "bm25", "top_n": 5},
    ),
    "mathhay-reserve-at-128k": (
        "mathhay",
        {"task_type": "sssd", "length": [32000, 128000], "reserve": 20000},
    ),
    "mathhay-default-reserve-below-128k": (
        "mathhay",
        {"task_type": "sssd", "length": 32000, "reserve": 2000},
    ),
}


@pytest.mark.realdata
@pytest.mark.parametrize("case", ACCEPTED.values(), ids=list(ACCEPTED))
def test_a_setting_that_is_read_or_default_is_accepted(
    data_dir: Path, case: tuple[str, dict[str, Any]]
) -> None:
    task, kwargs = case
    assert task_function(task)(**kwargs).dataset


def test_every_grid_run_passes() -> None:
    """The declared grids set no parameter their runs do not read."""
    checked = 0
    for declaration in declarations().values():
        name = declaration.benchmark
        if name not in TASKS:
            continue
        module, function = task_module(name), task_function(name)
        defaults = params.defaults(function)
        for grid in declaration.grids.values():
            for run in grid.arg_sets():
                values = {**defaults, **run}
                if name == "mathhay":
                    values["length"] = [values["length"]]
                params.refuse_unused(name, function, values, module.APPLIES)
                checked += 1
    assert checked > 50


def test_every_lm_eval_configuration_passes() -> None:
    root = Path(importlib.import_module("finmath_tasks").__file__ or "").parent / "tasks"
    checked = 0
    for config in sorted(root.glob("*/lm_eval/*.yaml")):
        text = config.read_text()
        if "finmath:" not in text:
            continue
        spec = yaml.safe_load(text.replace("!function", ""))["finmath"]
        name = spec["task"]
        if name not in TASKS:
            continue
        function = task_function(name)
        values = {**params.defaults(function), **spec.get("args", {})}
        params.refuse_unused(name, function, values, task_module(name).APPLIES)
        checked += 1
    assert checked >= 5


def test_the_rules_name_parameters_of_their_task() -> None:
    for name in TASKS:
        known = set(params.defaults(task_function(name)))
        applies = getattr(task_module(name), "APPLIES", None)
        assert isinstance(applies, dict), (
            f"benchmark {name}: tasks/{name}/task.py declares no APPLIES (where each "
            "parameter applies, params.only; {} when every setting is read)"
        )
        for parameter, rule in applies.items():
            assert parameter in known, (name, parameter)
            assert set(rule.names()) <= known, (name, parameter, rule.names())


@pytest.mark.slow
@pytest.mark.realdata
def test_inspect_eval_refuses_in_one_line_before_any_run(data_dir: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval", "finmath_tasks/finqa",
         "-T", "solver=cot", "-T", "retrieval=gold", "--model", "mockllm/model",
         "--limit", "1", "--log-dir", str(tmp_path / "logs")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    message = " ".join((done.stdout + done.stderr).split())
    assert "finqa: -T retrieval='gold' applies only to solver=rag_cot or oracle" in message
    assert not list((tmp_path / "logs").glob("*.eval"))


def test_refuse_unused_on_its_own() -> None:
    def toy(mode: str = "a", depth: int = 1, extra: str | None = None) -> None:
        return None

    applies = {"depth": params.only(mode="b"), "extra": params.only(mode=("b", "c"))}
    params.refuse_unused("toy", toy, {"mode": "a", "depth": 1, "extra": None}, applies)
    params.refuse_unused("toy", toy, {"mode": "b", "depth": 4, "extra": "x"}, applies)
    with pytest.raises(TaskParameterError, match=r"^toy: -T depth=4 applies only to mode=b "):
        params.refuse_unused("toy", toy, {"mode": "a", "depth": 4, "extra": None}, applies)
    with pytest.raises(TaskParameterError, match=r"-T depth=True applies only"):
        # True == 1 in Python, but it is not the default
        params.refuse_unused("toy", toy, {"mode": "a", "depth": True, "extra": None}, applies)
    with pytest.raises(TaskParameterError, match=r"-T extra='x' applies only to mode=b or c"):
        params.refuse_unused("toy", toy, {"mode": "a", "depth": 1, "extra": "x"}, applies)
