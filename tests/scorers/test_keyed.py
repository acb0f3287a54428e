"""``keyed_scorers``: one scalar scorer per key of a multi-key scorer, plain metric names;
an exception of the inner scorer reaches Inspect as that sample's error."""

from __future__ import annotations

import math
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import SampleScore, Score, Scorer, Target, accuracy, ci_wilson, scorer
from inspect_ai.solver import TaskState

from eval_helpers import assert_readable_summary, scripted
from finmath_tasks.scorers.keyed import Scoring, keyed_scorers, scoring
from finmath_tasks.scorers.metrics import flag_counts, wilson_interval
from finmath_tasks.scorers.unscored import withheld_answers

CALLS: list[str] = []


@scorer(metrics=[])
def two_keys() -> Scorer:
    async def score(state: TaskState, target: Target) -> Score:
        CALLS.append(str(state.sample_id))
        if state.sample_id == "broken":
            raise RuntimeError("boom")
        if not target.text:
            return Score.unscored(reason="no_gold_answer", explanation="withheld")
        right = state.output.completion.strip() == target.text
        return Score(
            value={"main": float(right), "other": math.nan if right else 1.0},
            explanation="checked",
            metadata={"flagged": not right, "bulky": "x" * 100},
        )

    return score


@scoring("keyed_test", ("main", "other"))
def keyed_test_scoring(level: float = 0.9) -> Scoring:
    return Scoring(
        two_keys(),
        {
            "main": [accuracy(), wilson_interval(level), flag_counts(["flagged"])],
            "other": [accuracy()],
        },
        shared=["flagged"],
    )


def run_keyed(
    tmp_path: Any, targets: tuple[str, ...] = ("4",) * 4, **eval_args: Any
) -> tuple[Any, list[str]]:
    """A real eval of four samples whose inner scorer raises on the sample ``broken``
    (a bug in our own code, not a bad model output)."""
    CALLS.clear()
    ids = ("a", "b", "broken", "c")
    samples = [Sample(id=i, input="q", target=t) for i, t in zip(ids, targets, strict=True)]
    task = Task(
        dataset=MemoryDataset(samples),
        scorer=keyed_scorers("keyed_test", count_unscored=withheld_answers(samples), level=0.9),
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
    return log, list(CALLS)


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
    assert list(main.metrics) == ["accuracy", "ci90_lower", "ci90_upper", "flagged"]
    # over the three samples that were scored; the errored one is Inspect's count, not ours
    assert main.metrics["accuracy"].value == 2 / 3
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


def test_samples_without_a_gold_answer_are_counted_by_the_unscored_score(
    tmp_path: Any,
) -> None:
    # two withheld answers: the `unscored` score is attached and counts them from its
    # scores, as Inspect's own count of each key does
    log, _ = run_keyed(tmp_path, targets=("", "4", "4", ""), fail_on_error=False)
    assert log.results is not None
    names = [s.name for s in log.results.scores]
    assert names == ["main", "other", "unscored"]
    main, _, count = log.results.scores
    assert list(count.metrics) == ["n"] and count.metrics["n"].value == 2
    assert main.unscored_samples == 2 and main.scored_samples == 1  # "broken" errored
    by_id = {s.id: s for s in log.samples or []}
    assert by_id["a"].scores["unscored"].value == 1.0  # type: ignore[index]
    assert by_id["b"].scores["unscored"].value == 0.0  # type: ignore[index]
    # every record with an answer: no `unscored` score (nothing can be left unscored)
    log, _ = run_keyed(tmp_path, fail_on_error=False)
    assert [s.name for s in log.results.scores] == ["main", "other"]  # type: ignore[union-attr]


def sample_scores(values: list[float], documents: list[str] | None = None) -> list[SampleScore]:
    return [
        SampleScore(
            score=Score(value=v),
            sample_id=i,
            sample_metadata={"document": documents[i]} if documents else None,
        )
        for i, v in enumerate(values)
    ]


def test_the_interval_is_inspects_wilson_with_a_width_at_zero_of_n() -> None:
    interval = wilson_interval(0.9)
    zero = interval(sample_scores([0.0, 0.0, 0.0]))  # type: ignore[arg-type]
    assert zero["ci90_lower"] == 0.0 and zero["ci90_upper"] > 0.4  # type: ignore[index]
    # the same numbers as Inspect's ci_wilson (and `finmath report`)
    assert zero["ci90_upper"] == ci_wilson(0.9)(sample_scores([0.0] * 3))["upper"]  # type: ignore[index,arg-type]
    full = wilson_interval(0.95)(sample_scores([1.0, 1.0]))  # type: ignore[arg-type]
    assert full["ci95_upper"] == 1.0 and full["ci95_lower"] < 0.5  # type: ignore[index]
    assert all(math.isnan(v) for v in wilson_interval(0.9)([]).values())  # type: ignore[arg-type,union-attr]


def test_the_clustered_interval_falls_back_to_plain_with_one_cluster() -> None:
    clustered = wilson_interval(0.95, cluster="document")
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    docs = ["d1", "d1", "d2", "d2", "d3", "d3"]
    got = clustered(sample_scores(values, docs))  # type: ignore[arg-type]
    inspects = ci_wilson(0.95, cluster="document")(sample_scores(values, docs))  # type: ignore[arg-type]
    assert (got["ci95_lower"], got["ci95_upper"]) == (inspects["lower"], inspects["upper"])  # type: ignore[index]
    # Inspect's clustered interval needs two clusters: one gives the plain interval, as
    # do questions that share no document (as `finmath report` decides)
    plain = ci_wilson(0.95)(sample_scores([0.0, 0.0]))  # type: ignore[arg-type]
    for docs in (["d1", "d1"], ["d1", "d2"]):
        one = clustered(sample_scores([0.0, 0.0], docs))  # type: ignore[arg-type]
        assert (one["ci95_lower"], one["ci95_upper"]) == (plain["lower"], plain["upper"])  # type: ignore[index]
        assert one["ci95_upper"] > 0  # type: ignore[index]
