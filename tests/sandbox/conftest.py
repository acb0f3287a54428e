"""``FINMATH_REQUIRE_SANDBOXES=bwrap,docker`` (set by ``.ci/run``): a test marked with
one of these sandboxes that skips (no engine, no image, no bubblewrap) fails instead,
so CI cannot pass with the sandbox untested. Unset (users), they skip as usual."""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

REQUIRED = {
    name.strip() for name in os.environ.get("FINMATH_REQUIRE_SANDBOXES", "").split(",") if name
}


def _required_skip(report: Any, names: set[str]) -> bool:
    return bool(report.skipped and not hasattr(report, "wasxfail") and REQUIRED & names)


def _fail(report: Any) -> None:
    report.outcome = "failed"
    report.longrepr = (
        f"skipped, but FINMATH_REQUIRE_SANDBOXES={','.join(sorted(REQUIRED))} requires it: "
        f"{report.longrepr}"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if _required_skip(report, {mark.name for mark in item.iter_markers()}):
        _fail(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    """A whole module skipped at import (``allow_module_level``): its name tells the
    sandbox (``test_bwrap_*``, ``test_docker_*``)."""
    outcome = yield
    report = outcome.get_result()
    names = {n for n in REQUIRED if n in collector.path.name}
    if isinstance(collector, pytest.Module) and _required_skip(report, names):
        _fail(report)
