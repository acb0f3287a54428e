"""lm_eval's logged samples carry the error causes of MathHay, SARA, FinQA and TAT-QA: `lm_eval run` as a user
runs it (our configs, lm_eval's OpenAI-compatible client against a loopback server,
--log_samples), on the real data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("lm_eval", reason="the lm_eval extra is not installed")

from scripted_lm import lm_eval_cli, logged_verdict_of, scripted_server

from finmath_tasks.sandbox.bwrap import bwrap_available


def logged_run(task: str, reply: Any, data_dir: Path, tmp_path: Path) -> dict[str, Any]:
    """``lm_eval run`` of one sample of ``task`` answered by ``reply`` (messages -> text),
    on the real data; the verdict its logged sample carries."""
    with scripted_server(reply) as server:
        run = lm_eval_cli(
            server, task, "--limit", "1", "--log_samples", "--output_path", str(tmp_path / "out"),
            env={"FINMATH_DATA_DIR": str(data_dir)},
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return logged_verdict(tmp_path / "out", task)


def logged_verdict(out: Path, task: str) -> dict[str, Any]:
    [samples] = list(out.rglob(f"samples_{task}_*.jsonl"))
    [record] = [json.loads(line) for line in samples.read_text().splitlines() if line.strip()]
    [text] = record["filtered_resps"]
    return logged_verdict_of(text)


@pytest.mark.slow
def test_sara_samples_carry_the_cause(data_dir: Path, tmp_path: Path) -> None:
    from finmath_tasks.tasks.sara import sara

    cases = [(str(s.input), str(s.target)) for s in sara(kind="entailment", data_dir=str(data_dir)).dataset]  # fmt: skip
    flipped = {"Entailment": "Contradiction", "Contradiction": "Entailment"}

    def reply(messages: list[dict[str, str]]) -> str:
        text = str(messages[-1]["content"])
        [label] = {gold for question, gold in cases if question in text}
        return f"Answer: {flipped[label]}"

    task = "finmath_sara_entailment"
    verdict = logged_run(task, reply, data_dir, tmp_path)
    assert verdict["scores"]["entailment"] == 0.0
    assert verdict["error_classes"] == {"entailment": "wrong_label"}
    # the cited statutes were in the prompt (mentioned_only) and no calculation failed
    assert verdict["error_causes"] == {"entailment": "method"}
    assert verdict["error_evidence"]["entailment"]["cited"]


@pytest.mark.slow
@pytest.mark.skipif(not bwrap_available()[0], reason="needs bubblewrap")
def test_mathhay_samples_carry_the_cause(data_dir: Path, tmp_path: Path) -> None:
    from finmath_tasks.tasks.mathhay import mathhay

    golds = [
        (str(s.input), float(str(s.target)))
        for s in mathhay(length=32000, judge=False, data_dir=str(data_dir)).dataset
    ]

    def reply(messages: list[dict[str, str]]) -> str:
        text = str(messages[-1]["content"])
        [gold] = {g for question, g in golds if question in text}
        body = {"relevant_quantities": [], "reasoning": "as read", "answer": gold * 1000}
        return "```json\n" + json.dumps(body) + "\n```"

    task = "finmath_mathhay_32k"
    verdict = logged_run(task, reply, data_dir, tmp_path)
    assert verdict["scores"]["exact_match"] == 0.0
    assert verdict["error_classes"] == {"exact_match": "scale"}
    # the gold times a power of ten, which exact match does not credit
    assert verdict["error_causes"] == {"exact_match": "unit"}
    assert "why" in verdict["error_evidence"]["exact_match"]


# A stated step whose result is wrong: the first cause that applies on any record whose gold
# is not 5 (the arithmetic check precedes every gold re-run), so the real data can be used.
WRONG_STEP = "2 + 2 = 5"


@pytest.mark.slow
def test_finqa_samples_carry_the_cause(data_dir: Path, tmp_path: Path) -> None:
    task = "finmath_finqa_rag_cot"
    verdict = logged_run(
        task, lambda messages: f"{WRONG_STEP}\nFinal answer: 5", data_dir, tmp_path
    )
    assert verdict["scores"]["tolerant"] == 0.0
    assert verdict["error_causes"]["tolerant"] == "arithmetic", verdict
    assert WRONG_STEP in json.dumps(verdict["error_evidence"]["tolerant"]), verdict
    # the keys that execute the reply's program find none to run
    for key in ("execution_accuracy", "program_accuracy"):
        assert verdict["error_causes"][key] == "no_answer", verdict


@pytest.mark.slow
def test_tatqa_samples_carry_the_cause(data_dir: Path, tmp_path: Path) -> None:
    task = "finmath_tatqa_arithmetic_cot"
    body = json.dumps({"steps": WRONG_STEP, "answer": "5"})
    verdict = logged_run(task, lambda messages: body, data_dir, tmp_path)
    wrong = [key for key, value in verdict["scores"].items() if value == 0.0]
    assert wrong, verdict
    for key in wrong:
        assert verdict["error_causes"][key] == "arithmetic", verdict
        assert WRONG_STEP in json.dumps(verdict["error_evidence"][key]), verdict
