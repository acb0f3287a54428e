"""A sandbox that dies while running a program is no verdict on the model's reply: under
lm_eval that sample is left out of every metric, counted and reported at the end, never
scored as a wrong answer; a program that kills itself stays the program's failure."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "lm_eval", reason='lm-evaluation-harness is not installed (the "lm-eval" extra)'
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sandbox"))

from killer import kill_during_first_program
from lm_eval import simple_evaluate
from scripted_lm import ScriptedLM, task_manager

from finmath_tasks.sandbox.bwrap import bwrap_available

pytestmark = [pytest.mark.bwrap]

POT = "finmath_knowledgefmath_pot"

SLOW = "```python\ndef solution():\n    import time\n    time.sleep(2.5)\n    return {target}\n```"
RIGHT = "```python\ndef solution():\n    return {target}\n```"
SELF_KILL = (
    "```python\ndef solution():\n    import os, signal\n"
    "    os.kill(os.getpid(), signal.SIGKILL)\n    return {target}\n```"
)


@pytest.mark.slow
def test_a_killed_worker_leaves_the_sample_out_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ok, reason = bwrap_available()
    if not ok:
        pytest.skip(f"bubblewrap: {reason}")
    replies = [SLOW, RIGHT, SELF_KILL]

    def reply(doc: dict[str, Any]) -> str:
        return replies[int(doc["id"].split("-")[-1]) % 3].format(target=doc["target"])

    killed = kill_during_first_program(monkeypatch)
    with caplog.at_level("WARNING"):
        results = simple_evaluate(
            model=ScriptedLM(reply),
            tasks=[POT],
            limit=3,
            apply_chat_template=True,
            log_samples=True,
            confirm_run_unsafe_code=True,
            bootstrap_iters=0,
            task_manager=task_manager({"split": "demo", "sandbox": "bwrap"}),
        )
    assert results is not None
    assert len(killed) == 1  # one worker, killed while it ran the first program
    samples = {s["doc"]["id"]: s for s in results["samples"][POT]}
    failed = samples.pop("demo-0")  # the first program run
    [verdict] = [json.loads(text) for text in failed["filtered_resps"]]
    assert "sandbox worker died" in verdict["sandbox_error"]
    assert all(v is None for v in verdict["scores"].values())  # unscored: null
    assert "financemath" not in failed  # left out of the metric, not a 0
    right, self_killed = samples.values()
    assert right["financemath"] == 1.0
    # the program's own death is the program's failure: a wrong answer, scored
    assert self_killed["financemath"] == 0.0 and self_killed["execution_rate"] == 0.0
    self_killed_verdict = json.loads(self_killed["filtered_resps"][0])
    assert "sandbox_error" not in self_killed_verdict
    assert "SIGKILL" in self_killed_verdict["program"]["error"]
    row = results["results"][POT]
    assert row["financemath,none"] == pytest.approx(0.5)  # one right of the two scored
    assert row["execution_rate,none"] == pytest.approx(0.5)
    assert results["configs"][POT]["metadata"]["sandbox_failures"] == ["demo-0"]  # counted
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith(POT)]
    assert len(said) == 1  # once, at the end
    assert said[0].startswith(f"{POT}: 1 sample not scored because the sandbox failed")
    assert "sandbox worker died" in said[0]
