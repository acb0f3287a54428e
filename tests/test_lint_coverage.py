"""inspect-evals-lint sees everything it checks: `scripts/lint_coverage.py` (run in CI)
lints each task and the shared folders (scorers, metrics, solvers, retrieval, the
sandbox's compose file and Dockerfile), fails on any failure, and fails when a rule is
skipped on every package although our code has its target."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "lint_coverage.py"

NO_LINTER = "inspect-evals-lint is not installed (the dev extra)"

RULES_ON_SHARED_CODE = (
    "custom_scorer_tests",  # scorers/, the keyed scorers' factories
    "custom_metric_tests",  # scorers/metrics.py
    "unscored_reason",  # Score.unscored() calls
    "model_role_resolution",  # the grader role (scorers/grader.py)
    "metric_epoch_safety",  # @metric functions
    "sandbox_image_pinning",  # sandbox/compose.yaml
    "sandbox_privileges",
    "dockerfile_locking",  # sandbox/Dockerfile
)


@pytest.mark.slow
def test_every_rule_runs_where_our_code_has_its_target() -> None:
    pytest.importorskip("inspect_evals_lint", reason=NO_LINTER)
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=600, cwd=REPO
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ran = {
        line.split()[1].rstrip(":") for line in done.stdout.splitlines() if line.startswith("ran ")
    }
    missing = [rule for rule in RULES_ON_SHARED_CODE if rule not in ran]
    assert not missing, done.stdout
    assert "SKIPPED WITH A TARGET" not in done.stdout


def test_a_skipped_rule_with_a_target_fails(tmp_path: Path) -> None:
    """The check itself: a rule the script counts as having no target in our code fails as
    soon as the source has one (here: a shuffled dataset)."""
    pytest.importorskip("inspect_evals_lint", reason=NO_LINTER)
    spec = importlib.util.spec_from_file_location("lint_coverage", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import re

    assert not re.search(module.NOT_OURS["shuffle_seeded"], "json_dataset(path)")
    assert re.search(module.NOT_OURS["shuffle_seeded"], "json_dataset(path, shuffle=True)")
    assert re.search(module.NOT_OURS["custom_tool_tests"], "@tool\ndef calculator():")
