"""``benchmarks/error_classes_replay.py`` on one model per kind: the FinanceMath
leaderboard's recorded validation outputs, replayed through real evals, get error
classes, and no sample the reference scored correct has a class under ``financemath``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from finmath_tasks.sandbox.bwrap import bwrap_available

ROOT = Path(__file__).resolve().parents[3]
BWRAP_OK, BWRAP_REASON = bwrap_available()


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "error_classes_replay", ROOT / "benchmarks" / "error_classes_replay.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.realdata
@pytest.mark.slow
@pytest.mark.bwrap
@pytest.mark.skipif(not BWRAP_OK, reason=f"bubblewrap unavailable: {BWRAP_REASON}")
@pytest.mark.parametrize("kind", ["cot", "pot"])
def test_reference_correct_samples_have_no_class(data_dir: Path, tmp_path: Path, kind: str) -> None:
    model = "claude-3-haiku-20240307"
    path = data_dir / "financemath" / "reference_outputs" / "validation" / kind / f"{model}.json"
    if not path.is_file():
        pytest.skip(f"no recorded outputs of {model} ({kind})")
    replay = _module()
    by_score, n, wrongly, changes = replay.model_classes(
        data_dir, model, kind, tmp_path, ["financemath", "tolerant"]
    )
    counts = by_score["financemath"]
    assert n == 200 and sum(counts.values()) == 200
    assert sum(by_score["tolerant"].values()) == 200
    assert wrongly == []
    published = replay._replay().published_results(data_dir, kind)[model]["accuracy"]
    assert 100 * counts["correct"] / n == pytest.approx(float(published))
    # every other sample has exactly one class, and they are not all one kind
    assert len([c for c in counts if c != "correct"]) >= 3
    failed = replay.column(counts, "program_failed")
    assert (failed > 0) == (kind == "pot")
    if kind == "pot":
        # the reference's cut failed programs that ran for us (a function, then prose after
        # its fence): the harness's, never the model's program_failed
        print("harness", replay.column(counts, "harness"), "changes", dict(changes))
        assert replay.column(counts, "harness") >= 30
