"""No import cycles between the package's modules (function-level imports count too:
``cli/report.py`` imports ``cli/plots.py`` lazily, so plots must not import report)."""

from __future__ import annotations

import ast
from pathlib import Path

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


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


FORBIDDEN_UPWARD = {
    "finmath_tasks.sandbox": ("solvers", "scorers", "retrieval", "tasks", "cli"),
    "finmath_tasks.scorers": ("solvers", "retrieval", "tasks", "cli"),
    "finmath_tasks.solvers": ("tasks",),
    "finmath_tasks.retrieval": ("solvers", "tasks", "cli"),
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
