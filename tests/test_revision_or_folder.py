"""A Hub revision and a data folder name two different sources: asking for both is an
error in every loader that takes a revision, never one of them silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from finmath_tasks.loading import DATA_DIR_ENV, DatasetError, check_revision_or_folder
from finmath_tasks.tasks.finqa.task import finqa
from finmath_tasks.tasks.knowledgefmath.task import knowledgefmath
from finmath_tasks.tasks.tatqa.task import tatqa

SAYS = "revision reads the Hub; data_dir reads a folder: choose one"


@pytest.mark.parametrize(
    "build",
    [
        lambda **kw: knowledgefmath(split="validation", **kw),
        lambda **kw: tatqa(split="dev", **kw),
        lambda **kw: finqa(split="dev", **kw),
    ],
    ids=["knowledgefmath", "tatqa", "finqa"],
)
def test_revision_with_a_data_folder_is_refused(
    build: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    with pytest.raises(DatasetError, match=SAYS) as raised:
        build(revision="main", data_dir=str(tmp_path))  # type: ignore[operator]
    assert str(tmp_path) in str(raised.value) and "\n" not in str(raised.value)
    # the environment's folder is a data folder too
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(DatasetError, match=SAYS) as raised:
        build(revision="main")  # type: ignore[operator]
    assert DATA_DIR_ENV in str(raised.value)


def test_either_alone_is_fine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    check_revision_or_folder("x", "main", None)
    check_revision_or_folder("x", None, str(tmp_path))
    check_revision_or_folder("x", "", str(tmp_path))
