"""``finmath grid``: the declared grids as Inspect eval sets, resumable, with pass-through options."""

from __future__ import annotations

import sys
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import pytest
import tomllib
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from finmath_tasks.cli import declare
from finmath_tasks.cli.declare import DeclarationError, Grid, declarations, load_declaration
from finmath_tasks.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CALLS: dict[str, Any] = {"n": 0, "fail_after": None}


@modelapi(name="finmath_counting")
class CountingModel(ModelAPI):
    """Answers every prompt, counts its calls, and fails after ``fail_after`` calls if set."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        CALLS["n"] += 1
        if CALLS["fail_after"] is not None and CALLS["n"] > CALLS["fail_after"]:
            raise RuntimeError("scripted interruption of the grid")
        return ModelOutput.from_content(self.model_name, "Therefore, the answer is 14685.0.")


def test_both_benchmarks_declare_their_grid() -> None:
    found = declarations()
    assert {"knowledgefmath", "sara"} <= set(found)
    kfm = found["knowledgefmath"].grid.arg_sets()
    assert len(kfm) == 14 and kfm[0] == {"solver": "cot", "knowledge": "none"}
    assert {a["solver"] for a in kfm} == {"cot", "pot"}
    sara = found["sara"].grid.arg_sets()
    assert len(sara) == 15 and {"retrieval": "references", "prompting": "cot"} in sara
    assert found["sara"].report.interval.level == 0.9
    assert found["knowledgefmath"].report.interval.level == 0.95


def _allowed(annotation: Any) -> set[Any] | None:
    """The values a Literal-typed parameter accepts (None: any value of its type)."""
    if get_origin(annotation) is Literal:
        return set(get_args(annotation))
    if get_origin(annotation) in (Union, UnionType):
        parts = [_allowed(a) for a in get_args(annotation)]
        if all(p is not None for p in parts):
            return set().union(*(p for p in parts if p is not None))
    return None


def test_declared_tables_and_plots_name_real_arguments() -> None:
    import inspect as pyinspect

    for declaration in declarations().values():
        parameters = set(pyinspect.signature(declaration.grid.task).parameters)
        hints = get_type_hints(declaration.grid.task)
        for name, grid in declaration.grids.items():
            assert grid.task_name == declaration.task_name
            assert set(grid.axes) <= parameters
            for args in grid.arg_sets():  # every run: real parameters, accepted values
                assert set(args) <= parameters, (declaration.benchmark, name, args)
                for key, value in args.items():
                    allowed = _allowed(hints.get(key))
                    assert allowed is None or value in allowed, (declaration.benchmark, key)
        for table in declaration.report.tables:
            columns = [] if table.columns == "groups" else list(table.columns)
            assert {*columns, *table.rows, *table.where} <= parameters, table.title
        for plot in declaration.report.plots:
            args = [a for a in (plot.y, plot.x if plot.kind != "scatter" else "") if a]
            assert {*args, *plot.where} <= parameters, plot.name


def test_the_new_grids_and_their_run_counts() -> None:
    found = declarations()
    finqa = found["finqa"].grid.arg_sets()
    assert len(finqa) == 11
    assert finqa[:3] == [
        {"split": "test", "solver": "rag_cot", "retrieval": r} for r in ("none", "bm25", "gold")
    ]
    assert [a["solver"] for a in finqa[3:]] == [
        "cot", "pot", "critic", "icritic", "calculator", "critic_calculator",
        "icritic_calculator", "critic_oracle",
    ]  # fmt: skip
    assert {"solver": "oracle"} not in finqa
    assert all(a["split"] == "dev" for a in finqa[3:])  # the agents paper's split
    tatqa = found["tatqa"].grid.arg_sets()
    assert len(tatqa) == 8
    assert all(a["subset"] == "arithmetic" and a["split"] == "dev" for a in tatqa)
    mathhay = found["mathhay"]
    assert list(mathhay.grids) == ["main", "o1", "depth"]
    assert mathhay.grid is mathhay.grids["main"]
    assert len(mathhay.grids["main"].arg_sets()) == 9  # Table 3: 3 sets x 3 lengths
    assert [a.get("reserve") for a in mathhay.grids["o1"].arg_sets()] == [None, None, 20000] * 3
    depth = mathhay.grids["depth"].arg_sets()  # Figure 4: sssd/mssd x p1..p9 x 3 lengths
    assert len(depth) == 54 and {a["placement"] for a in depth} == {f"p{n}" for n in range(1, 10)}
    assert mathhay.order("length") == [32000, 64000, 128000]
    # a single GRID is the grid "main"
    assert list(found["sara"].grids) == ["main"]


def _fake_benchmark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> None:
    package = tmp_path / "fake_finmath_tasks" / "bench"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "grid.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(declare, "TASKS_PACKAGE", "fake_finmath_tasks")
    for name in [m for m in sys.modules if m.startswith("fake_finmath_tasks")]:
        monkeypatch.delitem(sys.modules, name)


GRID_HEADER = (
    "from finmath_tasks.cli.declare import Grid\n"
    "from finmath_tasks.tasks.sara import sara\n"
    "from finmath_tasks.tasks.finqa import finqa\n"
)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "GRID = Grid(task=sara)\nGRIDS = {'a': Grid(task=sara)}\n",
            "declare GRID or GRIDS, not both",
        ),
        ("GRIDS = {}\n", "GRIDS must be a non-empty dict"),
        ("GRIDS = {'a': 3}\n", "GRIDS must be a non-empty dict"),
        (
            "GRIDS = {'a': Grid(task=sara), 'b': Grid(task=finqa)}\n",
            "every grid of GRIDS must run one task",
        ),
    ],
)
def test_malformed_named_grids_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, message: str
) -> None:
    _fake_benchmark(tmp_path, monkeypatch, GRID_HEADER + body)
    with pytest.raises(DeclarationError, match=message):
        load_declaration("bench")


def test_named_grids_load_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = (
        "GRIDS = {'small': Grid(task=sara, axes={'prompting': ['cot']}),\n"
        "         'big': Grid(task=sara, axes={'prompting': ['zero_shot', 'cot']},\n"
        "                     runs=[{'prompting': 'few_shot'}])}\n"
    )
    _fake_benchmark(tmp_path, monkeypatch, GRID_HEADER + body)
    found = load_declaration("bench")
    assert found is not None
    assert list(found.grids) == ["small", "big"] and found.grid is found.grids["small"]
    assert found.named(None) is found.grid and len(found.named("big").arg_sets()) == 3
    assert found.order("prompting") == ["cot", "zero_shot", "few_shot"]


@pytest.mark.slow
@pytest.mark.realdata
def test_grid_option_selects_a_named_grid(
    capsys: pytest.CaptureFixture[str], data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a dry run builds each run's task as the real grid does: it reads the data
    monkeypatch.setenv("FINMATH_DATA_DIR", str(data_dir))
    base = ["grid", "mathhay", "--model", "mockllm/a", "--dry-run"]
    assert main(base) == 0
    out = capsys.readouterr().out
    assert "finmath_tasks/mathhay: 9 runs x 1 model(s) = 9 tasks -> logs/mathhay" in out
    assert main([*base, "--grid", "depth", "--only", "length=32000"]) == 0
    out = capsys.readouterr().out
    assert "finmath_tasks/mathhay (grid depth): 18 runs x 1 model(s) = 18 tasks" in out
    assert "-> logs/mathhay-depth" in out  # its own log directory by default
    assert "-T task_type=mssd -T placement=p9 -T length=32000" in out
    assert main([*base, "--grid", "main", "--log-dir", "x"]) == 0
    assert "9 runs" in capsys.readouterr().out
    assert main([*base, "--grid", "deep"]) == 2
    err = capsys.readouterr().err
    assert "--grid deep: mathhay has no such grid (grids: main, o1, depth)" in err
    assert main([*base, "--grid", "depth", "--only", "placement=middle"]) == 2
    assert "no run of the mathhay depth grid has placement=middle" in capsys.readouterr().err


def test_list_shows_every_grid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "finqa (finmath_tasks/finqa): 11 runs" in out
    assert "tatqa (finmath_tasks/tatqa): 8 runs" in out
    assert "mathhay --grid main (default) (finmath_tasks/mathhay): 9 runs" in out
    assert "mathhay --grid o1 (finmath_tasks/mathhay): 9 runs" in out
    assert "mathhay --grid depth (finmath_tasks/mathhay): 54 runs" in out
    assert "sara (finmath_tasks/sara): 15 runs" in out


def test_a_folder_without_grid_py_has_no_declaration() -> None:
    assert load_declaration("no_such_benchmark") is None


def test_grid_products_and_explicit_runs() -> None:
    from finmath_tasks.tasks.sara import sara

    grid = Grid(task=sara, axes={"a": [1, 2], "b": ["x"]}, runs=[{"a": 3}, {"a": 1, "b": "x"}])
    assert grid.arg_sets() == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}, {"a": 3}]
    assert Grid(task=sara).arg_sets() == [{}]
    assert grid.task_name == "finmath_tasks/sara"


def test_console_script_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    target = project["scripts"]["finmath"]
    module, function = target.split(":")
    assert (module, function) == ("finmath_tasks.cli.main", "main")
    assert "matplotlib" in " ".join(project["optional-dependencies"]["report"])
    assert ".[dev,dense,report,lm-eval,openai]" in (ROOT / ".ci" / "run").read_text()


def test_dry_run_lists_the_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "grid", "knowledgefmath", "--model", "mockllm/a", "--model", "mockllm/b",
            "--only", "knowledge=none,oracle", "-T", "split=demo", "--limit", "3",
            "-T", "extractor=model",
            "--model-role", "grader=mockllm/judge", "--log-dir", "somewhere", "--dry-run",
        ]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "finmath_tasks/knowledgefmath: 4 runs x 2 model(s) = 8 tasks -> somewhere" in out
    assert "-T solver=pot -T knowledge=oracle -T split=demo" in out
    assert "model roles: grader=mockllm/judge" in out
    assert "limit: 3 samples per task" in out
    assert not Path("somewhere").exists()


def test_unknown_benchmark_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grid", "nonesuch", "--model", "mockllm/a"]) == 2
    err = capsys.readouterr().err
    assert "no grid is declared for 'nonesuch'; benchmarks with one:" in err
    assert "knowledgefmath" in err


def test_pass_through_options_reach_the_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = tmp_path / "logs"
    code = main(
        [
            "grid", "knowledgefmath", "--model", "mockllm/model",
            "--only", "solver=cot", "--only", "knowledge=none,oracle",
            "-T", "split=demo", "-T", "solver=oracle", "-T", "extractor=model",
            "--model-role", "grader=mockllm/judge", "--limit", "2",
            "--log-dir", str(log_dir), "--display", "none", "--max-tokens", "77",
        ]
    )  # fmt: skip
    assert code == 0
    assert f"2 of 2 tasks succeeded; logs in {log_dir}" in capsys.readouterr().out
    logs = [read_eval_log(i, header_only=True) for i in list_eval_logs(str(log_dir))]
    assert len(logs) == 2
    for log in logs:
        assert log.status == "success"
        assert log.eval.task_args["split"] == "demo" and log.eval.task_args["solver"] == "oracle"
        assert log.results is not None and log.results.total_samples == 2
        assert log.eval.model_roles is not None and "grader" in log.eval.model_roles
        assert log.eval.model_generate_config.max_tokens == 77
    assert {log.eval.task_args["knowledge"] for log in logs} == {"none", "oracle"}


@pytest.mark.slow
def test_interrupted_grid_resumes_without_repeating_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = tmp_path / "logs"
    argv = [
        "grid", "knowledgefmath", "--model", "finmath_counting/model",
        "--only", "solver=cot", "--only", "knowledge=none", "-T", "split=demo",
        "--log-dir", str(log_dir), "--display", "none", "--max-samples", "1",
    ]  # fmt: skip
    CALLS.update(n=0, fail_after=6)
    assert main([*argv, "--retry-attempts", "0"]) == 1  # interrupted
    [info] = list_eval_logs(str(log_dir))
    first = read_eval_log(info)
    assert first.status == "error"
    done = [s for s in first.samples or [] if s.error is None and s.scores]
    assert 0 < len(done) < 15

    CALLS.update(n=0, fail_after=None)
    assert main(argv) == 0
    assert CALLS["n"] == 15 - len(done)  # only the unfinished samples reach the model
    finals = [read_eval_log(i) for i in list_eval_logs(str(log_dir))]
    [final] = [log for log in finals if log.status == "success"]
    assert final.results is not None and final.results.completed_samples == 15
    assert {str(s.id) for s in final.samples or []} == {f"demo-{i}" for i in range(15)}

    CALLS.update(n=0)
    assert main(argv) == 0  # a finished grid runs nothing
    assert CALLS["n"] == 0

    # the report uses the finished log; a failed attempt left beside it is named as superseded
    errored = [log for log in finals if log.status == "error"]
    assert main(["report", str(log_dir), "--out", str(tmp_path / "report"), "--no-plots"]) == 0
    err = capsys.readouterr().err
    for log in errored:
        assert f"{Path(log.location).name}: status error, skipped" in err
        assert "superseded by" in err
    md = (tmp_path / "report" / "report.md").read_text()
    assert f"| {Path(final.location).name} |" in md


def test_misspelled_arguments_and_empty_selections_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["grid", "knowledgefmath", "--model", "mockllm/a", "--dry-run"]
    assert main([*base, "-T", "splitt=demo"]) == 2
    err = capsys.readouterr().err
    assert "-T splitt: not a parameter of finmath_tasks/knowledgefmath" in err
    assert main([*base, "--only", "solvr=cot"]) == 2
    assert "--only solvr: not a parameter" in capsys.readouterr().err
    assert main([*base, "--only", "solver=tot"]) == 2
    assert "no run of the knowledgefmath grid has solver=tot" in capsys.readouterr().err
    assert main([*base, "-T", "split"]) == 2
    assert "-T 'split' is not of the form NAME=VALUE" in capsys.readouterr().err
    # the former task argument names what replaced it
    assert main([*base, "-T", "sandbox=bwrap"]) == 2
    err = capsys.readouterr().err
    assert "-T sandbox: not a task parameter any more" in err
    assert "--sandbox finmath_docker, finmath_bwrap" in err


def test_compose_path_is_the_file_for_inspects_docker_sandbox(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from finmath_tasks.sandbox.resolve import COMPOSE_FILE

    assert main(["sandbox", "compose-path"]) == 0
    printed = Path(capsys.readouterr().out.strip())
    # absolute: Inspect reads a relative --sandbox docker:<file> beside the task's module
    assert printed.is_absolute() and printed.is_file() and printed == COMPOSE_FILE
    assert "services:" in printed.read_text(encoding="utf-8")


def test_a_plan_records_the_named_grid(tmp_path: Path) -> None:
    import json
    from dataclasses import asdict

    from finmath_tasks.cli.grid import GridOptions, grid_runs, read_plan

    options = GridOptions(
        benchmark="mathhay",
        models=["mockllm/a"],
        log_dir="x",
        grid="depth",
        only={"length": 64000},
        sandbox="finmath_bwrap",
    )
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"finmath_plan": 1, "options": asdict(options), "manifest": {"tasks": []}})
    )
    again = GridOptions(**read_plan(str(plan))["options"])  # what a worker rebuilds
    assert again == options
    runs = grid_runs(declarations()["mathhay"], again)
    assert [r["placement"] for r in runs] == [f"p{n}" for n in range(1, 10)] * 2
    assert {r["length"] for r in runs} == {64000}
