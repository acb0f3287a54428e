"""The supported Inspect range: declared once, checked at import with one clear message."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from finmath_tasks import _inspect_version as v

REPO = Path(__file__).resolve().parents[1]


def test_pyproject_declares_the_same_range() -> None:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    [requirement] = re.findall(r'"(inspect-ai[^"]*)"', text)
    assert requirement == v.SUPPORTED


def test_the_running_inspect_is_supported() -> None:
    installed = v.installed_inspect()
    assert installed is not None
    assert v.supported(installed), installed


@pytest.mark.parametrize(
    ("installed", "ok"),
    [
        (v.INSPECT_FLOOR, True),
        (v.INSPECT_FLOOR + ".dev3+g1234", True),
        ("0.3.999", True),
        ("0.3.200", False),
        ("0.2.99", False),
        (v.INSPECT_BELOW, False),
        (v.INSPECT_BELOW + ".0", False),
        ("0.4.1", False),
        ("1.0.0", False),
    ],
)
def test_supported(installed: str, ok: bool) -> None:
    assert v.supported(installed) is ok


def test_the_floor_is_inside_the_range() -> None:
    assert v.release(v.INSPECT_FLOOR) < v.release(v.INSPECT_BELOW)
    below_floor = (*v.release(v.INSPECT_FLOOR)[:-1], v.release(v.INSPECT_FLOOR)[-1] - 1)
    assert not v.supported(".".join(map(str, below_floor)))


def test_an_unsupported_inspect_gets_one_message_naming_both_versions() -> None:
    with pytest.raises(v.UnsupportedInspectError) as raised:
        v.check_inspect("0.3.200")
    message = str(raised.value)
    assert "0.3.200" in message
    assert v.SUPPORTED in message
    assert isinstance(raised.value, ImportError)
    with pytest.raises(v.UnsupportedInspectError, match=r"0\.4\.2"):
        v.check_inspect("0.4.2")
    v.check_inspect(v.INSPECT_FLOOR)  # no error


def test_the_escape_hatch_warns_instead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(v.ANY_INSPECT_ENV, "1")
    with pytest.warns(UserWarning, match=r"inspect-ai 0\.3\.200"):
        v.check_inspect("0.3.200")
    monkeypatch.setenv(v.ANY_INSPECT_ENV, "0")
    with pytest.raises(v.UnsupportedInspectError):
        v.check_inspect("0.3.200")


def test_no_inspect_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(v, "installed_inspect", lambda: None)
    with pytest.raises(v.UnsupportedInspectError, match="not installed"):
        v.check_inspect()


# importlib.metadata reports an old inspect-ai to this interpreter only
FAKE_OLD_INSPECT = """
import importlib.metadata as _m
_real = _m.version
def _version(name):
    if name.replace("_", "-").lower() == "inspect-ai":
        return "0.3.200"
    return _real(name)
_m.version = _version
"""


def _run_with_old_inspect(tmp_path: Path, *cmd: str) -> str:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(FAKE_OLD_INSPECT, encoding="utf-8")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path}
    env.pop(v.ANY_INSPECT_ENV, None)
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False
    )
    assert proc.returncode != 0
    return proc.stdout + proc.stderr


def test_importing_under_an_unsupported_inspect_fails_with_the_message(tmp_path: Path) -> None:
    output = _run_with_old_inspect(tmp_path, sys.executable, "-c", "import finmath_tasks._registry")
    last = output.strip().splitlines()[-1]
    assert last.startswith("finmath_tasks._inspect_version.UnsupportedInspectError:"), output
    assert "installed inspect-ai is 0.3.200" in last and v.SUPPORTED in last


@pytest.mark.slow
def test_inspect_eval_under_an_unsupported_inspect_names_both_versions(tmp_path: Path) -> None:
    output = _run_with_old_inspect(
        tmp_path,
        "inspect", "eval", "finmath_tasks/knowledgefmath", "-T", "split=demo",
        "--model", "mockllm/model", "--log-dir", str(tmp_path / "logs"),
    )  # fmt: skip
    flat = " ".join(output.split())
    assert "installed inspect-ai is 0.3.200" in flat, flat[-2000:]
    assert v.SUPPORTED in flat
