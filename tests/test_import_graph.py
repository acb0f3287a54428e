"""No import cycles between the package's modules (function-level imports count too:
``cli/report.py`` imports ``cli/plots.py`` lazily, so plots must not import report)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import finmath_tasks

PACKAGE = Path(finmath_tasks.__file__).parent
ROOT = "finmath_tasks"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports (packages' ``__init__`` excluded as
    targets when the import names a submodule)."""
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        targets: set[str] = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            found: list[str] = []
            if isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")
                    base = ".".join(up[: len(up) - node.level + 1] + ([base] if base else []))
                found = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names
                ]
            targets |= {t for t in found if t in paths and t != name and t.startswith(ROOT)}
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_the_cli_modules() -> None:
    graph = import_graph()
    assert "finmath_tasks.cli.runs" in graph["finmath_tasks.cli.plots"]
    assert "finmath_tasks.cli.plots" in graph["finmath_tasks.cli.report"]  # the lazy import


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.slow
def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


FORBIDDEN_UPWARD = {
    "finmath_tasks.sandbox": ("solvers", "scorers", "retrieval", "tasks", "cli", "lm_eval"),
    "finmath_tasks.scorers": ("solvers", "retrieval", "tasks", "cli", "lm_eval"),
    "finmath_tasks.solvers": ("tasks", "cli", "lm_eval"),
    "finmath_tasks.retrieval": ("solvers", "tasks", "cli", "lm_eval"),
}
"""The shared layers, lowest first: the sandbox runs programs; the scorers read what a
solver recorded (keys such as the program run's live beside the record they name, in
``sandbox.client``), so they never import a solver; no shared layer imports a task."""


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        for layer, above in FORBIDDEN_UPWARD.items():
            if module == layer or module.startswith(layer + "."):
                found += [
                    f"{module} -> {t}"
                    for t in sorted(targets)
                    if any(t == f"{ROOT}.{up}" or t.startswith(f"{ROOT}.{up}.") for up in above)
                ]
    return found


def test_no_import_runs_from_a_lower_layer_up() -> None:
    assert upward_imports(import_graph()) == []


def test_the_layer_check_finds_an_upward_import() -> None:
    graph = {
        "finmath_tasks.scorers.numeric": {"finmath_tasks.solvers.pot"},
        "finmath_tasks.solvers.pot": {"finmath_tasks.sandbox.client"},
    }
    assert upward_imports(graph) == ["finmath_tasks.scorers.numeric -> finmath_tasks.solvers.pot"]


TOOL_PACKAGES = ("cli", "lm_eval", "tasks.mathhay.build")
"""The tools built on the evaluation core: the ``finmath`` command, the lm-evaluation-harness
bridge and MathHay's construction pipeline."""
TOOL_MODULES_OF_A_BENCHMARK = ("grid", "cost", "commands")
"""A benchmark's own tool declarations, kept in its folder so that one benchmark reads in
one place: its grid and published cells (``grid.py``), its cost model (``cost.py``) and its
``finmath`` subcommands (``commands.py``)."""


def is_tool(module: str) -> bool:
    rest = module.removeprefix(f"{ROOT}.")
    if any(rest == p or rest.startswith(p + ".") for p in TOOL_PACKAGES):
        return True
    parts = rest.split(".")
    return len(parts) == 3 and parts[0] == "tasks" and parts[2] in TOOL_MODULES_OF_A_BENCHMARK


def core_imports_of_tools(graph: dict[str, set[str]]) -> list[str]:
    """Imports from the evaluation core (loading, parameters, tasks, scorers, solvers,
    retrieval, sandbox) into a tool: the core never depends on what is built on it."""
    return [
        f"{module} -> {t}"
        for module, targets in sorted(graph.items())
        if not is_tool(module)
        for t in sorted(targets)
        if is_tool(t)
    ]


def test_the_core_imports_no_tool() -> None:
    assert core_imports_of_tools(import_graph()) == []


@pytest.mark.slow
def test_the_core_check_finds_an_import_of_a_tool() -> None:
    graph = import_graph()
    graph["finmath_tasks.tasks.sara.task"] = graph["finmath_tasks.tasks.sara.task"] | {
        "finmath_tasks.cli.declare"
    }
    graph["finmath_tasks.scorers.numeric"] = graph["finmath_tasks.scorers.numeric"] | {
        "finmath_tasks.tasks.tatqa.grid"
    }
    assert core_imports_of_tools(graph) == [
        "finmath_tasks.scorers.numeric -> finmath_tasks.tasks.tatqa.grid",
        "finmath_tasks.tasks.sara.task -> finmath_tasks.cli.declare",
    ]


def test_the_classification_names_the_tools() -> None:
    assert is_tool("finmath_tasks.cli.report")
    assert is_tool("finmath_tasks.lm_eval.bridge")
    assert is_tool("finmath_tasks.tasks.mathhay.build.pipeline")
    assert is_tool("finmath_tasks.tasks.finqa.grid")
    assert not is_tool("finmath_tasks.tasks.finqa.dataset")
    assert not is_tool("finmath_tasks.solvers.agents.scoring")
    assert not is_tool("finmath_tasks.tasks.knowledgefmath.scoring")


IMPORT_EVERY_TASK = """
import importlib
import sys

import finmath_tasks._registry
from pathlib import Path
for task in sorted(Path(finmath_tasks._registry.__file__).parent.glob("tasks/*/task.py")):
    importlib.import_module(f"finmath_tasks.tasks.{task.parent.name}.task")
loaded = sorted(m for m in sys.modules if m.startswith(("finmath_tasks.cli", "finmath_tasks.lm_eval")))
print("\\n".join(loaded))
"""


@pytest.mark.slow
def test_importing_the_registered_tasks_loads_no_tool() -> None:
    """What ``inspect eval`` imports (the entry point and every task) loads nothing of
    ``cli`` or ``lm_eval``; run in a fresh interpreter so this suite's imports do not count."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERY_TASK], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == []
    # and the check sees a tool module when one is imported
    planted = IMPORT_EVERY_TASK.replace(
        "loaded = ", "import finmath_tasks.cli.declare\nloaded = ", 1
    )
    done = subprocess.run(
        [sys.executable, "-c", planted], capture_output=True, text=True, check=True
    )
    assert "finmath_tasks.cli.declare" in done.stdout.split()
