"""Offline or gated, every task's message names the file the user must supply.

``datasets`` calls a lone data file's split "train"; the messages must not pass that
on (issue 24): ``inspect eval finmath_tasks/tatqa`` (split dev) needs
``tatqa_dataset_dev.json``. Local-only benchmarks name the folders they need.
"""

from __future__ import annotations

from typing import Any

import pytest

from finmath_tasks.loading import DatasetError
from finmath_tasks.tasks.finqa import finqa
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.sara import sara
from finmath_tasks.tasks.tatqa import tatqa

HUB_CASES = [
    (knowledgefmath, {"split": "validation"}, "validation.json"),
    (knowledgefmath, {"split": "test"}, "test.json"),
    (finqa, {"split": "test", "solver": "cot"}, "test.json"),
    (finqa, {"split": "dev", "solver": "cot"}, "dev.json"),
    (tatqa, {}, "tatqa_dataset_dev.json"),
    (tatqa, {"split": "test", "solver": "cot"}, "tatqa_dataset_test_gold.json"),
]


def _offline(*args: Any, **kwargs: Any) -> None:
    raise ConnectionError("Couldn't reach 'x' on the Hub (LocalEntryNotFoundError)")


def _gated(*args: Any, **kwargs: Any) -> None:
    import datasets

    raise datasets.exceptions.DatasetNotFoundError(
        "Dataset 'x' is a gated dataset on the Hub. You must be authenticated to access it."
    )


def _ids(case: tuple[Any, dict[str, Any], str]) -> str:
    task, args, _ = case
    return f"{task.__name__}-{args.get('split', 'default')}"


@pytest.mark.parametrize("failure", [_offline, _gated], ids=["offline", "gated"])
@pytest.mark.parametrize("case", HUB_CASES, ids=[_ids(c) for c in HUB_CASES])
def test_hub_messages_name_the_needed_file(
    case: tuple[Any, dict[str, Any], str],
    failure: Any,
    monkeypatch: pytest.MonkeyPatch,
    no_data_env: None,
) -> None:
    import datasets

    task, args, needed = case
    monkeypatch.setattr(datasets, "load_dataset", failure)
    with pytest.raises(DatasetError) as raised:
        task(**args)
    message = str(raised.value)
    assert f"-T data_dir=<directory with {needed}>" in message, message
    assert "split 'train'" not in message, message
    if failure is _offline:
        assert "Cannot reach the Hugging Face Hub" in message, message
        assert f"(file {needed!r})" in message, message
    else:
        assert "is gated" in message and "HF_TOKEN" in message, message


def test_sara_without_data_names_the_release_folders(no_data_env: None) -> None:
    with pytest.raises(DatasetError, match=r"-T data_dir=<directory with cases/, statutes/ and"):
        sara()


def test_mathhay_without_data_names_what_to_copy(no_data_env: None) -> None:
    with pytest.raises(DatasetError, match=r"outputs/data/.*-T data_dir=<folder with the release"):
        mathhay()
