"""``tolerant`` credits a fraction for a percent (or the reverse) only where the question
asks for a percentage or a ratio: the demo questions answered 100 times too small or too
large, through a real eval."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import eval

from eval_helpers import metric, scripted
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.knowledgefmath.dataset import load_dataset

# read by hand from the demo questions: those that ask for a percent, a rate or a ratio
# ("in percent", "inflation rate", "Sharpe ratio", "percentage change", "quick ratio")
PERCENT_ASKED = {"demo-4", "demo-6", "demo-9", "demo-11", "demo-12", "demo-13", "demo-14"}
# and those that ask for an amount ("in dollars", "in millions", "net present value")
AMOUNT_ASKED = {f"demo-{i}" for i in (0, 1, 2, 3, 5, 7, 8, 10)}


@pytest.mark.parametrize("factor", [0.01, 100.0])
def test_an_amount_100_times_off_is_a_scale_error_a_percent_is_not(
    tmp_path: Path, factor: float
) -> None:
    samples = list(load_dataset("demo"))
    assert {str(s.id) for s in samples} == PERCENT_ASKED | AMOUNT_ASKED
    outputs = [f"The answer is {float(s.target) * factor:.10g}" for s in samples]
    [log] = eval(
        knowledgefmath(split="demo", solver="cot", extractor="rules"),
        model=scripted(outputs),
        log_dir=str(tmp_path),
        display="none",
        max_samples=1,
    )
    assert log.status == "success" and log.samples is not None
    for sample in log.samples:
        score = sample.scores["tolerant"]  # type: ignore[index]
        if str(sample.id) in PERCENT_ASKED:
            assert score.value == 1.0, (sample.id, score.explanation)
        else:
            assert score.value == 0.0, (sample.id, score.explanation)
            assert (score.metadata or {}).get("error_class") == "scale", sample.id
        # the official comparison accepts every power of ten, unchanged
        assert sample.scores["financemath"].value == 1.0  # type: ignore[index]
    assert metric(log, "tolerant") == pytest.approx(len(PERCENT_ASKED) / len(samples))
