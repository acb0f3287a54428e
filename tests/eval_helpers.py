"""Helpers for tests that run real Inspect evals of our tasks (importable from every test dir)."""

from __future__ import annotations

import asyncio
import io
import tempfile

from inspect_ai import Epochs, Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.model import ChatMessageUser, Model, ModelName, ModelOutput, get_model
from inspect_ai.scorer import Metric, Score, Scorer, Target, scorer
from inspect_ai.solver import Solver, TaskState


def scripted(contents: list[str], name: str = "mockllm/model") -> Model:
    """A mockllm model (``name``) that answers with ``contents``, one per generation.

    The replies go out in the order the model is *called*, not in the order of the
    samples: Inspect runs samples concurrently, and a solver may call the model more than
    once per sample (an extractor, a critic). To give sample i reply i, run with
    ``max_samples=1`` and one call per sample, or give mockllm a callable
    ``custom_outputs`` that answers by the prompt's content. An exhausted list fails the
    next call ("custom_outputs ran out of values")."""
    return get_model(name, custom_outputs=[ModelOutput.from_content(name, c) for c in contents])


def metric(log: EvalLog, score_key: str, name: str = "accuracy") -> float:
    """The value of metric ``name`` of score key ``score_key`` (e.g. "tolerant")."""
    assert log.results is not None
    [score] = [s for s in log.results.scores if s.name == score_key]
    return score.metrics[name].value


def metrics(log: EvalLog, score_key: str) -> dict[str, float]:
    """Every metric of score key ``score_key``, by name."""
    assert log.results is not None
    [score] = [s for s in log.results.scores if s.name == score_key]
    return {name: m.value for name, m in score.metrics.items()}


def summary(log: EvalLog, width: int = 100) -> dict[str, object]:
    """Inspect's own end-of-run score summary of ``log`` rendered at ``width`` columns.

    Returns the text, its labels (score names and metric names), how many of them are
    not printed whole (cut, e.g. with "…") or carry a package prefix, and its lines.
    """
    from rich.console import Console

    from finmath_tasks._inspect_private import task_scores

    assert log.results is not None
    console = Console(
        file=io.StringIO(), width=width, record=True, color_system=None, force_terminal=False
    )
    for row in task_scores(log.results.scores):
        console.print(row)
    text = console.export_text()
    lines = text.rstrip("\n").splitlines()
    labels = [s.name for s in log.results.scores]
    labels += [name for s in log.results.scores for name in s.metrics]
    cut = [label for label in labels if not any(label in line for line in lines)]
    prefixed = [label for label in labels if "/" in label]
    too_wide = [line for line in lines if len(line) > width]
    return {
        "text": text,
        "labels": len(labels),
        "cut": cut + (["…"] if "…" in text else []) + too_wide,
        "prefixed": prefixed + (["finmath_tasks/"] if "finmath_tasks/" in text else []),
        "lines": len(lines),
    }


def assert_readable_summary(log: EvalLog, width: int = 100) -> dict[str, object]:
    """The summary at ``width`` columns cuts no label and shows no package prefix; every
    metric name in the log is plain too (no "/")."""
    shown = summary(log, width)
    assert not shown["cut"], f"cut at {width} columns: {shown['cut']}\n{shown['text']}"
    assert not shown["prefixed"], f"prefixed: {shown['prefixed']}\n{shown['text']}"
    assert log.results is not None
    for score in log.results.scores:
        for key, m in score.metrics.items():
            assert "/" not in key and "/" not in m.name, (score.name, key, m.name)
    return shown


def whole_score(sample: EvalSample, first: str = "financemath") -> Score:
    """A sample's scores as one dict-valued Score (the layout of one scorer with several
    keys): every scorer's value under its name, the answer, explanation and metadata of
    ``first`` (the official score, which carries the whole metadata)."""
    scores = sample.scores or {}
    lead = scores[first]
    return Score(
        value={name: score.value for name, score in scores.items()},  # type: ignore[misc]
        answer=lead.answer,
        reason=lead.reason,
        explanation=lead.explanation,
        metadata=lead.metadata,
    )


def grader_warnings(log: EvalLog) -> list[str]:
    """The log's warnings that no ``grader`` role was bound (the evaluated model grades)."""
    assert log.samples is not None
    return [
        e.message.message
        for s in log.samples
        for e in s.events
        if e.event == "logger" and "no grader role" in e.message.message
    ]


def state_of(sample: Sample, model: str = "mockllm/model") -> TaskState:
    """The TaskState Inspect starts a sample with (input as the user turn)."""
    return TaskState(
        model=ModelName(model),
        sample_id=sample.id or "s",
        epoch=1,
        input=sample.input,
        target=Target(sample.target),
        messages=[ChatMessageUser(content=sample.input)]
        if isinstance(sample.input, str)
        else list(sample.input),
        metadata=dict(sample.metadata or {}),
    )


def solve(solver: Solver, state: TaskState) -> TaskState:
    """Run one solver on ``state`` outside an eval (it must not call the model)."""

    async def no_generate(state: TaskState, *args: object, **kwargs: object) -> TaskState:
        raise AssertionError("this solver must not call the model")

    return asyncio.run(solver(state, no_generate))  # type: ignore[arg-type]


def score_state(scorer: Scorer, state: TaskState) -> Score:
    """Run one scorer on ``state`` outside an eval."""
    result = asyncio.run(scorer(state, state.target))
    assert result is not None
    return result


def through_epochs(metrics: list[Metric], epochs: list[list[Score]]) -> dict[str, float]:
    """Run ``metrics`` in a real eval whose sample ``i`` scores ``epochs[i][e]`` in epoch
    ``e`` (every row as long), reduced by Inspect's default epoch reducer (mean): the
    metrics see the reduced scores, as in a run with ``--epochs``. Returns every metric
    value by name."""
    count = len(epochs[0])
    assert all(len(row) == count for row in epochs)
    seen: dict[str, int] = {}

    @scorer(metrics=metrics, name="through_epochs")
    def scripted_scores() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            row = int(str(state.sample_id))
            epoch = seen[str(row)] = seen.get(str(row), 0) + 1
            return epochs[row][epoch - 1]

        return score

    task = Task(
        dataset=[Sample(id=str(i), input="x") for i in range(len(epochs))],
        scorer=scripted_scores(),
        epochs=Epochs(count, "mean"),
    )
    with tempfile.TemporaryDirectory() as logs:
        [log] = inspect_eval(
            task,
            model=scripted(["ok"] * len(epochs) * count),
            max_samples=1,
            display="none",
            log_dir=logs,
        )
    assert log.status == "success", log.error
    assert log.results is not None
    [scores] = log.results.scores
    return {name: m.value for name, m in scores.metrics.items()}
