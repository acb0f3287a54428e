"""TAT-QA's error causes from its gold derivations, through a real eval: crafted agent replies
for each cause get that cause and its evidence and no other, a correct answer none;
`inspect score` recomputes them; any reply gets exactly one cause per wrong key, never a
raise; the misread check on real records."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inspect_ai import eval
from inspect_ai.log import read_eval_log
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import Target
from inspect_ai.solver import TaskState
from tatqa_fixtures import arithmetic_question, write_split

from eval_helpers import scripted
from finmath_tasks.scorers.causes import CAUSES, ERROR_CAUSE_KEY, ERROR_EVIDENCE_KEY, CauseInput
from finmath_tasks.scorers.causes_gold import is_usual
from finmath_tasks.solvers.agents import AGENT_ANSWERS_KEY, AGENT_RESPONSE_KEY
from finmath_tasks.tasks.tatqa import tatqa
from finmath_tasks.tasks.tatqa.causes import gold_expression, tatqa_causes
from finmath_tasks.tasks.tatqa.task import tatqa_scoring


def _question(uid: str, question: str, derivation: str, answer: float, scale: str = "million"):
    return arithmetic_question(uid, question, derivation, answer, scale, order=int(uid[1:]))


DOCUMENT: dict[str, Any] = {
    "table": {
        "uid": "t-causes",
        "table": [
            ["", "2021", "2020"],
            ["Revenue", "1,250.0", "1,000.0"],
            ["Cost of sales", "700.0", "640.0"],
            ["Operating expenses", "(120.5)", "110.0"],
        ],
    },
    "paragraphs": [{"uid": "p-1", "order": 1, "text": "Amounts are in millions."}],
    "questions": [
        _question("q1", "What is the change in revenue?", "1,250.0 - 1,000.0", 250.0),
        _question(
            "q2",
            "What is the percentage change in revenue?",
            "(1,250.0 - 1,000.0) / 1,000.0",
            25.0,
            "percent",
        ),
        _question(
            "q3",
            "What is the gross margin in 2021?",
            "(1,250.0 - 700.0) / 1,250.0",
            44.0,
            "percent",
        ),
        _question(
            "q4", "What is revenue times the cost ratio?", "640.0 / 700.0 * 1,250.0", 1142.86
        ),
        _question("q5", "What is the total cost of sales?", "700.0 + 640.0", 1340.0),
        _question("q6", "What is the average cost of sales?", "(700.0 + 640.0) / 2", 670.0),
        _question("q7", "What is the 2021 revenue after tax?", "1,250.0 * 0.35", 437.5),
        _question("q8", "What is the change in cost of sales?", "700.0 - 640.0", 60.0),
        _question("q9", "What is the 2020 gross profit?", "1,000.0 - 640.0", 360.0),
        _question("q10", "What is the 2020 cost of sales?", "640.0 + 0", 640.0),
    ],
}


def reply(steps: str, answer: Any) -> str:
    return json.dumps({"steps": steps, "answer": answer})


REPLIES = [
    # q1: the 2020 cost of sales taken for the 2020 revenue
    reply("1,250.0 - 640.0 = 610", "610"),
    # q2: the base entered as 10,000
    reply("250 / 10000 = 0.025, so 2.5%", "2.5"),
    # q3: the gross profit, not the margin asked for
    reply("Gross profit is 1,250.0 - 700.0 = 550", "550"),
    # q4: the ratio rounded to two digits first
    reply("640 / 700 = 0.91; 0.91 * 1,250 = 1137.5", "1137.5"),
    # q5: a slip in the stated sum
    reply("700 + 640 = 1440", "1440"),
    # q6: every input the document's and the sum right, the method wrong
    reply("700 - 640 = 60, and 60 is the change", "60"),
    # q7: the gold's 0.35 is written nowhere
    reply("1,250 * 0.4 = 500", "500"),
    # q8: correct
    reply("700 - 640 = 60", "60"),
    # q9: the answer stated in the text, the JSON answer left empty
    "The answer is 380.\n" + reply("1,000 - 620 = 380", None),
    # q10: no answer at all
    reply("I cannot tell from the table.", None),
]
EXPECTED = [
    "misread",
    "unit",
    "partial",
    "precision",
    "arithmetic",
    "method",
    "gold_suspect",
    None,
    "format",
    "no_answer",
]


def causes_of(path: str) -> list[tuple[str | None, dict[str, Any] | None]]:
    log = read_eval_log(path)
    assert log.status == "success" and log.samples
    out = []
    for sample in sorted(log.samples, key=lambda s: int(str(s.id)[1:])):
        meta = (sample.scores or {})["rounding"].metadata or {}
        out.append((meta.get(ERROR_CAUSE_KEY), meta.get(ERROR_EVIDENCE_KEY)))
    return out


@pytest.mark.slow
def test_each_cause_through_a_real_eval_and_inspect_score(tmp_path: Path) -> None:
    write_split(tmp_path / "data", [DOCUMENT])
    task = tatqa(data_dir=str(tmp_path / "data"), solver="cot")
    [log] = eval(
        task,
        model=scripted(REPLIES),
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_samples=1,
    )
    assert log.status == "success"
    found = causes_of(log.location)
    assert [c for c, _ in found] == EXPECTED
    evidence = [e or {} for _, e in found]
    assert evidence[0]["input"] == "1,000.0" and evidence[0]["written"] == "640.0"
    assert evidence[0]["stated_in_reply"] is True
    assert evidence[1]["exponent"] == 1 and evidence[1]["input"] == "1,000.0"
    assert evidence[2]["step"] == 1 and evidence[2]["intermediate"] == pytest.approx(550.0)
    assert evidence[3]["digits"] == 2
    assert evidence[4]["step"] == "700 + 640 = 1440"
    assert evidence[5]["steps_checked"] == 1
    assert evidence[6]["unwritten"] == ["0.35"]
    assert evidence[8]["error_class"] == "harness:extractor_missed"
    # the tolerant key explains the same answers the same way
    log_ = read_eval_log(log.location)
    assert log_.samples is not None
    first = sorted(log_.samples, key=lambda s: int(str(s.id)[1:]))[0]
    assert (first.scores or {})["tolerant"].metadata[ERROR_CAUSE_KEY] == "misread"  # type: ignore[index]
    done = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "score", log.location, "--action", "overwrite",
         "--overwrite", "--display", "plain"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert [c for c, _ in causes_of(log.location)] == EXPECTED


def test_the_derivation_rerun_and_its_steps() -> None:
    gold = gold_expression("(1,250.0 - 700.0) / 1,250.0", 44.0)
    assert [x.text for x in gold.inputs] == ["1,250.0", "700.0", "1,250.0"]
    value, steps = gold.run({}, None)
    assert value == pytest.approx(44.0) and steps == [pytest.approx(550.0), pytest.approx(44.0)]
    # a number alone in parentheses: the reading that gives the published answer
    negative = gold_expression("3 + (13) + 26", 16.0)
    assert negative.run({}, None)[0] == pytest.approx(16.0)
    assert negative.run({1: 14.0}, None)[0] == pytest.approx(15.0)


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    folder = tmp_path_factory.mktemp("causes_data")
    write_split(folder, [DOCUMENT])
    return list(tatqa(data_dir=str(folder), solver="cot").dataset)


SCORER = tatqa_scoring().inner


def _scored(sample: Any, answer: Any, response: str) -> dict[str, Any]:
    state = TaskState(
        model="mockllm/model",  # type: ignore[arg-type]
        sample_id=sample.id or 0,
        epoch=1,
        input=sample.input,
        messages=[],
        output=ModelOutput.from_content("mockllm/model", response),
        metadata=sample.metadata,
    )
    state.store.set(AGENT_ANSWERS_KEY, [{"stage": "cot", "answer": answer, "method": "json"}])
    state.store.set(AGENT_RESPONSE_KEY, response)
    result = asyncio.run(SCORER(state, Target(str(sample.target))))
    assert result is not None
    return dict(result.metadata or {})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    st.one_of(st.none(), st.text(max_size=40), st.floats(allow_nan=True).map(repr)),
    st.one_of(st.text(max_size=200), st.sampled_from(REPLIES)),
    st.integers(0, len(REPLIES) - 1),
)
def test_any_reply_gets_one_cause_per_wrong_key_or_none(
    samples: list[Any], answer: Any, response: str, question: int
) -> None:
    meta = _scored(samples[question], answer, response)
    classes, causes = meta.get("error_class") or {}, meta.get(ERROR_CAUSE_KEY) or {}
    assert set(causes) == set(classes)
    assert all(c in CAUSES for c in causes.values())
    assert all(isinstance(e.get("why"), str) for e in meta[ERROR_EVIDENCE_KEY].values())


def test_an_input_a_text_reply_invents_is_misread(samples: list[Any]) -> None:
    # q8, the change in cost of sales (60): a factor of 1.173 the report writes nowhere
    meta = _scored(samples[7], "70.38", reply("(700 - 640) * 1.173 = 70.38", "70.38"))
    assert meta[ERROR_CAUSE_KEY]["rounding"] == "misread"
    evidence = meta[ERROR_EVIDENCE_KEY]["rounding"]
    assert evidence["invented"] == ["1.173"] and evidence["step"] == "(700 - 640) * 1.173 = 70.38"
    # the same steps with the report's numbers only, and the wrong quantity: no invention
    meta = _scored(samples[7], "1340", reply("700 + 640 = 1340", "1340"))
    assert "invented" not in meta[ERROR_EVIDENCE_KEY]["rounding"]


REAL = Path(os.environ.get("FINMATH_DATA_DIR", "/nonexistent")) / "tatqa"


@pytest.mark.skipif(
    not (REAL / "tatqa_dataset_dev.json").is_file(), reason="needs FINMATH_DATA_DIR"
)
def test_misread_names_the_input_and_the_number_on_real_records() -> None:
    # every dev arithmetic question whose derivation subtracts two figures: the answer with
    # the subtracted figure read as another figure of the document is named as that misread
    dataset = tatqa(data_dir=str(REAL), solver="cot").dataset
    checked = 0
    for sample in dataset:
        meta = sample.metadata or {}
        try:
            gold = gold_expression(str(meta["derivation"]), float(meta["answer"]))
        except Exception:
            continue
        if len(gold.inputs) != 2 or "-" not in str(meta["derivation"]):
            continue
        from finmath_tasks.tasks.tatqa.causes import document_of
        from finmath_tasks.variants import find_numbers, is_year

        numbers = [w for w in find_numbers(document_of(meta)) if not is_year(w)]
        other = next(
            (
                w
                for w in numbers
                if not is_usual(w.value) and abs(w.value - gold.inputs[1].value) > 1
            ),
            None,
        )
        if other is None:
            continue
        wrong = gold.run({1: other.value}, None)[0]
        gold_value = gold.run({}, None)[0]
        if abs(wrong - gold_value) < 1:
            continue
        findings = asyncio.run(
            tatqa_causes(
                CauseInput(output="", gold=gold_value, answers=(round(wrong, 4),), metadata=meta)
            )
        )
        misreads = [f for f in findings if f.cause == "misread"]
        assert misreads, sample.id
        named = {(f.evidence["input"], f.evidence["written"]) for f in misreads}
        assert any(
            r.endswith(f"as {other.text}") for f in misreads for r in f.evidence["readings"]
        ), (sample.id, named)
        checked += 1
        if checked >= 25:
            break
    assert checked >= 25
