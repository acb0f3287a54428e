"""lm_eval's own options on our tasks: each does what an lm_eval user expects, or stops
with one line saying why, before any model call.

Most runs use the packaged demo split of knowledgefmath (no benchmark data); the ones
marked ``realdata`` read ``../shared/data``."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "lm_eval", reason='lm-evaluation-harness is not installed (the "lm-eval" extra)'
)

from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager
from scripted_lm import ScriptedLM, config_path, lm_eval_cli, scripted_server, task_manager

from finmath_tasks.lm_eval import config_dir
from finmath_tasks.lm_eval.bridge import Bridge
from finmath_tasks.lm_eval.settings import USER_SETTABLE
from finmath_tasks.lm_eval.task import FinmathTask, FinmathTaskError
from finmath_tasks.sandbox.bwrap import bwrap_available

DEMO = {"split": "demo"}
COT = "finmath_knowledgefmath_cot"
POT = "finmath_knowledgefmath_pot"


def _right(doc: dict[str, Any]) -> str:
    return f"Therefore, the answer is {doc['target']}."


def _load(name: str, metadata: dict[str, Any]) -> FinmathTask:
    task = task_manager(metadata).load([name])["tasks"][name]
    assert isinstance(task, FinmathTask)
    return task


# -- one task name, one data set -------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.realdata
def test_request_cache_serves_each_split_its_own_questions(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lm_eval keys its request cache by task name; ours adds what is evaluated, so a
    cached dev run never answers the test run."""
    import lm_eval.caching.cache as cache

    monkeypatch.setattr(cache, "PATH", str(tmp_path / "cache"))
    task = "finmath_tatqa_arithmetic_cot"
    seen: dict[str, dict[str, Any]] = {}
    for split in ("dev", "test", "dev"):
        results, model = _run_cached(task, split)
        expected = Bridge(
            "tatqa", {"subset": "arithmetic", "solver": "cot", "split": split}, ["rounding"]
        )
        docs = [s["doc"]["id"] for s in results["samples"][task]]
        assert docs == list(expected.samples)[:2]
        for key in docs:
            question = (expected.samples[key].metadata or {})["question"]
            assert question in model.sent[key][-1]["content"], (split, key)
            assert model.sent[key] == expected.turn(key)
        seen.setdefault(split, {"docs": docs})
    assert set(seen["dev"]["docs"]).isdisjoint(seen["test"]["docs"])
    # a cache file per split: the second dev run read the first's
    assert len(list((tmp_path / "cache").iterdir())) == 2


def _run_cached(task: str, split: str) -> tuple[dict[str, Any], ScriptedLM]:
    model = ScriptedLM(lambda doc: "")
    results = simple_evaluate(
        model=model,
        tasks=[task],
        limit=2,
        cache_requests=True,
        apply_chat_template=True,
        log_samples=True,
        task_manager=TaskManager(
            include_path=str(config_dir()), include_defaults=False, metadata={"split": split}
        ),
        bootstrap_iters=0,
    )
    assert results is not None
    return results, model


def test_model_arguments_never_set_the_task() -> None:
    """lm_eval merges --model_args into task metadata (as its CLI does below): a model's
    ``revision`` is not the data set's."""

    def run(model_args: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
        results = simple_evaluate(
            model=ScriptedLM(_right),
            model_args=model_args,
            tasks=[COT],
            limit=2,
            apply_chat_template=True,
            task_manager=TaskManager(
                include_path=str(config_dir()),
                include_defaults=False,
                metadata=model_args | metadata,  # what lm_eval's CLI builds
            ),
            bootstrap_iters=0,
        )
        assert results is not None
        return dict(results["configs"][COT]["metadata"])

    plain = run({}, DEMO)
    with_model = run({"revision": "main", "pretrained": "some/model", "seed": 7}, DEMO)
    assert with_model["inspect_args"] == plain["inspect_args"] == {"solver": "cot", **DEMO}
    assert with_model["identity"] == plain["identity"]
    # the same key given in --metadata with its own value is the user's setting: it reaches
    # the task, which refuses a revision beside the packaged demo (it would change nothing)
    with pytest.raises(
        FinmathTaskError, match=r'"revision": "0123abc"}. applies only to split=validation'
    ):
        run({"revision": "main"}, {**DEMO, "revision": "0123abc"})


def test_an_unknown_metadata_key_is_an_error_listing_the_settings() -> None:
    with pytest.raises(FinmathTaskError) as raised:
        _load(COT, {**DEMO, "datadir": "/somewhere"})
    message = str(raised.value)
    assert "'datadir'" in message and "\n" not in message
    for key in USER_SETTABLE:
        assert key in message
    with pytest.raises(FinmathTaskError, match="'solver'"):
        _load(COT, {**DEMO, "solver": "critic"})


def _truncated_tatqa(tmp_path: Path, data_dir: Path) -> str:
    folder = tmp_path / "tatqa"
    folder.mkdir()
    text = (data_dir / "tatqa" / "tatqa_dataset_dev.json").read_text(encoding="utf-8")
    (folder / "tatqa_dataset_dev.json").write_text(text[: len(text) // 2], encoding="utf-8")
    return str(tmp_path)


@pytest.mark.parametrize(
    ("task", "metadata", "says"),
    [
        (POT, {"split": "nope"}, """--metadata '{"split": "nope"}'"""),
        (POT, {**DEMO, "sandbox": "nope"}, """--metadata '{"sandbox": "nope"}'"""),
        # a task without programs: a PoT task checks its sandbox before its data
        (COT, {"split": "validation", "data_dir": "/nonexistent/finmath"}, "/nonexistent/finmath"),
        ("finmath_mathhay_32k", {"data_dir": "/nonexistent/finmath"}, "/nonexistent/finmath"),
        ("finmath_tatqa_arithmetic_cot", {"data_dir": "TRUNCATED"}, "tatqa_dataset_dev.json"),
    ],
    ids=["bad split", "unknown sandbox", "no data", "no MathHay data", "truncated data"],
)
def test_task_errors_are_one_line_in_lm_eval_terms(
    task: str, metadata: dict[str, Any], says: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if metadata.get("data_dir") == "TRUNCATED":
        metadata = {"data_dir": _truncated_tatqa(tmp_path, request.getfixturevalue("data_dir"))}
    with pytest.raises(FinmathTaskError) as raised:
        _load(task, metadata)
    message = str(raised.value)
    assert message.startswith(f"{task}: ")
    assert says in message
    assert "-T " not in message and "\n" not in message


# -- failures before spending, and one failed sample -----------------------------------------


@pytest.mark.slow
def test_cli_an_unusable_sandbox_stops_before_the_first_model_call(tmp_path: Path) -> None:
    # no Docker engine at this address, whether or not one runs on this machine
    no_engine = {"DOCKER_HOST": f"unix://{tmp_path / 'no-docker.sock'}"}
    with scripted_server(
        lambda messages: "```python\ndef solution():\n    return 1.0\n```"
    ) as server:
        run = lm_eval_cli(
            server,
            POT,
            "--limit",
            "2",
            "--confirm_run_unsafe_code",
            "--metadata",
            json.dumps({**DEMO, "sandbox": "docker"}),
            env=no_engine,
        )
    assert run.returncode != 0
    assert server.requests == []
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("lm_eval: finmath_knowledgefmath_pot: the finmath_docker sandbox")
    assert "Traceback" not in run.stderr


@pytest.mark.slow
def test_cli_unknown_metadata_key_is_one_line(tmp_path: Path) -> None:
    with scripted_server() as server:
        run = lm_eval_cli(server, COT, "--limit", "1", "--metadata", '{"datadir": "/x"}')
    assert run.returncode != 0 and server.requests == []
    assert "Traceback" not in run.stderr
    assert (
        run.stderr.strip()
        .splitlines()[-1]
        .startswith("lm_eval: finmath_knowledgefmath_cot: --metadata 'datadir' is not a setting")
    )


def _four_right_answers(task: Any) -> tuple[dict[str, Any], dict[Any, dict[str, Any]]]:
    """lm_eval's run of ``task``'s first four samples, each answered right: its results
    and its logged samples by document id."""
    results = simple_evaluate(
        model=ScriptedLM(_right),
        tasks=[task],
        limit=4,
        apply_chat_template=True,
        log_samples=True,
        bootstrap_iters=0,
    )
    assert results is not None
    return results, {s["doc"]["id"]: s for s in results["samples"][COT]}


@pytest.mark.slow
def test_a_scorer_error_fails_that_sample_only() -> None:
    task = _load(COT, DEMO)
    [first, *_] = task.bridge.samples
    scorer = task.bridge.scorers["financemath"]

    async def breaks_on_first(state: Any, target: Any) -> Any:
        if str(state.sample_id) == first:
            raise ZeroDivisionError("scorer bug")
        return await scorer(state, target)

    task.bridge.scorers["financemath"] = breaks_on_first  # type: ignore[assignment]
    try:
        results, samples = _four_right_answers(task)
    finally:
        task.bridge.scorers["financemath"] = scorer
    broken = samples.pop(first)
    assert broken["financemath"] == 0.0
    assert json.loads(broken["filtered_resps"][0])["error"] == "ZeroDivisionError: scorer bug"
    assert [s["financemath"] for s in samples.values()] == [1.0, 1.0, 1.0]
    assert results["results"][COT]["financemath,none"] == pytest.approx(0.75)


@pytest.mark.slow
def test_an_exception_inside_our_scorer_fails_that_sample_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Our scorers no longer catch their own exceptions (Inspect records them as the
    sample's error); lm_eval has no fail_on_error, so the bridge's own boundary scores
    that sample 0 with the reason and the run goes on."""
    import finmath_tasks.scorers.numeric as numeric

    task = _load(COT, DEMO)
    [first, *_] = task.bridge.samples
    gold = str(task.bridge.samples[first].target)
    read_gold = numeric._gold

    def breaks_on_first(target: Any, metadata: Any) -> Any:
        if target.text == gold:
            raise KeyError("a bug deep in the scorer")
        return read_gold(target, metadata)

    monkeypatch.setattr(numeric, "_gold", breaks_on_first)
    results, samples = _four_right_answers(task)
    broken = samples.pop(first)
    assert broken["financemath"] == 0.0
    assert (
        json.loads(broken["filtered_resps"][0])["error"] == "KeyError: 'a bug deep in the scorer'"
    )
    assert [s["financemath"] for s in samples.values()] == [1.0, 1.0, 1.0]
    assert results["results"][COT]["financemath,none"] == pytest.approx(0.75)


# -- lm_eval's own parts ---------------------------------------------------------------------


@pytest.mark.slow
def test_every_metric_has_a_numeric_stderr_and_cot_pot_groups_no_pooled_row() -> None:
    replies = {0: "", 1: "no idea"}

    def reply(doc: dict[str, Any]) -> str:
        return replies.get(int(doc["id"].split("-")[-1]) % 3, _right(doc))

    results = simple_evaluate(
        model=ScriptedLM(reply),
        tasks=["finmath_knowledgefmath"],
        limit=6,
        apply_chat_template=True,
        confirm_run_unsafe_code=True,
        task_manager=task_manager({**DEMO, "sandbox": "local"}),
    )
    assert results is not None
    for name in (COT, POT):
        row = results["results"][name]
        metrics = [k for k in row if k.endswith(",none") and "_stderr" not in k]
        # beside each score its error classes, counted (a count has no standard error)
        counts = [k for k in metrics if k.endswith("_error_classes,none")]
        metrics = [k for k in metrics if k not in counts]
        assert len(metrics) >= 3 and len(counts) == len(metrics)
        for key in metrics:
            stderr = row[key.replace(",none", "_stderr,none")]
            assert isinstance(stderr, float) and math.isfinite(stderr), (name, key, stderr)
            assert sum(row[key.replace(",none", "_error_classes,none")].values()) == 6
        for key in counts:
            assert row[key.replace(",none", "_stderr,none")] == "N/A"
    # CoT and PoT answer the same questions: no row pools them (it would count each
    # question twice, with a standard error as if the two answers were independent)
    # (a tag selects the two, so there is no row of the tag's name at all)
    assert "finmath_knowledgefmath" not in (results.get("groups") or {})
    assert "finmath_knowledgefmath" not in results["results"]
    cot = results["results"][COT]
    assert cot["financemath,none"] == pytest.approx(2 / 6)
    # lm_eval's closed-form standard error of a mean: sample sd / sqrt(n)
    assert cot["financemath_stderr,none"] == pytest.approx(math.sqrt((2 / 6) * (4 / 6) * 6 / 5 / 6))


@pytest.mark.slow
@pytest.mark.bwrap
def test_logged_samples_show_the_answer_and_the_program_run() -> None:
    ok, reason = bwrap_available()
    if not ok:
        pytest.skip(f"bubblewrap: {reason}")
    programs = [
        "```python\ndef solution():\n    return {target}\n```",
        "```python\ndef solution():\n    return 1 / 0\n```",
        "I would rather not write a program.",
    ]

    def reply(doc: dict[str, Any]) -> str:
        return programs[int(doc["id"].split("-")[-1]) % 3].format(target=doc["target"])

    results = simple_evaluate(
        model=ScriptedLM(reply),
        tasks=[POT],
        limit=3,
        apply_chat_template=True,
        log_samples=True,
        confirm_run_unsafe_code=True,
        bootstrap_iters=0,
        task_manager=task_manager({**DEMO, "sandbox": "bwrap"}),
    )
    assert results is not None
    verdicts = [json.loads(s["filtered_resps"][0]) for s in results["samples"][POT]]
    right, raised, none = verdicts
    assert right["program"]["ok"] is True
    assert right["program"]["value"] == pytest.approx(float(results["samples"][POT][0]["target"]))
    assert right["answer"] and right["scores"]["financemath"] == 1.0
    assert right["rules"]["financemath"]
    assert raised["program"]["ok"] is False and "ZeroDivisionError" in raised["program"]["error"]
    assert none["scores"]["execution_rate"] == 0.0 and none["program"]["error"]
    for sample in results["samples"][POT]:
        # the prompt is logged once: in the request, not in the document
        assert set(sample["doc"]) == {"id", "target"}
    cot, _ = _cot_samples()
    assert cot["answer"] == "14685.0" and "explanation" in cot


def _cot_samples() -> tuple[dict[str, Any], dict[str, Any]]:
    results = simple_evaluate(
        model=ScriptedLM(_right),
        tasks=[COT],
        limit=1,
        apply_chat_template=True,
        log_samples=True,
        bootstrap_iters=0,
        task_manager=task_manager(DEMO),
    )
    assert results is not None
    [sample] = results["samples"][COT]
    return json.loads(sample["filtered_resps"][0]), sample


def test_program_tasks_ask_for_confirmation() -> None:
    with pytest.raises(ValueError, match="unsafe"):
        simple_evaluate(
            model=ScriptedLM(_right),
            tasks=[POT],
            limit=1,
            task_manager=task_manager({**DEMO, "sandbox": "local"}),
            bootstrap_iters=0,
        )


def test_num_fewshot_is_the_exemplars_sent() -> None:
    results = simple_evaluate(
        model=ScriptedLM(_right),
        tasks=[COT],
        limit=1,
        apply_chat_template=True,
        task_manager=task_manager(DEMO),
        bootstrap_iters=0,
    )
    assert results is not None and results["n-shot"][COT] == 0
    with pytest.raises(FinmathTaskError, match="num_fewshot 3 is not what the task sends"):
        simple_evaluate(
            model=ScriptedLM(_right),
            tasks=[COT],
            num_fewshot=3,
            limit=1,
            task_manager=TaskManager(
                include_path=str(config_dir()), include_defaults=False, metadata=DEMO
            ),
            bootstrap_iters=0,
        )


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("name", "shots"), [("finmath_finqa_rag_cot", 12), ("finmath_sara_tax", 8)]
)
def test_n_shot_counts_exemplar_turns(name: str, shots: int, data_dir: Path) -> None:
    task = _load(name, {})
    assert task.config.num_fewshot == shots
    sent = task.bridge.turn(next(iter(task.bridge.samples)))
    assert [m["role"] for m in sent].count("assistant") == shots


def _including(tmp_path: Path, extra: str) -> TaskManager:
    folder = tmp_path / "mine"
    folder.mkdir(exist_ok=True)
    (folder / "mine.yaml").write_text(
        f"include: {config_path(COT)}\ntask: my_cot\n{extra}", encoding="utf-8"
    )
    return TaskManager(
        include_path=[str(config_dir()), str(folder)], include_defaults=False, metadata=DEMO
    )


def test_an_including_config_overrides_generation_repeats_and_filters(tmp_path: Path) -> None:
    manager = _including(
        tmp_path,
        "generation_kwargs: {max_gen_toks: 77}\nrepeats: 2\n"
        "filter_list:\n  - name: upper\n    filter:\n      - function: uppercase\n",
    )
    replies = iter([_right, lambda doc: "no idea"] * 4)
    model = ScriptedLM(lambda doc: next(replies)(doc))
    results = simple_evaluate(
        model=model,
        tasks=["my_cot"],
        limit=2,
        apply_chat_template=True,
        log_samples=True,
        task_manager=manager,
        bootstrap_iters=0,
    )
    assert results is not None
    assert {k["max_gen_toks"] for k in model.gen_kwargs.values()} == {77}
    assert model.calls == 4  # two replies per document
    samples = results["samples"]["my_cot"]
    assert [s["filter"] for s in samples] == ["upper", "upper"]
    for sample in samples:
        # each reply (a request of its own) scored after the user's filter, the sample's
        # value their mean
        assert len(sample["filtered_resps"]) == 2
        assert sample["financemath"] == 0.5
    assert results["results"]["my_cot"]["financemath,upper"] == 0.5


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ("doc_to_text: '{{question}}'\n", "doc_to_text"),
        ("metadata: {version: 99}\n", "metadata version 99"),
        ("num_fewshot: 5\n", "num_fewshot 5"),
    ],
)
def test_an_override_the_task_cannot_honour_is_refused(
    tmp_path: Path, extra: str, says: str
) -> None:
    with pytest.raises(FinmathTaskError, match=says):
        _including(tmp_path, extra).load(["my_cot"])


# -- cheap --limit, messages, the process's hooks --------------------------------------------


@pytest.mark.slow
def test_limit_renders_only_the_samples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    task = _load(COT, DEMO)
    rendered: list[str] = []
    render = Bridge.render

    def counting(self: Bridge, keys: Any = None) -> Any:
        rendered.extend(keys or [])
        return render(self, keys)

    monkeypatch.setattr(Bridge, "render", counting)
    task.bridge._rendered.clear()
    results = simple_evaluate(
        model=ScriptedLM(_right),
        tasks=[task],
        limit=2,
        apply_chat_template=True,
        bootstrap_iters=0,
    )
    assert results is not None
    assert sorted(set(rendered)) == sorted(list(task.bridge.samples)[:2])


PEAK_LIMIT_BYTES = 500_000_000
"""The lm-eval bridge's target for ``finmath_mathhay_32k --limit 2``: a peak below 500 MB
(decimal megabytes, the stricter reading: 476.8 MiB)."""


@pytest.mark.slow
@pytest.mark.realdata
def test_mathhay_limit_2_peaks_below_500_mb(data_dir: Path) -> None:
    """`lm_eval run --tasks finmath_mathhay_32k --limit 2` through lm_eval's CLI, in a
    process of its own, peaks below 500 MB (its ``ru_maxrss``).

    Measured as a user of the ``lm-eval`` extra runs it: that extra installs no torch, but
    lm_eval imports torch wherever it is installed (about 560 MiB), and torch is installed
    here for the ``dense`` extra. So the process runs with torch hidden from the import
    system (``scripted_lm.HIDE_TORCH``), as where it is not installed; nothing else is
    hidden or disabled, ours included, and if anything in the run needed torch the run
    would fail, and this test with it. With torch installed, the same run peaks near
    1 GB, nearly all of it torch: benchmarks/lm_eval_mathhay_memory.py prints both, with
    the breakdown. Building all 673 haystacks (what ``--limit`` once did) peaked at 2.1 GB;
    the two rendered here peak at about 420 MiB (440 MB)."""
    reply = json.dumps({"relevant_quantity_cells": [], "reasoning": "r", "answer": 1.0})
    with scripted_server(lambda messages: reply) as server:
        run = lm_eval_cli(server, "finmath_mathhay_32k", "--limit", "2", without_torch=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(server.requests) == 2
    peak = run.peak_kb * 1024
    print(f"finmath_mathhay_32k --limit 2: peak RSS {peak / 2**20:.0f} MiB ({peak / 1e6:.0f} MB)")
    assert 0 < peak < PEAK_LIMIT_BYTES


@pytest.mark.realdata
def test_a_split_without_answers_says_why_there_is_no_score(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING"):
        _load(COT, {"split": "test"})
    assert any("no gold answers" in r.getMessage() for r in caplog.records)


HOOK_CHECK = """
import sys
from inspect_ai.model import get_model
from finmath_tasks.lm_eval.bridge import Bridge

def lm_eval_hook(*args):
    pass

sys.excepthook = lm_eval_hook
if sys.argv[1] == "bridge":
    bridge = Bridge("knowledgefmath", {"split": "demo", "solver": "cot"}, ["financemath"])
    bridge.render(list(bridge.samples)[:1])
    bridge.verdicts(next(iter(bridge.samples)), "Therefore, the answer is 1.")
else:
    get_model("mockllm/model")  # Inspect itself, without the bridge
print(sys.excepthook is lm_eval_hook)
"""


@pytest.mark.slow
@pytest.mark.parametrize(("through", "kept"), [("bridge", "True"), ("inspect", "False")])
def test_inspect_does_not_replace_the_exception_hook(through: str, kept: str) -> None:
    """Inspect installs its exception hook once per process, when a model is first built
    (it exits silently on Ctrl-C): the bridge builds models and lm_eval's hook stays; Inspect
    alone replaces it (the control). Each in a fresh process."""
    import subprocess

    run = subprocess.run(
        [sys.executable, "-c", HOOK_CHECK, through], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split()[-1] == kept


def test_values_are_means_of_the_scored_samples() -> None:
    """An unscored sample (NaN) is left out of lm_eval's mean, as Inspect leaves it out."""
    task = _load(COT, DEMO)
    results = task._process_results(
        {"id": "x"},
        [[{"scores": {"financemath": math.nan, "knowledgefmath2023": 1.0, "tolerant": 0.0}}]],
    )
    # the unscored score has no class either; a 0 without a class is unclassified
    assert results == {
        "knowledgefmath2023": 1.0,
        "knowledgefmath2023_error_classes": ["correct"],
        "tolerant": 0.0,
        "tolerant_error_classes": ["unclassified"],
    }
