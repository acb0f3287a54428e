"""Offline or gated, every task's message names the file the user must supply.

``datasets`` calls a lone data file's split "train"; the messages must not pass that
on: ``inspect eval finmath_tasks/tatqa -T revision=...`` (split dev) needs
``tatqa_dataset_dev.json``. With no data flags, a task that cannot download its
authors' files names the file, the URL and ``-T data_dir=``.
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
        task(**args, revision="main")
    message = str(raised.value)
    assert f"-T data_dir=<directory with {needed}>" in message, message
    assert "split 'train'" not in message, message
    if failure is _offline:
        assert "Cannot reach the Hugging Face Hub" in message, message
        assert f"(file {needed!r})" in message, message
    else:
        assert "is gated" in message and "HF_TOKEN" in message, message


UPSTREAM_CASES = [
    (knowledgefmath, {}, "yale-nlp/FinanceMath", "data/validation.json"),
    (finqa, {"split": "test", "solver": "cot"}, "czyssrs/FinQA", "dataset/test.json"),
    (tatqa, {}, "NExTplusplus/TAT-QA", "dataset_raw/tatqa_dataset_dev.json"),
    (sara, {}, "SgfdDttt/sara", ""),
    (mathhay, {}, "SalesforceAIResearch/MathHay", "outputs/data/v1/"),
]


@pytest.mark.parametrize("case", UPSTREAM_CASES, ids=[c[0].__name__ for c in UPSTREAM_CASES])
def test_without_data_or_network_the_message_names_file_url_and_data_dir(
    case: tuple[Any, dict[str, Any], str, str], no_data_env: None
) -> None:
    """The suite's mirror (tests/conftest.py) is a closed local port: nothing answers."""
    task, args, repository, path = case
    with pytest.raises(DatasetError) as raised:
        task(**args)
    message = str(raised.value)
    assert "\n" not in message
    assert f"{task.__name__}: cannot download {path}" in message, message
    assert f"from http://127.0.0.1:9/{repository}/" in message, message
    assert "-T data_dir=<folder with the benchmark's files>" in message, message
