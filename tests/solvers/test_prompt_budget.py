"""prompt_budget: an over-long prompt is refused per sample, never truncated or sent."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelInfo, ModelOutput, get_model, set_model_info
from inspect_ai.scorer import includes
from inspect_ai.solver import generate

from eval_helpers import scripted
from finmath_tasks.solvers.budget import (
    OVER_BUDGET_KEY,
    PROMPT_TOKENS_KEY,
    count_tokens,
    prompt_budget,
)


def test_count_tokens_o200k() -> None:
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0


def test_only_the_long_prompt_is_refused(tmp_path: Path) -> None:
    task = Task(
        dataset=[
            Sample(id="short", input="Say x.", target="x"),
            Sample(id="long", input="word " * 200, target="x"),
        ],
        solver=[prompt_budget(50), generate()],
        scorer=includes(),
    )
    [log] = eval(task, model=scripted(["x"]), display="none", log_dir=str(tmp_path))
    assert log.status == "success"
    samples = {s.id: s for s in log.samples or []}
    assert samples["short"].output.completion == "x"
    assert OVER_BUDGET_KEY not in samples["short"].store
    assert samples["long"].output.completion == ""
    assert samples["long"].store[PROMPT_TOKENS_KEY] > 50
    assert "exceeds the context budget of 50 tokens" in samples["long"].store[OVER_BUDGET_KEY]


def test_auto_budget_is_the_models_known_context_length(tmp_path: Path) -> None:
    name = "mockllm/finmath-budget-test"
    set_model_info(name, ModelInfo(context_length=40))
    model = get_model(name, custom_outputs=[ModelOutput.from_content(name, "x")])
    task = Task(
        dataset=[Sample(id="short", input="Say x.", target="x"),
                 Sample(id="long", input="word " * 100, target="x")],
        solver=[prompt_budget("auto"), generate()],
        scorer=includes(),
    )  # fmt: skip
    [log] = eval(task, model=model, display="none", log_dir=str(tmp_path), max_samples=1)
    assert log.status == "success"
    samples = {s.id: s for s in log.samples or []}
    assert samples["short"].output.completion == "x"
    assert (
        samples["long"]
        .store[OVER_BUDGET_KEY]
        .endswith(f"exceeds the context length of {name} of 40 tokens; not sent to the model")
    )


def test_auto_budget_checks_nothing_for_an_unknown_model(tmp_path: Path) -> None:
    task = Task(
        dataset=[Sample(id="long", input="word " * 300, target="x")],
        solver=[prompt_budget("auto"), generate()],
        scorer=includes(),
    )
    [log] = eval(task, model=scripted(["x"]), display="none", log_dir=str(tmp_path))
    assert log.status == "success"
    [sample] = log.samples or []
    assert sample.output.completion == "x" and OVER_BUDGET_KEY not in sample.store
