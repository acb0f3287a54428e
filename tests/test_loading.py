"""The shared loader: file shapes, answers, and errors that name what is wrong."""

from __future__ import annotations

import json
import logging
import os
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.dataset import Sample

from finmath_tasks.data_source import DataSource, load_split
from finmath_tasks.loading import (
    DatasetError,
    Upstream,
    dataset_provenance,
    file_blob_id,
    git_blob_id,
    read_json_records,
    records_to_dataset,
    resolve_data_dir,
)
from upstream_mirror import serving


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


def test_a_benchmark_whose_data_is_its_own_needs_no_hub_or_upstream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Package data only: no Hub id, no upstream files, no local file names; a data folder
    is not read for it and a Hub revision is refused, naming the benchmark."""
    packaged = tmp_path / "package" / "demo.json"
    packaged.parent.mkdir()
    packaged.write_text(
        json.dumps([{"id": "p1", "q": "?", "a": 3}, {"id": "p2", "q": "?", "a": 4}])
    )
    own = DataSource(benchmark="ownfin", packaged={"demo": packaged}, id_field="id")
    assert own.splits == ("demo",)
    monkeypatch.setenv("FINMATH_DATA_DIR", str(tmp_path / "elsewhere"))  # never read for it
    dataset = load_split(own, "demo", to_sample)
    assert [s.id for s in dataset] == ["p1", "p2"] and [s.target for s in dataset] == ["3", "4"]
    provenance = dataset_provenance(dataset)
    assert provenance is not None and list(provenance["files"]) == ["demo.json"]
    with pytest.raises(DatasetError, match="ownfin: -T split='dev' is not one of demo"):
        load_split(own, "dev", to_sample)
    # a split that is not package data needs a file name and a place to come from
    with pytest.raises(ValueError, match="ownfin: split 'dev' is not package data"):
        DataSource(benchmark="ownfin", files={"dev": "dev.json"}, packaged={"demo": packaged})
    with pytest.raises(ValueError, match="ownfin: a DataSource needs at least one split"):
        DataSource(benchmark="ownfin")
    # with a file name and no Hub copy, a revision is refused rather than sent to no Hub
    upstream_less = DataSource(
        benchmark="ownfin",
        files={"dev": "dev.json"},
        upstream_files={"dev": "data/dev.json"},
        upstream=None,
    )
    monkeypatch.delenv("FINMATH_DATA_DIR")
    with pytest.raises(DatasetError, match="ownfin: -T revision=abc: it has no Hub copy"):
        load_split(upstream_less, "dev", to_sample, revision="abc")


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


# ---- the authors' files at a pinned commit: download, verification, cache ---------------

FILE = b'[{"id": "a", "q": "?", "a": 1}]\n'
CRAFTED = Upstream("toy", "owner/toy", "0" * 40, {"data/dev.json": git_blob_id(FILE)})
DEV_URL = f"/owner/toy/{'0' * 40}/data/dev.json"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("FINMATH_CACHE_DIR", str(folder))
    return folder


def cached_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_git_blob_id_is_gits_own(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(FILE)
    git = subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True)
    if git.returncode != 0:
        pytest.skip("git is not installed")
    assert git_blob_id(FILE) == file_blob_id(path) == git.stdout.strip()
    assert git_blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # git's empty blob


def test_download_is_verified_cached_and_then_read_offline(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving(cache.parent, overrides={DEV_URL: FILE}) as mirror:
        monkeypatch.setenv("FINMATH_DATA_MIRROR", mirror.url)
        path = CRAFTED.fetch_one("data/dev.json")
        assert mirror.requests == [DEV_URL]
    assert path == cache / "owner/toy" / ("0" * 40) / "data/dev.json"
    assert path.read_bytes() == FILE
    # the server is gone: the verified copy is used, with no request
    assert CRAFTED.fetch(["data/dev.json"]) == {"data/dev.json": path}
    assert cached_files(cache) == [f"owner/toy/{'0' * 40}/data/dev.json"]


def test_a_changed_byte_is_a_one_line_error_and_nothing_is_cached(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    changed = FILE.replace(b"?", b"!")
    with serving(cache.parent, overrides={DEV_URL: changed}) as mirror:
        monkeypatch.setenv("FINMATH_DATA_MIRROR", mirror.url)
        with pytest.raises(DatasetError) as info:
            CRAFTED.fetch_one("data/dev.json")
    message = str(info.value)
    assert "\n" not in message
    assert f"toy: data/dev.json downloaded from {mirror.url}{DEV_URL} is not the pinned file" in (
        message
    )
    assert f"git blob {git_blob_id(changed)}, expected {git_blob_id(FILE)}" in message
    assert "it was not cached" in message and "-T data_dir=" in message
    assert not cache.exists() or cached_files(cache) == []


def test_a_cached_file_that_no_longer_verifies_is_fetched_again(
    cache: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    target = cache / "owner/toy" / ("0" * 40) / "data/dev.json"
    target.parent.mkdir(parents=True)
    target.write_bytes(FILE[:10])  # a truncated copy, as a crash of another tool might leave
    with serving(cache.parent, overrides={DEV_URL: FILE}) as mirror:
        monkeypatch.setenv("FINMATH_DATA_MIRROR", mirror.url)
        with caplog.at_level(logging.WARNING):
            assert CRAFTED.fetch_one("data/dev.json").read_bytes() == FILE
    assert mirror.requests == [DEV_URL]
    assert "does not match its pinned git blob id" in caplog.text


@pytest.mark.parametrize("served", [True, False])
def test_unreachable_or_missing_files_are_one_line_errors(
    cache: Path, monkeypatch: pytest.MonkeyPatch, served: bool
) -> None:
    if served:  # a server that has no such file
        with serving(cache.parent) as mirror:
            monkeypatch.setenv("FINMATH_DATA_MIRROR", mirror.url)
            with pytest.raises(DatasetError) as info:
                CRAFTED.fetch_one("data/dev.json")
        assert "(HTTP 404" in str(info.value)
        url = f"{mirror.url}{DEV_URL}"
    else:  # nothing listens there
        monkeypatch.setenv("FINMATH_DATA_MIRROR", "http://127.0.0.1:9/")
        with pytest.raises(DatasetError) as info:
            CRAFTED.fetch_one("data/dev.json")
        url = f"http://127.0.0.1:9{DEV_URL}"
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"toy: cannot download data/dev.json from {url} (")
    assert "FINMATH_DATA_MIRROR" in message and "-T data_dir=" in message
    assert not cache.exists() or cached_files(cache) == []
    with pytest.raises(DatasetError, match=r"toy: data/other.json is not a file pinned in"):
        CRAFTED.fetch_one("data/other.json")


FETCH_SCRIPT = """
import sys
from finmath_tasks.loading import Upstream
upstream = Upstream("toy", "owner/toy", "0" * 40, {"data/dev.json": sys.argv[1]})
print(upstream.fetch_one("data/dev.json"), flush=True)
"""


@pytest.mark.slow
def test_a_download_killed_midway_leaves_nothing_a_later_run_uses(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    import time

    body = FILE * 5000  # large enough to be cut in half on the wire
    upstream = Upstream("toy", "owner/toy", "0" * 40, {"data/dev.json": git_blob_id(body)})
    with serving(cache.parent, overrides={DEV_URL: body}, stall={DEV_URL}) as mirror:
        env = {**os.environ, "FINMATH_DATA_MIRROR": mirror.url, "FINMATH_CACHE_DIR": str(cache)}
        proc = subprocess.Popen(
            [sys.executable, "-c", FETCH_SCRIPT, git_blob_id(body)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while not mirror.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # half the body is on its way
        assert proc.poll() is None, proc.communicate()
        proc.kill()
        proc.wait()
    assert mirror.requests == [DEV_URL]
    target = cache / "owner/toy" / ("0" * 40) / "data/dev.json"
    assert not target.exists()
    assert all(name.endswith(".part") for name in cached_files(cache) if cache.exists())
    # a later run downloads it whole
    with serving(cache.parent, overrides={DEV_URL: body}) as mirror:
        monkeypatch.setenv("FINMATH_DATA_MIRROR", mirror.url)
        assert upstream.fetch_one("data/dev.json").read_bytes() == body


def test_a_split_from_the_upstream_files_records_its_provenance(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    source = replace(SOURCE, upstream=CRAFTED, upstream_files={"dev": "data/dev.json"})
    with serving(cache.parent, overrides={DEV_URL: FILE}) as mirror:
        monkeypatch.setenv("FINMATH_DATA_MIRROR", mirror.url)
        monkeypatch.delenv("FINMATH_DATA_DIR", raising=False)
        dataset = load_split(source, "dev", to_sample)
    provenance = dataset_provenance(dataset)
    assert provenance is not None
    assert provenance["source"] == "github"
    assert provenance["repository"] == "owner/toy" and provenance["commit"] == "0" * 40
    assert provenance["files"] == {"data/dev.json": git_blob_id(FILE)}
    # the same bytes in a local folder: the same fingerprint, another source
    (tmp_path / "dev.json").write_bytes(FILE)
    local = dataset_provenance(load_split(source, "dev", to_sample, data_dir=str(tmp_path)))
    assert local is not None and local["source"] == "local"
    assert local["fingerprint"] == provenance["fingerprint"]
    (tmp_path / "dev.json").write_bytes(FILE.replace(b"?", b"!"))
    changed = dataset_provenance(load_split(source, "dev", to_sample, data_dir=str(tmp_path)))
    assert changed is not None and changed["fingerprint"] != provenance["fingerprint"]


def test_a_local_copy_is_compared_with_the_pinned_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = replace(SOURCE, upstream=CRAFTED, upstream_files={"dev": "data/dev.json"})
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "dev.json").write_bytes(FILE)
    same = dataset_provenance(load_split(source, "dev", to_sample, data_dir=str(tmp_path)))
    assert same is not None and same["authors_data"] is True
    assert same["compared_with"] == f"owner/toy@{'0' * 40}" and "other_files" not in same
    (tmp_path / "toy" / "dev.json").write_bytes(FILE.replace(b"?", b"!"))
    with caplog.at_level(logging.WARNING):
        other = dataset_provenance(load_split(source, "dev", to_sample, data_dir=str(tmp_path)))
    assert other is not None and other["authors_data"] is False
    assert list(other["other_files"]) == ["toy/dev.json"]
    assert (
        f"the authors' data/dev.json is {git_blob_id(FILE)}" in other["other_files"]["toy/dev.json"]
    )
    [warning] = [r.getMessage() for r in caplog.records if "other data" in r.getMessage()]
    assert str(tmp_path) in warning and "toy/dev.json" in warning
    # downloaded files are checked before use: the authors' data
    assert CRAFTED.provenance(["data/dev.json"])["authors_data"] is True


def test_a_manifest_pins_one_repository_and_commit(tmp_path: Path) -> None:
    manifest = tmp_path / "upstream.tsv"
    rows = [
        "# comment",
        "repository\tcommit\tpath\tgit_blob",
        f"owner/toy\t{'0' * 40}\ta.json\tabc",
    ]
    manifest.write_text("\n".join(rows) + "\n")
    upstream = Upstream.from_manifest("toy", "owner/toy", "0" * 40, manifest)
    assert upstream.blobs == {"a.json": "abc"} and upstream.label == "owner/toy@0000000"
    with pytest.raises(ValueError, match=r"a.json is pinned in owner/toy@0{40}, not owner/toy@1"):
        Upstream.from_manifest("toy", "owner/toy", "1" * 40, manifest)


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ('[{"id": "a", "q": "?", "a": 1}, {"id": "b", "q": "?", "a": 2}]', ["a", "b"]),
        # JSON lines under the upstream .json name: Inspect's reader goes by the name
        ('{"id": "a", "q": "?", "a": 1}\n\n{"id": "b", "q": "?", "a": 2}\n', ["a", "b"]),
    ],
    ids=["json-list", "json-lines"],
)
def test_a_split_file_is_a_json_list_or_json_lines(
    tmp_path: Path, text: str, ids: list[str]
) -> None:
    (tmp_path / "dev.json").write_text(text)
    assert [s.id for s in load_split(SOURCE, "dev", to_sample, data_dir=str(tmp_path))] == ids


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"id": "a", "q": "?", "a": 1}', "holds one JSON object (keys: 'id', 'q', 'a')"),
        ('[{"id": "a", "q": "?", "a": 1}, ["b"]]', "dev.json: record #1 is a list"),
        ('[{"id": "a", "q": "?", "a": 1},\n {"id": "b", ', "malformed JSON at line 2 column"),
        ('[{"id": "a", "q": "?", "a": 1}, {"id": "b"}]', "record #1 (id='b') is malformed"),
        ("[]", "dev.json: no records"),
    ],
    ids=["one-object", "not-an-object", "cut-short", "missing-field", "empty"],
)
def test_a_split_file_that_cannot_be_read_is_named(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "dev.json").write_text(text)
    with pytest.raises(DatasetError) as info:
        load_split(SOURCE, "dev", to_sample, data_dir=str(tmp_path))
    assert message in str(info.value) and "\n" not in str(info.value)
