from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.solver import TaskState, generate

from eval_helpers import scripted
from finmath_tasks.retrieval.passages import Selection, insert_passages, render_passages
from finmath_tasks.retrieval.rerank import parse_choice, rerank, rerank_prompt


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("3, 1, 2", [2, 0, 1]),
        ("[2] then [2] again, then 7 and 1", [1, 6, 0]),
        ("none of them", []),
        ("0, 10, 4", [3]),  # out of range numbers are ignored
        ("1 2 3 4 5", [0, 1, 2]),  # only n
    ],
)
def test_parse_choice(reply: str, expected: list[int]) -> None:
    assert parse_choice(reply, 9, 3) == expected


def test_rerank_prompt_lists_numbered_candidates() -> None:
    prompt = rerank_prompt("What is NPV?", ["A: one", "B: two"], 1)
    assert "Question:\nWhat is NPV?" in prompt
    assert "[1] A: one\n[2] B: two" in prompt
    assert "Choose the 1 passages" in prompt and "(for example: 1)" in prompt


def test_rerank_fills_from_retriever_order() -> None:
    model = scripted(["I pick 3."])
    result = asyncio.run(rerank(model, "q", ["a", "b", "c", "d"], 3))
    assert result.order == [2, 0, 1]
    assert result.chosen_by_model == 1 and result.reply == "I pick 3."


def test_render_passages_before_and_after() -> None:
    assert render_passages("H\n{passages}\n\n{prompt}", "Q?", []) == "Q?"
    assert render_passages("H\n{passages}\n\n{prompt}", "Q?", ["a", "b"]) == "H\na\n\nb\n\nQ?"
    assert render_passages("{prompt}\n\nH\n{passages}", "Q?", ["a"]) == "Q?\n\nH\na"
    # one pass: placeholder-like text inside a passage or the prompt stays as it is
    assert (
        render_passages("{passages}|{prompt}", "{passages}", ["{prompt}"]) == "{prompt}|{passages}"
    )


def test_solver_inserts_passages_and_survives_a_failing_selector(tmp_path: Path) -> None:
    async def select(state: TaskState) -> Selection:
        if state.sample_id == "bad":
            raise KeyError("no such term")
        return Selection([f"passage for {state.input_text}"], {"ids": [state.sample_id]})

    task = Task(
        dataset=[Sample(id="good", input="q1"), Sample(id="bad", input="q2")],
        solver=[
            insert_passages(select, "Knowledge:\n{passages}\n\n{prompt}", metadata_key="retrieved"),
            generate(),
        ],
    )
    [log] = eval(task, model=scripted(["x", "y"]), log_dir=str(tmp_path), display="none")
    assert log.status == "success" and log.samples is not None
    by_id = {s.id: s for s in log.samples}
    assert by_id["good"].messages[0].text == "Knowledge:\npassage for q1\n\nq1"
    assert by_id["good"].metadata["retrieved"] == {"ids": ["good"], "passages": 1, "chars": 14}
    assert by_id["bad"].messages[0].text == "q2"
    assert by_id["bad"].metadata["retrieved"] == {
        "error": "KeyError: 'no such term'",
        "passages": 0,
    }


def test_with_recall_adds_the_recorded_recall(tmp_path: Path) -> None:
    from inspect_ai.scorer import Score, Target, mean, scorer

    from finmath_tasks.retrieval.scorer import with_recall

    @scorer(metrics=[mean()])
    def always_right() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            return Score(value={"correct": 1.0})

        return score

    dataset = [
        Sample(id="a", input="q", metadata={"retrieved": {"recall": 0.5}}),
        Sample(id="b", input="q", metadata={"retrieved": {"recall": 1.0}}),
        Sample(id="c", input="q", metadata={}),  # no annotation: unscored for recall only
    ]
    task = Task(
        dataset=dataset,
        solver=generate(),
        scorer=with_recall(always_right(), "retrieved"),
        metrics={"correct": [mean()], "retrieval_recall": [mean()]},
    )
    [log] = eval(task, model=scripted(["x"] * 3), log_dir=str(tmp_path), display="none")
    assert log.status == "success" and log.results is not None
    by_name = {s.name: s for s in log.results.scores}
    assert by_name["correct"].metrics["mean"].value == 1.0
    assert by_name["retrieval_recall"].metrics["mean"].value == 0.75
    assert by_name["retrieval_recall"].unscored_samples == 1


def test_other_selector_errors_propagate_like_a_failed_generate(tmp_path: Path) -> None:
    async def select(state: TaskState) -> Selection:
        raise RuntimeError("the provider failed after its retries")

    task = Task(
        dataset=[Sample(id="a", input="q")],
        solver=[insert_passages(select, "K:\n{passages}\n\n{prompt}"), generate()],
    )
    [log] = eval(task, model=scripted(["x"]), log_dir=str(tmp_path), display="none")
    assert log.status == "error"
    assert log.error is not None and "the provider failed" in log.error.message
