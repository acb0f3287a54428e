"""An answer written with digits other than ASCII 0-9 is no number for MathHay's ``mathhay``
and ``exact_match``: Python's ``float()`` reads "٤٠" (Arabic-Indic) and "４０" (fullwidth) as
40, but the reference reads the answer into a pydantic float field, which refuses them. Such
an answer is incorrect, never judged, classed ``no_answer:no_number``, and its explanation
says why. A real eval with scripted replies; "40" in ASCII is the control."""

from __future__ import annotations

from pathlib import Path

import pytest
from mathhay_fixtures import write_release
from test_mathhay_eval import fenced, metrics, run

from finmath_tasks.scorers.error_classes import ERROR_CLASS_KEY
from finmath_tasks.tasks.mathhay.scoring import OTHER_DIGITS

CONTROL = "40"


@pytest.fixture
def release(tmp_path: Path) -> str:
    write_release(tmp_path)
    return str(tmp_path)


@pytest.mark.parametrize("answer", ["٤٠", "４０"], ids=["arabic-indic", "fullwidth"])
def test_answers_in_other_digits_are_no_number(release: str, answer: str) -> None:
    log = run([fenced(CONTROL), fenced(answer)], data_dir=release, task_type="sssd", length=1200)
    assert log.samples is not None
    control, sample = log.samples
    assert control.scores is not None and sample.scores is not None
    assert control.scores["mathhay"].value == 1.0 and control.scores["exact_match"].value == 1.0
    for key in ("mathhay", "exact_match"):
        score = sample.scores[key]
        assert score.value == 0.0, (key, score.explanation)
        assert score.answer == answer and score.metadata is not None
        assert score.metadata["answer_unparseable"] is True
        assert score.metadata[ERROR_CLASS_KEY] == "no_answer:no_number"
        assert score.explanation is not None
        assert f"the answer field {answer!r} is not a number{OTHER_DIGITS}" in score.explanation
        assert metrics(log, key)["accuracy"] == 0.5
    assert sample.scores["mathhay"].metadata["judge"] == "not asked (answer not a number)"
