from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, get_model

from eval_helpers import metric, scripted, whole_score
from finmath_tasks.sandbox import resolve as select
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.scorers.comparisons import compare, number_from_float, tolerant
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.knowledgefmath.dataset import (
    POT_SYSTEM_PROMPT,
    render_prompt,
)
from finmath_tasks.tasks.knowledgefmath.programs import extract_program

BWRAP_OK, BWRAP_REASON = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"bubblewrap unavailable: {BWRAP_REASON}")


@pytest.mark.parametrize(
    ("output", "program"),
    [
        (
            "Here:\n```python\ndef solution():\n    return 1\n```\nand ```x```",
            "def solution():\n    return 1",
        ),
        ("```\ndef solution():\n    return 2\n```", "def solution():\n    return 2"),
        ("def solution():\n    return 3", "def solution():\n    return 3"),
        # continuation of the prompt, which ends inside def solution():
        ("    x = 4\n    return x\n```\nDone.", "def solution():\n    x = 4\n    return x"),
        ("x = 5\n    return x", "def solution():\n    x = 5\n    return x"),
        ("", ""),
    ],
)
def test_extract_program_follows_reference_rules(output: str, program: str) -> None:
    assert extract_program(output) == program


BARE_BODIES = [
    # a fenced body without the signature (the reference strips its indentation)
    ("```python\n    x = 4\n    return x\n```", "def solution():\n    x = 4\n    return x"),
    # an unindented continuation
    ("x = 5\nreturn x\n```", "def solution():\n    x = 5\n    return x"),
]


@pytest.mark.parametrize(("output", "program"), BARE_BODIES)
def test_program_repair_wraps_bare_bodies(output: str, program: str) -> None:
    assert extract_program(output, repair=True) == program
    assert extract_program(output) != program  # the reference's rules break these


@pytest.mark.parametrize(
    "output",
    [
        "```python\ndef solution():\n    return 1\n```",
        "def solution():\n    x = 2\n    return x",
        "    x = 3\n    return x\n```",
    ],
)
def test_program_repair_leaves_complete_programs_alone(output: str) -> None:
    assert extract_program(output, repair=True) == extract_program(output)


def test_sandbox_choices(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ValueError, match="sandbox=vm is not one of auto, docker, bwrap"):
        select.resolve_sandbox("vm")
    with pytest.raises(ValueError, match="--sandbox vm is not one of auto, docker, bwrap"):
        select.resolve_sandbox("vm", "--sandbox {}".format)
    assert select.resolve_sandbox("bwrap").type == "finmath_bwrap"
    assert select.resolve_sandbox("docker").type == "finmath_docker"
    spec = select.resolve_sandbox("inspect_docker")
    assert spec.type == "docker" and Path(str(spec.config)).is_file()
    with caplog.at_level(logging.WARNING):
        assert select.resolve_sandbox("local").type == "local"
    assert "WITHOUT isolation" in caplog.text
    monkeypatch.setattr(select, "_docker", lambda: (False, "no engine"))
    monkeypatch.setattr(select, "_bwrap", lambda: (True, ""))
    assert select.resolve_sandbox("auto").type == "finmath_bwrap"
    monkeypatch.setattr(select, "_bwrap", lambda: (False, "bwrap: not found"))
    with pytest.raises(
        select.SandboxUnavailableError, match=r"(?s)docker: no engine.*bwrap: not found"
    ):
        select.resolve_sandbox("auto")
    assert select.default_sandbox().type == select.UNAVAILABLE  # the task still builds
    monkeypatch.setattr(select, "_docker", lambda: (True, ""))
    assert select.resolve_sandbox("auto").type == "finmath_docker"
    assert select.default_sandbox().type == "finmath_docker"


def _counted(outputs: list[str], calls: list[str]) -> Any:
    """A mockllm model answering ``outputs`` in turn, each call noted in ``calls``."""

    def answers() -> Iterator[ModelOutput]:
        for text in outputs:
            calls.append(text)
            yield ModelOutput.from_content("mockllm/model", text)

    return get_model("mockllm/model", custom_outputs=answers())


def test_without_an_isolated_sandbox_the_task_builds_and_the_run_stops_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(select, "_docker", lambda: (False, "no engine"))
    monkeypatch.setattr(select, "_bwrap", lambda: (False, "bwrap: not found"))
    task = knowledgefmath(split="demo", solver="pot")
    assert task.sandbox is not None and task.sandbox.type == select.UNAVAILABLE
    task.dataset = task.dataset[:2]
    calls: list[str] = []
    # the sandbox starts (and fails) before the first sample: no model call is made
    with pytest.raises(select.SandboxUnavailableError) as raised:
        eval(task, model=_counted(["x"] * 2, calls), log_dir=str(tmp_path), display="none")
    assert calls == []
    said = str(raised.value)
    assert "docker: no engine" in said and "bwrap: not found" in said
    assert "--sandbox: finmath_docker, finmath_bwrap" in said and "--sandbox local" in said
    # a task that runs no program declares no sandbox
    assert knowledgefmath(split="demo", solver="cot").sandbox is None


@pytest.mark.slow
@needs_bwrap
def test_inspects_sandbox_option_replaces_the_default_even_where_none_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(select, "_docker", lambda: (False, "no engine"))
    monkeypatch.setattr(select, "_bwrap", lambda: (False, "bwrap: not found"))
    task = knowledgefmath(split="demo", solver="oracle_pot")
    task.dataset = task.dataset[:2]
    [log] = eval(
        task, model="mockllm/model", sandbox="finmath_bwrap", log_dir=str(tmp_path), display="none"
    )
    assert log.status == "success"
    # the log names the sandbox that ran, not the task's default
    assert log.eval.sandbox is not None and log.eval.sandbox.type == "finmath_bwrap"
    assert "sandbox" not in (log.eval.metadata or {})
    assert metric(log, "financemath") == 1.0 and metric(log, "execution_rate") == 1.0


HOSTILE = [
    # reads a secret of the evaluating process
    "def solution():\n    import os\n    return float(os.environ['FINMATH_TEST_SECRET'])",
    # runs forever
    "def solution():\n    while True:\n        pass",
    # returns an object that lies about being a number
    "class Evil:\n    def __float__(self):\n        return 42.0\n\ndef solution():\n    return Evil()",
    # kills every process it may signal (kill(-1) spares the caller): nothing else dies,
    # so the program itself returns, wrong, and the next samples still run
    "def solution():\n    import os, signal\n    os.kill(-1, signal.SIGKILL)\n    return 1.0",
    # kills its parent, the warm worker: not permitted
    "def solution():\n    import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)\n    return 1.0",
]


@pytest.mark.slow
@needs_bwrap
def test_pot_end_to_end_correct_wrong_broken_hostile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FINMATH_TEST_SECRET", "14685")
    task = knowledgefmath(split="demo", solver="pot")
    samples = list(task.dataset)[:11]
    task.dataset = task.dataset[:11]
    gold_programs = [s.metadata["gold_program"] for s in samples]  # type: ignore[index]
    outputs = [
        f"```python\n{gold_programs[0]}\n```",  # correct
        gold_programs[1].split("\n", 1)[1] + "\n```",  # correct, as a prompt continuation
        "```python\ndef solution():\n    return -1.0\n```",  # runs, wrong
        "```python\ndef solution(:\n    return 1\n```",  # syntax error
        "```python\ndef answer():\n    return 1\n```",  # no solution()
        *(f"```python\n{h}\n```" for h in HOSTILE),
        "```python\nimport math\ndef solution():\n    return 80 * math.exp(0.03 * 9 / 12)\n```",
    ]
    [log] = eval(
        task,
        model=scripted(outputs),
        sandbox="finmath_bwrap",
        log_dir=str(tmp_path),
        display="none",
        max_samples=1,
    )
    assert log.status == "success"
    # the reference counts a run that returned anything as executed (Evil() included);
    # ours counts only a returned number
    assert metric(log, "execution_rate") == pytest.approx(6 / 11)
    assert metric(log, "strict_execution_rate") == pytest.approx(5 / 11)
    assert metric(log, "tolerant") == pytest.approx(3 / 11)
    assert metric(log, "financemath") == pytest.approx(3 / 11)
    assert log.samples is not None
    first = next(s for s in log.samples if s.id == samples[0].id)
    assert first.messages[0].text == POT_SYSTEM_PROMPT
    assert first.messages[1].text == render_prompt(
        samples[0].metadata["question"],  # type: ignore[index]
        samples[0].metadata["tables"],  # type: ignore[index]
        "pot",
    )
    by_id = {s.id: whole_score(s).explanation or "" for s in log.samples}  # type: ignore[index]
    explanations = [by_id[s.id] for s in samples]
    assert "SyntaxError" in explanations[3]
    answers = {s.id: whole_score(s).answer or "" for s in log.samples}  # type: ignore[index]
    # inspect view's samples list shows why there is no answer
    assert (
        answers[samples[3].id].startswith("no answer: ") and "SyntaxError" in answers[samples[3].id]
    )
    assert "solution" in explanations[4]
    assert "KeyError" in explanations[5]  # the secret is not in the sandbox's environment
    assert "timeout" in explanations[6].lower()
    assert "Evil" in explanations[7] and "not a number" in explanations[7]
    assert "extracted 1.0" in explanations[8]
    assert "PermissionError" in explanations[9] and "stderr (tail)" in explanations[9]
    assert "extracted 81.82" in explanations[10]  # the worker survived the attacks


@pytest.mark.slow
@needs_bwrap
def test_program_answers_are_compared_with_the_reexecuted_gold(tmp_path: Path) -> None:
    task = knowledgefmath(split="demo", solver="pot")
    task.dataset = task.dataset[2:3]  # compound interest: gold 19994.86983717512, key 19994.87
    program = "def solution():\n    return 15000 * (1 + 0.048 / 12) ** 72"
    [log] = eval(
        task,
        model=scripted([program]),
        sandbox="finmath_bwrap",
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.samples is not None
    score = whole_score(log.samples[0])  # type: ignore[index]
    assert score.metadata is not None
    assert score.metadata["gold"] == pytest.approx(19994.86983717512, rel=1e-15)
    assert score.value == {
        "financemath": 1.0,
        "knowledgefmath2023": 1.0,
        "tolerant": 1.0,
        "execution_rate": 1.0,
        "strict_execution_rate": 1.0,
    }


@pytest.mark.slow
@needs_bwrap
def test_demo_gold_programs_reproduce_the_answer_key(tmp_path: Path) -> None:
    [log] = eval(
        knowledgefmath(split="demo", solver="oracle_pot"),
        model="mockllm/model",
        sandbox="finmath_bwrap",
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success" and log.samples is not None and len(log.samples) == 15
    for sample in log.samples:
        program = whole_score(sample).metadata["program"]  # type: ignore[index]
        key = sample.metadata["ground_truth"]
        assert program["ok"], (sample.id, program["error"])
        # the key states the program's value to 3 decimals at most
        assert program["value"] == pytest.approx(key, abs=0.0005, rel=1e-9), sample.id


@needs_bwrap
@pytest.mark.realdata
@pytest.mark.slow
def test_oracle_pot_runs_all_validation_gold_programs(data_dir: Path, tmp_path: Path) -> None:
    [log] = eval(
        knowledgefmath(split="validation", solver="oracle_pot", data_dir=str(data_dir)),
        model="mockllm/model",
        sandbox="finmath_bwrap",
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success"
    assert log.results is not None and log.results.total_samples == 200
    assert metric(log, "execution_rate") == 1.0
    assert metric(log, "financemath") == 1.0
    assert metric(log, "tolerant") == 1.0
    # the sandbox's results agree with the published answer key (rounded to 3 decimals)
    assert log.samples is not None
    for sample in log.samples:
        result = whole_score(sample).metadata["program"]["value"]  # type: ignore[index]
        key = sample.metadata["ground_truth"]
        assert math.isfinite(result)
        assert (
            abs(result - key) <= 0.0005 + 1e-9 * abs(key)
            or compare(tolerant, number_from_float(result), key).correct
        ), sample.id


def test_local_sandbox_is_explicit_and_warned_in_the_log(tmp_path: Path) -> None:
    # our own demo gold programs only: --sandbox local runs them without isolation
    task = knowledgefmath(split="demo", solver="oracle_pot")
    task.dataset = task.dataset[:2]
    [log] = eval(
        task, model="mockllm/model", sandbox="local", log_dir=str(tmp_path), display="none"
    )
    assert log.status == "success"
    assert log.eval.sandbox is not None and log.eval.sandbox.type == "local"
    assert metric(log, "tolerant") == 1.0
    assert log.samples is not None
    for sample in log.samples:
        warnings = [
            e.message.message
            for e in sample.events
            if e.event == "logger" and e.message.level == "warning"
        ]
        assert any("WITHOUT isolation" in w for w in warnings), sample.id


@pytest.mark.slow
@needs_bwrap
def test_huge_values_are_scored_not_fatal(tmp_path: Path) -> None:
    """A 17-digit program result against golds of 10^15 and more once ended the whole eval
    (decimal.InvalidOperation in the rounding comparison); now every sample is scored."""
    task = knowledgefmath(split="demo", solver="pot", profile="rounding")
    golds = [5e15, 1e22, 1234567890123.0]
    task.dataset = MemoryDataset(
        [
            Sample(
                id=f"huge-{i}",
                input="q",
                target=repr(gold),
                metadata={"question": "q", "tables": [], "topic": "t", "gold_program": ""},
            )
            for i, gold in enumerate(golds)
        ]
    )
    RAN = {"execution_rate": 1.0, "strict_execution_rate": 1.0}
    program = "```python\ndef solution():\n    return 1234567890123.4567\n```"
    too_big = "```python\ndef solution():\n    return 10**400\n```"
    task.dataset = MemoryDataset(
        [*task.dataset, *(s.model_copy(update={"id": "huge-3"}) for s in task.dataset[:1])]
    )
    [log] = eval(
        task,
        model=scripted([program] * 3 + [too_big]),
        sandbox="finmath_bwrap",
        log_dir=str(tmp_path),
        display="none",
        max_samples=1,
    )
    assert log.status == "success" and log.samples is not None
    scores = {s.id: whole_score(s) for s in log.samples}  # type: ignore[index]
    assert len(scores) == 4 and all(score.reason is None for score in scores.values()), [
        score.explanation for score in scores.values()
    ]
    wrong = {"financemath": 0.0, "knowledgefmath2023": 0.0, "rounding": 0.0, **RAN}
    assert scores["huge-0"].value == wrong
    assert scores["huge-1"].value == wrong
    # the official comparisons forgive the fraction (within 0.15%, 4%); rounding to 0
    # decimals does not
    assert scores["huge-2"].value == {
        "financemath": 1.0,
        "knowledgefmath2023": 1.0,
        "rounding": 0.0,
        **RAN,
    }
    # an integer too large for a float: executed for the reference (its float() fails:
    # wrong), no number for ours, with the reason
    assert scores["huge-3"].value == {
        "financemath": 0.0,
        "knowledgefmath2023": 0.0,
        "rounding": 0.0,
        "execution_rate": 1.0,
        "strict_execution_rate": 0.0,
    }
    assert "too large" in (scores["huge-3"].answer or "")
