"""A split whose gold answers the authors withhold (knowledgefmath's ``test``) scores
nothing: under lm_eval without ``--log_samples`` it would send every request and keep
no reply, so the run is refused before any request, in one line naming the split and
``--log_samples``. With ``--log_samples`` it runs and the samples file keeps the replies.
Through the real ``lm_eval run`` against a loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip(
    "lm_eval", reason='lm-evaluation-harness is not installed (the "lm-eval" extra)'
)

from scripted_lm import lm_eval_cli, scripted_server

pytestmark = [pytest.mark.slow, pytest.mark.realdata]

COT = "finmath_knowledgefmath_cot"
REPLY = "Therefore, the answer is 1.0."


def test_a_withheld_split_without_log_samples_is_refused_before_any_request(
    data_dir: Path,
) -> None:
    metadata = json.dumps({"split": "test", "data_dir": str(data_dir)})
    with scripted_server(lambda messages: REPLY) as server:
        run = lm_eval_cli(server, COT, "--limit", "2", "--metadata", metadata)
    assert run.returncode != 0, run.stdout + run.stderr
    assert server.requests == []  # refused before any model call
    assert "Traceback" not in run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(f"lm_eval: {COT}: the test split has no gold answers"), last
    assert "--log_samples" in last, last


def test_a_withheld_split_with_log_samples_keeps_the_replies(
    data_dir: Path, tmp_path: Path
) -> None:
    metadata = json.dumps({"split": "test", "data_dir": str(data_dir)})
    out = tmp_path / "out"
    with scripted_server(lambda messages: REPLY) as server:
        run = lm_eval_cli(
            server, COT, "--limit", "2", "--metadata", metadata,
            "--log_samples", "--output_path", str(out),
        )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(server.requests) == 2
    [samples] = out.rglob(f"samples_{COT}_*.jsonl")
    rows = [json.loads(line) for line in samples.read_text().splitlines() if line]
    assert [row["resps"] for row in rows] == [[[REPLY]], [[REPLY]]]
