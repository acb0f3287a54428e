"""TAT-QA's pot agent's programs traced against the gold derivation, through real evals in
the bubblewrap sandbox: a program with the derivation's figures and another formula is
``method`` with the step where it parts from the gold; a program with a figure written
nowhere is ``misread`` naming it; a correct program gets no cause; a real dev record the
same way."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from inspect_ai.log import read_eval_log
from tatqa_fixtures import arithmetic_question, write_split

from eval_helpers import scripted
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.scorers.causes import ERROR_CAUSE_KEY, ERROR_EVIDENCE_KEY
from finmath_tasks.tasks.tatqa import tatqa

BWRAP_OK, BWRAP_REASON = bwrap_available()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.bwrap,
    pytest.mark.skipif(not BWRAP_OK, reason=f"bubblewrap unavailable: {BWRAP_REASON}"),
]
REAL = Path(os.environ.get("FINMATH_DATA_DIR", "/nonexistent")) / "tatqa"


def _question(uid: str, question: str, derivation: str, answer: float, scale: str = "million"):
    return arithmetic_question(uid, question, derivation, answer, scale, order=int(uid[1:]))


DOCUMENT: dict[str, Any] = {
    "table": {
        "uid": "t-pot-causes",
        "table": [
            ["", "2021", "2020"],
            ["Revenue", "1,250.0", "1,000.0"],
            ["Cost of sales", "700.0", "640.0"],
        ],
    },
    "paragraphs": [{"uid": "p-1", "order": 1, "text": "Amounts are in millions."}],
    "questions": [
        _question("q1", "What is the average cost of sales?", "(700.0 + 640.0) / 2", 670.0),
        _question("q2", "What is the change in revenue?", "1,250.0 - 1,000.0", 250.0),
        _question("q3", "What is the change in cost of sales?", "700.0 - 640.0", 60.0),
    ],
}
PROGRAMS = [
    # the derivation's figures, the sum averaged over four quarters: parts at the division
    "def solution():\n    total = 700.0 + 640.0\n    return total / 4",
    # the 2020 revenue taken as 1,050, which the table does not write
    "def solution():\n    revenue_2021 = 1250.0\n    revenue_2020 = 1050.0\n"
    "    return revenue_2021 - revenue_2020",
    # correct
    "def solution():\n    return 700.0 - 640.0",
]


def _run(tmp_path: Path, documents: list[dict[str, Any]], programs: list[str]) -> list[Any]:
    write_split(tmp_path / "data", documents)
    [log] = eval(
        tatqa(data_dir=str(tmp_path / "data"), solver="pot"),
        model=scripted([f"```python\n{p}\n```" for p in programs]),
        sandbox="finmath_bwrap",
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_samples=1,
    )
    log = read_eval_log(log.location)
    assert log.status == "success" and log.samples
    order = [q["uid"] for d in documents for q in d["questions"]]
    return sorted(log.samples, key=lambda s: order.index(str(s.id)))


def _cause(sample: Any, key: str = "rounding") -> tuple[str | None, dict[str, Any]]:
    meta = (sample.scores or {})[key].metadata or {}
    return meta.get(ERROR_CAUSE_KEY), meta.get(ERROR_EVIDENCE_KEY) or {}


def test_pot_programs_are_traced_against_the_derivation(tmp_path: Path) -> None:
    method, invented, correct = _run(tmp_path, [DOCUMENT], PROGRAMS)
    cause, found = _cause(method)
    assert cause == "method"
    # 4 is a usual constant, no extra input; the derivation's 2 is the one left out
    assert found["inputs_match"] is False
    assert found["missing_inputs"] == ["2"] and found["extra_inputs"] == []
    assert found["parts_at"] == 2 and found["steps_shared"] == 1
    assert found["expression"] == "total / 4"
    assert found["value"] == pytest.approx(1340 / 4)
    assert (
        "it leaves out the gold's 2; it parts from the gold at step 2: total / 4 = 335"
        in (found["why"])
    )
    cause, found = _cause(invented)
    assert cause == "misread"
    assert found["invented"] == ["1050.0"]
    assert "line 3: revenue_2020 = 1050.0" in found["why"]
    assert found["trace"]["missing_inputs"] == ["1,000.0"]
    assert found["trace"]["extra_inputs"] == ["1050.0"]
    assert all(ERROR_CAUSE_KEY not in (s.metadata or {}) for s in (correct.scores or {}).values())


def _real_change() -> tuple[dict[str, Any], dict[str, Any], float, float]:
    """A real dev document and its first question whose derivation is ``a - b`` over two
    figures, and the figures."""
    from finmath_tasks.tasks.tatqa.derivation import leaves, parse

    for document in json.loads((REAL / "tatqa_dataset_dev.json").read_text()):
        for question in document["questions"]:
            derivation = str(question.get("derivation") or "")
            if question.get("answer_type") != "arithmetic" or derivation.count("-") != 1:
                continue
            if any(c in derivation for c in "()+*/%"):
                continue
            try:
                found = leaves(parse(derivation))
            except Exception:
                continue
            if len(found) == 2 and found[0].value > found[1].value > 12:
                return document, question, found[0].value, found[1].value
    raise AssertionError("no a - b question in dev")


@pytest.mark.skipif(
    not (REAL / "tatqa_dataset_dev.json").is_file(), reason="needs FINMATH_DATA_DIR"
)
def test_a_real_dev_question_is_traced(tmp_path: Path) -> None:
    document, question, a, b = _real_change()
    one = {**copy.deepcopy(document), "questions": [{**question, "order": 1}]}
    programs = [f"def solution():\n    change = {a!r} - {b!r}\n    return change / 2"]
    [sample] = _run(tmp_path, [one], programs)
    cause, found = _cause(sample)
    assert cause == "method", found
    assert found["inputs_match"] is True
    assert found["parts_at"] == 2 and found["steps_shared"] == 1
    assert found["expression"] == "change / 2"
