"""The docs stay true to the repository: the README short and running CI's test command,
and every repository path the docs name (``docs/architecture.md`` above all) existing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmark_list import BENCHMARKS

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "finmath_tasks"
README = REPO / "README.md"
DOCS = REPO / "docs"
TOPIC_PAGES = [
    "sandboxes",
    "grids",
    "cost",
    "lm_eval",
    "published",
    "architecture",
    "error_classes",
]

# a backticked token that names a file or folder of the repository or of the package
ROOTS = ("src/", "tests/", "docs/", "benchmarks/", "scripts/", "deploy/", ".ci/")
PACKAGE_ROOTS = ("tasks/", "solvers/", "scorers/", "sandbox/", "retrieval/", "cli/", "lm_eval/")
PY_FILE = re.compile(r"^\w+\.py$")  # a bare module name; other bare names may be outputs
BACKTICKED = re.compile(r"`([^`\s]+)`")


def named_paths(text: str) -> list[str]:
    """Backticked tokens that are paths: under a repository or package folder, or a file
    module of ours (``loading.py``); ``<placeholder>`` parts stand for any name."""
    found = []
    for token in BACKTICKED.findall(text):
        token = token.rstrip(".,;:").split("::")[0]  # a pytest node id names its file
        if "://" in token or token.startswith(("$", "-", "~", "/")) or "=" in token:
            continue
        if token.startswith(ROOTS + PACKAGE_ROOTS) or PY_FILE.match(token):
            found.append(token)
    return found


def exists(token: str) -> bool:
    pattern = re.sub(r"<[^>]+>", "*", token).rstrip("/")
    bases = [REPO] if token.startswith(ROOTS) else [PACKAGE, REPO]
    if "/" not in token:  # a bare file name: anywhere in the package, or at the top
        return any(PACKAGE.rglob(pattern)) or (REPO / pattern).exists()
    return any(any(base.glob(pattern)) for base in bases)


def missing_paths(page: Path) -> list[str]:
    return [t for t in named_paths(page.read_text(encoding="utf-8")) if not exists(t)]


def test_readme_is_at_most_300_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move detail to docs/"


def test_readme_gives_the_test_command_ci_runs() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    stage = ci.split("== tests", 1)[1].split("\necho ", 1)[0]
    [command] = [
        line.strip()
        for line in stage.splitlines()
        if "python -m pytest" in line and not line.lstrip().startswith("#")
    ]
    readme = README.read_text(encoding="utf-8")
    assert command == "FINMATH_REQUIRE_SANDBOXES=bwrap,docker python -m pytest -n auto"
    assert f"\n{command}\n" in readme
    assert "\npython -m pytest " in readme  # the plain command, for a machine without both


def test_readme_links_every_topic_page_and_each_link_resolves() -> None:
    readme = README.read_text(encoding="utf-8")
    for page in TOPIC_PAGES:
        assert (DOCS / f"{page}.md").is_file(), page
        assert f"docs/{page}.md" in readme, page
    targets = re.findall(r"\]\(([^)#\s]+)\)", readme)
    local = [t for t in targets if "://" not in t]
    assert len(local) >= 10
    assert [t for t in local if not (REPO / t).exists()] == []


def test_architecture_names_only_paths_that_exist() -> None:
    page = DOCS / "architecture.md"
    names = named_paths(page.read_text(encoding="utf-8"))
    # it follows a sample through these: the check must see them
    for expected in ["src/finmath_tasks/_registry.py", "loading.py", "scorers/numeric.py"]:
        assert expected in names
    assert len(names) > 40
    assert missing_paths(page) == []


@pytest.mark.parametrize(
    "page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: p.relative_to(REPO).as_posix()
)
def test_every_page_names_only_paths_that_exist(page: Path) -> None:
    assert missing_paths(page) == []


def test_the_path_check_finds_a_missing_path(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "See `src/finmath_tasks/loading.py`, `tasks/<name>/dataset.py`, `loading.py`,\n"
        "`solvers/nowhere.py`, `tasks/<name>/nothing.tsv`, `gone.py` and `-T split=demo`.\n"
    )
    assert missing_paths(page) == ["solvers/nowhere.py", "tasks/<name>/nothing.tsv", "gone.py"]


TASK_NAMES = BENCHMARKS


def test_readme_lists_every_benchmark_with_its_readme() -> None:
    """The README's table of tasks has one row per benchmark folder, linking its README."""
    readme = README.read_text(encoding="utf-8")
    rows = re.findall(
        r"^\| `(\w+)` \|.*\]\((src/finmath_tasks/tasks/(\w+)/README\.md)\) \|$", readme, re.M
    )
    listed = [name for name, _link, folder in rows if name == folder]
    missing = [name for name in BENCHMARKS if name not in listed]
    assert not missing, f"README.md's table of tasks has no row for {', '.join(missing)}"
    assert sorted(listed) == BENCHMARKS, f"README.md lists tasks that are no benchmark: {listed}"


TEMPLATE = [
    "Usage",
    "Parameters",
    "Data",
    "Scoring",
    "The paper's settings and where we differ",
    "Results",
    "Changelog",
]


def task_readme(name: str) -> str:
    return (PACKAGE / "tasks" / name / "README.md").read_text(encoding="utf-8")


def level2_headings(text: str) -> list[str]:
    headings, fence = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("## "):
            headings.append(line[3:].strip())
    return headings


@pytest.mark.parametrize("name", TASK_NAMES)
def test_task_readme_follows_the_template(name: str) -> None:
    text = task_readme(name)
    assert text.startswith(f"# `{name}`: ")
    assert level2_headings(text) == TEMPLATE


@pytest.mark.parametrize("name", TASK_NAMES)
def test_task_readme_parameters_table_names_every_parameter(name: str) -> None:
    import inspect as pyinspect

    import finmath_tasks._registry as registry

    task_function = getattr(registry, name)
    parameters = list(pyinspect.signature(task_function).parameters)
    section = task_readme(name).split("\n## Parameters\n", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE)
    assert rows == parameters  # every parameter, in the signature's order


@pytest.mark.parametrize("name", TASK_NAMES)
def test_task_readme_is_at_most_300_lines_and_its_links_resolve(name: str) -> None:
    """What a user needs fits in 300 lines; audits and measurements live in docs/<task>.md,
    which each link points to (the file, and a heading for its anchor)."""
    path = PACKAGE / "tasks" / name / "README.md"
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300, f"{name}/README.md: move detail to docs/{name}.md"
    for target, anchor in re.findall(r"\]\(((?!https?:)[^)#\s]+)(?:#([^)\s]+))?\)", text):
        linked = (path.parent / target).resolve()
        assert linked.exists(), f"{name}/README.md links {target}"
        if anchor and linked.suffix == ".md":
            headings = re.findall(r"^#+ (.*)$", linked.read_text(encoding="utf-8"), re.M)
            anchors = {
                re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings
            }
            assert anchor in anchors, f"{name}/README.md: no heading for #{anchor} in {target}"
