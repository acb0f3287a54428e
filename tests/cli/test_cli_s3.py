"""A grid across machines on real object storage: ``s3://`` on a moto server on loopback.

The plan and two ``finmath grid --worker I --of 2`` processes write one grid into
``s3://<bucket>/<run>``; one worker is killed mid-run and restarted (as a new pod: a fresh
Inspect data directory) and finishes without repeating a finished sample; a worker started on
the finished grid makes no model call; ``finmath report`` and ``finmath export`` read the
bucket and give the same tables and files, byte for byte, as the same grid run into a local
folder. Bad input (missing bucket, wrong credentials, refused endpoint, another grid's plan)
gets one line naming it, and nothing is written.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("moto", reason="needs moto[server] (pip install -e '.[test]')")
pytest.importorskip("s3fs", reason="needs s3fs (pip install -e '.[test]')")

from inspect_ai.log import list_eval_logs, read_eval_log

from cli import calls_model  # registers the finmath_calls models in this process
from cli.s3_server import AWS_VARIABLES, S3Server, free_port, s3_server
from finmath_tasks.cli.grid import shard
from finmath_tasks.cli.main import main

SCRIPT = Path(calls_model.__file__)
LIMIT = 4
GRID = [
    "knowledgefmath", "--model", "finmath_calls/a", "--model", "finmath_calls/b",
    "-T", "split=demo", "--only", "solver=cot", "--only", "knowledge=none,oracle",
    "--limit", str(LIMIT), "--max-samples", "1", "--display", "none",
]  # fmt: skip
# one generation per sample (zero-shot CoT); a worker's shard is 2 tasks of LIMIT samples
SHARD_SAMPLES = 2 * LIMIT


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server, pytest.MonkeyPatch.context() as mp:
        for name in AWS_VARIABLES:
            mp.delenv(name, raising=False)
        for name, value in server.env().items():
            mp.setenv(name, value)
        yield server


def finmath(*args: str, cwd: Path, calls: Path, data: Path, **env: str) -> subprocess.Popen[str]:
    """``finmath`` in a new process (a pod): its own call counter and Inspect data directory."""
    data.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), *args],
        cwd=cwd,
        env={
            **os.environ,
            "FINMATH_CALLS_FILE": str(calls),
            "XDG_DATA_HOME": str(data),
            **env,
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out[-3000:]
    return out


def calls(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def task_key(task: dict[str, Any]) -> tuple[str, str]:
    return task["model"], json.dumps(task["args"], sort_keys=True)


def log_key(log: Any) -> tuple[str, str]:
    return log.eval.model, json.dumps(dict(log.eval.task_args_passed), sort_keys=True)


def persisted(log_dir: str, keys: set[tuple[str, str]]) -> dict[str, Any]:
    """Location -> log (with samples) of the logs in ``log_dir`` of the tasks ``keys``."""
    found: dict[str, Any] = {}
    for info in list_eval_logs(log_dir):
        try:
            log = read_eval_log(info)
        except Exception:
            continue  # being replaced right now
        if log_key(log) in keys:
            found[info.name] = log
    return found


def kill_mid_run(proc: subprocess.Popen[str], log_dir: str, keys: set[tuple[str, str]]) -> None:
    """SIGKILL ``proc`` once some samples of its tasks are in the bucket, none finished."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the worker finished before it could be killed"
        logs = persisted(log_dir, keys).values()
        if sum(len(log.samples or []) for log in logs) >= 2:
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=60)
            return
        time.sleep(0.2)
    raise AssertionError("no sample reached the bucket in 240 s")


def without_listing(md: str) -> str:
    """report.md without its title (names the directory), the usage section (log file names,
    wall times and the killed worker's extra tokens differ between the runs) and the log
    listing (file names)."""
    body = md.split("\n", 1)[1]
    head, sep, _ = body.rpartition("\n| log |")
    assert sep, "no log listing in the report"
    tables, usage, _ = head.partition("\n## Usage and cost\n")
    assert usage, "no usage section in the report"
    # the paired differences name the two runs' log files
    return re.sub(r"\d{4}-\d\d-\d\dT[\w-]+\.eval", "<log>", tables)


@pytest.mark.slow  # four worker processes and a moto server (about a minute)
def test_grid_across_workers_on_s3_matches_a_local_run(s3: S3Server, tmp_path: Path) -> None:
    run = f"s3://{s3.bucket}/kfm"
    plan = f"s3://{s3.bucket}/kfm-plan.json"
    assert main(["grid", *GRID, "--log-dir", run, "--plan", plan]) == 0
    manifest = json.loads(_read(plan))["manifest"]
    assert len(manifest["tasks"]) == 4
    assert not list_eval_logs(run)  # writing the plan runs nothing

    pods = tmp_path / "pods"
    worker = ["grid", "--plan", plan, "--of", "2"]
    w0 = finmath(*worker, "--worker", "0", cwd=tmp_path, calls=pods / "w0", data=pods / "d0")
    # worker 1 takes its index from a Kubernetes Indexed Job's variable, and answers slowly
    w1 = finmath(
        *worker, cwd=tmp_path, calls=pods / "w1", data=pods / "d1",
        JOB_COMPLETION_INDEX="1", FINMATH_CALLS_DELAY="0.5",
    )  # fmt: skip
    mine = {task_key(t) for t in shard(manifest["tasks"], 1, 2)}
    kill_mid_run(w1, run, mine)
    assert w1.returncode == -signal.SIGKILL
    before = persisted(run, mine)
    kept = {s.uuid for log in before.values() for s in log.samples or []}
    assert any(log.status == "started" for log in before.values())
    assert 2 <= len(kept) < SHARD_SAMPLES
    assert len(calls(pods / "w1")) < SHARD_SAMPLES

    # the restarted pod (another machine: a fresh Inspect data directory) resumes its shard
    again = finish(
        finmath(*worker, cwd=tmp_path, calls=pods / "w1b", data=pods / "d1b",
                JOB_COMPLETION_INDEX="1")
    )  # fmt: skip
    assert "resuming" in again
    assert len(calls(pods / "w1b")) == SHARD_SAMPLES - len(kept)  # no finished sample repeated
    finish(w0)
    assert len(calls(pods / "w0")) == SHARD_SAMPLES

    logs = [read_eval_log(i) for i in list_eval_logs(run)]
    assert len(logs) == 4 and all(log.status == "success" for log in logs)
    assert {log.eval.eval_set_id for log in logs} == {manifest["eval_set_id"]}
    finals = {s.uuid for log in logs if log_key(log) in mine for s in log.samples or []}
    assert kept <= finals and len(finals) == SHARD_SAMPLES  # reused, not run again

    # a third worker on the finished grid: nothing to run, no model call
    third = finish(finmath(*worker, "--worker", "1", cwd=tmp_path, calls=pods / "w2",
                           data=pods / "d2"))  # fmt: skip
    assert "already complete, skipped" in third and "nothing to run" in third
    # object storage has no locks: the worker says so (tests/cli/test_cli_grid_lock.py)
    assert f"note: {run} is object storage, which has no locks" in third
    assert calls(pods / "w2") == []

    # the same grid into a local folder, in one process
    local = tmp_path / "local"
    assert main(["grid", *GRID, "--log-dir", str(local)]) == 0
    assert main(["report", run, "--out", str(tmp_path / "r3"), "--no-plots"]) == 0
    assert main(["report", str(local), "--out", str(tmp_path / "rl"), "--no-plots"]) == 0
    remote_md = (tmp_path / "r3" / "report.md").read_text()
    local_md = (tmp_path / "rl" / "report.md").read_text()
    assert "Logs left out" not in remote_md  # the killed worker's log was superseded and removed
    assert without_listing(remote_md) == without_listing(local_md)
    assert "## Knowledge settings (official comparison)" in local_md

    local_logs = {
        log_key(read_eval_log(i, header_only=True)): i.name for i in list_eval_logs(str(local))
    }
    for log in logs:
        mine_out, theirs_out = tmp_path / "remote.json", tmp_path / "local.json"
        assert main(["export", log.location, "-o", str(mine_out)]) == 0
        assert main(["export", local_logs[log_key(log)], "-o", str(theirs_out)]) == 0
        assert mine_out.read_bytes() == theirs_out.read_bytes()
        assert len(json.loads(mine_out.read_text())) == LIMIT


def _read(location: str) -> str:
    from finmath_tasks._inspect_private import file

    with file(location, "r") as f:
        text: str = f.read()
    return text


def _objects(s3: S3Server) -> list[str]:
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=s3.endpoint,
        aws_access_key_id=s3.key_id,
        aws_secret_access_key=s3.secret,
        region_name="us-east-1",
    )
    names = [b["Name"] for b in client.list_buckets()["Buckets"]]
    return sorted(
        f"{b}/{o['Key']}"
        for b in names
        for o in client.list_objects_v2(Bucket=b).get("Contents", [])
    )


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("finmath: ")
    return err[0]


GRID_ONE = [
    "knowledgefmath", "--model", "finmath_calls/a", "-T", "split=demo",
    "--only", "solver=cot", "--only", "knowledge=none", "--limit", "1", "--display", "none",
]  # fmt: skip


@pytest.mark.slow
def test_a_missing_bucket_is_named_and_not_created(
    s3: S3Server, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _objects(s3)
    argv = ["grid", *GRID_ONE, "--log-dir", "s3://no-such-bucket/kfm"]
    assert main(argv) == 2
    line = one_line(capsys)
    assert "the bucket 'no-such-bucket' does not exist" in line and s3.endpoint in line
    assert main([*argv, "--plan", "s3://no-such-bucket/plan.json"]) == 2
    one_line(capsys)
    assert main(["report", "s3://no-such-bucket/kfm", "--out", "unused"]) == 2
    assert "does not exist" in one_line(capsys)
    assert _objects(s3) == before  # no bucket created, nothing written


@pytest.mark.parametrize(
    ("variable", "value", "reason"),
    [
        ("AWS_SECRET_ACCESS_KEY", "wrong-secret", "SignatureDoesNotMatch"),
        ("AWS_ACCESS_KEY_ID", "AKIAWRONGWRONGWRONG0", "InvalidAccessKeyId"),
    ],
)
def test_wrong_credentials_are_named(
    s3: S3Server,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    reason: str,
) -> None:
    before = _objects(s3)
    monkeypatch.setenv(variable, value)
    run = f"s3://{s3.bucket}/denied"
    assert main(["grid", *GRID_ONE, "--log-dir", run, "--plan", f"{run}-plan.json"]) == 2
    line = one_line(capsys)
    assert f"access to bucket '{s3.bucket}' refused" in line and reason in line
    assert main(["grid", "--plan", f"s3://{s3.bucket}/kfm-plan.json", "--worker", "0",
                 "--of", "2"]) == 2  # fmt: skip
    assert reason in one_line(capsys)
    monkeypatch.undo()
    assert _objects(s3) == before


@pytest.mark.slow
def test_a_refused_connection_names_the_endpoint(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", closed)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    start = time.monotonic()
    assert main(["grid", *GRID_ONE, "--log-dir", "s3://finmath-grid/kfm"]) == 2
    line = one_line(capsys)
    assert f"cannot connect to the S3 endpoint {closed}" in line
    assert main(["report", "s3://finmath-grid/kfm", "--out", "unused"]) == 2
    assert closed in one_line(capsys)
    assert time.monotonic() - start < 30  # one attempt each, no minute of retries


@pytest.mark.slow
def test_a_plan_from_another_grid_is_refused(
    s3: S3Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = f"s3://{s3.bucket}/other"
    first, second = f"{run}-plan-1.json", f"{run}-plan-2.json"
    assert main(["grid", *GRID_ONE, "--log-dir", run, "--plan", first]) == 0
    assert main(["grid", *GRID_ONE, "--log-dir", run, "--plan", second]) == 0
    assert main(["grid", "--plan", first, "--worker", "0", "--of", "1"]) == 0
    [log] = [read_eval_log(i, header_only=True) for i in list_eval_logs(run)]
    capsys.readouterr()
    assert main(["grid", "--plan", second, "--worker", "0", "--of", "1"]) == 2
    line = one_line(capsys)
    assert f"holds logs of another grid (1 of eval set {log.eval.eval_set_id})" in line
    assert json.loads(_read(second))["options"]["eval_set_id"] in line
    assert len(list_eval_logs(run)) == 1  # the second plan's worker wrote nothing

    garbage = f"s3://{s3.bucket}/not-a-plan.json"
    with _open(garbage) as f:
        f.write(json.dumps({"tasks": []}))
    assert main(["grid", "--plan", garbage, "--worker", "0", "--of", "1"]) == 2
    assert re.search(r"not a finmath grid plan", one_line(capsys))
    assert main(["grid", "--plan", f"s3://{s3.bucket}/missing.json", "--of", "1",
                 "--worker", "0"]) == 2  # fmt: skip
    assert "no such file" in one_line(capsys)


def _open(location: str) -> Any:
    from finmath_tasks._inspect_private import file

    return file(location, "w")
