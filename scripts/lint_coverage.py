"""inspect-evals-lint over the whole package, and which of its rules found nothing to check.

`inspect-evals-lint --task src/finmath_tasks/tasks/<name>/task.py` sees one task folder:
the scorers, metrics, solvers, model-role calls and the sandbox's compose file and
Dockerfile that the tasks share live beside ``tasks/`` (``scorers/``, ``solvers/``,
``retrieval/``, ``sandbox/``). This script lints each task as CI does and those folders
as helper packages (the linter's helper scope: the rules on code behaviour and on tests
for custom components, with the whole ``tests/`` folder searched), then prints, per
rule, whether it ran on some target in our code. A rule skipped everywhere for lack of
a target must be one whose target our code does not have (``NOT_OURS``, each checked
against the source below); any other exits 1, as does any failure.

    python scripts/lint_coverage.py            # one line per rule, then the verdict
"""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

from inspect_evals_lint.config import load_config
from inspect_evals_lint.context import task_layout
from inspect_evals_lint.runner import lint_package

from finmath_tasks.tasks import benchmarks

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "finmath_tasks"
TASKS = tuple(benchmarks())
"""Every benchmark folder (the package's one list: a new one is linted with no list edited)."""
HELPERS = ("scorers", "solvers", "retrieval", "sandbox")
EVAL_RULES_ON_SHARED = ("dockerfile_locking",)

NOT_OURS: dict[str, str] = {
    # rule name: the pattern whose absence from src/ makes the rule's target absent
    "shared_code_extraction": r"inspect_evals\.utils",
    "custom_tool_tests": r"@tool\b",
    "gpu_sandbox_check": r"\bgpu\b\s*:",
    "duplicate_filter_acknowledged": r"filter_duplicate_ids\(",
    "known_broken_reported": r"drop_known_broken\(",
    "shuffle_choices_seeded": r"shuffle_choices",
    "shuffle_seeded": r"shuffle\s*=\s*True|\.shuffle\(",
}
"""Rules whose target our package has none of (no tool, no GPU, no shuffled dataset, no
inspect_evals helper): the pattern must stay absent from the source, else the rule must
run."""


def reports() -> list[tuple[str, object]]:
    base = load_config(REPO)
    out: list[tuple[str, object]] = []
    for name in TASKS:
        layout = task_layout(REPO, f"src/finmath_tasks/tasks/{name}/task.py")
        out.append((name, lint_package(REPO, layout.eval_name, layout.config(base))))
    # helpers: source root src/finmath_tasks (pyproject), tests searched in all of tests/
    helpers = replace(base, tests_root="tests")
    for name in HELPERS:
        out.append((name, lint_package(REPO, name, helpers)))
    # rules of the evaluation scope whose target sits in a shared folder: the sandbox's
    # Dockerfile (the image `finmath_docker` and Inspect's docker sandbox build)
    as_eval = replace(helpers, helper_dirs=frozenset(set(helpers.helper_dirs) - {"sandbox"}))
    for rule in EVAL_RULES_ON_SHARED:
        out.append(("sandbox", lint_package(REPO, "sandbox", as_eval, check=rule)))
    return out


def main() -> int:
    statuses: dict[str, set[str]] = {}
    failures: list[str] = []
    for package, report in reports():
        for name, seen in report.statuses().items():  # type: ignore[attr-defined]
            statuses.setdefault(name, set()).update(seen)
        for item in report.items():  # type: ignore[attr-defined]
            if item.status == "fail":
                where = f" ({item.file}:{item.line})" if getattr(item, "file", None) else ""
                failures.append(f"{package}: {item.rule.name}: {item.message}{where}")
    source = "\n".join(p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py"))
    unexplained = []
    for name, seen in sorted(statuses.items()):
        ran = bool(seen - {"skip"})
        print(f"{'ran ' if ran else 'skip'} {name}: {', '.join(sorted(seen))}")
        if ran:
            continue
        pattern = NOT_OURS.get(name)
        if pattern is None or re.search(pattern, source):
            unexplained.append(name)
    for line in failures:
        print(f"FAIL {line}")
    for name in unexplained:
        print(f"SKIPPED WITH A TARGET: {name} (skipped on every package of ours)")
    return 1 if failures or unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
