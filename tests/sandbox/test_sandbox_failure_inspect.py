"""Under Inspect, a sandbox that dies while running a program makes that sample an error
(what ``--retry-on-error`` and ``inspect eval-retry`` run again), never a wrong answer; a
program that kills itself stays the program's failure, scored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, get_model
from killer import kill_during_first_program

from finmath_tasks.tasks.knowledgefmath.task import knowledgefmath

pytestmark = [pytest.mark.bwrap]

SLOW = "```python\ndef solution():\n    import time\n    time.sleep(2.5)\n    return {target}\n```"
RIGHT = "```python\ndef solution():\n    return {target}\n```"
SELF_KILL = (
    "```python\ndef solution():\n    import os, signal\n"
    "    os.kill(os.getpid(), signal.SIGKILL)\n    return {target}\n```"
)


def _run(
    retry_on_error: int, log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[object, list[str]]:
    task = knowledgefmath(split="demo", solver="pot")
    golds = [str(s.target) for s in list(task.dataset)[:3]]
    # samples run one at a time, in order; a sample to retry runs again after the others
    replies = [
        SLOW.format(target=golds[0]),
        RIGHT.format(target=golds[1]),
        SELF_KILL.format(target=golds[2]),
    ]
    if retry_on_error:
        replies.append(RIGHT.format(target=golds[0]))
    calls: list[str] = []

    killed = kill_during_first_program(monkeypatch)

    def outputs() -> Iterator[ModelOutput]:
        for reply in replies:
            calls.append(reply)
            yield ModelOutput.from_content("mockllm/model", reply)

    [log] = inspect_eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs()),
        sandbox="finmath_bwrap",
        limit=3,
        max_samples=1,
        fail_on_error=False,
        retry_on_error=retry_on_error,
        log_dir=str(log_dir),
        display="none",
    )
    assert len(killed) == 1  # one worker, killed while it ran the first program
    return log, calls


@pytest.mark.slow
def test_a_killed_worker_is_the_samples_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, _ = _run(0, tmp_path, monkeypatch)
    assert log.status == "success", log.error  # type: ignore[attr-defined]
    first, right, self_killed = log.samples  # type: ignore[attr-defined]
    assert first.error is not None and "sandbox worker died" in first.error.message
    assert not first.scores  # no verdict on the reply
    assert right.scores["financemath"].value == 1.0
    # the program's own death is its failure: a wrong answer, scored
    assert self_killed.error is None and self_killed.scores["financemath"].value == 0.0


@pytest.mark.slow
def test_retry_on_error_runs_the_sample_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, calls = _run(1, tmp_path, monkeypatch)
    assert log.status == "success", log.error  # type: ignore[attr-defined]
    assert len(calls) == 4  # the first sample asked twice
    first, right, _ = log.samples  # type: ignore[attr-defined]
    assert first.error is None and first.scores["financemath"].value == 1.0
    assert len(first.error_retries or []) == 1
    assert right.scores["financemath"].value == 1.0
