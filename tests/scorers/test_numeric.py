"""The generic numeric scorer in real (scripted) evals: comparisons by name, answer sources,
an exception of ours being that sample's error (the others scored), and bad model
outputs never raising."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, get_model

from eval_helpers import metric, scripted
from finmath_tasks.scorers.comparisons import Match, exact, tolerant
from finmath_tasks.scorers.extraction import ParsedNumber
from finmath_tasks.scorers.grader import FROM_EVALUATED, FROM_ROLE
from finmath_tasks.scorers.numeric import numeric_answer


def explode(pred: ParsedNumber, gold: float) -> Match:
    if gold == 13.0:
        raise ArithmeticError("unlucky gold")
    return exact(pred, gold)


def run(task: Task, outputs: list[str], tmp_path: Path, **kwargs: object):  # type: ignore[no-untyped-def]
    [log] = eval(task, model=scripted(outputs), log_dir=str(tmp_path), display="none", **kwargs)
    assert log.status == "success", log.error
    assert log.samples is not None
    return log, [s.scores["numeric_answer"] for s in log.samples]  # type: ignore[index]


@pytest.mark.slow
def test_an_exception_of_ours_is_that_samples_error_and_the_others_are_scored(
    tmp_path: Path,
) -> None:
    dataset = MemoryDataset(
        [
            Sample(id="a", input="q", target="2"),
            Sample(id="b", input="q", target="13"),  # the comparison raises here
            Sample(id="c", input="q", target="not a number"),  # a broken target
            Sample(id="d", input="q", target="4"),
        ]
    )
    task = Task(
        dataset=dataset,
        scorer=numeric_answer({"exact": explode, "tolerant": tolerant}),
        continue_on_fail=True,  # as every task of ours
    )
    outputs = ["The answer is 2.", "The answer is 13.", "The answer is 3.", "The answer is 5."]
    for accepted, status in ((None, "error"), (False, "success")):
        [log] = eval(
            task,
            model=scripted(outputs),
            log_dir=str(tmp_path),
            display="none",
            max_samples=1,
            fail_on_error=accepted,
        )
        assert log.status == status, log.error
        assert log.samples is not None
        a, b, c, d = log.samples
        assert a.scores["numeric_answer"].value == {"exact": 1.0, "tolerant": 1.0}  # type: ignore[index]
        assert d.scores["numeric_answer"].value == {"exact": 0.0, "tolerant": 0.0}  # type: ignore[index]
        assert b.error is not None and "unlucky gold" in b.error.message
        assert b.error.traceback and not b.scores
        # a broken target is the record's: unscored with the reason, never a traceback
        assert c.error is None
        broken = c.scores["numeric_answer"]  # type: ignore[index]
        assert "'not a number' is not a number" in (broken.explanation or "")
        assert isinstance(broken.value, float) and math.isnan(broken.value)
        assert metric(log, "exact") == 0.5  # over the two samples scored
        assert log.results is not None and log.results.completed_samples == 3


def test_model_extractor_reads_strictly_caps_the_reply_and_names_its_grader(
    tmp_path: Path,
) -> None:
    dataset = MemoryDataset([Sample(id=str(i), input="q", target="26") for i in range(3)])
    task = Task(dataset=dataset, scorer=numeric_answer({"tolerant": tolerant}, extractor="model"))
    outputs = ["so 26", "so 26", "so 26"]
    grader = get_model(
        "mockllm/model",
        custom_outputs=[
            ModelOutput.from_content("mockllm/model", c) for c in ["26", "about " * 500_000, "0x1A"]
        ],
    )
    # without a grader role: the evaluated model grades, and each score says so
    _, scores = run(task, [*outputs, "26", "26", "26"], tmp_path, max_samples=1)
    assert all(s.metadata["grader_source"] == FROM_EVALUATED for s in scores)  # type: ignore[index]
    _, scores = run(task, outputs, tmp_path, max_samples=1, model_roles={"grader": grader})
    first, huge, hexa = scores
    assert first.value == {"tolerant": 1.0}
    assert first.metadata["grader_source"] == FROM_ROLE  # type: ignore[index]
    # a reply that cannot be read is no answer: incorrect, in the denominator, flagged
    assert huge.value == {"tolerant": 0.0} and huge.metadata["unreadable"] is True  # type: ignore[index]
    assert len(huge.metadata["extractor_reply"]) <= 2000  # type: ignore[index]
    assert len(huge.explanation or "") <= 2000
    assert hexa.value == {"tolerant": 0.0} and "0x1A" in (hexa.explanation or "")


# --- property: scoring never raises, whatever the output, target and program record say ---

import asyncio  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from inspect_ai.model import ChatMessageUser  # noqa: E402
from inspect_ai.scorer import Target  # noqa: E402
from inspect_ai.solver import TaskState  # noqa: E402

from finmath_tasks.sandbox.client import PROGRAM_RESULT_KEY  # noqa: E402

NUMBERISH = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.sampled_from([1e308, 5e-324, -0.0, 123456789012345678901234567890]),
)
TEXTS = st.one_of(
    st.text(max_size=300),
    NUMBERISH.map(lambda x: f"The answer is {x}."),
    st.lists(st.sampled_from(["\\boxed{", "}", "answer is", "-", " ", "1", "e9", "%", "$"])).map(
        "".join
    ),
)
RECORDS = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"ok": st.booleans(), "value": st.one_of(st.none(), NUMBERISH, st.text(max_size=5))},
        # the gold program's value is ours (the sandbox protocol gives a finite float)
        optional={"gold_value": st.floats(-1e15, 1e15), "error": st.text(max_size=20)},
    ),
)


def state_for(output: str, record: object) -> TaskState:
    state = TaskState(
        model="mockllm/model",  # type: ignore[arg-type]
        sample_id=1,
        epoch=1,
        input="q",
        messages=[ChatMessageUser(content="q")],
        output=ModelOutput.from_content("mockllm/model", output),
    )
    if record is not None:
        state.store.set(PROGRAM_RESULT_KEY, record)
    return state


SCORERS = [
    numeric_answer({"tolerant": tolerant, "exact": exact}),
    numeric_answer({"tolerant": tolerant}, answer="program", gold="program"),
]


GOLDS = st.one_of(
    st.just(""),  # answers withheld
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(min_value=-(10**15), max_value=10**15).map(str),
    st.decimals(min_value=-(10**12), max_value=10**12, places=4).map(str),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(output=TEXTS, target=GOLDS, record=RECORDS)
def test_a_bad_model_output_never_raises(output: str, target: str, record: object) -> None:
    """Whatever the model wrote (or its program returned), scoring a real gold gives a
    score with its reason: an exception here would be the sample's error."""
    for score_fn in SCORERS:
        score = asyncio.run(score_fn(state_for(output, record), Target(target)))
        assert score is not None and score.explanation
        if isinstance(score.value, dict):
            assert all(v in (0.0, 1.0) for v in score.value.values()), score.value
        else:
            assert math.isnan(score.value) and score.reason == "no_gold_answer"  # type: ignore[arg-type]


def test_output_cut_off_by_max_tokens_has_no_guessed_answer(tmp_path: Path) -> None:
    dataset = MemoryDataset([Sample(id=i, input="q", target="-1") for i in (1, 2, 3)])
    task = Task(dataset=dataset, scorer=numeric_answer({"tolerant": tolerant}))
    formula = r"so \[ x = \left( 1 + r \right)^{n} - 1"
    outputs = [
        ModelOutput.from_content("mockllm/model", formula, stop_reason="max_tokens"),
        ModelOutput.from_content("mockllm/model", f"{formula} = -1", stop_reason="stop"),
        ModelOutput.from_content(
            "mockllm/model", "The answer is -1. Then more text 5", stop_reason="max_tokens"
        ),
    ]
    model = get_model("mockllm/model", custom_outputs=outputs)
    [log] = eval(task, model=model, log_dir=str(tmp_path), display="none", max_samples=1)
    assert log.status == "success" and log.samples is not None
    cut, finished, marked = (s.scores["numeric_answer"] for s in log.samples)  # type: ignore[index]
    assert cut.metadata["method"] == "truncated"  # type: ignore[index]
    assert cut.answer is not None and "truncated" in cut.answer
    assert cut.value == {"tolerant": 0.0}
    assert finished.value == {"tolerant": 1.0}  # "= -1" at the end of a finished answer
    assert marked.value == {"tolerant": 1.0}  # an explicit marker still counts when cut off


def test_inspect_score_on_a_log_whose_targets_were_edited_to_nan(tmp_path: Path) -> None:
    """``inspect score --action overwrite`` over a log whose targets were set to "nan": each
    such sample unscored with the reason, no traceback, the command succeeds."""
    import subprocess
    import sys

    from inspect_ai.log import read_eval_log, write_eval_log

    from finmath_tasks.tasks.knowledgefmath import knowledgefmath

    [log] = eval(
        knowledgefmath(split="demo", solver="oracle"),
        model="mockllm/model",
        limit=3,
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success" and log.samples is not None
    for sample in log.samples[:2]:
        sample.target = "nan"
    write_eval_log(log, log.location)
    inspect = str(Path(sys.executable).with_name("inspect"))
    done = subprocess.run(
        [
            inspect,
            "score",
            log.location,
            "--overwrite",
            "--action",
            "overwrite",
            "--display",
            "plain",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr + done.stdout
    rescored = read_eval_log(log.location)
    assert rescored.samples is not None
    first, _, third = rescored.samples
    assert "'nan' is not a finite number" in (first.scores["financemath"].explanation or "")  # type: ignore[index]
    assert third.scores["financemath"].value == 1.0  # type: ignore[index]
