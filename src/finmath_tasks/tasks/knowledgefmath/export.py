"""FinanceMath's prediction-file layout (``finmath export LOG --format submission``).

One record per sample: ``question_id``, the raw output as a one-element list
(the layout of the reference's prediction files), the extracted answer and,
where the split is scored, the per-comparison scores.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.log import EvalSample

from finmath_tasks.export import sample_row


def submission_row(sample: EvalSample) -> dict[str, Any]:
    generic = sample_row(sample)
    score: dict[str, Any] = next(iter(generic["scores"].values()), {})
    return {
        "question_id": (sample.metadata or {}).get("question_id", sample.id),
        "output": [generic["output"]],
        "extracted_answer": score.get("answer"),
        "scores": score.get("value"),
        "error": generic["error"],
    }
