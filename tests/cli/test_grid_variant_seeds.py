"""`finmath grid --variant-seeds`: each run as published and once per fresh-variant seed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from finmath_tasks.cli.declare import declarations
from finmath_tasks.cli.grid import GridOptions, check_options, grid_runs
from finmath_tasks.cli.main import main


def options(benchmark: str, seeds: list[int]) -> GridOptions:
    return GridOptions(
        benchmark=benchmark,
        models=["mockllm/model"],
        log_dir="logs",
        only={"solver": "rag_cot", "retrieval": "bm25"} if benchmark == "finqa" else {},
        variant_seeds=seeds,
    )


def test_each_run_is_repeated_for_every_seed_after_the_published_one() -> None:
    declaration = declarations()["finqa"]
    runs = grid_runs(declaration, options("finqa", [1, 2, 3]))
    assert [(r.get("variant"), r.get("variant_seed")) for r in runs] == [
        (None, None),
        ("fresh", 1),
        ("fresh", 2),
        ("fresh", 3),
    ]
    assert all(r["solver"] == "rag_cot" and r["retrieval"] == "bm25" for r in runs)
    assert len(grid_runs(declaration, options("finqa", []))) == 1


def test_tasks_without_variants_and_seed_0_are_refused() -> None:
    found = declarations()
    assert "no fresh variants" in str(check_options(found["sara"], options("sara", [1])))
    assert "1 or more" in str(check_options(found["finqa"], options("finqa", [0, 1])))
    assert check_options(found["finqa"], options("finqa", [1])) is None


@pytest.mark.slow
@pytest.mark.realdata
def test_the_dry_run_lists_the_variant_runs(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["grid", "finqa", "--model", "mockllm/model", "--variant-seeds", "1,2", "--dry-run"]
    argv += ["--only", "solver=rag_cot", "--only", "retrieval=bm25", "-T", f"data_dir={data_dir}"]
    argv += ["--log-dir", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "-T variant=fresh -T variant_seed=1" in out and "variant_seed=2" in out
    assert main([*argv[:5], "1,x", *argv[6:]]) != 0


@pytest.mark.slow
@pytest.mark.realdata
def test_the_dry_run_makes_each_seeds_variants_once(
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Three runs per seed (retrieval none, bm25, gold) share one instantiation per seed: the
    first run's, read back from the fresh-variant cache; a second dry run makes none."""
    from finmath_tasks.tasks.finqa import task as finqa_task

    made: list[int] = []
    real = finqa_task.instantiate

    def counting(samples: list[Any], seed: int) -> Any:
        made.append(seed)
        return real(samples, seed)

    monkeypatch.setattr(finqa_task, "instantiate", counting)
    monkeypatch.setenv("FINMATH_VARIANT_CACHE", str(tmp_path / "variants"))
    argv = ["grid", "finqa", "--model", "mockllm/model", "--variant-seeds", "1,2", "--dry-run"]
    argv += ["--only", "solver=rag_cot", "-T", f"data_dir={data_dir}"]
    argv += ["--log-dir", str(tmp_path / "logs")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    fresh_runs = [line for line in out.splitlines() if "-T variant=fresh" in line]
    assert len(fresh_runs) == 6, out
    assert made == [1, 2]
    assert len(list((tmp_path / "variants" / "finqa").glob("test-seed*.json.gz"))) == 2
    assert main(argv) == 0
    assert made == [1, 2]
