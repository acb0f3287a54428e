"""One format for every task's -T errors."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from finmath_tasks import params
from finmath_tasks.params import TaskParameterError


def test_choice_accepts_members_only() -> None:
    Mode = Literal["a", "b"]
    assert params.choice("t", "mode", "a", Mode) == "a"
    assert params.choice("t", "n", 2, (1, 2)) == 2
    for bad in ("c", None, 1, ["a"]):
        with pytest.raises(TaskParameterError, match=r"^t: -T mode=.* is not one of a, b$"):
            params.choice("t", "mode", bad, Mode)
    with pytest.raises(TaskParameterError):  # True == 1 in Python, but not a valid choice
        params.choice("t", "n", True, (1, 2))


def test_typed_parameters() -> None:
    assert params.boolean("t", "flag", False) is False
    with pytest.raises(TaskParameterError, match="-T flag='yes' must be true or false"):
        params.boolean("t", "flag", "yes")
    assert params.optional_path("t", "data_dir", Path("/x")) == "/x"
    assert params.optional_path("t", "data_dir", "") is None
    with pytest.raises(TaskParameterError, match=r"t: -T data_dir=2024 must be a string, not int"):
        params.optional_path("t", "data_dir", 2024)
    with pytest.raises(TaskParameterError, match="must be a positive number"):
        params.positive_number("t", "timeout", -1)
    assert isinstance(TaskParameterError("x"), ValueError)
