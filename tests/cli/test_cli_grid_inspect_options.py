"""`finmath grid` takes every option of `inspect eval-set`, read by Inspect's own parser.

The end-to-end test runs the real `finmath grid` against a loopback OpenAI-compatible
server with `--batch 50 --reasoning-effort high` and reads both settings back from every
run's log. Inspect's `openai-api/<name>/...` provider (an OpenAI-compatible server, as
vLLM) sends no request through a batch API (Inspect's batcher is the `openai/` provider's,
on OpenAI's Files and Batches endpoints, which the loopback server does not serve): there
the option is asserted where it lands, in each log's generation config.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

from finmath_tasks.cli.inspect_options import InspectOptionError, read, split
from finmath_tasks.cli.main import _grid_options, _parser, main
from openai_server import scripted_server

KFM = ["grid", "knowledgefmath", "-T", "split=demo", "--only", "solver=cot"]


def test_the_grid_keeps_its_own_words_and_hands_inspect_the_rest() -> None:
    own = _grid_options(_parser())
    words = [
        "knowledgefmath", "--model", "m", "--batch", "--reasoning-effort", "high",
        "-Tsplit=demo", "--only", "solver=cot", "--sample-shuffle", "3", "--dry-run",
        "--retry-on-error", "--limit", "2",
    ]  # fmt: skip
    mine, theirs = split(words, own)
    assert mine == ["knowledgefmath", "--model", "m", "--only", "solver=cot", "--dry-run"]
    # a flag with an optional value takes the next word only when it is not an option
    assert theirs == [
        "--batch", "--reasoning-effort", "high", "-Tsplit=demo", "--sample-shuffle", "3",
        "--retry-on-error", "--limit", "2",
    ]  # fmt: skip
    options = read(theirs)
    generation = options.generation()
    assert generation["reasoning_effort"] == "high"
    assert isinstance(generation["batch"], int) and generation["batch"] > 1  # Inspect's default
    assert options.kwargs["task_args"] == {"split": "demo"}
    assert options.kwargs["sample_shuffle"] == 3 and options.kwargs["limit"] == 2
    assert options.kwargs["retry_on_error"] == 1
    # what the grid passes on: neither the arguments it decides nor the tasks
    passed = options.passed_on()
    assert {"task_args", "limit", "sample_shuffle", "log_dir", "tasks"}.isdisjoint(passed)
    assert passed["reasoning_effort"] == "high" and passed["retry_on_error"] == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--frobnicate"], "grid: --frobnicate: no such option of finmath grid nor of inspect"),
        (["--epochs", "x"], "Invalid value for '--epochs': 'x' is not a valid integer."),
        (["--reasoning-effort", "extreme"], "Invalid value for '--reasoning-effort'"),
        (["--json"], "--json: finmath grid prints its own summary"),
        (["--detach"], "--detach: run finmath grid in the background"),
        (["--limit", "3-5"], "--limit 3-5: finmath grid takes a count of samples per task"),
        (["-T", "split"], "-T 'split' is not of the form NAME=VALUE"),
    ],
)
def test_a_refused_option_is_one_line_naming_it(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*KFM, "--model", "mockllm/a", "--dry-run", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_a_bad_value_inspect_reads_is_refused() -> None:
    with pytest.raises(InspectOptionError, match="--max-samples"):
        read(["--max-samples", "many"])


def test_help_says_inspects_options_are_taken(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["grid", "--help"])
    out = capsys.readouterr().out
    assert "every option of `inspect eval-set` is accepted" in " ".join(out.split())
    listed = out[out.index("Inspect's eval-set options:") :].split()
    assert {"--batch", "--reasoning-effort", "--max-connections", "--fail-on-error"} <= set(listed)
    assert not {"--json", "--detach", "--model-spec"} & set(listed)  # refused by the grid


def test_the_dry_run_prices_batch_requests_where_the_table_knows_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [*KFM, "--only", "knowledge=none", "--model", "openai/gpt-4o", "--model",
            "google/gemini-1.5-pro", "--limit", "2", "--dry-run"]  # fmt: skip
    assert main(argv) == 0
    plain = capsys.readouterr().out
    assert main([*argv, "--batch"]) == 0
    batched = capsys.readouterr().out
    assert " model openai/gpt-4o: $2.5/M in, $10/M out, $1.25/M cached (built-in" in plain
    assert " model openai/gpt-4o: $1.25/M in, $5/M out (batch price, built-in gpt-4o" in batched
    assert (
        " model google/gemini-1.5-pro: $1.25/M in, $5/M out (batch price unknown: list price "
        "shown, built-in gemini-1.5-pro" in batched
    )
    assert "  Inspect options: -T split=demo --limit 2 --batch" in batched


@pytest.mark.slow
def test_batch_and_reasoning_effort_reach_every_runs_log(tmp_path: Path) -> None:
    pytest.importorskip("openai", reason="needs the openai package: pip install -e '.[openai]'")
    log_dir = tmp_path / "logs"
    command = [
        sys.executable, "-m", "finmath_tasks.cli", *KFM, "--only", "knowledge=none,oracle",
        "--model", "openai-api/local/m", "--model", "openai-api/local/n", "--limit", "2",
        "--batch", "50", "--reasoning-effort", "high", "--max-samples", "1",
        "--log-dir", str(log_dir), "--display", "none",
    ]  # fmt: skip
    with scripted_server(lambda messages: "Therefore, the answer is 14685.0.") as server:
        env = {
            **os.environ,
            "LOCAL_BASE_URL": server.base_url.removesuffix("/chat/completions"),
            "LOCAL_API_KEY": "scripted",
        }
        first = subprocess.run(
            command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900
        )
        assert first.returncode == 0, first.stdout + first.stderr
        assert "4 of 4 tasks succeeded" in first.stdout, first.stdout
        logs = [read_eval_log(info) for info in list_eval_logs(str(log_dir))]
        assert len(logs) == 4
        for log in logs:
            assert log.status == "success", (log.location, log.error)
            assert log.results is not None and log.results.completed_samples == 2
            for config in (log.eval.model_generate_config, log.plan.config):
                assert config.reasoning_effort == "high", log.location
                assert config.batch == 50, log.location
            assert log.eval.config.max_samples == 1
        assert {(log.eval.model, log.eval.task_args["knowledge"]) for log in logs} == {
            (model, knowledge)
            for model in ("openai-api/local/m", "openai-api/local/n")
            for knowledge in ("none", "oracle")
        }
        called = len(server.requests)
        assert called >= 8  # every sample of every run asked the server (no batch API here)
        # the runs' identities hold every option: the same command again is done already
        second = subprocess.run(
            command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900
        )
        assert second.returncode == 0, second.stdout + second.stderr
        assert len(server.requests) == called
        assert "4 of 4 tasks succeeded" in second.stdout
