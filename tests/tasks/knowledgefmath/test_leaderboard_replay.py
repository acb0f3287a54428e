"""``benchmarks/leaderboard_replay.py`` on a few models, end to end: no difference allowed.

Real Inspect evals of ``knowledgefmath`` with the recorded validation outputs of
FinanceMath's leaderboard (bdddc58); PoT programs run in our bwrap sandbox. The
PoT models are those with the most outputs our program cut and the reference's
differ on (a single fence with ``def solution():`` and prose after it).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from finmath_tasks.sandbox.bwrap import bwrap_available

ROOT = Path(__file__).resolve().parents[3]
BWRAP_OK, BWRAP_REASON = bwrap_available()


def _replay_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "leaderboard_replay", ROOT / "benchmarks" / "leaderboard_replay.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _outputs(data_dir: Path, kind: str, model: str) -> Path:
    path = data_dir / "financemath" / "reference_outputs" / "validation" / kind / f"{model}.json"
    if not path.is_file():
        pytest.skip(f"no recorded outputs of {model} ({kind}) in {path.parent}")
    return path


@pytest.mark.realdata
@pytest.mark.slow
@pytest.mark.parametrize("model", ["claude-3-haiku-20240307", "Yi-1_5-34B-Chat"])
def test_cot_replay_equals_the_published_accuracy(
    data_dir: Path, tmp_path: Path, model: str
) -> None:
    _outputs(data_dir, "cot", model)
    replay = _replay_module()
    row = replay.replay_model(data_dir, model, "cot", tmp_path)
    assert row.samples == 200
    assert row.differing == [], row.differing
    assert row.ours == row.published and row.difference == 0
    # the leaderboard's CoT execution rate: extractor replies that do not say "none"
    assert row.ours_execution == row.published_execution


@pytest.mark.realdata
@pytest.mark.bwrap
@pytest.mark.slow
@pytest.mark.skipif(not BWRAP_OK, reason=f"bubblewrap unavailable: {BWRAP_REASON}")
@pytest.mark.parametrize("model", ["claude-3-haiku-20240307", "Llama-2-7b-chat-hf"])
def test_pot_replay_equals_the_published_accuracy(
    data_dir: Path, tmp_path: Path, model: str
) -> None:
    from finmath_tasks.tasks.knowledgefmath.programs import extract_program, reference_program

    records = json.loads(_outputs(data_dir, "pot", model).read_text("utf-8"))
    one_fence = [
        r
        for r in records
        if r["output"][0].count("```") == 1 and "def solution():" in r["output"][0]
    ]
    # a program our cut runs and the reference's cut does not
    assert any(
        extract_program(r["output"][0]) != reference_program(r["output"][0]) for r in one_fence
    )
    replay = _replay_module()
    row = replay.replay_model(data_dir, model, "pot", tmp_path)
    assert row.samples == 200
    assert row.differing == [], row.differing
    assert row.ours == row.published and row.difference == 0
    assert row.ours_execution == row.published_execution
