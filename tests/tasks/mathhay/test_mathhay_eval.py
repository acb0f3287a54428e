"""End-to-end: real Inspect evals of the mathhay task with scripted mockllm models."""

from __future__ import annotations

import inspect
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from inspect_ai.log import EvalLog
from inspect_ai.model import ModelOutput, get_model
from mathhay_fixtures import RELEASE, RELEVANT, write_release

from eval_helpers import metrics as logged_metrics
from eval_helpers import scripted
from finmath_tasks.loading import DatasetError
from finmath_tasks.params import TaskParameterError
from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.mathhay.dataset import load_data
from finmath_tasks.tasks.mathhay.haystack import TokenPool, haystack_budget, placement_offsets
from finmath_tasks.tasks.mathhay.scoring import HAYSTACK_KEY
from finmath_tasks.tasks.mathhay.task import (
    SPACING,
    expand,
    in_files_order,
    prefix_sorted,
    token_pool,
)

ACC = "accuracy"
SCORED = "scored"
FLAG = ""


def metrics(log: EvalLog, key: str) -> dict[str, float]:
    """Every metric of score ``key``, and Inspect's count of its scored samples (``scored``)."""
    [score] = [s for s in log.results.scores if s.name == key]  # type: ignore[union-attr]
    return {**logged_metrics(log, key), SCORED: score.scored_samples}


def by(log: EvalLog, key: str, score: str = "mathhay") -> dict[str, float]:
    """Accuracy per value of sample metadata ``key``, as ``finmath report`` reads it from the
    samples (the breakdowns other than the category are not metrics of the run)."""
    from finmath_tasks.cli.runs import Run, group_accuracy

    run = Run(str(log.location), "mathhay", "m", {}, {}, 0, "", {})
    return group_accuracy(run, key)[score]


@pytest.fixture
def release(tmp_path: Path) -> str:
    write_release(tmp_path)
    return str(tmp_path)


def run(outputs: list[str], grader: list[str] | None = None, **task_args: Any) -> EvalLog:
    limit = task_args.pop("limit", None)
    if "release" not in task_args:
        task_args.update(release=RELEASE, subset=task_args.get("subset", "full"))
    [log] = eval(
        in_files_order(mathhay(**task_args)),  # the scripted outputs follow the files' order
        model=scripted(outputs),
        model_roles={"grader": scripted(grader)} if grader is not None else None,
        max_samples=1,  # the scripted outputs are consumed in dataset order
        limit=limit,
        display="none",
        log_dir=str(Path(task_args["data_dir"]) / "logs"),
    )
    assert log.status == "success", log.error
    return log


def fenced(answer: Any, reasoning: str = "120 - 80 = 40") -> str:
    body = json.dumps({"relevant_quantities": ["revenue: 120"], "reasoning": reasoning,
                       "answer": answer})  # fmt: skip
    return f"Here is my work.\n```json\n{body}\n```"


def test_exact_match_path_without_the_judge(release: str) -> None:
    log = run(
        [fenced(40), 'Answer: {"reasoning": "40 * 2.5", "answer": "100.1"}'],
        data_dir=release, task_type="sssd", length=1200, judge=False,
    )  # fmt: skip
    official, exact, tol = (metrics(log, k) for k in ("mathhay", "exact_match", "tolerant"))
    assert exact[ACC] == 0.5 and exact[SCORED] == 2
    assert tol[ACC] == 1.0  # 100.1 is within 0.2% of 100
    assert official[ACC] == 0.5  # judge=false: exact match alone
    assert exact[FLAG + "over_length"] == 0
    assert by(log, "task_type") == {"sssd": 0.5}
    assert by(log, "length") == {"1200": 0.5}
    assert by(log, "placement") == {"middle": 0.5}
    assert official["category=SSSD"] == 0.5
    assert list(official) == [
        "accuracy", "ci95_lower", "ci95_upper", "stderr", "category=SSSD", SCORED,
    ]  # fmt: skip
    first, second = log.samples  # type: ignore[misc]
    assert first.id == "sssd-000-1200-middle"
    assert first.scores["mathhay"].metadata["judge"] == "not asked (exact match)"
    assert second.scores["mathhay"].metadata["judge"] == "disabled (-T judge=false)"
    # the prompt: the haystack holds the relevant document at the middle offset, then the question
    user = first.messages[0].text
    assert user.startswith("Long-context documents:\n") and RELEVANT[0] in user
    assert "What was Acme's profit in 2023 in millions?" in user
    hay = first.store[HAYSTACK_KEY]
    rest = haystack_budget(1200) - hay["relevant_tokens"] - hay["prompt_tokens"]
    assert hay["rest"] == rest and hay["irrelevant_tokens"] == rest
    assert hay["positions"] == [rest // 2]
    assert hay["tokens"] == rest + hay["document_tokens"][0]
    assert hay["missing_pool_documents"] == 0


def judge_json(output: str, reasoning: str = "compared") -> str:
    return "Comparison follows.\n" + json.dumps({"reasoning": reasoning, "output": output})


def test_judge_path_with_scripted_grader(release: str) -> None:
    log = run(
        [fenced(41, "120 - 79 = 41"), fenced(99)],
        grader=[judge_json("Yes, equivalent"), judge_json("No")],
        data_dir=release, task_type="sssd", length=1200,
    )  # fmt: skip
    assert metrics(log, "exact_match")[ACC] == 0.0
    official = metrics(log, "mathhay")
    assert official[ACC] == 0.5 and official[SCORED] == 2
    first = log.samples[0].scores["mathhay"]  # type: ignore[index]
    assert first.value == 1.0 and first.metadata["judge"] == "yes"
    assert first.metadata["grader_model"] == "mockllm/model"
    # the judge saw the reference's layout: the gold solution and Answer1, the model's and Answer2
    [judge_call] = [e for e in log.samples[0].events if getattr(e, "role", None) == "grader"]
    prompt = judge_call.input[0].text  # type: ignore[union-attr]
    if prompt.startswith("attachment://"):
        prompt = log.samples[0].attachments[prompt.removeprefix("attachment://")]  # type: ignore[index]
    assert "def solve():\n    return 120 - 80\nAnswer1: 40.0" in prompt
    assert "120 - 79 = 41\nAnswer2: 41.0" in prompt
    assert '"output"' in prompt and '"reasoning"' in prompt


def test_unreadable_judge_replies_and_a_failed_judge_call_count_as_incorrect(
    release: str,
) -> None:
    """The reference's denominator: every question; a judge failure is "not Yes"."""
    replies = iter([
        judge_json("yes"),                       # readable: Yes
        "They might be the same, hard to say.",  # no JSON object
        None,                                    # the call raises
        '{"output": "Yes"}',                     # no reasoning string: the schema rejects it
        judge_json("Nope"),                      # readable, no "yes": not equivalent
        judge_json("YES they match"),            # contains "yes" in another case
    ])  # fmt: skip

    def grader(*_: Any) -> ModelOutput:
        reply = next(replies)
        if reply is None:
            raise RuntimeError("judge service unavailable")
        return ModelOutput.from_content("mockllm/judge", reply)

    [log] = eval(
        mathhay(data_dir=release, release=RELEASE, subset="full", task_type="sssd",
                length=[900, 1000, 1200]),
        model=scripted([fenced(41)] * 6),
        model_roles={"grader": get_model("mockllm/judge", custom_outputs=grader)},
        max_samples=1, display="none", log_dir=str(Path(release) / "logs"),
    )  # fmt: skip
    assert log.status == "success", log.error
    official, exact = metrics(log, "mathhay"), metrics(log, "exact_match")
    assert official[SCORED] == 6  # nothing left out of the denominator
    assert official[ACC] == pytest.approx(2 / 6)
    assert exact[FLAG + "judge_unparseable"] == 2
    assert exact[FLAG + "judge_error"] == 1
    ran = sorted(log.samples, key=lambda s: (s.metadata["length"], str(s.id)))  # type: ignore[arg-type]
    scores = [s.scores["mathhay"] for s in ran]  # type: ignore[index]
    assert [s.value for s in scores] == [1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert [s.metadata["judge"] for s in scores] == [
        "yes", "unparseable", "error", "unparseable", "no", "yes"]  # fmt: skip
    assert "judge reply unreadable, counted as not equivalent" in (scores[1].explanation or "")
    assert "no JSON object with a 'output' field" in (scores[1].explanation or "")
    assert "judge call failed" in (scores[2].explanation or "")
    assert "RuntimeError: judge service unavailable" in (scores[2].explanation or "")
    assert "no 'reasoning' string" in (scores[3].explanation or "")


def test_a_length_too_small_for_the_documents_is_flagged_and_warned(
    release: str, caplog: pytest.LogCaptureFixture
) -> None:
    # the fixture's two sssd questions need 201 and 199 tokens: at 200 the first is too short
    log = run([fenced(40)], data_dir=release, task_type="sssd", length=200, limit=1)
    hay = log.samples[0].store[HAYSTACK_KEY]  # type: ignore[index]
    assert hay["too_short"] and hay["irrelevant_tokens"] == 0 and hay["rest"] == 0
    assert hay["needed"] > hay["budget"] == 200
    assert metrics(log, "exact_match")[FLAG + "haystack_too_short"] == 1
    warned = [r.getMessage() for r in caplog.records if "is smaller than" in r.getMessage()]
    assert warned and "-T length=200" in warned[0]
    assert f"need ({hay['needed']} tokens)" in warned[0]
    # a length that holds the documents is not flagged
    log = run([fenced(40)], data_dir=release, task_type="sssd", length=1200, limit=1)
    assert metrics(log, "exact_match")[FLAG + "haystack_too_short"] == 0
    # one too short for every question is refused when the task is built
    with pytest.raises(TaskParameterError, match=r"-T length=50 leaves 50 tokens .* 199"):
        mathhay(data_dir=release, release=RELEASE, subset="full", task_type="sssd", length=50)


def test_the_paper_sets_and_categories(release: str) -> None:
    """v1 by default: verified+unverified (the paper's Full), grouped by Table 3's categories."""
    # the fixture has the files of sssd and 3s3d (both subsets) and ss2d (verified only):
    # task_type=all (the default) needs all seven, never a smaller set under the same name
    with pytest.raises(DatasetError, match=r"verified_haystack_question_2ssd\.json not found"):
        mathhay(data_dir=release, release="v1", length=2000)
    log = run(
        [fenced(40), fenced(1), fenced(100), fenced(40), fenced(120), fenced(5)],
        data_dir=release, release="v1", length=2000, task_type=["sssd", "3s3d"], judge=False,
    )  # fmt: skip
    official = metrics(log, "mathhay")
    # sssd (2 verified + 2 unverified) and 3s3d (1 + 1)
    assert official[SCORED] == 6 and official[ACC] == pytest.approx(4 / 6)
    assert official["category=SSSD"] == 0.75 and official["category=MSMD"] == 0.5
    assert by(log, "source") == pytest.approx({"verified": 2 / 3, "unverified": 2 / 3})
    three = [s for s in log.samples if s.metadata["task_type"] == "3s3d"]  # type: ignore[union-attr]
    assert three[0].metadata["placement"] == "first-first-first"
    ids = [str(s.id) for s in log.samples]  # type: ignore[union-attr]
    assert "sssd-003-2000-middle" in ids  # the unverified file follows the verified one
    task = mathhay(data_dir=release, release="v1", subset="verified", task_type=["ssmd", "3s3d"])
    assert sorted(s.metadata["category"] for s in task.dataset) == ["MSMD", "SSMD"]
    # a category names all its task types: msmd needs the 2s2d and 3s2d files too
    with pytest.raises(DatasetError, match=r"verified_haystack_question_2s2d\.json not found"):
        mathhay(data_dir=release, release="v1", subset="verified", task_type="msmd")
    with pytest.raises(DatasetError, match=r"unverified_haystack_question_ss2d\.json not found"):
        mathhay(data_dir=release, release="v1", subset="unverified", task_type="ssmd")


def test_the_o1_reserve_at_128k(release: str) -> None:
    """The reference leaves 20000 tokens free at 128K for the o1 models (-T reserve=20000)."""
    pool_task = mathhay(data_dir=release, release="v1", subset="verified", task_type="sssd",
                        length=128000, reserve=20000)  # fmt: skip
    assert pool_task.metadata["reserve"] == 20000
    assert haystack_budget(128000, 20000) == 108000 and haystack_budget(128000) == 126000
    assert haystack_budget(64000, 20000) == 64000  # only at 128K, as in the reference


def test_over_length_samples_are_marked_counted_and_not_sent(release: str) -> None:
    log = run([], data_dir=release, task_type="sssd", length=1200, max_prompt_tokens=500)
    official = metrics(log, "mathhay")
    assert official[ACC] == 0.0 and official[SCORED] == 2
    assert metrics(log, "exact_match")[FLAG + "over_length"] == 2
    for sample in log.samples:  # type: ignore[union-attr]
        assert [m.role for m in sample.messages] == ["user"]  # never sent, never truncated
        assert "exceeds the context budget of 500 tokens" in (
            sample.scores["mathhay"].explanation or ""
        )


def test_unparseable_answer_is_incorrect_with_reason(release: str) -> None:
    log = run(
        ["The answer is 40.", fenced("$100 dollars")], grader=[],  # the judge is never asked
        data_dir=release, task_type="sssd", length=1200,
    )  # fmt: skip
    assert metrics(log, "mathhay")[ACC] == 0.0 and metrics(log, "exact_match")[ACC] == 0.0
    assert metrics(log, "tolerant")[ACC] == 0.5  # "$100 dollars" read as text by tolerant
    assert metrics(log, "exact_match")[FLAG + "answer_unparseable"] == 2
    first, second = (s.scores["mathhay"] for s in log.samples)  # type: ignore[union-attr]
    assert "no JSON object with a 'answer' field" in (first.explanation or "")
    assert second.metadata["judge"] == "not asked (answer not a number)"


def test_two_documents_default_first_middle_and_lists_of_lengths(release: str) -> None:
    log = run(
        [fenced(80)] * 4, data_dir=release, task_type="ss2d", length=[900, 1200],
        placement=["first-middle", "p5"],
    )  # fmt: skip
    ids = sorted(str(s.id) for s in log.samples)  # type: ignore[union-attr]
    assert ids == sorted(["ss2d-000-900-first-middle", "ss2d-000-900-p5",
                   "ss2d-000-1200-first-middle", "ss2d-000-1200-p5"])  # fmt: skip
    for sample in log.samples:  # type: ignore[union-attr]
        hay = sample.store[HAYSTACK_KEY]
        rest, (n1, n2) = hay["rest"], hay["document_tokens"]
        where = {"first-middle": ["first", "middle"], "p5": ["p5", "p5"]}
        first, second = placement_offsets(where[sample.metadata["placement"]], rest)
        assert (first, second) in {(0, rest // 2), (rest // 10 * 5, rest // 10 * 5)}
        assert hay["positions"] == [first, second + n1]
        assert hay["tokens"] == rest + n1 + n2
    assert metrics(log, "mathhay")["category=SSMD"] == 1.0
    assert by(log, "cell")["900/p5"] == 1.0 and by(log, "documents") == {"2": 1.0}
    assert by(log, "type_length")["ss2d/1200"] == 1.0


@pytest.mark.slow
def test_a_haystack_that_fails_is_that_samples_error_and_the_others_are_scored(
    release: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = TokenPool.layout
    calls = {"n": 0}

    def flaky(self: TokenPool, *args: Any, **kwargs: Any) -> Any:
        # the first haystack built when solving (the solver builds in a worker thread; the
        # task lays the haystacks out on the main thread to sort them)
        if threading.current_thread() is not threading.main_thread():
            calls["n"] += 1
            if calls["n"] == 1:
                raise RuntimeError("boom")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(TokenPool, "layout", flaky)
    [log] = eval(
        in_files_order(mathhay(release=RELEASE, subset="full", data_dir=release,
                               task_type="sssd", length=1200)),
        model=scripted([fenced(100)]), max_samples=1, display="none",
        log_dir=str(Path(release) / "logs"),
    )  # fmt: skip
    assert log.status == "error"  # Inspect's default fail_on_error: not a whole run
    assert log.samples is not None and len(log.samples) == 2
    bad, good = log.samples
    assert bad.error is not None and bad.error.message == "RuntimeError('boom')"
    assert not bad.messages or all(m.role != "assistant" for m in bad.messages)  # no call
    assert good.error is None and good.scores is not None
    assert good.scores["mathhay"].value == 1.0
    official = metrics(log, "mathhay")
    assert official[SCORED] == 1 and official[ACC] == 1.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"task_type": "4s4d"}, "mathhay: -T task_type='4s4d' is not one of"),
        ({"placement": "top"}, "mathhay: -T placement='top' is not one of"),
        ({"task_type": "sssd", "placement": "first-middle"}, "has 2 positions"),
        ({"subset": "verified"}, "mathhay: -T subset='verified' is not one of full"),
        ({"length": "long"}, "mathhay: -T length='long' must be an integer"),
        ({"release": "v2"}, "mathhay: -T release='v2' is not one of"),
    ],
)
def test_bad_parameters_name_the_parameter(release: str, args: dict, message: str) -> None:
    with pytest.raises(TaskParameterError, match=message.replace("(", r"\(")):
        mathhay(data_dir=release, **{"release": RELEASE, "subset": "full", **args})


def test_cli_lists_arrive_as_strings(release: str) -> None:
    # `inspect eval ... -T length=900,1200 -T placement=p1,p9` passes lists of strings
    task = mathhay(data_dir=release, release=RELEASE, subset="full", task_type=["sssd"],
                   length=["900", "1200"],
                   placement=["p1", "p9"])  # fmt: skip
    assert sorted(str(s.id) for s in task.dataset) == sorted(
        f"sssd-00{n}-{length}-{p}" for n in (0, 1) for length in (900, 1200) for p in ("p1", "p9")
    )


def test_the_samples_go_in_prefix_order_spaced_for_ten_requests(release: str) -> None:
    """No -T sets the order: the task sends prefix order spaced for 10 requests in flight,
    says so in its metadata, and in_files_order gives back the files' order."""
    args = {"data_dir": release, "release": RELEASE, "subset": "full", "task_type": ["sssd", "ss2d"],
            "length": [900, 1200], "placement": [f"p{n}" for n in range(1, 10)]}  # fmt: skip
    task = mathhay(**args)
    assert "order" not in inspect.signature(mathhay).parameters
    assert "in_flight" not in inspect.signature(mathhay).parameters
    assert (task.metadata or {})["sample_order"] == "prefix (spacing 10)"
    files = in_files_order(task)
    meta = task.metadata or {}
    data = load_data(release, RELEASE, "full", list(meta["task_types"]))
    expanded = expand(data.dataset, [900, 1200], [f"p{n}" for n in range(1, 10)])
    assert [s.id for s in files.dataset] == [s.id for s in expanded]  # the files' order
    sent = [str(s.id) for s in task.dataset]
    assert len(sent) == len(expanded) == 54 and sorted(sent) == sorted(str(s.id) for s in expanded)
    pool = token_pool(data)
    for spacing, same in ((SPACING, True), (1, False)):
        ordered = prefix_sorted(files.dataset, data, pool, int(meta["reserve"]), spacing)
        assert ([str(s.id) for s in ordered] == sent) is same
    # with 10 requests in flight, a server's prompt cache serves more of the prefix order
    from finmath_tasks.prefix_cache import SERVER, serve
    from finmath_tasks.tasks.mathhay import cost

    [prefix] = serve(cost.prompts(args), [SERVER], None, SPACING)
    [in_files] = serve(cost.prompts(args, files_order=True), [SERVER], None, SPACING)
    assert prefix.tokens == in_files.tokens and prefix.read > in_files.read
