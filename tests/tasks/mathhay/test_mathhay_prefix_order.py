"""MathHay's prefix order on the real releases: the same prompts and verdicts, more of
them served from a provider's prompt cache, and the dry run's count checked by brute force."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from inspect_ai.model import ModelOutput, get_model

from finmath_tasks.cli.cost import _encoding
from finmath_tasks.prefix_cache import OPENAI, SLOT, serve
from finmath_tasks.tasks.mathhay import cost
from finmath_tasks.tasks.mathhay.dataset import load_data
from finmath_tasks.tasks.mathhay.task import (
    in_files_order,
    mathhay,
    prompt_for,
    sample_layout,
    token_pool,
)
from test_prefix_cache import brute

LATER = "March-2024-to-September-2024"


def _answers(task: Any) -> Any:
    """A model answering the gold number for the questions of even length, 0 for the rest
    (the same answer per question whatever the order)."""
    gold = {}
    for sample in task.dataset:
        question = str(sample.input)
        gold[question] = sample.target if len(question) % 2 == 0 else "0"

    def answer(messages: list[Any], *_: Any) -> ModelOutput:
        text = messages[-1].text
        question = text.split("Question:\n", 1)[1].split("\n\nReply with", 1)[0]
        value = gold[question]
        value = value[0] if isinstance(value, list) else value
        return ModelOutput.from_content("mockllm/model", f'{{"answer": {value}}}')

    return answer


@pytest.mark.slow
@pytest.mark.realdata
def test_prompts_and_verdicts_are_the_same_in_both_orders(data_dir: Path, tmp_path: Path) -> None:
    args: dict[str, Any] = {
        "release": "v1", "subset": "verified", "task_type": ["sssd", "ss2d", "3s3d"],
        "length": 6000, "judge": False, "data_dir": str(data_dir),
    }  # fmt: skip
    runs = {}
    built = mathhay(**args)
    for order, task in (("dataset", in_files_order(built)), ("prefix", built)):
        runs[order] = [str(s.id) for s in task.dataset]
        [log] = eval(
            task,
            model=get_model("mockllm/model", custom_outputs=_answers(task)),
            display="none",
            log_dir=str(tmp_path / order),
        )
        assert log.status == "success", log.error
        runs[order + " log"] = {
            str(s.id): (s.messages[0].text, {k: v.value for k, v in (s.scores or {}).items()})
            for s in log.samples or []
        }
    assert runs["dataset"] != runs["prefix"]  # the order moved ...
    assert sorted(runs["dataset"]) == sorted(runs["prefix"])  # ... over the same samples
    same, moved = runs["dataset log"], runs["prefix log"]
    assert same == moved  # byte for byte the same prompt, and the same scores, per sample
    verdicts = [scores["exact_match"] for _, scores in same.values()]
    assert 0 < verdicts.count(1) < len(verdicts)


@pytest.mark.slow
@pytest.mark.realdata
def test_the_prefix_order_serves_more_than_the_dataset_order(data_dir: Path) -> None:
    """The later release's 602 questions at 32K, 10 requests in flight, a lifetime of 100."""
    base = {"release": LATER, "subset": "full", "length": 32000, "data_dir": str(data_dir)}
    served = {}
    for order in ("dataset", "prefix"):
        prompts = cost.prompts(base, files_order=order == "dataset")
        [served[order]] = serve(prompts, [OPENAI], 100, 10)
    assert served["prefix"].tokens == served["dataset"].tokens
    assert served["prefix"].read > served["dataset"].read
    # measured: 33.4% and 27.2% of 19.3M tokens
    assert served["prefix"].share > 0.30 and served["dataset"].share < 0.30


@pytest.mark.slow
@pytest.mark.realdata
def test_the_estimate_is_the_brute_force_count_on_real_prompts(data_dir: Path) -> None:
    args = {
        "release": LATER, "subset": "full", "task_type": ["sssd", "ss2d"], "length": 3000,
        "data_dir": str(data_dir),
    }  # fmt: skip
    prompts = list(cost.prompts(args))[:40]
    for rule in (OPENAI, SLOT):
        for in_flight in (1, 3):
            [served] = serve(prompts, [rule], None, in_flight)
            assert served.per_prompt == brute(prompts, rule, in_flight)
            if rule is OPENAI and in_flight == 1:
                assert served.read > 0
    # the tokens counted are the prompt the solver sends, read back
    task = mathhay(**args)
    meta = task.metadata or {}
    data = load_data(str(data_dir), LATER, "full", list(meta["task_types"]))
    pool = token_pool(data)
    for sample, prompt in zip(list(task.dataset)[:10], prompts, strict=False):
        question, segments, _, _ = sample_layout(data, pool, dict(sample.metadata or {}), 2000)
        text = prompt_for(question, pool.decode(segments))
        assert _encoding().decode(list(prompt.tokens)) == text
