"""The generic insert_passages solver: passages into the last user turn."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser
from inspect_ai.scorer import includes
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

from eval_helpers import scripted
from finmath_tasks.retrieval.passages import insert_passages, render_passages


def test_render_passages() -> None:
    assert render_passages("Docs:\n{passages}\n\nQ: {prompt}", "why?", ["a", "b"]) == (
        "Docs:\na\n\nb\n\nQ: why?"
    )
    assert render_passages("{passages}|{prompt}", "p", "only") == "only|p"
    assert render_passages("{passages}|{prompt}", "p", None) == "p"
    assert render_passages("{passages}|{prompt}", "p", ["", "  "]) == "p"


def test_template_must_have_both_placeholders() -> None:
    with pytest.raises(ValueError, match="must contain both"):
        insert_passages(lambda state: None, template="{passages} only")


@solver
def with_exemplar() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.messages = [
            ChatMessageUser(content="exemplar question"),
            ChatMessageAssistant(content="exemplar answer"),
            *state.messages,
        ]
        return state

    return solve


def test_passages_go_into_the_last_user_turn_in_a_real_eval(tmp_path: Path) -> None:
    task = Task(
        dataset=[Sample(input="What is X?", target="x", metadata={"doc": "X is x."})],
        solver=[
            with_exemplar(),
            insert_passages(
                lambda state: [state.metadata["doc"]], "Context:\n{passages}\n\n{prompt}"
            ),
            generate(),
        ],
        scorer=includes(),
    )
    [log] = eval(task, model=scripted(["x"]), display="none", log_dir=str(tmp_path))
    assert log.status == "success"
    sample = (log.samples or [])[0]
    assert [m.text for m in sample.messages[:3]] == [
        "exemplar question",
        "exemplar answer",
        "Context:\nX is x.\n\nWhat is X?",
    ]
    assert sample.metadata["retrieval"] == {"passages": 1, "chars": 7}
