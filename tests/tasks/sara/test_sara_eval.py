"""End-to-end: real Inspect evals of the sara task with a scripted mockllm model."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from inspect_ai.log import EvalLog
from inspect_ai.scorer import SampleScore, ci_wilson
from sara_fixtures import EXEMPLAR_IDS, write_release

from eval_helpers import metrics as logged_metrics
from eval_helpers import scripted
from finmath_tasks.params import TaskParameterError
from finmath_tasks.tasks.sara import sara

ACC = "accuracy"
LOW = "ci90_lower"
HIGH = "ci90_upper"
SCORED = "scored"
UNREADABLE = "unreadable"
OVER_BUDGET = "over_budget"


@pytest.fixture
def release(tmp_path: Path) -> str:
    write_release(tmp_path)
    return str(tmp_path)


def run(outputs: list[str], **task_args: Any) -> EvalLog:
    [log] = eval(
        sara(**task_args),
        model=scripted(outputs),
        max_samples=1,  # the scripted outputs are consumed in dataset order
        display="none",
        log_dir=task_args.get("data_dir", "logs") + "/logs",
    )
    assert log.status == "success", log.error
    return log


def metrics(log: EvalLog, key: str) -> dict[str, float]:
    """Every metric of score ``key``, and Inspect's count of its scored samples (``scored``)."""
    [score] = [s for s in log.results.scores if s.name == key]  # type: ignore[union-attr]
    return {**logged_metrics(log, key), SCORED: score.scored_samples}


def interval(log: EvalLog, key: str) -> tuple[float, float]:
    """Inspect's 90% Wilson interval of ``key`` over the log's samples scored under it:
    one question per case, so not clustered (no two questions share a case)."""
    scores = [
        SampleScore(score=s.scores[key], sample_id=s.id, sample_metadata=s.metadata)  # type: ignore[index]
        for s in log.samples or []
        if not math.isnan(s.scores[key].value)  # type: ignore[index,arg-type]
    ]
    bounds = ci_wilson(0.9)(scores)  # type: ignore[arg-type]
    return bounds["lower"], bounds["upper"]  # type: ignore[index]


def test_zero_shot_entailment(release: str) -> None:
    # test split, entailment: s10_a_1_pos (E), s10_b_pos (E), s11_neg (C)
    log = run(
        ["Entailment", "Contradiction", "False"],
        data_dir=release, prompting="zero_shot", retrieval="mentioned_only",
    )  # fmt: skip
    got = metrics(log, "entailment")
    low, high = interval(log, "entailment")
    assert 0 < low < 2 / 3 < high < 1
    assert got[ACC] == pytest.approx(2 / 3)
    assert got[LOW] == pytest.approx(low) and got[HIGH] == pytest.approx(high)
    assert got[SCORED] == 3
    # Inspect's stderr beside the paper's interval, clustered by case: one question per
    # case, so each cluster is one sample and it is the plain sd / sqrt(n)
    assert [s.metadata["document"] for s in log.samples or []] == [
        "s10_a_1_pos", "s10_b_pos", "s11_neg",
    ]  # fmt: skip
    assert got["stderr"] == pytest.approx(math.sqrt((2 * (1 / 3) ** 2 + (2 / 3) ** 2) / 2 / 3))
    assert got["section=s10"] == 0.5
    assert got["section=s11"] == 1.0
    assert [s.name for s in log.results.scores] == ["entailment"]  # type: ignore[union-attr]
    first = log.samples[0]  # type: ignore[index]
    assert [m.role for m in first.messages] == ["system", "user", "assistant"]
    user = first.messages[1].text
    assert user.startswith("Statutes:\n§10. Widget levy\n\n(a) General rule\n\n    (1) a levy")
    assert "(2) a widget given away" not in user  # mentioned_only
    # the paper's layout (Figure 4): facts and claim as one question, "True or False?"
    assert user.rstrip().endswith(
        "Question: Ann sold 12 widgets in 2019. Section 10(a)(1) applies to Ann for 2019. "
        "True or False?"
    )
    assert "Reply with a single word: True" in first.messages[0].text
    assert first.store["sara_retrieval"]["cited"] == ["s10(a)(1)"]


def test_few_shot_puts_eight_fixed_exemplars_before_the_case(release: str) -> None:
    log = run(
        ["Answer: Entailment", "Answer: Entailment", "Answer: Entailment"],
        data_dir=release, prompting="few_shot", retrieval="entire_section",
    )  # fmt: skip
    assert metrics(log, "entailment")[ACC] == pytest.approx(2 / 3)
    samples = log.samples or []
    roles = [m.role for m in samples[0].messages]
    assert roles == ["system"] + ["user", "assistant"] * 8 + ["user", "assistant"]
    exemplar_answers = [m.text for m in samples[0].messages[2:18:2]]
    assert exemplar_answers == ["True"] * 4 + ["False"] * 4  # the paper's order
    # the exemplar cases are read from the release's train split, by the package's ids
    assert log.eval.task_args.get("prompting") == "few_shot"
    assert log.eval.metadata["exemplars"] == EXEMPLAR_IDS  # type: ignore[index]
    assert "Exemplar person 0 sold 10 widgets in 2017." in samples[0].messages[1].text
    # the exemplars are the same for every question
    assert [m.text for m in samples[0].messages[1:17]] == [
        m.text for m in samples[2].messages[1:17]
    ]
    assert "(2) a widget given away" in samples[0].messages[17].text  # entire_section


def test_cot_exemplars_carry_explanations(release: str) -> None:
    outputs = [
        "Ann sold widgets, so the levy applies.\nAnswer: Entailment",
        "Cat sold 2 widgets, fewer than 10.\nAnswer: True",
        "Nothing says Dan's shop is a charity. It is true he runs a shop.\nAnswer: Contradiction",
    ]
    log = run(outputs, data_dir=release, prompting="cot", retrieval="none")
    got = metrics(log, "entailment")
    # Wilson: 3/3 has an interval of non-zero width (a normal approximation's is [1, 1])
    assert got[ACC] == 1.0 and got[LOW] < 0.8 and got[HIGH] == 1.0
    assert (got[LOW], got[HIGH]) == pytest.approx(interval(log, "entailment"))
    first = (log.samples or [])[0]
    exemplar = first.messages[2].text
    assert exemplar.splitlines()[-1] == "True"  # the paper's answer word, alone
    assert len(exemplar.splitlines()[0]) > 80  # an explanation before the verdict
    assert "Statutes:" not in first.messages[-2].text  # retrieval=none
    assert "(it does not) alone on the last line" in first.messages[0].text


def test_all_kinds_with_tax_scoring_and_an_unparseable_answer(release: str) -> None:
    # test split, all: s10_a_1_pos (E), s10_b_pos (E), s11_neg (C), tax_case_1 ($12000)
    outputs = ["Answer: Entailment", "Answer: Contradiction", "I am not sure.", "Answer: $15,000"]
    log = run(outputs, data_dir=release, kind="all", prompting="zero_shot", retrieval="references")
    ent = metrics(log, "entailment")
    assert ent[ACC] == pytest.approx(1 / 3) and ent[SCORED] == 3
    assert ent[UNREADABLE] == 1
    exact, tolerance = metrics(log, "exact_dollar"), metrics(log, "sara_tolerance")
    assert exact[ACC] == 0.0 and exact[SCORED] == 1
    assert tolerance[ACC] == 1.0 and tolerance[SCORED] == 1  # |15000-12000|/5000 = 0.6 < 1
    samples = {s.id: s for s in log.samples or []}
    scores = samples["s11_neg"].scores or {}
    unparseable = scores["entailment"]  # one scalar score per key
    assert unparseable.value == 0.0
    assert math.isnan(scores["exact_dollar"].value) and math.isnan(scores["sara_tolerance"].value)  # type: ignore[arg-type]
    assert "unparseable" in (unparseable.explanation or "")
    tax = samples["tax_case_1"]
    assert tax.store["sara_retrieval"]["fallback"] == "all_statutes"
    assert (
        "§11. Charities" in tax.messages[-2].text
        and "Question: Eve sold 20 widgets for $100,000 in 2019. How much levy"
        in tax.messages[-2].text
    )


@pytest.mark.slow
def test_unreadable_replies_are_wrong_in_the_denominator_and_counted(release: str) -> None:
    # test split, all: s10_a_1_pos (E), s10_b_pos (E), s11_neg (C), tax_case_1 ($12000).
    # The paper's intervals imply every case in its n: an unreadable reply is a wrong answer.
    outputs = [
        "True",  # read, correct
        "I cannot tell from these statutes.",  # no verdict
        "It could be True or False.",  # a hedge naming both
        "The levy cannot be computed from the facts.",  # no dollar amount
    ]
    log = run(outputs, data_dir=release, kind="all", prompting="cot", retrieval="mentioned_only")
    ent, exact = metrics(log, "entailment"), metrics(log, "exact_dollar")
    assert ent[ACC] == pytest.approx(1 / 3) and ent[SCORED] == 3 and ent[UNREADABLE] == 2
    assert exact[ACC] == 0.0 and exact[SCORED] == 1 and exact[UNREADABLE] == 1
    assert metrics(log, "sara_tolerance")[UNREADABLE] == 1
    assert ent[OVER_BUDGET] == 0
    samples = {s.id: s for s in log.samples or []}
    hedge = samples["s11_neg"].scores["entailment"]  # type: ignore[index]
    assert hedge.metadata["unreadable"] is True  # type: ignore[index]
    assert "incorrect: unparseable answer" in (hedge.explanation or "")
    assert "names both" in (hedge.explanation or "")


def test_tax_exact_dollar(release: str) -> None:
    log = run(["The levy is 12,000 dollars.\nAnswer: $12,000.00"], data_dir=release, kind="tax")
    assert metrics(log, "exact_dollar")[ACC] == 1.0
    assert metrics(log, "sara_tolerance")[ACC] == 1.0
    assert [s.name for s in log.results.scores] == ["exact_dollar", "sara_tolerance"]  # type: ignore[union-attr]


def test_prompt_over_budget_is_a_per_sample_error_not_a_truncation(release: str) -> None:
    log = run(
        ["Entailment", "Entailment", "Contradiction"],
        data_dir=release, retrieval="all_statutes", prompting="zero_shot", max_prompt_tokens=50,
    )  # fmt: skip
    got = metrics(log, "entailment")
    assert got[ACC] == 0.0 and got[SCORED] == 3 and got[OVER_BUDGET] == 3 and got[UNREADABLE] == 0
    for sample in log.samples or []:
        score = sample.scores["entailment"]  # type: ignore[index]
        assert "exceeds the context budget of 50 tokens" in (score.explanation or "")
        assert sample.output.completion == ""  # nothing was generated
        assert sample.store["prompt_tokens"] > 50


@pytest.mark.parametrize(
    ("name", "value"),
    [("retrieval", "bm25"), ("prompting", "two_shot"), ("kind", "numeric"), ("split", "dev")],
)
def test_bad_parameters_are_refused_by_name(name: str, value: str, release: str) -> None:
    with pytest.raises(TaskParameterError, match=f"-T {name}={value!r}"):
        sara(data_dir=release, **{name: value})


@pytest.mark.realdata
@pytest.mark.slow
@pytest.mark.parametrize(
    ("prompting", "retrieval"),
    [("cot", "mentioned_only"), ("few_shot", "references"), ("zero_shot", "all_statutes")],
)
def test_real_test_split(data_dir: Path, tmp_path: Path, prompting: str, retrieval: str) -> None:
    from finmath_tasks.tasks.sara.dataset import load_data, load_dataset

    gold = [s.target for s in load_dataset(load_data(str(data_dir)), "test", "entailment")]
    assert len(gold) == 100
    # the gold verdicts, except that the first 10 cases get the opposite one
    flipped = {"Entailment": "Contradiction", "Contradiction": "Entailment"}
    outputs = [f"Answer: {flipped[g] if i < 10 else g}" for i, g in enumerate(gold)]
    [log] = eval(
        sara(data_dir=str(data_dir), prompting=prompting, retrieval=retrieval),
        model=scripted(outputs),
        max_samples=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    got = metrics(log, "entailment")
    low, high = interval(log, "entailment")
    assert got[ACC] == pytest.approx(0.9) and got[SCORED] == 100
    assert got[LOW] == pytest.approx(low) and got[HIGH] == pytest.approx(high)
    sections = {k.removeprefix("section=") for k in got if k.startswith("section=")}
    assert sections == {"s1", "s2", "s63", "s68", "s151", "s152", "s3301", "s3306", "s7703"}


def test_default_budget_is_the_models_context_length(release: str, tmp_path: Path) -> None:
    from inspect_ai.model import ModelInfo, ModelOutput, get_model, set_model_info

    name = "mockllm/sara-small-context"
    set_model_info(name, ModelInfo(context_length=250))

    def model():  # type: ignore[no-untyped-def]
        outputs = [ModelOutput.from_content(name, "Entailment") for _ in range(3)]
        return get_model(name, custom_outputs=outputs)

    def tokens_and_refusals(retrieval: str) -> tuple[list[int], list[bool]]:
        [log] = eval(
            sara(data_dir=release, prompting="zero_shot", retrieval=retrieval),
            model=model(),
            display="none",
            log_dir=str(tmp_path),
        )
        assert log.status == "success"
        samples = log.samples or []
        return (
            [s.store["prompt_tokens"] for s in samples],
            ["prompt_over_budget" in s.store for s in samples],
        )

    small, refused_small = tokens_and_refusals("mentioned_only")
    large, refused_large = tokens_and_refusals("all_statutes")
    assert max(small) <= 250 < min(large)
    assert refused_small == [False] * 3 and refused_large == [True] * 3
