"""Settings that do nothing, or whose value cannot be used, are refused when the task is
built, in one line, by the parameter checks and ``APPLIES`` (``params.py``): a token budget
that is no whole number, SARA's retrieval strategy where no prompt reads it, a model role
no solver or scorer of the run calls; and the same checks in `finmath variants` and
`finmath grid --variant-seeds`."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval

from eval_helpers import scripted
from finmath_tasks import params
from finmath_tasks.cli.main import main
from finmath_tasks.params import TaskParameterError
from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.sara import sara

pytestmark = pytest.mark.realdata


@pytest.mark.parametrize("value", [0.5, math.inf, -math.inf, math.nan, 0, -3, True, "1000"])
@pytest.mark.parametrize("task", [sara, mathhay])
def test_a_token_budget_that_is_no_whole_number_above_zero_is_refused(
    data_dir: Path, task: Any, value: Any
) -> None:
    """``0.5`` became 0 (every sample over budget, accuracy 0), ``.inf`` an OverflowError."""
    kwargs = {"task_type": "sssd"} if task is mathhay else {}
    with pytest.raises(TaskParameterError) as info:
        task(max_prompt_tokens=value, **kwargs)
    message = str(info.value)
    assert message.endswith("must be a whole number above 0"), message
    assert f"-T max_prompt_tokens={value!r}" in message and "\n" not in message


def test_a_whole_float_budget_is_the_integer(data_dir: Path) -> None:
    assert params.positive_integer("t", "n", 1000.0) == 1000
    assert type(params.positive_integer("t", "n", 1000.0)) is int
    assert params.positive_integer("t", "n", 7) == 7
    built = sara(max_prompt_tokens=4000.0)
    assert built.dataset


@pytest.mark.parametrize("retrieval", ["entire_section", "references", "all_statutes"])
def test_sara_tax_cases_zero_shot_refuse_a_retrieval_strategy(
    data_dir: Path, retrieval: str
) -> None:
    """A tax case cites no unit: every strategy but none gives it all nine sections, and a
    zero-shot prompt has no exemplar whose statutes the strategy would choose."""
    with pytest.raises(TaskParameterError) as info:
        sara(kind="tax", prompting="zero_shot", retrieval=retrieval)
    assert str(info.value) == (
        f"sara: -T retrieval={retrieval!r} applies only to kind=entailment or all, or "
        "prompting=few_shot or cot, or retrieval=none (here kind=tax, prompting=zero_shot, "
        f"retrieval={retrieval}): it would change nothing; leave it out or choose a setting "
        "that reads it"
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "tax", "prompting": "zero_shot", "retrieval": "none"},  # no statutes at all
        {"kind": "tax", "prompting": "cot", "retrieval": "references"},  # the exemplars' units
        {"kind": "tax", "prompting": "few_shot", "retrieval": "entire_section"},
        {"kind": "all", "prompting": "zero_shot", "retrieval": "references"},
        {"kind": "tax", "prompting": "zero_shot"},  # the default strategy
    ],
)
def test_sara_retrieval_that_reaches_a_prompt_is_accepted(
    data_dir: Path, kwargs: dict[str, Any]
) -> None:
    assert sara(**kwargs).dataset


def test_sara_tax_zero_shot_prompts_are_the_same_under_every_strategy(data_dir: Path) -> None:
    """What the refusal rests on: the statutes a tax case gets are the same under each
    strategy but none (checked on every tax case of the test split)."""
    from finmath_tasks.tasks.sara.dataset import load_data
    from finmath_tasks.tasks.sara.retrieval import retrieve

    data = load_data(None)
    cases = [s for s in sara(kind="tax", prompting="zero_shot").dataset]
    assert len(cases) > 10
    for sample in cases:
        texts = {
            retrieve(data.statutes, sample.metadata["question"], s, "tax").text  # type: ignore[index]
            for s in ("mentioned_only", "entire_section", "references", "all_statutes")
        }
        assert len(texts) == 1, sample.id


# ---- model roles no solver or scorer calls -----------------------------------------------


ROLE_REFUSED = {
    "knowledgefmath-rules-extractor": (
        ["finmath_tasks/knowledgefmath", "-T", "split=demo"],
        "knowledgefmath: --model-role grader: it is called only with extractor=model (here "
        "extractor=rules); it would change nothing",
    ),
    "mathhay-without-judge": (
        ["finmath_tasks/mathhay", "-T", "judge=false", "-T", "task_type=sssd"],
        "mathhay: --model-role grader: it is called only with judge=True (here judge=False)",
    ),
    "sara": (["finmath_tasks/sara"], "sara: --model-role grader: no solver or scorer"),
    "finqa": (["finmath_tasks/finqa"], "finqa: --model-role grader: no solver or scorer"),
    "tatqa": (["finmath_tasks/tatqa"], "tatqa: --model-role grader: no solver or scorer"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", ROLE_REFUSED.values(), ids=list(ROLE_REFUSED))
def test_inspect_eval_refuses_a_model_role_no_solver_or_scorer_calls(
    data_dir: Path, tmp_path: Path, case: tuple[list[str], str]
) -> None:
    task_args, says = case
    done = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval", *task_args, "--model", "mockllm/model",
         "--model-role", "grader=mockllm/model", "--limit", "1", "--display", "plain",
         "--log-dir", str(tmp_path / "logs")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Traceback" not in output
    assert says in " ".join(output.split()), output
    assert not list((tmp_path / "logs").glob("*.eval"))


def test_a_role_the_run_calls_is_accepted(data_dir: Path, tmp_path: Path) -> None:
    """The model extractor calls the grader: the run goes on and the grader reads the answers
    (its reply, 7, against the oracle's gold answers)."""
    [log] = eval(
        "finmath_tasks/knowledgefmath",
        task_args={"split": "demo", "solver": "oracle", "extractor": "model"},
        model=scripted(["unused"]),
        model_roles={"grader": scripted(["7"] * 3, name="mockllm/grader")},
        limit=3,
        max_samples=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    metas = [s.scores["financemath"].metadata for s in log.samples or []]  # type: ignore[index]
    assert {m["grader_model"] for m in metas} == {"mockllm/grader"}


def test_refuse_unused_roles_on_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    import inspect_ai.model

    roles: dict[str, Any] = {}
    monkeypatch.setattr(inspect_ai.model, "model_roles", lambda: roles)
    rule = {"grader": params.only(mode="b")}
    params.refuse_unused_roles("toy", {"mode": "a"}, rule)  # no role bound: nothing to refuse
    roles["grader"] = object()
    params.refuse_unused_roles("toy", {"mode": "b"}, rule)
    with pytest.raises(TaskParameterError, match=r"^toy: --model-role grader: it is called"):
        params.refuse_unused_roles("toy", {"mode": "a"}, rule)
    roles.clear()
    roles["critic"] = object()
    with pytest.raises(TaskParameterError, match=r"^toy: --model-role critic: no solver or"):
        params.refuse_unused_roles("toy", {"mode": "b"}, rule)


# ---- the finmath commands ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["variants", "knowledgefmath", "--split", "demo", "--data-dir", "."],
            "finmath variants: knowledgefmath: -T data_dir='.' applies only to split=validation "
            "or test (here split=demo)",
        ),
        (
            ["variants", "knowledgefmath", "--split", "demo", "--seed", "2147483648"],
            "finmath variants: knowledgefmath: -T variant_seed=2147483648 must be an integer "
            "from 0 to 2147483647",
        ),
        (
            ["variants", "finqa", "--seed", "2147483648"],
            "finmath variants: finqa: -T variant_seed=2147483648 must be an integer",
        ),
        (
            ["grid", "knowledgefmath", "--variant-seeds", "", "--dry-run", "--model", "m"],
            "--variant-seeds '': no seed given",
        ),
        (
            ["grid", "knowledgefmath", "--variant-seeds", " , ", "--dry-run", "--model", "m"],
            "--variant-seeds ' , ': no seed given",
        ),
    ],
)
def test_finmath_commands_refuse_what_the_task_refuses(
    data_dir: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert says in err, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.slow
def test_finmath_variants_still_runs_on_what_the_task_accepts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["variants", "knowledgefmath", "--split", "demo", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("knowledgefmath demo fresh seed 2: ")
