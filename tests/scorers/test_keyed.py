"""``keyed_scorers``: one scalar scorer per key of a multi-key scorer, plain metric names."""

from __future__ import annotations

import math
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer
from inspect_ai.solver import TaskState

from eval_helpers import assert_readable_summary, scripted
from finmath_tasks.scorers.keyed import keyed_scorers
from finmath_tasks.scorers.metrics import accuracy_ci, flag_counts


def test_one_inner_call_per_sample_plain_names_and_unscored_samples(tmp_path: Any) -> None:
    calls: list[str] = []

    @scorer(metrics=[])
    def two_keys() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            calls.append(str(state.sample_id))
            if state.sample_id == "broken":
                raise RuntimeError("boom")
            right = state.output.completion.strip() == target.text
            return Score(
                value={"main": float(right), "other": math.nan if right else 1.0},
                explanation="checked",
                metadata={"flagged": not right, "bulky": "x" * 100},
            )

        return score

    samples = [Sample(id=i, input="q", target="4") for i in ("a", "b", "broken")]
    task = Task(
        dataset=MemoryDataset(samples),
        scorer=keyed_scorers(
            two_keys(),
            {"main": [accuracy_ci(0.9), flag_counts(["flagged"])], "other": [accuracy()]},
            shared=["flagged"],
        ),
    )
    [log] = eval(
        task, model=scripted(["4", "5", "4"]), max_samples=1, display="none", log_dir=str(tmp_path)
    )
    assert log.status == "success", log.error
    assert sorted(calls) == ["a", "b", "broken"]  # once per sample, not once per key
    assert log.results is not None
    main, other = log.results.scores
    assert (main.name, other.name) == ("main", "other")
    assert list(main.metrics) == [
        "accuracy", "ci90_low", "ci90_high", "scored", "flagged", "unscored",
    ]  # fmt: skip
    assert main.metrics["accuracy"].value == 0.5 and main.metrics["scored"].value == 2
    # the broken sample: out of the accuracy, counted beside it (every key)
    assert main.metrics["unscored"].value == 1 and other.metrics["unscored"].value == 1
    assert main.unscored_samples == 1
    assert main.metrics["flagged"].value == 1 and main.metrics["flagged"].name == "flagged"
    assert other.metrics["accuracy"].value == 1.0 and other.scored_samples == 1
    by_id = {s.id: s.scores for s in log.samples or []}
    assert by_id["b"]["main"].metadata == {"flagged": True, "bulky": "x" * 100}  # type: ignore[index]
    assert by_id["b"]["other"].metadata == {"flagged": True}  # type: ignore[index]
    broken = by_id["broken"]["main"]  # type: ignore[index]
    assert math.isnan(broken.value) and "RuntimeError: boom" in (broken.explanation or "")  # type: ignore[arg-type]
    assert_readable_summary(log)
