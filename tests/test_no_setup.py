"""Every benchmark runs with no data setup: its files come from the authors' repository at
the pinned commit (here a local mirror built from the shared data), are verified and
cached, and the run gives the same samples and prompts as from a data folder."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog

from benchmark_list import case_benchmark, cases, need, shared_test_args, ships_its_data
from finmath_tasks.loading import DatasetError, dataset_provenance, git_blob_id
from upstream_mirror import manifest_rows, serving

pytestmark = pytest.mark.realdata

TASKS: dict[str, dict[str, Any]] = {
    "knowledgefmath": {"solver": "oracle"},
    "tatqa": {"solver": "oracle"},
    "sara": {},
    "mathhay": {},
}
"""Each task's arguments (besides the data's) in the runs compared; a benchmark with none
here runs at its defaults and the ``SHARED_TEST_ARGS`` its task.py declares."""
WHERE = "tests/test_no_setup.py TASKS"
TESTED_ELSEWHERE = {
    "finqa": "test_finqa_reads_the_authors_files_checked_against_their_blob_ids: the "
    "shared copy holds subsets of the authors' files",
}


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> Path:
    """An empty cache and no FINMATH_DATA_DIR, as on a machine with no data setup (the
    shared data, found first, is what the mirror serves)."""
    monkeypatch.delenv("FINMATH_DATA_DIR", raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("FINMATH_CACHE_DIR", str(cache))
    return cache


def run(task: str, tmp_path: Path, **args: Any) -> EvalLog:
    [log] = inspect_eval(
        f"finmath_tasks/{task}",
        task_args={**need(TASKS, task, "no-setup run", WHERE, default=shared_test_args), **args},
        model="mockllm/model",
        limit=2,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    return log


def seen(log: EvalLog) -> list[tuple[Any, list[str], dict[str, Any]]]:
    """Per sample: its id, the text of every message sent, and its score values."""
    assert log.samples is not None
    return [
        (
            s.id,
            [m.text for m in s.messages if m.role != "assistant"],
            {k: v.value for k, v in (s.scores or {}).items()},
        )
        for s in log.samples
    ]


@pytest.mark.slow
@pytest.mark.parametrize("task", cases(TASKS, skip=TESTED_ELSEWHERE))
def test_no_setup_run_equals_the_data_folder_run_and_then_runs_offline(
    task: str, tmp_path: Path, fresh: Path, monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    if ships_its_data(case_benchmark(task)):
        pytest.skip(f"{task} ships its data in the package: nothing to download")
    local = run(task, tmp_path, data_dir=str(data_dir))
    with serving(data_dir) as mirror:
        monkeypatch.setenv("FINMATH_DATA_MIRROR", mirror.url)
        first = run(task, tmp_path)
        assert mirror.requests, "nothing was downloaded"
    assert seen(first) == seen(local)
    provenance = first.eval.metadata["data"]
    assert provenance["source"] == "github"
    assert provenance["mirror"] == mirror.url
    assert provenance["fingerprint"] == local.eval.metadata["data"]["fingerprint"]
    assert local.eval.metadata["data"]["source"] == "local"
    # the mirror is gone (and the default host unreachable): the cache serves the run
    monkeypatch.setenv("FINMATH_DATA_MIRROR", "http://127.0.0.1:9")
    again = run(task, tmp_path)
    assert seen(again) == seen(local)
    assert again.eval.metadata["data"]["fingerprint"] == provenance["fingerprint"]


def upstream_url(benchmark: str, path: str) -> str:
    [row] = [r for r in manifest_rows() if r["path"] == path and benchmark in r["repository"]]
    return f"/{row['repository']}/{row['commit']}/{path}"


@pytest.mark.parametrize(
    ("task", "benchmark", "path"),
    [
        ("knowledgefmath", "FinanceMath", "data/validation.json"),
        ("tatqa", "TAT-QA", "dataset_raw/tatqa_dataset_dev.json"),
        ("sara", "sara", "cases/s151_a_neg.pl"),
        ("mathhay", "MathHay", "outputs/data/v1/verified_haystack_question_sssd.json"),
    ],
)
def test_a_served_file_with_one_byte_changed_stops_the_run_naming_it(
    task: str,
    benchmark: str,
    path: str,
    tmp_path: Path,
    fresh: Path,
    monkeypatch: pytest.MonkeyPatch,
    data_dir: Path,
) -> None:
    url = upstream_url(benchmark, path)
    with serving(data_dir) as mirror:
        original = mirror.body(url)
        assert original is not None
        changed = bytearray(original)
        changed[len(changed) // 2] ^= 0x01
        mirror.overrides[url] = bytes(changed)
        monkeypatch.setenv("FINMATH_DATA_MIRROR", mirror.url)
        with pytest.raises(DatasetError) as info:
            run(task, tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert f"{task}: {path} downloaded from {mirror.url}{url} is not the pinned file" in message
    assert f"expected {git_blob_id(original)}" in message and "-T data_dir=" in message
    commit_folder = fresh / url.lstrip("/").rsplit("/" + path, 1)[0]
    assert not (commit_folder / path).exists()
    assert not any(p.name.startswith(f".{Path(path).name}") for p in commit_folder.rglob("*"))


@pytest.mark.slow
def test_the_cli_runs_with_no_data_flags(tmp_path: Path, fresh: Path, data_dir: Path) -> None:
    """`inspect eval` itself, as the README's quick start runs it, with no data setup."""
    import os

    with serving(data_dir) as mirror:
        env = {**os.environ, "FINMATH_DATA_MIRROR": mirror.url}
        proc = subprocess.run(
            [
                *(sys.executable, "-m", "inspect_ai", "eval", "finmath_tasks/knowledgefmath"),
                *("-T", "solver=oracle", "--model", "mockllm/model", "--limit", "2"),
                *("--log-dir", str(tmp_path / "logs"), "--log-format", "json"),
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    [log_file] = (tmp_path / "logs").glob("*.json")
    log = json.loads(log_file.read_text())
    assert log["status"] == "success"
    assert log["eval"]["metadata"]["data"]["repository"] == "yale-nlp/FinanceMath"
    accuracy = {s["name"]: s["metrics"]["accuracy"]["value"] for s in log["results"]["scores"]}
    assert accuracy["financemath"] == 1.0


def test_sara_split_derived_from_the_repository_tsvs_is_the_shared_one(
    data_dir: Path, tmp_path: Path
) -> None:
    from finmath_tasks.tasks.sara.dataset import derive_splits, parse_case

    sara = data_dir / "sara"
    cases = {p.stem: parse_case(p.read_text(), p.stem) for p in (sara / "cases").glob("*.pl")}
    tsv = {s: (sara / "dataset" / f"{s}.tsv").read_text() for s in ("train", "test")}
    splits = derive_splits(cases, tsv)
    assert sorted(splits["train"] + splits["test"]) == sorted(cases)  # all 376, once each
    assert (len(splits["train"]), len(splits["test"])) == (256, 120)
    for split, ids in splits.items():
        assert "".join(f"{i}\n" for i in ids) == (sara / "splits" / split).read_text()
    # a line no case matches, or a case no line matches, stops the derivation
    with pytest.raises(DatasetError, match=r"dataset/test.tsv line 121 \(and 0 more\) matches no"):
        derive_splits(cases, {**tsv, "test": tsv["test"] + "Someone.\tA question?\t$1\n"})
    [first] = splits["test"][:1]
    with pytest.raises(DatasetError, match=rf"case '{first}' matches no line"):
        derive_splits(
            {**cases, first: {**cases[first], "text": "Changed."}},
            tsv,
        )


def test_mathhay_v1_pool_built_from_the_question_files_is_the_shared_reconstruction(
    data_dir: Path, tmp_path: Path
) -> None:
    from finmath_tasks.tasks.mathhay.dataset import RECONSTRUCTED_POOL_FILE, load_pool

    v1 = data_dir / "mathhay" / "v1"
    folder = tmp_path / "v1"
    folder.mkdir()
    for question_file in v1.glob("*_haystack_question_*.json"):
        (folder / question_file.name).symlink_to(question_file)
    docs, size, pool_file, missing = load_pool(folder, "v1")
    assert pool_file == folder and missing == 0
    shared = json.loads((v1 / RECONSTRUCTED_POOL_FILE).read_text())
    assert size == shared["pool_size_inferred"] == 144
    assert docs == {int(d["index"]): d["Document"] for d in shared["documents"]}
    # one file that gives a document another text: an error naming the document
    records = json.loads((v1 / "verified_haystack_question_sssd.json").read_text())
    records[0]["Document"] += " (edited)"
    (folder / "verified_haystack_question_sssd.json").unlink()
    (folder / "verified_haystack_question_sssd.json").write_text(json.dumps(records))
    with pytest.raises(DatasetError, match=r"gives document DOC_\d+ a text other than"):
        load_pool(folder, "v1")


def test_finqa_reads_the_authors_files_checked_against_their_blob_ids(
    tmp_path: Path, fresh: Path, monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    """Our FinQA copies are subsets: served as the upstream files they are refused by the
    pinned blob ids; crafted files pinned by their own ids load, as the full ones would."""
    from finmath_tasks.tasks.finqa import dataset as finqa

    pinned = {
        r["path"]: r["git_blob"] for r in manifest_rows() if r["repository"] == "czyssrs/FinQA"
    }
    assert dict(finqa.UPSTREAM.blobs) == pinned
    assert finqa.UPSTREAM.commit == "0f16e2867befa6840783e58be38c9efb9229d742"
    url = f"/czyssrs/FinQA/{finqa.UPSTREAM.commit}/dataset/test.json"
    subset = (data_dir / "finqa" / "test.json").read_bytes()
    with serving(data_dir, overrides={url: subset}) as mirror:
        monkeypatch.setenv("FINMATH_DATA_MIRROR", mirror.url)
        with pytest.raises(DatasetError, match=r"finqa: dataset/test.json downloaded from .* is"):
            finqa.load_dataset("test")
        assert not (fresh / "czyssrs").exists() or not list((fresh / "czyssrs").rglob("*.json"))
        crafted = replace(
            finqa.UPSTREAM, blobs={**finqa.UPSTREAM.blobs, "dataset/test.json": git_blob_id(subset)}
        )
        monkeypatch.setattr(finqa, "UPSTREAM", crafted)
        dataset = finqa.load_dataset("test")
    local = finqa.load_dataset("test", str(data_dir))
    assert [s.id for s in dataset] == [s.id for s in local] and len(dataset) == 100
    provenance = dataset_provenance(dataset)
    assert provenance is not None and provenance["repository"] == "czyssrs/FinQA"
    assert provenance["files"] == {"dataset/test.json": git_blob_id(subset)}


def test_the_manifests_are_the_shared_list_of_upstream_files(data_dir: Path) -> None:
    shared = data_dir / "upstream_files.tsv"
    lines = [
        line.split("\t") for line in shared.read_text().splitlines() if not line.startswith("#")
    ]
    rows = {tuple(line[1:5]) for line in lines[1:]}
    ours = {(r["repository"], r["commit"], r["path"], r["git_blob"]) for r in manifest_rows()}
    assert ours == rows


def test_the_default_without_a_mirror_is_the_authors_github(
    tmp_path: Path, fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from finmath_tasks.tasks.tatqa.dataset import UPSTREAM

    monkeypatch.delenv("FINMATH_DATA_MIRROR")
    assert UPSTREAM.url("dataset_raw/tatqa_dataset_dev.json") == (
        "https://raw.githubusercontent.com/NExTplusplus/TAT-QA/"
        "870accc41953dcde885aabeb963d94aabdc0fbc3/dataset_raw/tatqa_dataset_dev.json"
    )


def test_finqa_records_the_train_file_its_exemplars_come_from(data_dir: Path) -> None:
    from finmath_tasks.loading import file_blob_id
    from finmath_tasks.tasks.finqa import finqa

    provenance = finqa(split="test", solver="rag_cot", data_dir=str(data_dir)).metadata["data"]
    assert provenance["files"] == {
        f"finqa/{name}": file_blob_id(data_dir / "finqa" / name)
        for name in ("test.json", "train.json")
    }
    # the agent solvers read no exemplars: the split's file only
    agents = finqa(split="test", solver="cot", data_dir=str(data_dir)).metadata["data"]
    assert list(agents["files"]) == ["finqa/test.json"]
