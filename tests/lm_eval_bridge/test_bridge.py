"""The lm-eval bridge's pieces: the CLI, the configurations, generation settings, refusals.

The tests that need lm_eval skip when the ``lm-eval`` extra is not installed; the others
(the CLI's message without it, the Inspect side of the bridge) run everywhere."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from inspect_ai.model import GenerateConfig

from finmath_tasks.cli.main import main
from finmath_tasks.lm_eval import (
    CONFIG_DIR_ENV,
    INSTALL_HINT,
    config_dir,
    config_files,
    lm_eval_installed,
)
from finmath_tasks.lm_eval.bridge import UNSET_MAX_TOKENS, Bridge, BridgeError, generation_kwargs
from finmath_tasks.tasks.knowledgefmath.task import TASK_VERSION as KNOWLEDGEFMATH_VERSION

needs_lm_eval = pytest.mark.skipif(
    not lm_eval_installed(), reason='lm-evaluation-harness is not installed (the "lm-eval" extra)'
)

TASKS = {f"finmath_{p.parent.parent.name}_{p.stem}" for p in config_files() if p.stem != "group"}
"""Each benchmark's task configurations, named by their files: ``tasks/<benchmark>/lm_eval/
<name>.yaml`` is the lm_eval task ``finmath_<benchmark>_<name>`` (read from the folders, so a
new benchmark's configurations are checked with no list edited)."""
GROUPS = {f"finmath_{p.parent.parent.name}" for p in config_files() if p.stem == "group"}
"""A benchmark's ``lm_eval/group.yaml`` is the group ``finmath_<benchmark>``."""
DISTINCT_QUESTIONS = GROUPS
"""The groups: their tasks ask distinct questions, and each has an aggregate row."""
TAGS = {"finmath_knowledgefmath", "finmath_tatqa", "finmath_tatqa_arithmetic"}
"""CoT and PoT on the same questions: selected by a tag (no group, so no row pools them
and lm_eval prints each task at the top level, not under the group printed above)."""


def _configs() -> list[dict[str, Any]]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))  # type: ignore[arg-type, return-value]
    return [yaml.load(p.read_text(encoding="utf-8"), Loader=Loader) for p in config_files()]


def test_path_prints_the_config_folder(capsys: pytest.CaptureFixture[str]) -> None:
    if not lm_eval_installed():
        pytest.skip("lm-evaluation-harness is not installed (the lm-eval extra)")
    assert main(["lm-eval", "path"]) == 0
    assert capsys.readouterr().out.strip() == str(config_dir())


def test_path_without_the_extra_says_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "lm_eval", None)  # as if it were not installed
    assert not lm_eval_installed()
    assert main(["lm-eval", "path"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert INSTALL_HINT in captured.err and "lm-eval" in captured.err


def _tags(configs: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each tag of our task configs and the tasks it selects."""
    tags: dict[str, list[str]] = {}
    for config in configs:
        tag = config.get("tag") or []
        for name in [tag] if isinstance(tag, str) else tag:
            tags.setdefault(name, []).append(config["task"])
    return tags


def _questions(config: dict[str, Any]) -> str:
    """What decides a task's questions: its benchmark and every argument but the solver."""
    spec = config["finmath"]
    args = {k: v for k, v in spec["args"].items() if k != "solver"}
    return json.dumps([spec["task"], args], sort_keys=True)


def test_groups_with_an_aggregate_row_are_exactly_those_of_distinct_questions() -> None:
    configs = _configs()
    by_name = {c["task"]: c for c in configs if "group" not in c}
    with_row = {c["group"] for c in configs if "group" in c and c.get("aggregate_metric_list")}
    assert with_row == DISTINCT_QUESTIONS == {c["group"] for c in configs if "group" in c}
    tags = _tags(configs)
    assert set(tags) == TAGS
    for tag, members in tags.items():
        questions = {_questions(by_name[t]) for t in members}
        assert len(members) == 2 and len(questions) == 1, tag  # CoT and PoT, same questions


def test_the_configs_name_the_tasks_and_groups() -> None:
    configs = _configs()
    tasks = {c["task"] for c in configs if "task" in c and "group" not in c}
    assert tasks == TASKS
    groups = {c["group"]: c for c in configs if "group" in c}
    assert set(groups) == GROUPS
    # every task in exactly one group or tag: no selection runs a question twice (TAT-QA's
    # arithmetic questions are among all its questions: the arithmetic subset has its own tag)
    tagged = [t for members in _tags(configs).values() for t in members]
    assert sorted([t for g in groups.values() for t in g["task"]] + tagged) == sorted(TASKS)
    by_name = {c["task"]: c for c in configs if "group" not in c}
    for group in groups.values():
        members_questions = [_questions(by_name[t]) for t in group["task"]]
        # tasks on the same questions (CoT and PoT) share a tag, never a group: a group's
        # row would count each question twice with a standard error as if independent
        assert len(set(members_questions)) == len(members_questions), group["group"]
        # an aggregate row over distinct questions: each listed score is a score of at
        # least one member, and a score every member reports is listed
        listed = [m["metric"] for m in group["aggregate_metric_list"]]
        members = [set(by_name[t]["finmath"]["metrics"]) for t in group["task"]]
        assert listed and set(listed) <= set.union(*members), group["group"]
        assert set.intersection(*members) <= set(listed), group["group"]
        for entry in group["aggregate_metric_list"]:
            assert entry["aggregation"] == "mean" and entry["weight_by_size"] is True
    for config in configs:
        if "group" in config:
            continue
        assert config["class"] == "finmath_tasks.lm_eval.task.FinmathTask"
        spec = config["finmath"]
        assert config["task"].startswith(f"finmath_{spec['task']}_")
        assert spec["metrics"], config["task"]
        # lm_eval asks for --confirm_run_unsafe_code before a task that runs model code
        runs_code = spec["args"].get("solver") == "pot"
        assert config.get("unsafe_code", False) is runs_code, config["task"]
    # MathHay: exact match alone (no judge under lm_eval)
    [mathhay] = [c for c in configs if c.get("task") == "finmath_mathhay_32k"]
    assert mathhay["finmath"]["args"] == {"length": 32000, "judge": False}
    assert mathhay["finmath"]["metrics"] == ["exact_match"]


def test_the_config_folder_holds_only_lm_eval_configs() -> None:
    """lm_eval searches --include_path recursively: any other YAML there (Inspect's
    eval.yaml files) would become an lm_eval task or group."""
    found = {
        (p.parent.name, p.name): p.read_bytes() for p in config_dir().rglob("*") if p.is_file()
    }
    assert found == {(p.parent.parent.name, p.name): p.read_bytes() for p in config_files()}
    assert len(found) == len(TASKS) + len(GROUPS)


def test_the_config_folder_is_written_once_per_set_of_configs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "cache"))
    folder = config_dir()
    assert folder.parent == tmp_path / "cache"
    assert config_dir() == folder  # read, not written again
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [folder.name]
    # a changed config (an upgrade) is another folder: an older copy is never read
    [first, *_] = config_files()
    changed = tmp_path / "tasks" / first.parent.parent.name / "lm_eval" / first.name
    changed.parent.mkdir(parents=True)
    changed.write_text(first.read_text() + "# changed\n")
    monkeypatch.setattr(
        "finmath_tasks.lm_eval.config_files", lambda: sorted([changed, *config_files()[1:]])
    )
    assert config_dir() != folder


@pytest.mark.slow
@needs_lm_eval
def test_lm_eval_ls_lists_only_our_groups() -> None:
    """`lm_eval ls groups --include_path "$(finmath lm-eval path)"`: the groups whose
    configs are in our folder are the finmath_* groups; those of distinct questions each
    with an aggregate metric."""
    import subprocess

    from lm_eval.tasks import TaskManager

    path = subprocess.run(
        [sys.executable, "-m", "finmath_tasks.cli", "lm-eval", "path"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    listed = subprocess.run(
        [sys.executable, "-m", "lm_eval", "ls", "groups", "--include_path", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    ours = {
        cells[1].strip()
        for line in listed.splitlines()
        if path in line and len(cells := line.split("|")) > 2
    }
    assert ours == GROUPS
    manager = TaskManager(include_path=path)
    assert set(manager.all_tasks) >= TASKS | GROUPS | TAGS
    for name in GROUPS:
        assert manager.task_index[name].yaml_path is not None
        config = yaml.safe_load(manager.task_index[name].yaml_path.read_text())
        assert bool(config.get("aggregate_metric_list")) is (name in DISTINCT_QUESTIONS), name


def test_generation_settings_are_the_tasks() -> None:
    assert generation_kwargs(GenerateConfig(temperature=1.0, top_p=1.0, max_tokens=512)) == {
        "until": [],
        "temperature": 1.0,
        "do_sample": True,
        "top_p": 1.0,
        "max_gen_toks": 512,
    }
    assert generation_kwargs(GenerateConfig(temperature=0.0)) == {
        "until": [],
        "temperature": 0.0,
        "do_sample": False,
        "max_gen_toks": UNSET_MAX_TOKENS,
    }
    assert generation_kwargs(GenerateConfig()) == {"until": [], "max_gen_toks": UNSET_MAX_TOKENS}


def test_demo_prompts_and_verdicts_come_from_the_inspect_task() -> None:
    from finmath_tasks.tasks.knowledgefmath.dataset import COT_SYSTEM_PROMPT, render_prompt

    bridge = Bridge(
        "knowledgefmath", {"split": "demo", "solver": "cot"}, ["financemath", "tolerant"]
    )
    documents = bridge.documents()
    assert len(documents) == len(bridge.samples) == 15
    assert bridge.rows() == [{"id": d["id"], "target": d["target"]} for d in documents]
    assert bridge.exemplars() == 0
    for document in documents:
        sample = bridge.samples[document["id"]]
        metadata = sample.metadata or {}
        messages = json.loads(document["messages"])
        assert messages == [
            {"role": "system", "content": COT_SYSTEM_PROMPT},
            {"role": "user", "content": render_prompt(metadata["question"], metadata["tables"])},
        ]
        assert document["prompt"] == messages[-1]["content"]
        gold = float(sample.target)  # type: ignore[arg-type]
        right = bridge.score(document["id"], f"Therefore, the answer is {gold}.")
        assert right == {"financemath": 1.0, "tolerant": 1.0}
        wrong = bridge.score(document["id"], f"Therefore, the answer is {gold * 3 + 7}.")
        assert wrong == {"financemath": 0.0, "tolerant": 0.0}
    assert bridge.aggregate("financemath", [1.0, 0.0, 1.0, 1.0]) == 0.75


def test_a_second_model_call_is_refused() -> None:
    bridge = Bridge(
        "knowledgefmath", {"split": "demo", "solver": "cot", "knowledge": "llm_kb"}, ["financemath"]
    )
    with pytest.raises(BridgeError, match="runs under Inspect only"):
        bridge.render()


def test_an_unknown_score_name_is_refused() -> None:
    with pytest.raises(BridgeError, match="no score named nope"):
        Bridge("knowledgefmath", {"split": "demo", "solver": "cot"}, ["financemath", "nope"])


@needs_lm_eval
def test_lm_eval_runs_the_demo_split() -> None:
    """lm_eval's evaluator end to end, without benchmark data (the packaged demo split)."""
    from scripted_lm import run_lm_eval

    results, model = run_lm_eval(
        "finmath_knowledgefmath_cot",
        lambda doc: (
            f"Therefore, the answer is {doc['target']}." if int(doc["id"][-1:] or 0) % 2 else ""
        ),
        15,
        metadata={"split": "demo"},
    )
    samples = results["samples"]["finmath_knowledgefmath_cot"]
    assert len(samples) == len(model.sent) == 15
    expected = [1.0 if int(s["doc"]["id"][-1:] or 0) % 2 else 0.0 for s in samples]
    assert [s["financemath"] for s in samples] == expected
    summary = results["results"]["finmath_knowledgefmath_cot"]
    assert summary["financemath,none"] == pytest.approx(sum(expected) / 15)
    # lm_eval's task version is the Inspect task's
    version = results["configs"]["finmath_knowledgefmath_cot"]["metadata"]["version"]
    assert version == KNOWLEDGEFMATH_VERSION
    for sent in model.sent.values():
        assert [m["role"] for m in sent] == ["system", "user"]


@needs_lm_eval
def test_local_chat_completions_sends_the_inspect_messages() -> None:
    """lm_eval's own OpenAI-compatible client (``local-chat-completions``, the model users
    run) against a stub server on loopback: the request carries exactly the messages and
    generation settings of the Inspect task, and the reply is scored by its scorers."""
    from lm_eval import simple_evaluate
    from scripted_lm import scripted_server, task_manager

    from finmath_tasks.tasks.knowledgefmath.task import GENERATE_CONFIG

    bridge = Bridge("knowledgefmath", {"split": "demo", "solver": "cot"}, ["financemath"])
    gold = {json.dumps(json.loads(d["messages"])): d["target"] for d in bridge.documents()}
    answered = 0

    def reply(messages: list[dict[str, str]]) -> str:
        nonlocal answered
        answered += 1
        target = gold[json.dumps(messages)]
        return f"Therefore, the answer is {target}." if answered != 2 else "No idea."

    with scripted_server(reply) as server:
        results = simple_evaluate(
            model="local-chat-completions",
            model_args=(
                f"model=stub,base_url={server.base_url},"
                "num_concurrent=1,max_retries=1,tokenized_requests=False"
            ),
            tasks=["finmath_knowledgefmath_cot"],
            limit=3,
            apply_chat_template=True,
            log_samples=True,
            task_manager=task_manager({"split": "demo"}),
            bootstrap_iters=0,
        )
    received = server.requests
    assert results is not None
    assert len(received) == 3
    first = bridge.documents()[:3]
    assert [r["messages"] for r in received] == [json.loads(d["messages"]) for d in first]
    for request in received:
        assert request["temperature"] == GENERATE_CONFIG.temperature
        assert request["top_p"] == GENERATE_CONFIG.top_p
        assert request["max_tokens"] == GENERATE_CONFIG.max_tokens
        assert not request.get("stop")
    samples = results["samples"]["finmath_knowledgefmath_cot"]
    assert [s["financemath"] for s in samples] == [1.0, 0.0, 1.0]
    assert results["results"]["finmath_knowledgefmath_cot"]["financemath,none"] == pytest.approx(
        2 / 3
    )


@needs_lm_eval
def test_metadata_sets_only_the_arguments_a_task_takes() -> None:
    from finmath_tasks.lm_eval.task import _spec

    metadata = {"sandbox": "bwrap", "data_dir": "/data", "split": "dev", "version": "x"}
    sara = {"task": "finmath_sara_tax", "finmath": {"task": "sara", "args": {"kind": "tax"}}}
    benchmark, args, _, sandbox, given = _spec(
        {**sara, "finmath": {**sara["finmath"], "metrics": ["m"]}, "metadata": metadata}
    )
    assert benchmark == "sara"
    assert args == {"kind": "tax", "data_dir": "/data", "split": "dev"}
    # every setting given is kept: one no selected task takes is refused when the run starts
    assert given == {"sandbox": "bwrap", "data_dir": "/data", "split": "dev"}
    pot = {
        "task": "t",
        "finmath": {"task": "knowledgefmath", "args": {"solver": "pot"}, "metrics": ["m"]},
    }
    _, args, _, sandbox, _ = _spec({**pot, "metadata": metadata})
    # the sandbox is no task argument: the bridge puts it in place of the task's own
    assert args == {"solver": "pot", "data_dir": "/data", "split": "dev"}
    assert sandbox == "bwrap"
    _, _, _, sandbox, _ = _spec({**pot, "metadata": {"split": "dev"}})
    assert sandbox is None


def test_the_sandbox_setting_replaces_the_tasks_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from finmath_tasks.sandbox import resolve

    # the setting is mapped when the bridge is built (each sandbox starts later)
    metrics = ["financemath"]
    pot = {"split": "demo", "solver": "pot"}
    assert Bridge("knowledgefmath", pot, metrics, "bwrap").task.sandbox.type == "finmath_bwrap"
    assert Bridge("knowledgefmath", pot, metrics, "local").task.sandbox.type == "local"
    composed = Bridge("knowledgefmath", pot, metrics, "inspect_docker").task.sandbox
    assert (composed.type, composed.config) == ("docker", str(resolve.COMPOSE_FILE))
    # a task that runs no program keeps none, whatever the setting
    cot = {"split": "demo", "solver": "cot"}
    assert Bridge("knowledgefmath", cot, metrics, "bwrap").task.sandbox is None
    with pytest.raises(BridgeError, match=r"""--metadata '\{"sandbox": "vm"\}' is not one of"""):
        Bridge("knowledgefmath", cot, metrics, "vm")
    # nothing isolated here: the task builds (for inspect's --sandbox), the bridge stops
    monkeypatch.setattr(resolve, "_docker", lambda: (False, "no engine"))
    monkeypatch.setattr(resolve, "_bwrap", lambda: (False, "not found"))
    with pytest.raises(resolve.SandboxUnavailableError) as raised:
        Bridge("knowledgefmath", pot, metrics)
    said = str(raised.value)
    assert "docker: no engine" in said and "bwrap: not found" in said
    assert """--metadata '{"sandbox": "bwrap"}'""" in said
    assert Bridge("knowledgefmath", pot, metrics, "local").task.sandbox.type == "local"
