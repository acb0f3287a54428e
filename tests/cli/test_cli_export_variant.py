"""``finmath export`` of a run on fresh variants says what it exports: every row carries the
variant and its seed, and the submission format (the published questions' layout) refuses
the log in one line, writing nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog

from finmath_tasks.cli.main import main as finmath

SEED = 3


def run(folder: Path, **variant: object) -> EvalLog:
    from finmath_tasks.tasks.knowledgefmath import knowledgefmath

    [log] = inspect_eval(
        knowledgefmath(split="demo", solver="oracle", **variant),  # type: ignore[arg-type]
        model="mockllm/model",
        limit=4,
        display="none",
        log_dir=str(folder),
    )
    assert log.status == "success"
    return log


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    # a fresh variant recomputes each gold by running its program in bubblewrap: the tests
    # using it are marked so, and skip where it cannot run (tests/conftest.py)
    return run(tmp_path_factory.mktemp("fresh"), variant="fresh", variant_seed=SEED)


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    return run(tmp_path_factory.mktemp("original"))


@pytest.mark.slow
@pytest.mark.bwrap
def test_rows_of_a_fresh_variant_carry_the_variant_and_seed(
    fresh: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rows.json"
    assert finmath(["export", fresh.location, "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"fresh variants, seed {SEED}" in said
    rows = json.loads(out.read_text())
    assert [r["id"] for r in rows] == [s.id for s in fresh.samples or []]
    assert all(r["variant"] == "fresh" and r["variant_seed"] == SEED for r in rows)
    # the oracle answers the variant's own gold: the rows are of the changed questions
    assert all(r["scores"]["financemath"]["value"] == 1.0 for r in rows)


@pytest.mark.bwrap
def test_the_submission_format_refuses_a_fresh_variant(
    fresh: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "submission.json"
    assert finmath(["export", fresh.location, "-o", str(out), "--format", "submission"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"a run on fresh variants (-T variant=fresh -T variant_seed={SEED})" in err
    assert "--format rows" in err
    assert not out.exists()


def test_an_original_run_exports_as_before(
    original: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows_file, submission = tmp_path / "rows.json", tmp_path / "submission.json"
    assert finmath(["export", original.location, "-o", str(rows_file)]) == 0
    assert (
        finmath(["export", original.location, "-o", str(submission), "--format", "submission"]) == 0
    )
    assert "fresh" not in capsys.readouterr().out
    rows = json.loads(rows_file.read_text())
    assert len(rows) == 4 and not any("variant" in r or "variant_seed" in r for r in rows)
    assert json.loads(submission.read_text())[0]["question_id"] == "demo-0"
