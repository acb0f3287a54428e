"""Helpers for tests that run real Inspect evals of our tasks (importable from every test dir)."""

from __future__ import annotations

from inspect_ai.log import EvalLog
from inspect_ai.model import Model, ModelOutput, get_model


def scripted(contents: list[str]) -> Model:
    """A mockllm model that answers with ``contents``, one per generation, in order."""
    return get_model(
        "mockllm/model",
        custom_outputs=[ModelOutput.from_content("mockllm/model", c) for c in contents],
    )


def metric(log: EvalLog, score_key: str, name: str = "accuracy") -> float:
    """The value of metric ``name`` of score key ``score_key`` (e.g. "tolerant")."""
    assert log.results is not None
    [score] = [s for s in log.results.scores if s.name == score_key]
    return score.metrics[name].value
