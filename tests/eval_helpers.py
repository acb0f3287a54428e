"""Helpers for tests that run real Inspect evals of our tasks (importable from every test dir)."""

from __future__ import annotations

from inspect_ai.log import EvalLog
from inspect_ai.model import Model, ModelOutput, get_model


def scripted(contents: list[str], name: str = "mockllm/model") -> Model:
    """A mockllm model (``name``) that answers with ``contents``, one per generation, in order."""
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
