"""``keyed_scorers``: one scalar scorer per key of a multi-key scorer, plain metric names;
an exception of the inner scorer reaches Inspect as that sample's error."""

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


def run_keyed(tmp_path: Any, **eval_args: Any) -> tuple[Any, list[str]]:
    """A real eval of four samples whose inner scorer raises on the sample ``broken``
    (a bug in our own code, not a bad model output)."""
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

    samples = [Sample(id=i, input="q", target="4") for i in ("a", "b", "broken", "c")]
    task = Task(
        dataset=MemoryDataset(samples),
        scorer=keyed_scorers(
            two_keys(),
            {"main": [accuracy_ci(0.9), flag_counts(["flagged"])], "other": [accuracy()]},
            shared=["flagged"],
        ),
        continue_on_fail=True,  # as every task of ours
    )
    [log] = eval(
        task,
        model=scripted(["4", "5", "4", "4"]),
        max_samples=1,
        display="none",
        log_dir=str(tmp_path),
        **eval_args,
    )
    return log, calls


def test_one_inner_call_per_sample_plain_names_and_an_error_of_ours_is_the_samples_error(
    tmp_path: Any,
) -> None:
    log, calls = run_keyed(tmp_path)
    # the error reaches Inspect: the run is not whole (fail_on_error's default), yet
    # every other sample ran and was scored (continue_on_fail)
    assert log.status == "error"
    assert sorted(calls) == ["a", "b", "broken", "c"]  # once per sample, not once per key
    assert log.results is not None
    assert log.results.total_samples == 4 and log.results.completed_samples == 3
    main, other = log.results.scores
    assert (main.name, other.name) == ("main", "other")
    assert list(main.metrics) == [
        "accuracy", "ci90_low", "ci90_high", "scored", "flagged", "unscored",
    ]  # fmt: skip
    # over the three samples that were scored; the errored one is Inspect's count, not ours
    assert main.metrics["accuracy"].value == 2 / 3 and main.metrics["scored"].value == 3
    assert main.metrics["unscored"].value == 0 and other.metrics["unscored"].value == 0
    assert main.scored_samples == 3 and main.unscored_samples == 0
    assert main.metrics["flagged"].value == 1 and main.metrics["flagged"].name == "flagged"
    assert other.metrics["accuracy"].value == 1.0 and other.scored_samples == 1
    by_id = {s.id: s for s in log.samples or []}
    assert by_id["b"].scores["main"].metadata == {"flagged": True, "bulky": "x" * 100}  # type: ignore[index]
    assert by_id["b"].scores["other"].metadata == {"flagged": True}  # type: ignore[index]
    broken = by_id["broken"]
    assert broken.error is not None and "boom" in broken.error.message
    assert "RuntimeError" in broken.error.traceback
    assert not broken.scores  # no score of ours stands in for the error
    assert by_id["c"].error is None and by_id["c"].scores["main"].value == 1.0  # type: ignore[index]
    assert_readable_summary(log)


def test_the_user_decides_how_many_errors_a_run_accepts(tmp_path: Any) -> None:
    # --no-fail-on-error / --fail-on-error 0.3 at eval level override the default
    for accepted in (False, 0.3):
        log, _ = run_keyed(tmp_path, fail_on_error=accepted)
        assert log.status == "success", accepted
        assert log.results is not None and log.results.completed_samples == 3
        assert [s.id for s in log.samples or [] if s.error] == ["broken"]
    # a threshold the run passes: the run is not whole
    log, _ = run_keyed(tmp_path, fail_on_error=0.25)
    assert log.status == "error"
    # --continue-on-fail false at eval level overrides ours: the run stops at the error
    log, calls = run_keyed(tmp_path, continue_on_fail=False)
    assert log.status == "error" and log.error is not None and "boom" in log.error.message
    assert "c" not in calls
