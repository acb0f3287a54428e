"""What reaches the model under lm_eval is what the user asked for: whole prompts (or a
clear stop), the current generation settings (whatever the request cache holds), one seed
per repeat, settings that apply or are refused. Every request is captured by a scripted
OpenAI-compatible server on loopback (``scripted_lm.scripted_server``).

Most runs use the packaged demo split of knowledgefmath (no benchmark data); the ones
marked ``realdata`` read ``../shared/data``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "lm_eval", reason='lm-evaluation-harness is not installed (the "lm-eval" extra)'
)

from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager
from lm_eval.utils import sanitize_list
from scripted_lm import ScriptedLM, config_path, lm_eval_cli, scripted_server, task_manager

from finmath_tasks.lm_eval import config_dir
from finmath_tasks.lm_eval.bridge import _BRIDGES, Bridge, Verdict
from finmath_tasks.lm_eval.task import FinmathTaskError

DEMO = {"split": "demo"}
COT = "finmath_knowledgefmath_cot"
POT = "finmath_knowledgefmath_pot"


def _right(doc: dict[str, Any]) -> str:
    return f"Therefore, the answer is {doc['target']}."


def _chat(server: Any, **extra: str) -> str:
    args = {
        "model": "scripted",
        "base_url": server.base_url,
        "num_concurrent": "1",
        "max_retries": "1",
        "tokenized_requests": "False",
        **extra,
    }
    return ",".join(f"{k}={v}" for k, v in args.items())


def _completions(server: Any, **extra: str) -> str:
    """lm_eval's base-model path: its client tokenizes each prompt (tiktoken) and sends the
    token ids to /v1/completions."""
    args = {
        "model": "gpt-4o",  # tiktoken's o200k_base, provisioned offline by the package
        "base_url": server.base_url.replace("/chat/completions", "/completions"),
        "tokenizer_backend": "tiktoken",
        "tokenized_requests": "True",
        "num_concurrent": "1",
        "max_retries": "1",
        **extra,
    }
    return ",".join(f"{k}={v}" for k, v in args.items())


def _o200k() -> Any:
    import tiktoken

    return tiktoken.get_encoding("o200k_base")


# -- the whole prompt or a clear stop ---------------------------------------------------------


def _base_model_run(
    server: Any, task: str, limit: int, metadata: dict[str, Any] | None = None, **extra: str
) -> dict[str, Any]:
    results = simple_evaluate(
        model="local-completions",
        model_args=_completions(server, **extra),
        tasks=[task],
        limit=limit,
        log_samples=True,
        task_manager=task_manager(metadata),
        bootstrap_iters=0,
    )
    assert results is not None
    return results


@pytest.mark.realdata
def test_a_prompt_beyond_the_context_stops_before_any_request(data_dir: Path) -> None:
    """TAT-QA's arithmetic CoT on a base model with lm_eval's default context (2,048): its
    budget of 4,096 tokens leaves no room for the prompt, which lm_eval would cut to
    nothing; the run stops, naming the prompt's tokens, the budget and the options."""
    task = "finmath_tatqa_arithmetic_cot"
    with scripted_server() as server, pytest.raises(FinmathTaskError) as raised:
        _base_model_run(server, task, 2)
    assert server.requests == []
    message = str(raised.value)
    assert message.startswith(f"{task}: sample ")
    assert "the generation budget 4,096 (max_gen_toks)" in message
    assert "context of 2,047 tokens" in message
    assert "--model_args max_length=" in message and "truncate=True" in message
    assert "\n" not in message


@pytest.mark.realdata
def test_a_prompt_that_fits_is_sent_whole(data_dir: Path) -> None:
    task = "finmath_tatqa_arithmetic_cot"
    expected = Bridge(
        "tatqa", {"subset": "arithmetic", "solver": "cot", "split": "dev"}, ["rounding"]
    )
    with scripted_server(lambda prompt: "The answer is 1.") as server:
        results = _base_model_run(server, task, 2, max_length="16384")
    encoding = _o200k()
    texts = [
        "\n\n".join(m["content"] for m in expected.turn(sample["doc"]["id"]))
        for sample in results["samples"][task]
    ]
    # every token of each prompt, none cut (lm_eval sends the longest first)
    sent = sorted(request["prompt"] for request in server.requests)
    assert sent == sorted([encoding.encode(text)] for text in texts)
    assert all(len(p[0]) > 100 for p in sent), [len(p[0]) for p in sent]
    assert [r["max_tokens"] for r in server.requests] == [4096, 4096]


@pytest.mark.slow
@pytest.mark.realdata
def test_a_32k_haystack_on_a_32k_model_stops(data_dir: Path) -> None:
    """MathHay's 32,000-token prompts plus its 1,024-token budget exceed a 32K context:
    lm_eval would drop the prompt's first tokens (the documents placed first)."""
    task = "finmath_mathhay_32k"
    with scripted_server() as server, pytest.raises(FinmathTaskError) as raised:
        _base_model_run(server, task, 1, max_length="32768")
    assert server.requests == []
    message = str(raised.value)
    assert "the generation budget 1,024 (max_gen_toks)" in message
    assert "context of 32,767 tokens" in message


@pytest.mark.slow
def test_a_cut_prompt_only_when_the_user_allows_it() -> None:
    """The demo prompts do not fit 600 tokens with knowledgefmath's budget of 512: a stop;
    with ``truncate=True`` lm_eval sends them cut, as asked."""
    with scripted_server() as server, pytest.raises(FinmathTaskError, match="max_gen_toks"):
        _base_model_run(server, COT, 2, DEMO, max_length="600")
    assert server.requests == []
    with scripted_server(lambda prompt: "The answer is 1.") as server:
        _base_model_run(server, COT, 2, DEMO, max_length="600", truncate="True")
    assert len(server.requests) == 2
    # lm_eval sends a batch of token lists (one here)
    assert [[len(p) for p in r["prompt"]] for r in server.requests] == [[599 - 512]] * 2


# -- the request cache holds prompts, never generation settings ------------------------------


def _cached_run(server: Any, gen_kwargs: str | None) -> dict[str, Any]:
    results = simple_evaluate(
        model="local-chat-completions",
        model_args=_chat(server),
        tasks=[COT],
        limit=2,
        cache_requests=True,
        apply_chat_template=True,
        gen_kwargs=gen_kwargs,
        task_manager=task_manager(DEMO),
        bootstrap_iters=0,
    )
    assert results is not None
    return results


@pytest.mark.slow
@pytest.mark.parametrize("pilot_first", [True, False], ids=["pilot-then-run", "run-then-pilot"])
def test_cached_requests_carry_the_current_generation_settings(
    pilot_first: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lm_eval.caching.cache as cache

    monkeypatch.setattr(cache, "PATH", str(tmp_path / "cache"))
    pilot = "temperature=0,max_gen_toks=100"
    order = [pilot, None] if pilot_first else [None, pilot]
    sent = []
    for gen_kwargs in order:
        with scripted_server() as server:
            _cached_run(server, gen_kwargs)
        sent.append([(r["temperature"], r["max_tokens"]) for r in server.requests])
    assert len(list((tmp_path / "cache").iterdir())) == 1  # the second run read the cache
    by_run = dict(zip(order, sent, strict=True))
    assert by_run[pilot] == [(0, 100), (0, 100)]
    assert by_run[None] == [(1.0, 512), (1.0, 512)]  # knowledgefmath's own


@pytest.mark.slow
def test_the_cache_renders_only_the_documents_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--cache_requests`` with ``--limit 2`` renders two prompts (lm_eval's own cache
    renders every document); a later ``--limit 3`` renders the third alone."""
    import lm_eval.caching.cache as cache

    monkeypatch.setattr(cache, "PATH", str(tmp_path / "cache"))
    rendered: list[str] = []
    render = Bridge.render

    def counting(self: Bridge, keys: Any = None) -> Any:
        rendered.extend(keys or [])
        return render(self, keys)

    monkeypatch.setattr(Bridge, "render", counting)
    for built in _BRIDGES.values():  # the process's bridges keep a few rendered prompts
        built._rendered.clear()
    manager = TaskManager(include_path=str(config_dir()), include_defaults=False, metadata=DEMO)
    for limit in (2, 3, 3):
        model = ScriptedLM(_right)
        results = simple_evaluate(
            model=model,
            tasks=[COT],
            limit=limit,
            cache_requests=True,
            apply_chat_template=True,
            task_manager=manager,
            bootstrap_iters=0,
        )
        assert results is not None and len(model.sent) == limit
    demo = Bridge("knowledgefmath", {"split": "demo", "solver": "cot"}, ["financemath"])
    keys = list(demo.samples)
    # the task's exemplar count reads the first sample's messages once, when it is built
    assert [k for k in rendered if k != keys[0]] == keys[1:3]
    assert rendered.count(keys[0]) <= 2


# -- repeats sample ------------------------------------------------------------------------


def test_each_repeat_is_a_request_with_its_own_seed(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "mine.yaml").write_text(
        f"include: {config_path(COT)}\ntask: my_cot\nrepeats: 3\n", encoding="utf-8"
    )
    manager = TaskManager(
        include_path=[str(config_dir()), str(folder)], include_defaults=False, metadata=DEMO
    )
    with scripted_server(lambda messages: "Therefore, the answer is 1.") as server:
        results = simple_evaluate(
            model="local-chat-completions",
            model_args=_chat(server, seed="40"),
            tasks=["my_cot"],
            limit=2,
            apply_chat_template=True,
            log_samples=True,
            task_manager=manager,
            bootstrap_iters=0,
        )
    assert results is not None
    assert len(server.requests) == 6
    by_prompt: dict[str, list[int]] = {}
    for request in server.requests:
        by_prompt.setdefault(json.dumps(request["messages"]), []).append(request["seed"])
    assert [sorted(seeds) for seeds in by_prompt.values()] == [[40, 41, 42], [40, 41, 42]]
    for sample in results["samples"]["my_cot"]:
        # recorded per sample: each repeat's request with its seed, each reply scored
        assert [a[1]["seed"] for a in sample["arguments"]] == [40, 41, 42]
        assert len(sample["filtered_resps"]) == 3


# -- every setting applies or is refused -------------------------------------------------------


def test_a_setting_no_selected_task_takes_is_an_error() -> None:
    with pytest.raises(FinmathTaskError) as raised:
        simple_evaluate(
            model=ScriptedLM(_right),
            tasks=[COT],
            limit=1,
            apply_chat_template=True,
            task_manager=task_manager({**DEMO, "sandbox": "bwrap"}),
            bootstrap_iters=0,
        )
    message = str(raised.value)
    assert message.startswith('--metadata "sandbox": no selected task takes it')
    assert POT in message and "finmath_tatqa_pot" in message and COT not in message.split(";")[1]


@pytest.mark.slow
def test_cli_a_task_setting_in_model_args_is_an_error() -> None:
    with scripted_server() as server:
        run = lm_eval_cli(server, COT, "--limit", "1", model_args="split=demo,data_dir=/nowhere")
    assert run.returncode != 0 and server.requests == []
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(f"lm_eval: {COT}: --model_args split, data_dir: are task settings")
    assert """--metadata '{"split": "demo", "data_dir": "/nowhere"}'""" in last


@pytest.mark.slow
def test_cli_metadata_wins_over_the_model_argument_and_says_so(tmp_path: Path) -> None:
    # revision is the setting lm_eval's models and our tasks share; the demo split is
    # packaged, so the task, given the metadata's revision, refuses it as doing nothing:
    # the run says which value it took, then stops before any request
    with scripted_server() as server:
        run = lm_eval_cli(
            server,
            COT,
            "--limit",
            "1",
            "--output_path",
            str(tmp_path / "out"),
            "--metadata",
            json.dumps({**DEMO, "revision": "main"}),
            model_args="revision=main",
        )
    assert 'revision is "main", from --metadata' in run.stderr
    assert run.returncode != 0 and server.requests == []
    last = run.stderr.strip().splitlines()[-1]
    assert """--metadata '{"revision": "main"}' applies only to split=validation""" in last


# -- machine-readable results ------------------------------------------------------------------


def test_filtered_resps_are_json_and_the_config_names_the_run() -> None:
    results = simple_evaluate(
        model=ScriptedLM(lambda doc: "I cannot say."),
        tasks=[COT],
        limit=1,
        apply_chat_template=True,
        log_samples=True,
        task_manager=task_manager(DEMO),
        bootstrap_iters=0,
    )
    assert results is not None
    [sample] = results["samples"][COT]
    [text] = sanitize_list(sample["filtered_resps"])  # what lm_eval writes
    verdict = json.loads(text)
    assert verdict["answer"] is None and verdict["no_answer"]
    assert verdict["scores"]["financemath"] == 0.0
    assert json.loads(str(Verdict(scores={"x": math.nan}))) == {"scores": {"x": None}}
    metadata = results["configs"][COT]["metadata"]
    settings = metadata["inspect_settings"]
    assert settings["split"] == "demo" and settings["solver"] == "cot"
    assert "revision" in settings and "data_dir" in settings  # defaults filled in
    assert metadata["data"]["fingerprint"] and metadata["data"]["source"]
    assert metadata["sandbox"] is None


def test_the_config_names_the_sandbox_used() -> None:
    task = task_manager({**DEMO, "sandbox": "local"}).load([POT])["tasks"][POT]
    metadata = task.dump_config()["metadata"]
    assert metadata["sandbox"]["type"] == "local"


@pytest.mark.parametrize(
    ("metadata", "says"),
    [
        (
            {"split": "validation", "revision": "main", "data_dir": "/nonexistent/data"},
            "revision reads the Hub; data_dir reads a folder: choose one "
            """(--metadata '{"revision": "main"}' was given with """
            """--metadata '{"data_dir": "/nonexistent/data"}')""",
        ),
        # the colon after the folder is the message's, not part of the path
        (
            {"split": "validation", "data_dir": "/nonexistent/data"},
            """--metadata '{"data_dir": "/nonexistent/data"}': no such directory""",
        ),
    ],
    ids=["revision and data_dir", "no such folder"],
)
def test_data_source_errors_quote_the_settings(metadata: dict[str, Any], says: str) -> None:
    with pytest.raises(FinmathTaskError) as raised:
        task_manager(metadata).load([COT])
    assert says in str(raised.value)


@pytest.mark.realdata
def test_a_kept_bridge_reads_a_data_file_edited_in_place_again(
    data_dir: Path, tmp_path: Path
) -> None:
    """The process keeps each task's bridge (its loaded samples); a data file edited in
    place (same ids and golds) is read again, from Python as from the command line."""
    import shutil

    from finmath_tasks.lm_eval.bridge import bridge

    data = tmp_path / "financemath"
    data.mkdir()
    shutil.copyfile(data_dir / "financemath" / "validation.json", data / "validation.json")
    args = {"solver": "cot", "data_dir": str(data)}
    first = bridge("knowledgefmath", args, ["financemath"])
    assert bridge("knowledgefmath", args, ["financemath"]) is first  # unchanged: kept
    records = json.loads((data / "validation.json").read_text(encoding="utf-8"))
    key = str(records[0]["question_id"])
    records[0]["question"] = "EDITED IN PLACE: " + records[0]["question"]
    (data / "validation.json").write_text(json.dumps(records), encoding="utf-8")
    second = bridge("knowledgefmath", args, ["financemath"])
    assert second is not first
    assert "EDITED IN PLACE: " in second.turn(key)[-1]["content"]
    assert "EDITED IN PLACE: " not in first.turn(key)[-1]["content"]
    assert second.identity() != first.identity()  # the request cache's key too


def test_the_model_inside_lm_eval_wrappers_decides(tmp_path: Path) -> None:
    """``--use_cache``'s caching model forwards ``tok_encode`` and ``max_length`` to a chat
    model: the checks see the chat model (no context check, its seed per repeat), through
    any number of forwarding wrappers."""
    from lm_eval.api.model import CachingLM
    from lm_eval.models.openai_completions import LocalChatCompletion

    from finmath_tasks.lm_eval.requests import called_model, context_limit, repeat_seeds

    chat = LocalChatCompletion(
        model="scripted",
        base_url="http://127.0.0.1:9/v1/chat/completions",
        tokenized_requests=False,
        seed=40,
    )
    cached = CachingLM(chat, str(tmp_path / "cache.db"))
    assert isinstance(cached.max_length, int)  # forwarded: what misled the check

    class Forwarding:
        def __init__(self, lm: Any) -> None:
            self.lm = lm

        def __getattr__(self, name: str) -> Any:
            return getattr(self.lm, name)

    for wrapped in (chat, cached, Forwarding(cached)):
        assert called_model(wrapped) is chat
        assert context_limit(wrapped) is None
        assert repeat_seeds(wrapped, 3) == [40, 41, 42]
    assert called_model(None) is None
