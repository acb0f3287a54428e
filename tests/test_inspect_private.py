"""The seam to Inspect's private modules (``finmath_tasks._inspect_private``).

One test per private name: when an Inspect release moves or changes it, the test
that fails says which feature of ours broke. One scan: no module of the project but
the seam imports a private Inspect name. And the demo, run with private names hidden
from our modules (a stand-in for Inspect's module that lacks them): it still runs
with any one of them gone, since only a name on the evaluation's path (each with a
fallback) is loaded when a task loads.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
from pathlib import Path

import pytest

from finmath_tasks import _inspect_private as private

REPO = Path(__file__).resolve().parents[1]
SEAM = REPO / "src" / "finmath_tasks" / "_inspect_private.py"
SCANNED = ("src", "tests", "benchmarks", "scripts")

_PRIVATE_MODULE = re.compile(r"^inspect_ai(\.\w+)*\._\w*")


def _broke(name: str, feature: str) -> str:
    return (
        f"Inspect's private {name} moved or changed (inspect-ai "
        f"{importlib.metadata.version('inspect-ai')}): {feature}. "
        "Fix finmath_tasks/_inspect_private.py."
    )


def private_imports(path: Path) -> list[str]:
    """``file:line: what`` for each private Inspect name ``path`` imports (statically or
    through ``importlib.import_module``/``__import__`` with a literal)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
            if node.module.split(".")[0] == "inspect_ai":
                modules += [f"{node.module}.{a.name}" for a in node.names]
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            modules = [node.args[0].value]
        for module in modules:
            if _PRIVATE_MODULE.match(module):
                where = path.relative_to(REPO) if path.is_relative_to(REPO) else path
                found.append(f"{where}:{node.lineno}: {module}")
    return found


def test_no_module_but_the_seam_imports_a_private_inspect_name() -> None:
    offenders = [
        hit
        for folder in SCANNED
        if (REPO / folder).is_dir()
        for path in sorted((REPO / folder).rglob("*.py"))
        if path != SEAM
        for hit in private_imports(path)
    ]
    assert not offenders, (
        "import these through finmath_tasks/_inspect_private.py (with a test there):\n"
        + "\n".join(offenders)
    )


@pytest.mark.parametrize(
    "source",
    [
        "from inspect_ai._util.error import PrerequisiteError",
        "import inspect_ai._util.file",
        "from inspect_ai.model._model import model_roles",
        "from inspect_ai.util import _private_thing",
        "importlib.import_module('inspect_ai.util._sandbox.local')",
    ],
)
def test_the_scan_sees_each_kind_of_private_import(source: str, tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text(source + "\n", encoding="utf-8")
    assert private_imports(path), source


def test_the_scan_passes_public_imports() -> None:
    assert private_imports(REPO / "src" / "finmath_tasks" / "cli" / "declare.py") == []
    assert private_imports(SEAM)  # the seam itself is what the scan would flag


# --------------------------------------------------------------------------- #
# one test per private name
# --------------------------------------------------------------------------- #


def test_prerequisite_error() -> None:
    from finmath_tasks.errors import UsageError

    feature = "`inspect eval` would print a traceback before our -T/data errors (UsageError)"
    assert private.PrerequisiteError.__module__.startswith("inspect_ai."), _broke(
        "PrerequisiteError", feature
    )
    error = UsageError("-T split='x' is not one of dev, test")
    assert isinstance(error, private.PrerequisiteError), _broke("PrerequisiteError", feature)
    assert error.message == "-T split='x' is not one of dev, test", _broke(
        "PrerequisiteError", feature
    )


def test_parse_cli_args() -> None:
    feature = "`finmath grid -T k=v` would no longer parse values as `inspect eval -T` does"
    parsed = private.parse_cli_args(["n=3", "s=dev", "xs=[1, 2]", "flag=true", "r=0.5"])
    assert parsed == {"n": 3, "s": "dev", "xs": [1, 2], "flag": True, "r": 0.5}, _broke(
        "parse_cli_args", feature
    )


def test_file_and_filesystem(tmp_path: Path) -> None:
    feature = "`finmath grid --plan/--worker` cannot read or write plans and log directories"
    path = str(tmp_path / "plan.json")
    with private.file(path, "w") as f:
        f.write('{"ok": 1}')
    with private.file(path, "r") as f:
        assert f.read() == '{"ok": 1}', _broke("file", feature)
    assert private.filesystem(str(tmp_path)).exists(path), _broke("filesystem", feature)
    assert not private.filesystem(str(tmp_path)).exists(str(tmp_path / "nope")), _broke(
        "filesystem", feature
    )


def test_eval_set_runner_protocol() -> None:
    feature = "`finmath grid --plan/--worker` (Inspect's eval-set capture and selection)"
    assert private.INSPECT_EVAL_SET_CAPTURE == "INSPECT_EVAL_SET_CAPTURE", _broke(
        "INSPECT_EVAL_SET_CAPTURE", feature
    )
    assert private.INSPECT_EVAL_SET_SELECTION == "INSPECT_EVAL_SET_SELECTION", _broke(
        "INSPECT_EVAL_SET_SELECTION", feature
    )
    assert isinstance(private.EVAL_SET_SELECTION_VERSION, int), _broke(
        "EVAL_SET_SELECTION_VERSION", feature
    )
    assert private.EVAL_SET_SELECTION_VERSION >= 1, _broke("EVAL_SET_SELECTION_VERSION", feature)
    # a worker matches the logs already in the directory to plan tasks by this hash
    one = private.task_args_hash({"split": "dev", "solver": "pot"})
    assert one == private.task_args_hash({"split": "dev", "solver": "pot"}), _broke(
        "task_args_hash", feature
    )
    assert one != private.task_args_hash({"split": "test", "solver": "pot"}), _broke(
        "task_args_hash", feature
    )


def test_init_active_model() -> None:
    """Breaks: `finmath grid --dry-run`'s slow prompt rendering (and the tests of the
    cheap counts against it): solvers run outside an eval cannot find their model."""
    from inspect_ai.model import GenerateConfig, get_model

    from finmath_tasks._inspect_private import init_active_model

    model = get_model("mockllm/model")
    init_active_model(model, GenerateConfig())
    assert get_model() is model


def test_task_scores() -> None:
    """Breaks: the tests that render Inspect's end-of-run summary at 100 columns and check
    that no metric label is cut (tests/tasks/test_summary_names.py)."""
    from inspect_ai.log import EvalMetric, EvalScore
    from rich.console import Console

    from finmath_tasks._inspect_private import task_scores

    score = EvalScore(
        name="official",
        scorer="official",
        metrics={"accuracy": EvalMetric(name="accuracy", value=0.5)},
    )
    console = Console(width=100, record=True, color_system=None, force_terminal=False)
    for row in task_scores([score]):
        console.print(row)
    text = console.export_text()
    assert "official" in text and "accuracy" in text and "0.500" in text


def test_local_sandbox_environment() -> None:
    from finmath_tasks.sandbox.client import is_unisolated

    feature = "PoT would run programs in Inspect's `local` sandbox without its warning"
    assert private.registry_find_sandboxenv("local") is private.LocalSandboxEnvironment, _broke(
        "LocalSandboxEnvironment", feature
    )
    local = private.LocalSandboxEnvironment()
    try:
        assert is_unisolated(local), _broke("LocalSandboxEnvironment", feature)
    finally:
        local.directory.cleanup()
    assert not is_unisolated(object())


def test_registry_find_sandboxenv() -> None:
    from finmath_tasks.sandbox.bwrap import FinmathBwrapSandboxEnvironment

    feature = "the sandbox tests cannot check that `--sandbox finmath_bwrap` resolves"
    assert private.registry_find_sandboxenv("finmath_bwrap") is FinmathBwrapSandboxEnvironment, (
        _broke("registry_find_sandboxenv", feature)
    )


def test_scorer_metrics() -> None:
    from inspect_ai.scorer import Score, accuracy, scorer, stderr

    feature = "the lm-eval bridge cannot tell which Inspect metric aggregates a score"

    @scorer(metrics=[accuracy(), stderr()])
    def probe() -> object:
        async def score(state: object, target: object) -> Score:
            return Score(value=1)

        return score

    metrics = private.scorer_metrics(probe())  # type: ignore[arg-type]
    assert isinstance(metrics, list), _broke("scorer_metrics", feature)
    assert [type(m).__name__ for m in metrics][:1] and callable(metrics[0]), _broke(
        "scorer_metrics", feature
    )


def test_registry_add_and_lookup() -> None:
    from inspect_ai.scorer import Score, Scorer, scorer
    from inspect_ai.util import registry_create, registry_info

    feature = "`inspect score LOG` cannot rebuild our scorers by the bare names logs record"
    assert callable(private.registry_lookup("scorer", "inspect_ai/exact")), _broke(
        "registry_lookup", feature
    )

    @scorer(metrics=[], name="finmath_probe_key")
    def probe(task: str | None = None) -> Scorer:
        async def score(state: object, target: object) -> Score:
            return Score(value=1, explanation=str(task))

        return score

    def create(task: str | None = None) -> Scorer:
        return probe(task=task)

    private.register_scorer_name(
        create, "finmath_probe_key", "finmath_tasks/finmath_probe_key", {"metrics": []}
    )
    # the bare name, as a log records it, and the qualified one both build ours
    for name in ("finmath_probe_key", "finmath_tasks/finmath_probe_key"):
        built = registry_create("scorer", name, task="demo")
        assert registry_info(built).name.endswith("finmath_probe_key"), _broke(
            "registry_add", feature
        )
    # our key `exact` (TAT-QA's) is also Inspect's own scorer: without `task` the bare
    # name builds Inspect's (whose name its registry gives), with it ours
    import finmath_tasks._registry  # noqa: F401
    from finmath_tasks.scorers.keyed import tasks_scoring

    inspect_exact = registry_create("scorer", "exact")
    assert inspect_exact.__module__.startswith("inspect_ai."), _broke("registry_lookup", feature)
    assert "tatqa" in tasks_scoring("exact")
    ours = registry_create("scorer", "exact", task="tatqa", profile="exact")
    assert ours.__module__.startswith("finmath_tasks."), _broke("registry_add", feature)


def test_eval_log_sample_source(tmp_path: Path) -> None:
    from inspect_ai import Task, eval, eval_retry, task
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import Generate, Solver, TaskState, solver

    feature = (
        "`inspect eval-retry` of a fresh variant keeps the log's samples without comparing "
        "them with the variant rebuilt (finmath_tasks.variant_resume)"
    )
    assert callable(private.eval_log_sample_source), _broke("eval_log_sample_source", feature)
    failing = {"b"}

    @solver
    def fails_once() -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            if state.sample_id in failing:
                failing.discard(str(state.sample_id))
                raise RuntimeError("fails once")
            return state

        return solve

    @task
    def seam_probe() -> Task:
        samples = [Sample(id="a", input="x", target="1"), Sample(id="b", input="y", target="2")]
        return Task(dataset=samples, solver=fails_once())

    [log] = eval(seam_probe(), model="mockllm/model", display="none", log_dir=str(tmp_path))
    assert log.status == "error"
    seen: list[tuple[object, object, object]] = []

    def check(prior: object, info: object, dataset: object) -> None:
        seen.append((prior, info, dataset))

    assert private.check_prior_samples(check), _broke("eval_log_sample_source", feature)
    try:
        [retried] = eval_retry(log, display="none", log_dir=str(tmp_path / "retry"))
    finally:
        private._prior_sample_checks.remove(check)
    # the check saw the log resumed from, with its samples, and the whole rebuilt dataset,
    # and the resume went on as Inspect's own: the clean sample kept, the other rerun
    [(prior, _, dataset)] = seen
    assert getattr(prior, "samples", None) is not None, _broke("eval_log_sample_source", feature)
    assert [s.id for s in dataset] == ["a", "b"], _broke("eval_log_sample_source", feature)  # type: ignore[attr-defined]
    assert retried.status == "success" and retried.samples is not None
    kept = {s.id: s.uuid for s in log.samples or []}
    assert [s.uuid == kept[s.id] for s in retried.samples] == [True, False]


def test_get_deserializing_context() -> None:
    from inspect_ai.model import GenerateConfig

    feature = "`finmath report` reads .eval logs through Inspect's slower readers only"
    context = private.get_deserializing_context()
    assert isinstance(context, dict), _broke("get_deserializing_context", feature)
    # in it a field a later Inspect added to the generation config is dropped, as Inspect
    # reads a log back; without it the field is refused
    config = GenerateConfig.model_validate({"temperature": 0.5, "later_field": 1}, context=context)
    assert config.temperature == 0.5, _broke("get_deserializing_context", feature)
    with pytest.raises(ValueError):
        GenerateConfig.model_validate({"temperature": 0.5, "later_field": 1})


def test_eval_set_command_and_eval_set_call() -> None:
    import click
    from inspect_ai import eval_set

    feature = "`finmath grid` cannot take Inspect's eval-set options (--batch, --reasoning-effort)"
    command = private.eval_set_command
    assert isinstance(command, click.Command), _broke("eval_set_command", feature)
    ctx = command.make_context("probe", ["--reasoning-effort", "high", "--batch", "-T", "a=1"])
    with ctx:
        kwargs = private.eval_set_call(lambda: command.invoke(ctx))
    # Inspect's own conversion of the options into eval_set's arguments, eval_set not run
    assert kwargs["reasoning_effort"] == "high", _broke("eval_set", feature)
    assert kwargs["batch"] and kwargs["task_args"] == {"a": 1}, _broke("eval_set", feature)
    restored = command.callback.__globals__["eval_set"]  # type: ignore[union-attr]
    assert restored is eval_set, _broke("eval_set", feature)


def test_set_sample_sandboxes() -> None:
    import asyncio

    from inspect_ai.util import sandbox

    feature = "the lm-eval bridge's program-of-thought tasks find no sandbox"

    async def probe() -> object:
        marker = object()
        private.set_sample_sandboxes({"default": marker})
        return marker, sandbox()

    marker, found = asyncio.run(probe())
    assert found is marker, _broke("sandbox_environments_context_var", feature)


# --------------------------------------------------------------------------- #
# a private name gone from Inspect: the evaluation still runs
# --------------------------------------------------------------------------- #

# Loaded at interpreter start-up (PYTHONPATH): replaces each named Inspect module with a
# stand-in that answers every attribute but the hidden ones, and those only to
# finmath_tasks' own modules (Inspect's modules keep theirs, as in a release where only
# the name we import moved). FINMATH_HIDE_INSPECT_PRIVATE="module:name,module:name".
HIDING_SITECUSTOMIZE = """
import importlib, os, sys, types

_hidden = {}
for _item in filter(None, os.environ.get("FINMATH_HIDE_INSPECT_PRIVATE", "").split(",")):
    _module, _name = _item.split(":")
    _hidden.setdefault(_module, set()).add(_name)


class _Hiding(types.ModuleType):
    def __getattribute__(self, attr):
        real, names = object.__getattribute__(self, "_finmath_stub")
        if attr in names:
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if caller.split(".")[0] == "finmath_tasks":
                raise AttributeError(f"module {real.__name__!r} has no attribute {attr!r}")
        return getattr(real, attr)


for _module, _names in _hidden.items():
    _stub = _Hiding(_module)
    object.__setattr__(_stub, "_finmath_stub", (importlib.import_module(_module), _names))
    sys.modules[_module] = _stub
"""

ON_EVAL_PATH = set(private.FALLBACKS)
"""The names the evaluation itself uses; each has a fallback."""


def _hiding_env(tmp_path: Path, names: list[str]) -> dict[str, str]:
    import os

    stub_dir = tmp_path / "stub"
    stub_dir.mkdir(exist_ok=True)
    (stub_dir / "sitecustomize.py").write_text(HIDING_SITECUSTOMIZE, encoding="utf-8")
    hide = ",".join(f"{private.NAMES[name].module}:{name}" for name in names)
    path = os.pathsep.join(filter(None, [str(stub_dir), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "FINMATH_HIDE_INSPECT_PRIVATE": hide}


def _demo_with_hidden(tmp_path: Path, names: list[str]) -> None:
    import subprocess

    from inspect_ai.log import list_eval_logs, read_eval_log

    logs = tmp_path / "logs"
    cmd = [
        "inspect", "eval", "finmath_tasks/knowledgefmath", "-T", "split=demo",
        "-T", "solver=oracle", "--model", "mockllm/model", "--limit", "3",
        "--log-dir", str(logs), "--display", "none",
    ]  # fmt: skip
    env = _hiding_env(tmp_path, names)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [info] = list_eval_logs(str(logs))
    log = read_eval_log(info)
    assert log.status == "success", (names, proc.stderr[-2000:])
    assert log.results is not None
    assert {s.name: s.metrics["accuracy"].value for s in log.results.scores} == {
        "financemath": 1.0,
        "knowledgefmath2023": 1.0,
        "tolerant": 1.0,
    }


@pytest.mark.slow
def test_the_stub_hides_a_name_from_us_only(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import inspect_ai._display.core.results as r; assert callable(r.task_scores)\n"
        "from finmath_tasks._inspect_private import task_scores\n"
    )
    env = _hiding_env(tmp_path, ["task_scores"])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode != 0
    message = proc.stderr.strip().splitlines()[-1]
    assert message.startswith("finmath_tasks._inspect_private.InspectPrivateNameMissing: ")
    version = importlib.metadata.version("inspect-ai")
    assert "task_scores is not in inspect_ai._display.core.results of the installed " in message
    assert f"inspect-ai {version}" in message


@pytest.mark.slow
def test_the_demo_runs_without_any_name_off_the_eval_path(tmp_path: Path) -> None:
    _demo_with_hidden(tmp_path, sorted(set(private.NAMES) - ON_EVAL_PATH))


@pytest.mark.slow
def test_without_prerequisite_error_our_errors_keep_their_message(tmp_path: Path) -> None:
    import subprocess

    env = _hiding_env(tmp_path, ["PrerequisiteError"])
    cmd = [
        "inspect", "eval", "finmath_tasks/knowledgefmath", "-T", "split=nope",
        "--model", "mockllm/model", "--log-dir", str(tmp_path / "logs"), "--display", "none",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    # the fallback base: Inspect prints a traceback, then our message whole
    assert "Traceback" in proc.stderr, proc.stderr[-2000:]
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .endswith("knowledgefmath: -T split='nope' is not one of validation, test, demo")
    ), proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(private.NAMES))
def test_the_demo_runs_with_each_name_removed(name: str, tmp_path: Path) -> None:
    _demo_with_hidden(tmp_path, [name])
