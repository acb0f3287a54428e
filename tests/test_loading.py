"""The shared loader: file shapes, answers, and errors that name what is wrong."""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.dataset import Sample

from finmath_tasks.loading import (
    DatasetError,
    DataSource,
    load_split,
    read_json_records,
    records_to_dataset,
    resolve_data_dir,
)


def to_sample(record: dict[str, Any]) -> Sample:
    return Sample(id=record["id"], input=record["q"], target=str(record.get("a") or ""))


SOURCE = DataSource(
    benchmark="toy",
    hub_id="nobody/toy",
    hub_revision=None,
    local_subdir="toy",
    files={"dev": "dev.json", "test": "test.json"},
    id_field="id",
    answers={"dev": True, "test": False},
)


def test_a_file_holding_one_object_says_what_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"data": [], "version": 2}))
    with pytest.raises(DatasetError) as info:
        read_json_records(path)
    message = str(info.value)
    assert "one JSON object (keys: 'data', 'version')" in message
    assert "expected a JSON list of records" in message
    assert "record #0" not in message


def test_a_split_that_needs_answers_names_the_record_without_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    records = [{"id": "a", "q": "?", "a": 1}, {"id": "b", "q": "?"}]
    (tmp_path / "dev.json").write_text(json.dumps(records))
    (tmp_path / "test.json").write_text(json.dumps(records))
    with pytest.raises(DatasetError, match=r"record #1 \(id='b'\) has no gold answer"):
        load_split(SOURCE, "dev", to_sample, data_dir=str(tmp_path))
    with caplog.at_level(logging.INFO):
        dataset = load_split(SOURCE, "test", to_sample, data_dir=str(tmp_path))
    assert len(dataset) == 2
    assert "1 of 2 records have no gold answer" in caplog.text
    # unknown answer policy: loads, but warns with the first record named
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        records_to_dataset(records, to_sample, source="x.json", name="x", id_field="id")
    assert "first: record #1 (id='b')" in caplog.text


def test_unknown_split_and_bad_data_dir_types(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="toy: -T split='train' is not one of dev, test"):
        load_split(SOURCE, "train", to_sample, data_dir=str(tmp_path))
    with pytest.raises(DatasetError, match=r"-T data_dir=2024 must be a path"):
        resolve_data_dir(2024)  # type: ignore[arg-type]


@pytest.mark.slow
def test_load_errors_reach_the_user_without_a_traceback(tmp_path: Path) -> None:
    for arg, message in [
        ("data_dir=/nonexistent-dir", "-T data_dir=/nonexistent-dir: no such directory"),
        ("data_dir=2024", "-T data_dir=2024 must be a string, not int"),
        ("solver=tot", "-T solver='tot' is not one of cot, pot, oracle, oracle_pot"),
    ]:
        proc = subprocess.run(
            [
                "inspect",
                "eval",
                "finmath_tasks/knowledgefmath",
                "-T",
                arg,
                "--model",
                "mockllm/model",
                "--log-dir",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
        output = " ".join((proc.stdout + proc.stderr).split())
        assert message in output, output[-1000:]
        assert "Traceback" not in output
