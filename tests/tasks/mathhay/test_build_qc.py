"""``finmath mathhay build --stages qc``: both solutions run in the sandbox; the verdicts."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import read_eval_log
from inspect_ai.util import SandboxEnvironmentSpec

from eval_helpers import scripted
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.tasks.mathhay.build.layout import BuildError, Layout, write_json
from finmath_tasks.tasks.mathhay.build.qc import (
    Answer,
    consistency,
    read_checkpoint,
    run_qc,
    stated_answer,
)

PERIOD = "March-2024-to-September-2024"
BWRAP = SandboxEnvironmentSpec("finmath_bwrap")
_OK, _REASON = bwrap_available()
needs_bwrap = pytest.mark.skipif(not _OK, reason=f"bubblewrap unavailable: {_REASON}")


# ---- the rule, on crafted answers -----------------------------------------------------------


def a(value: float | None, how: str = "executed") -> Answer:
    return Answer(value, how)


@pytest.mark.parametrize("mode", ["strict", "reference"])
def test_close_answers_agree_and_others_do_not(mode: str) -> None:
    assert consistency(a(0.1 + 0.2), a(0.3), mode)[0]
    assert consistency(a(1e12), a(1e12 + 1e2), mode)[0]  # within rel_tol 1e-9
    assert not consistency(a(1e12), a(1e12 + 1e4), mode)[0]
    assert not consistency(a(12.0), a(12.5), mode)[0]
    # two failures are never consistent (math.isclose(-inf, -inf) is True)
    assert not consistency(a(-math.inf, "call failed"), a(-math.inf, "no reply"), mode)[0]
    assert not consistency(a(-math.inf, "not defined"), a(-math.inf), mode)[0]


def test_a_missing_answer_passes_only_under_the_reference_rule() -> None:
    assert consistency(a(None, "returned None"), a(3.0), "reference") == (
        True,
        "a missing answer passes (--qc reference)",
    )
    assert consistency(a(3.0), a(None, "returned None"), "reference")[0]
    ok, reason = consistency(a(None, "returned None"), a(3.0), "strict")
    assert not ok and "generated solution gave no answer" in reason


def test_the_stated_answer_is_read_as_a_float() -> None:
    assert stated_answer(3) == 3.0 and stated_answer("1,250.5") == 1250.5
    assert stated_answer("about 3") is None and stated_answer(True) is None
    assert stated_answer(None) is None and stated_answer([1]) is None


# ---- the stage in a real eval --------------------------------------------------------------


def sol(body: str) -> str:
    return "def solve():\n" + "\n".join("    " + line for line in body.splitlines())


def reply(code: str, answer: Any) -> str:
    return json.dumps({"reasoning": "r", "python_solution": code, "answer": answer})


def task(question: str, solution: str) -> dict[str, Any]:
    cells = [{"object": "x", "numerical_value": 3, "date": "", "location": "", "context": ""}]
    return {
        "relevant_quantity_cells": cells,
        "question": question,
        "solution": solution,
        "steps": 1,
        "answer": "99",
        "refined_flag": 1,
    }


def cases(marker: Path) -> list[tuple[str, str, str]]:
    """(question, generated solution, the qc model's reply) in sample order."""
    attack = f"open({str(marker)!r}, 'w').write('x')\nreturn 3"
    return [
        ("agree", sol("a = 3\nb = 4\nreturn a * b"), reply(sol("answer = 12\nreturn answer"), 12)),
        ("table", "RATE = 2\n" + sol("return RATE * 5"), reply(sol("return 10"), 10)),
        ("loops", sol("while True:\n    pass"), "I cannot answer in JSON, sorry."),
        ("none", sol("print('no return')"), reply(sol("return 5"), 5)),
        ("stated", sol("return 7"), reply("def broken(:\n    pass", "7")),
        ("memory", sol("x = bytearray(8 * 1024 ** 3)\nreturn 1"), reply(sol("return 1"), 1)),
        ("prints", sol("print('y' * 20_000_000)\nreturn 2"), reply(sol("return 2.0"), 2)),
        ("attack", sol(attack), reply(sol("return 3"), 3)),
        ("fields", sol("return 4"), json.dumps({"reasoning": "r", "answer": 4})),
    ]


def write_generated(layout: Layout, marker: Path) -> list[tuple[str, str, str]]:
    rows = cases(marker)
    groups = [
        {
            "Topic": "T",
            "Subtopic": "S",
            "decomposable_query": "dq",
            "atomic_queries": ["aq"],
            "doc_id": f"Doc_{g}",
            "document": f"Document {g} says x is 3.",
            "tasks": [task(q, s) for q, s, _ in rows[g * 3 : g * 3 + 3]],
        }
        for g in range(3)
    ]
    write_json(layout.generated("sssd"), groups)
    return rows


def verdicts(layout: Layout) -> dict[str, dict[str, Any]]:
    groups = json.loads(layout.high_quality("sssd").read_text())
    return {t["question"]: t for g in groups for t in g["tasks"]}


@needs_bwrap
@pytest.mark.bwrap
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["strict", "reference"])
def test_qc_runs_both_solutions_in_the_sandbox(tmp_path: Path, mode: str) -> None:
    layout = Layout(tmp_path / "out", PERIOD)
    marker = tmp_path / "host-file-written-by-a-solution"
    rows = write_generated(layout, marker)
    qc_model = scripted([r for _, _, r in rows])
    [result] = run_qc(
        layout,
        ["sssd"],
        model="mockllm/model",
        qc_model=qc_model,
        mode=mode,
        sandbox=BWRAP,
        timeout=3.0,
        max_samples=1,
    )
    v = verdicts(layout)
    assert not marker.exists()  # the solution ran in the sandbox, not here
    assert v["agree"]["consistency"] == 1 and v["agree"]["answer"] == 12.0
    assert v["agree"]["qc"]["first"] == {"value": 12.0, "how": "executed", "error": None}
    # a module-level table is invisible inside the function under the reference's exec
    if mode == "reference":
        assert v["table"]["consistency"] == 0
        assert v["table"]["qc"]["first"]["how"] == "call failed"
        assert "NameError" in v["table"]["qc"]["first"]["error"]
        assert v["none"]["consistency"] == 1 and v["none"]["answer"] is None
    else:
        assert v["table"]["consistency"] == 1 and v["table"]["answer"] == 10.0
        assert v["none"]["consistency"] == 0
        assert "gave no answer" in v["none"]["qc"]["reason"]
    assert v["loops"]["consistency"] == 0 and v["loops"]["answer"] == "99"
    assert "timeout" in v["loops"]["qc"]["first"]["error"]
    assert v["loops"]["qc"]["second"]["how"] == "no reply"
    assert v["stated"]["consistency"] == 1
    assert v["stated"]["qc"]["second"]["how"] == "stated answer"
    assert v["memory"]["consistency"] == 0
    assert "memory" in v["memory"]["qc"]["first"]["error"].lower()
    assert v["prints"]["qc"]["first"]["how"] in {"executed", "call failed"}
    assert v["attack"]["qc"]["first"]["how"] == "call failed"
    assert v["fields"]["qc"]["second"] == {
        "value": "-inf",
        "how": "no reply",
        "error": "the reply misses the field 'python_solution'",
    }
    assert result.tasks == 9 and result.consistent == sum(t["consistency"] for t in v.values())
    log = read_eval_log(result.log)
    assert log.status == "success" and log.samples is not None and len(log.samples) == 9
    assert all(s.output.completion for s in log.samples)  # every reply is in the log
    assert log.stats.model_usage  # with its usage


@needs_bwrap
@pytest.mark.bwrap
@pytest.mark.slow
def test_an_interrupted_stage_resumes_without_asking_again(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "out", PERIOD)
    rows = write_generated(layout, tmp_path / "m")
    replies = [r for _, _, r in rows]
    # the model stops answering after 4 replies: the stage cannot finish
    with pytest.raises(BuildError, match=r"did not finish.*run the qc stage again"):
        run_qc(
            layout,
            ["sssd"],
            model="mockllm/model",
            qc_model=scripted(replies[:4]),
            sandbox=BWRAP,
            timeout=3.0,
            max_samples=1,
        )
    assert not layout.high_quality("sssd").exists()
    assert len(read_checkpoint(layout.checkpoint("qc", "sssd"))) == 4
    # the rerun asks only for the 5 that did not finish (a 6th request would fail)
    [result] = run_qc(
        layout,
        ["sssd"],
        model="mockllm/model",
        qc_model=scripted(replies[4:]),
        sandbox=BWRAP,
        timeout=3.0,
        max_samples=1,
    )
    assert result.resumed == 4 and result.tasks == 9
    assert verdicts(layout)["agree"]["consistency"] == 1
    with pytest.raises(BuildError, match=r"exists.*--overwrite"):
        run_qc(layout, ["sssd"], model="mockllm/model", sandbox=BWRAP)
    # overwrite with every call finished: the file is rewritten, nothing is asked
    [again] = run_qc(
        layout,
        ["sssd"],
        model="mockllm/model",
        qc_model=scripted([]),
        sandbox=BWRAP,
        overwrite=True,
    )
    assert again.resumed == 9 and again.log is None


def test_bad_parameters_and_missing_input(tmp_path: Path) -> None:
    layout = Layout(tmp_path, PERIOD)
    with pytest.raises(BuildError, match="--qc 'lenient'"):
        run_qc(layout, ["sssd"], model="mockllm/model", mode="lenient", sandbox=BWRAP)
    with pytest.raises(BuildError, match="run the questions stage first"):
        run_qc(layout, ["sssd"], model="mockllm/model", sandbox=BWRAP)
    layout.folder.mkdir(parents=True)
    layout.generated("sssd").write_text("[{]")
    with pytest.raises(BuildError, match=r"generated_questions_sssd\.json: malformed JSON"):
        run_qc(layout, ["sssd"], model="mockllm/model", sandbox=BWRAP)
    write_json(layout.generated("sssd"), [{"tasks": [], "document": 5}])
    with pytest.raises(BuildError, match="group 0: 'document' must be"):
        run_qc(layout, ["sssd"], model="mockllm/model", sandbox=BWRAP)


@needs_bwrap
@pytest.mark.bwrap
@pytest.mark.slow
@pytest.mark.realdata
def test_first_solutions_give_the_references_values(data_dir: Path, tmp_path: Path) -> None:
    """Acceptance 1: every task the reference kept (consistency 1, its executed value
    recorded as the answer) gets the same value from its solution run in our sandbox; the
    others are the reference's failures (a solution reading `relevant_quantity_cells`, a
    name it never defines) or disagreements with the reference's own model."""
    pipeline = data_dir / "mathhay" / "pipeline" / PERIOD
    if not pipeline.is_dir():
        pytest.skip(f"{pipeline} not found")
    layout = Layout(tmp_path, PERIOD)
    layout.folder.mkdir(parents=True)
    types = ["sssd", "2ssd", "ss2d"]
    n = 0
    for t in types:
        shutil.copy(pipeline / f"generated_questions_{t}.json", layout.folder)
        n += sum(len(g["tasks"]) for g in json.loads(layout.generated(t).read_text()))
    assert n == 310
    qc_model = scripted([reply(sol("return 1.0"), 1.0)] * n)
    run_qc(
        layout,
        types,
        model="mockllm/model",
        qc_model=qc_model,
        mode="reference",
        sandbox=BWRAP,
        max_samples=8,
    )
    checked = failed = 0
    for t in types:
        ours = read_checkpoint(layout.checkpoint("qc", t))
        reference = json.loads((pipeline / f"high_quality_questions_{t}.json").read_text())
        for g, group in enumerate(reference):
            for i, theirs in enumerate(group["tasks"]):
                first = ours[f"{t}-{g:04d}-{i:02d}"]["first"]
                if theirs["consistency"] == 1:
                    checked += 1
                    assert first["how"] == "executed" and first["value"] == float(theirs["answer"])
                elif first["how"] != "executed":
                    failed += 1
                    assert "relevant_quantity_cells" in first["error"]
    assert checked == 82 + 90 + 94
    assert failed == 18
