"""FinQA's pot agent's programs traced against the gold DSL program, through real evals in the
bubblewrap sandbox: a program with the gold's inputs and another formula is ``method`` with
the step where it parts from the gold; a program with a literal written nowhere is
``misread`` naming it; a correct program gets no cause; a real dev record the same way.
Without a sandbox for the trace, the findings stay the re-runs' (no trace, no raise)."""

from __future__ import annotations

import asyncio
import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from finqa_fixtures import qa_record, write_task_data
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inspect_ai import eval
from inspect_ai.log import read_eval_log

from eval_helpers import scripted
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.scorers import causes_expression
from finmath_tasks.scorers.causes import CAUSES, ERROR_CAUSE_KEY, ERROR_EVIDENCE_KEY, CauseInput
from finmath_tasks.tasks.finqa import finqa
from finmath_tasks.tasks.finqa.causes import finqa_causes

BWRAP_OK, BWRAP_REASON = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"bubblewrap unavailable: {BWRAP_REASON}")
DATA = Path(os.environ.get("FINMATH_DATA_DIR", "/nonexistent")) / "finqa"

GROWTH = "subtract(1250, 900), divide(#0, 900)"  # 0.38889: revenue growth 2018 to 2020


def record(n: int, question: str, program: str, exe_ans: Any) -> dict[str, Any]:
    return qa_record(f"WDG/2020/page_{n}.pdf-7", question, program, exe_ans)


QUESTION = "what was the growth in revenue from 2018 to 2020?"
PROGRAMS = [
    # the gold's inputs, and its growth halved: a yearly average, not the growth asked
    "def solution():\n    growth = (1250 - 900) / 900\n    return growth / 2",
    # an inflation figure the report writes nowhere
    "def solution():\n    inflation = 1.15\n    return (1250 - 900) / 900 * inflation",
    # correct
    "def solution():\n    return (1250 - 900) / 900",
]


def _run(tmp_path: Path, records: list[dict[str, Any]], programs: list[str]) -> list[Any]:
    write_task_data(tmp_path, records)
    [log] = eval(
        finqa(data_dir=str(tmp_path), solver="pot", split="dev"),
        model=scripted([f"```python\n{p}\n```" for p in programs]),
        sandbox="finmath_bwrap",
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_samples=1,
    )
    log = read_eval_log(log.location)
    assert log.status == "success" and log.samples
    order = [r["id"] for r in records]
    return sorted(log.samples, key=lambda s: order.index(str(s.id)))


def _cause(sample: Any, key: str = "rounding") -> tuple[str | None, dict[str, Any]]:
    meta = (sample.scores or {})[key].metadata or {}
    return meta.get(ERROR_CAUSE_KEY), meta.get(ERROR_EVIDENCE_KEY) or {}


@pytest.mark.slow
@pytest.mark.bwrap
@needs_bwrap
def test_pot_programs_are_traced_against_the_gold(tmp_path: Path) -> None:
    records = [record(n, QUESTION, GROWTH, 0.38889) for n in (1, 2, 3)]
    method, invented, correct = _run(tmp_path, records, PROGRAMS)
    cause, found = _cause(method)
    assert cause == "method"
    assert found["inputs_match"] is True
    assert found["missing_inputs"] == [] and found["extra_inputs"] == []
    # 1250 - 900 and the growth are the gold's two steps; the halving is the program's own
    assert found["parts_at"] == 3 and found["steps_shared"] == 2
    assert found["expression"] == "growth / 2"
    assert found["value"] == pytest.approx(350 / 900 / 2)
    assert "it parts from the gold at step 3: growth / 2 = 0.194444" in found["why"]
    assert found["why"].startswith("the program ran and every number it writes")
    cause, found = _cause(invented)
    assert cause == "misread"
    assert found["invented"] == ["1.15"] and found["number"] == "1.15"
    assert found["step"] == "inflation = 1.15"
    assert "line 2: inflation = 1.15" in found["why"]
    assert found["trace"]["extra_inputs"] == ["1.15"]
    assert found["trace"]["expression"] == "(1250 - 900) / 900 * inflation"
    # the tolerant key reads the same program: the same cause
    assert _cause(invented, "tolerant")[0] == "misread"
    assert all(ERROR_CAUSE_KEY not in (s.metadata or {}) for s in (correct.scores or {}).values())


def _real_growth_record() -> tuple[dict[str, Any], float, float]:
    """A real dev record whose gold is a percentage change ``subtract(a, b), divide(#0, b)``
    over two table figures (the first in the file)."""
    for raw in json.loads((DATA / "dev.json").read_text()):
        program = raw["qa"]["program"]
        parts = program.replace(" ", "").split("),")
        if len(parts) != 2 or not parts[0].startswith("subtract(") or "#" in parts[0]:
            continue
        a, b = parts[0][len("subtract(") :].split(",")
        if parts[1] != f"divide(#0,{b})" or not all(x.replace(".", "").isdigit() for x in (a, b)):
            continue
        return raw, float(a), float(b)
    raise AssertionError("no percentage-change record in dev")


@pytest.mark.slow
@pytest.mark.bwrap
@needs_bwrap
@pytest.mark.skipif(not (DATA / "dev.json").is_file(), reason="needs FINMATH_DATA_DIR")
def test_a_real_dev_record_is_traced(tmp_path: Path) -> None:
    raw, a, b = _real_growth_record()
    programs = [
        f"def solution():\n    change = {a!r} - {b!r}\n    return change / {b!r} / 2",
        f"def solution():\n    return ({a!r} - {b!r}) / {b!r}",
    ]
    second = {**copy.deepcopy(raw), "id": raw["id"] + "-again"}
    method, correct = _run(tmp_path, [raw, second], programs)
    cause, found = _cause(method)
    assert cause == "method", found
    assert found["inputs_match"] is True
    assert found["parts_at"] == 3 and found["steps_shared"] == 2
    assert found["expression"] == f"change / {b!r} / 2"
    assert all(ERROR_CAUSE_KEY not in (s.metadata or {}) for s in (correct.scores or {}).values())


def test_without_a_sandbox_for_the_trace_the_findings_stay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the trace's probe cannot start (no bubblewrap): the re-runs' findings as they were, the
    # invented input still claimed (it needs no execution), no raise
    from finmath_tasks.errors import Unavailable
    from finmath_tasks.tasks.finqa.dataset import record_to_sample

    async def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise Unavailable("the gold program cannot run in the sandbox: no bwrap")

    monkeypatch.setattr(causes_expression, "run_trace", unavailable)
    sample = record_to_sample(record(1, QUESTION, GROWTH, 0.38889))
    meta = dict(sample.metadata or {})

    def findings(program: str, answer: float) -> list[Any]:
        data = CauseInput(
            output=f"```python\n{program}\n```",
            gold=0.38889,
            answers=(answer,),
            program={"ok": True, "program": program, "value": answer},
            metadata=meta,
        )
        return list(asyncio.run(finqa_causes(data)))

    [method] = [f for f in findings(PROGRAMS[0], 350 / 900 / 2) if f.cause == "method"]
    assert "parts_at" not in method.evidence and "steps_shared" not in method.evidence
    assert method.evidence["why"].endswith("the formula or concept")
    [misread] = [f for f in findings(PROGRAMS[1], 350 / 900 * 1.15) if f.cause == "misread"]
    assert misread.evidence["invented"] == ["1.15"] and "trace" not in misread.evidence


PIECES = ["def solution():\n    return ", "1250", " - ", "900", " / ", "1.15", " * ", "(", ")",
          "\n", "    x = 3\n", "x", "1e308", " ** ", "2", "'a'", "0"]  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(PIECES), max_size=25).map("".join),
    st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([0.19444, 0.44722]),
)
def test_any_program_that_ran_leaves_the_findings_whole(program: str, answer: float) -> None:
    # whatever the recorded program (it may not even parse), the check never raises and the
    # re-runs' findings are all still there (a method finding is the program's own)
    from finmath_tasks.tasks.finqa.dataset import record_to_sample

    meta = dict(record_to_sample(record(1, QUESTION, GROWTH, 0.38889)).metadata or {})
    data = CauseInput(
        output=f"```python\n{program}\n```",
        gold=0.38889,
        answers=(answer,),
        program={"ok": True, "program": program, "value": answer},
        metadata=meta,
    )
    bare = CauseInput(data.output, data.gold, data.answers, None, data.metadata)
    found = list(asyncio.run(finqa_causes(data)))
    without = [f for f in asyncio.run(finqa_causes(bare)) if f.cause != "method"]
    assert all(f in found for f in without)
    assert all(f.cause in CAUSES for f in found)


@needs_bwrap
def test_a_rate_near_minus_100_percent_leaves_the_trace() -> None:
    # a document rate of -98.4% underflows its compound factors ((1 - 0.984)^360 is 0):
    # the factors stop where they underflow, so the invented-input check still reads the
    # document (this program invents nothing) and the trace is attached
    from finmath_tasks.tasks.finqa.dataset import record_to_sample

    raw = record(1, QUESTION, GROWTH, 0.38889)
    raw["post_text"] = [*raw["post_text"], "units sold changed by -98.4% in 2019 ."]
    meta = dict(record_to_sample(raw).metadata or {})
    program = PROGRAMS[0]
    data = CauseInput(
        output=program,
        gold=0.38889,
        answers=(350 / 900 / 2,),
        program={"ok": True, "program": program, "value": 350 / 900 / 2},
        metadata=meta,
    )
    found = asyncio.run(finqa_causes(data))
    [method] = [f for f in found if f.cause == "method"]
    assert method.evidence["parts_at"] == 3 and method.evidence["expression"] == "growth / 2"
    assert not [f for f in found if "invented" in f.evidence]
