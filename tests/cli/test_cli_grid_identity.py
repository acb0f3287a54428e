"""``finmath grid`` takes a run as done only when a successful log in its directory has the
identity the run will have: a log of the same task arguments on other data, or at another
generation setting, is not that run."""

from __future__ import annotations

from pathlib import Path

from inspect_ai.log import list_eval_logs, read_eval_log, write_eval_log

from finmath_tasks.cli.declare import declarations
from finmath_tasks.cli.grid import (
    GridOptions,
    build,
    outcome,
    run_worker,
    selection_for,
    write_plan,
)
from finmath_tasks.cli.resume import is_this_run

OTHER_DATA = "fedcba9876543210"


def test_a_log_on_other_data_or_settings_is_not_the_planned_run(tmp_path: Path) -> None:
    declaration = declarations()["knowledgefmath"]
    options = GridOptions(
        benchmark="knowledgefmath",
        models=["mockllm/m0"],
        log_dir=str(tmp_path / "logs"),
        task_args={"split": "demo", "solver": "oracle"},
        only={"solver": "cot", "knowledge": "none"},
        limit=2,
    )
    plan, _ = write_plan(declaration, options, str(tmp_path / "plan.json"))
    ok, lines = run_worker(declaration, plan, 0, 1, display="none")
    assert ok, lines
    [info] = list_eval_logs(options.log_dir)
    log = read_eval_log(info)
    assert log.status == "success"

    built = build(declaration, options)
    [(_, model, planned)] = built.planned
    assert model == "mockllm/m0" and is_this_run(planned, log)
    selection, lines = selection_for(plan, 0, 1, options.log_dir, [(model, planned)])
    assert selection is None and any("already complete" in line for line in lines)
    assert outcome(declaration, options, built).status == 0

    # at another temperature the planned run is another run
    warmer = GridOptions(**{**vars(options), "inspect_args": ["--temperature", "0.3"]})
    [(_, _, other)] = build(declaration, warmer).planned
    assert not is_this_run(other, log)

    # the same log, rewritten as if it had read other data: no longer this run
    metadata = dict(log.eval.metadata or {})
    metadata["data"] = {**metadata["data"], "fingerprint": OTHER_DATA}
    log.eval.metadata = metadata
    write_eval_log(log, info.name)
    assert not is_this_run(planned, read_eval_log(info.name, header_only=True))
    selection, lines = selection_for(plan, 0, 1, options.log_dir, [(model, planned)])
    assert selection is not None and len(selection["tasks"]) == 1
    assert not any("already complete" in line for line in lines)
    assert outcome(declaration, options, built).status != 0
