"""An unusable cache folder (``FINMATH_CACHE_DIR`` under a regular file, or under /proc)
ends ``inspect eval`` in one line naming the folder and the variable, not a traceback;
the embeddings' cache only warns (they are computed again next time)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from finmath_tasks.retrieval.dense import DenseIndex
from upstream_mirror import serving

INSPECT = str(Path(sys.executable).with_name("inspect"))


def unusable(tmp_path: Path, where: str) -> str:
    if where == "under-a-file":
        regular = tmp_path / "a-file"
        regular.write_text("not a folder")
        return str(regular / "cache")
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc on this system")
    return "/proc/finmath-cache"


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.parametrize("task", ["tatqa", "sara"])
@pytest.mark.parametrize("where", ["under-a-file", "proc"])
def test_an_unusable_cache_folder_is_one_line(
    data_dir: Path, tmp_path: Path, task: str, where: str
) -> None:
    cache = unusable(tmp_path, where)
    with serving(data_dir) as mirror:
        env = {k: v for k, v in os.environ.items() if k != "FINMATH_DATA_DIR"}
        env.update(FINMATH_DATA_MIRROR=mirror.url, FINMATH_CACHE_DIR=cache, COLUMNS="200")
        proc = subprocess.run(
            [INSPECT, "eval", f"finmath_tasks/{task}", "--model", "mockllm/model", "--limit", "1"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "Traceback" not in output and "ExceptionGroup" not in output, output
    assert "NotADirectoryError" not in output and "FileNotFoundError" not in output
    message = " ".join(output.split())  # Inspect wraps the one line at the terminal's width
    assert message.startswith(f"{task}: the cache folder {cache} (FINMATH_CACHE_DIR)"), output
    assert message.endswith(
        "set FINMATH_CACHE_DIR to a folder you can write, or run with "
        "-T data_dir=<folder with the benchmark's files>"
    ), output


class Encoder:
    def __call__(self, texts: list[str]) -> object:
        import numpy as np

        return np.ones((len(texts), 3))


def test_embeddings_that_cannot_be_cached_are_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    regular = tmp_path / "a-file"
    regular.write_text("not a folder")
    with caplog.at_level(logging.WARNING):
        index = DenseIndex(["alpha", "beta"], "fake", encoder=Encoder(), cache=regular)
    assert index.embeddings.shape == (2, 3) and not index.cached
    [record] = [r for r in caplog.records if "not cached" in r.getMessage()]
    assert str(regular / "embeddings") in record.getMessage()
    assert "FINMATH_CACHE_DIR" in record.getMessage()
