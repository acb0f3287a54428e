"""The reference's recorded GPT-4o results replayed through `mathhay`: our verdict is theirs.

Runs ``benchmarks/mathhay_replay.py`` (a real Inspect eval per recorded file: the
recorded answer as the evaluated model's reply, the recorded judge reply as the
grader's) and fails on any record whose verdict differs from the reference's
(``correct`` OR the judge's "yes"): 222 records at 64K, 259 at 128K.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = [pytest.mark.realdata, pytest.mark.slow]

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "mathhay_replay.py"
EXPECTED = {64000: 222, 128000: 259}


def _benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mathhay_replay", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module by name
    spec.loader.exec_module(module)
    return module


def test_every_recorded_verdict_is_ours(session_data_dir: Path) -> None:
    replay = _benchmark()
    results = session_data_dir / replay.RESULTS
    if not results.is_dir():
        pytest.skip(f"no recorded MathHay results in {results}")
    rows = replay.replay(session_data_dir)
    disagreements = [f"{r.file}: {line}" for r in rows for line in r.disagreements]
    assert not disagreements, "\n".join(disagreements)
    for length, records in EXPECTED.items():
        at = [r for r in rows if r.length == length]
        assert sum(r.records for r in at) == sum(r.agreeing for r in at) == records, length
    for row in rows:
        recorded = json.loads((results / row.file).read_text())
        assert row.records == len(recorded)
        # the exact match is the reference's own on every record, and the judge was asked
        # exactly about the others whose answer could be read
        assert row.exact_agreeing == row.records, row.file
        asked = [
            r for r in recorded
            if not r["correct"] and math.isfinite(float(r["pred_answer"]))
        ]  # fmt: skip
        assert row.judged == len(asked), row.file
    # both ways of the verdict occur: judge "yes" without an exact match, and exact matches
    # the judge called different
    flat = [r for row in rows for r in json.loads((results / row.file).read_text())]
    assert any(not r["correct"] and r["llm_judge"].lower() == "yes" for r in flat)
    assert any(r["correct"] and r["llm_judge"].lower() == "no" for r in flat)
