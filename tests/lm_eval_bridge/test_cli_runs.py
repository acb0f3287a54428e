"""The bridge as users run it: the real ``lm_eval run`` command line against an
OpenAI-compatible server on loopback (``scripted_lm.scripted_server``), with lm_eval's
chat client (``local-chat-completions``) and its completions client
(``local-completions``), with and without lm_eval's caches (``--use_cache``,
``--cache_requests``). Every request the model was sent is captured by the server.

lm_eval marks its API models multimodal (logged samples pass through its image hashing,
which rebuilds every mapping as a plain dict) and wraps the model in its caching model
under ``--use_cache``: paths a scripted model object never takes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "lm_eval", reason='lm-evaluation-harness is not installed (the "lm-eval" extra)'
)

from scripted_lm import CHAT, COMPLETIONS, CliRun, config_path, lm_eval_cli, scripted_server

from finmath_tasks.sandbox.bwrap import bwrap_available

pytestmark = [pytest.mark.slow]  # each test starts lm_eval once or twice (30 to 60 s here)

COT = "finmath_knowledgefmath_cot"
POT = "finmath_knowledgefmath_pot"
DEMO = {"split": "demo"}

KILLER = Path(__file__).resolve().parents[1] / "sandbox"
KILL_FIRST_PROGRAM = f"""
import sys
sys.path.insert(0, {str(KILLER)!r})
import pytest
from killer import kill_during_first_program
kill_during_first_program(pytest.MonkeyPatch(), marker=b"time.sleep(1.5)")
"""
"""Run in lm_eval's process: the first model program (:data:`SLOW_PROGRAM`, not the
scorer's probe of a wrong answer's cause) sent to a bubblewrap worker dies with its
worker, killed from outside (as an OOM killer would): a sandbox failure."""

SLOW_PROGRAM = (
    "```python\ndef solution():\n    import time\n    time.sleep(1.5)\n    return 1\n```\n"
    "Therefore, the answer is 1."
)
"""A reply both solvers read: PoT runs the program (slow enough to be killed while it
runs), CoT reads the final sentence."""


def _outputs(folder: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """lm_eval's results file and each task's samples (``--output_path``/``--log_samples``)."""
    [results_file] = folder.rglob("results_*.json")
    results = json.loads(results_file.read_text(encoding="utf-8"))
    samples: dict[str, list[dict[str, Any]]] = {}
    for path in folder.rglob("samples_*.jsonl"):
        task = path.name[len("samples_") :].rsplit("_", 1)[0]
        samples[task] = [json.loads(line) for line in path.read_text().splitlines() if line]
    return results, samples


def _ok(run: CliRun) -> None:
    assert run.returncode == 0, run.stderr[-3000:]


def _metadata(value: dict[str, Any]) -> list[str]:
    return ["--metadata", json.dumps(value)]


# -- machine-readable samples, the split named, sandbox failures said last --------------------


@pytest.mark.bwrap
@pytest.mark.parametrize("model", [CHAT, COMPLETIONS])
def test_samples_parse_as_json_and_a_sandbox_failure_is_said_last(
    model: str, tmp_path: Path
) -> None:
    """The whole knowledgefmath group (CoT and PoT) on 3 demo questions; the first program
    run dies with its sandbox worker. Every ``filtered_resps`` in the samples files is
    JSON (the failed row's unscored values are null, not NaN), results.json names the
    split evaluated, and the run's last line counts the sample left out and says why."""
    ok, reason = bwrap_available()
    if not ok:
        pytest.skip(f"bubblewrap: {reason}")
    out = tmp_path / "out"
    with scripted_server(lambda sent: SLOW_PROGRAM) as server:
        run = lm_eval_cli(
            server,
            "finmath_knowledgefmath",
            "--limit",
            "3",
            "--confirm_run_unsafe_code",
            "--log_samples",
            "--output_path",
            str(out),
            *_metadata({**DEMO, "sandbox": "bwrap"}),
            model=model,
            model_args="max_length=16384" if model == COMPLETIONS else "",
            prelude=KILL_FIRST_PROGRAM,
        )
    _ok(run)
    assert len(server.requests) == 6  # 3 questions, CoT and PoT
    results, samples = _outputs(out)
    assert set(samples) == {COT, POT}
    for task, rows in samples.items():
        assert len(rows) == 3
        for row in rows:
            assert row["filtered_resps"], row
            for text in row["filtered_resps"]:
                verdict = json.loads(text)  # a JSON text, on the multimodal API path too
                assert set(verdict["scores"]) >= {"financemath", "tolerant"}, (task, verdict)
    pot = {row["doc"]["id"]: json.loads(row["filtered_resps"][0]) for row in samples[POT]}
    failed = [key for key, verdict in pot.items() if "sandbox_error" in verdict]
    assert len(failed) == 1
    [key] = failed
    assert "sandbox worker died" in pot[key]["sandbox_error"]
    assert set(pot[key]["scores"].values()) == {None}  # unscored: null
    ran = [verdict for k, verdict in pot.items() if k != key]
    assert [v["program"]["value"] for v in ran] == [1, 1]
    assert results["results"][POT]["execution_rate,none"] == 1.0  # of the 2 scored
    assert results["configs"][POT]["metadata"]["sandbox_failures"] == [key]
    for task in (COT, POT):
        assert results["configs"][task]["test_split"] == "demo"
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"lm_eval: not every sample was scored: {POT}: 1 of 3 samples left out of every "
        "metric because the sandbox failed, not the program (first, "
        f"{key}: the sandbox failed: sandbox worker died"
    ), last
    assert f"configs.{POT}.metadata.sandbox_failures" in last


# -- lm_eval's response cache: the model inside it decides ------------------------------------


def _sent(server: Any) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in server.requests)


def test_use_cache_on_the_chat_path_sends_the_same_requests(tmp_path: Path) -> None:
    """``--use_cache`` wraps the chat model in lm_eval's caching model, which forwards
    ``tok_encode`` and ``max_length``: the context check must still see a chat model,
    which sends text its server counts (with a budget beyond lm_eval's API default
    context of 2,048 it refused the run: "prompt is 1 tokens ... context of 2,047")."""
    runs = []
    for cache in (None, tmp_path / "cache" / "lm"):
        out = tmp_path / ("cached" if cache else "plain")
        with scripted_server(lambda sent: "Therefore, the answer is 1.") as server:
            run = lm_eval_cli(
                server,
                COT,
                "--limit",
                "2",
                "--log_samples",
                "--output_path",
                str(out),
                *_metadata(DEMO),
                "--gen_kwargs",
                "max_gen_toks=3000",
                *(["--use_cache", str(cache)] if cache else []),
            )
        _ok(run)
        assert "context" not in run.stderr.strip().splitlines()[-1]
        runs.append((_sent(server), _outputs(out)))
    (plain_sent, (plain, _)), (cached_sent, (cached, cached_samples)) = runs
    assert len(plain_sent) == 2
    assert all('"max_tokens": 3000' in request for request in plain_sent)
    assert cached_sent == plain_sent
    key = "financemath,none"
    assert cached["results"][COT][key] == plain["results"][COT][key]
    for row in cached_samples[COT]:
        json.loads(row["filtered_resps"][0])


def _texts(value: Any) -> list[Any]:
    """The leaves of a logged ``filtered_resps`` (a list, of lists with repeats)."""
    if isinstance(value, list):
        return [leaf for item in value for leaf in _texts(item)]
    return [value]


def test_repeats_under_use_cache_send_seed_plus_i(tmp_path: Path) -> None:
    """Repeats through lm_eval's caching model, with ``--predict_only`` (no metrics, the
    samples alone): each repeat carries the model's seed plus its index, and every
    logged verdict is JSON text."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "mine.yaml").write_text(
        f"include: {config_path(COT)}\ntask: my_cot\nrepeats: 3\n", encoding="utf-8"
    )
    with scripted_server(lambda sent: "Therefore, the answer is 1.") as server:
        run = lm_eval_cli(
            server,
            "my_cot",
            "--limit",
            "2",
            *_metadata(DEMO),
            "--use_cache",
            str(tmp_path / "cache" / "lm"),
            "--predict_only",
            "--log_samples",
            "--output_path",
            str(tmp_path / "out"),
            model_args="seed=40",
            include_path=str(folder),
        )
    _ok(run)
    samples = [
        json.loads(line)
        for path in (tmp_path / "out").rglob("samples_my_cot_*.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    assert len(samples) == 2
    for sample in samples:
        texts = _texts(sample["filtered_resps"])
        assert len(texts) == 3
        assert [json.loads(text)["answer"] for text in texts] == ["1", "1", "1"]
    by_prompt: dict[str, list[int]] = {}
    for request in server.requests:
        by_prompt.setdefault(json.dumps(request["messages"]), []).append(request["seed"])
    assert [sorted(seeds) for seeds in by_prompt.values()] == [[40, 41, 42], [40, 41, 42]]


# -- lm_eval's request cache: keyed by the data too --------------------------------------------


@pytest.mark.realdata
def test_a_data_file_edited_in_place_is_not_served_from_the_request_cache(
    data_dir: Path, tmp_path: Path
) -> None:
    """A copy of knowledgefmath's validation data; a run with ``--cache_requests true``;
    the first question's text edited in place (same ids, same golds); the same command
    again sends the new text, and results.json's data fingerprint is the data sent."""
    data = tmp_path / "financemath"
    data.mkdir()
    shutil.copyfile(data_dir / "financemath" / "validation.json", data / "validation.json")
    env = {"LM_HARNESS_CACHE_PATH": str(tmp_path / "requests-cache")}
    marker = "EDITED IN PLACE: "
    fingerprints = []
    splits = []
    sent = []
    for edit in (False, True):
        if edit:
            records = json.loads((data / "validation.json").read_text(encoding="utf-8"))
            records[0]["question"] = marker + records[0]["question"]
            (data / "validation.json").write_text(json.dumps(records), encoding="utf-8")
        out = tmp_path / f"out-{edit}"
        with scripted_server(lambda messages: "Therefore, the answer is 1.") as server:
            run = lm_eval_cli(
                server,
                COT,
                "--limit",
                "1",
                "--cache_requests",
                "true",
                "--output_path",
                str(out),
                *_metadata({"data_dir": str(data)}),
                env=env,
            )
        _ok(run)
        [request] = server.requests
        sent.append(request["messages"][-1]["content"])
        results, _ = _outputs(out)
        config = results["configs"][COT]
        splits.append(config["test_split"])
        fingerprints.append(config["metadata"]["data"]["fingerprint"])
    assert list((tmp_path / "requests-cache").iterdir())  # the cache was written
    assert marker not in sent[0]
    assert marker in sent[1]
    assert fingerprints[0] != fingerprints[1]
    assert splits == ["validation", "validation"]  # the task's default split, named
