"""Helpers for tests that run real Inspect evals of our tasks (importable from every test dir)."""

from __future__ import annotations

import io

from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.model import Model, ModelOutput, get_model
from inspect_ai.scorer import Score


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
