"""A resumed fresh-variant run never mixes draws (``finmath_tasks.variant_resume``).

A real fresh run of knowledgefmath's demo split (``-T variant=fresh -T variant_seed=3``)
ends ``error`` on one of its three samples (our scorer raises once on it); the real
``inspect eval-retry`` command then resumes its log. Unedited, the retry keeps the two
clean samples as they are, reruns the third and ends ``success``. With a kept sample's
target edited through Inspect's log API (what a draw of other rules leaves in the log), or
the log's variant fingerprint edited (a log of another rules version), the retry is
refused in one line, without a traceback, and writes no log. A run on the original
questions retries as before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from inspect_ai import eval, eval_retry, eval_set
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log, write_eval_log
from inspect_ai.scorer import Target

from finmath_tasks import variant_resume
from finmath_tasks.loading import PROVENANCE_KEY
from finmath_tasks.scorers import numeric
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.variant_resume import OtherDraw, kept_differences, sample_difference

TASK = "finmath_tasks/knowledgefmath"
FRESH = {"split": "demo", "solver": "cot", "variant": "fresh", "variant_seed": 3}
ORIGINAL = {"split": "demo", "solver": "cot"}
SAMPLES = 3


class Bug:
    """Makes our scorer raise on the sample whose gold is ``gold``, once."""

    def __init__(self, gold: str) -> None:
        self.gold, self.left, self.read = gold, 1, numeric._gold

    def __call__(self, target: Target, metadata: Any) -> Any:
        if target.text == self.gold and self.left > 0:
            self.left -= 1
            raise ZeroDivisionError("a bug in our scorer")
        return self.read(target, metadata)


def first_run(args: dict[str, Any], log_dir: Path) -> EvalLog:
    """A real run of ``args`` on 3 samples with mockllm's reply (a retry rebuilds the
    model from the log: a scripted one cannot be), the third's scoring raising (the log
    ends ``error``: eval-retry has that sample to rerun)."""
    gold = str(list(knowledgefmath(**args).dataset)[2].target)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(numeric, "_gold", Bug(gold))
        [log] = eval(
            TASK,
            task_args=args,
            model="mockllm/model",
            limit=SAMPLES,
            display="none",
            log_dir=str(log_dir),
        )
    assert log.status == "error" and log.samples is not None and log.location
    assert [s.error is not None for s in log.samples] == [False, False, True]
    return log


@pytest.fixture(scope="module")
def fresh_log(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    log = first_run(FRESH, tmp_path_factory.mktemp("fresh"))
    assert log.samples is not None and all("variant" in s.metadata for s in log.samples)
    return log


@pytest.fixture
def fresh_copy(fresh_log: EvalLog, tmp_path: Path) -> Iterator[Path]:
    """The fresh run's log file, copied for one test to edit or retry."""
    assert fresh_log.location
    copy = tmp_path / Path(fresh_log.location).name
    shutil.copy(fresh_log.location, copy)
    yield copy


def inspect_retry(log: Path, log_dir: Path) -> tuple[int, str]:
    """The real ``inspect eval-retry`` command on ``log``: exit code, everything it said."""
    command = [
        sys.executable, "-m", "inspect_ai", "eval-retry", str(log),
        "--log-dir", str(log_dir), "--display", "plain",
    ]  # fmt: skip
    env = {**os.environ, "COLUMNS": "400"}  # Inspect wraps a message at the console's width
    run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    return run.returncode, run.stdout + run.stderr


def assert_refused(code: int, said: str, log_dir: Path, *wanted: str) -> str:
    assert code != 0, said
    assert "Traceback" not in said, said
    [line] = [line for line in said.splitlines() if "cannot resume" in line]
    for part in wanted:
        assert part in line, line
    assert line.strip().endswith(variant_resume.RERUN), line
    assert not list_eval_logs(str(log_dir))  # nothing ran, no log was written
    return line


# --------------------------------------------------------------------------- #
# the real eval-retry command
# --------------------------------------------------------------------------- #


@pytest.mark.slow
def test_an_unedited_fresh_log_retries_to_success(
    fresh_log: EvalLog, fresh_copy: Path, tmp_path: Path
) -> None:
    code, said = inspect_retry(fresh_copy, tmp_path / "retried")
    assert code == 0, said
    [info] = list_eval_logs(str(tmp_path / "retried"))
    retried = read_eval_log(info)
    assert retried.status == "success", said[-2000:]
    assert retried.samples is not None and not any(s.error for s in retried.samples)
    assert fresh_log.samples is not None
    before = {s.id: s for s in fresh_log.samples}
    kept = [s for s in retried.samples if s.uuid == before[s.id].uuid]
    # the two clean samples are kept as they were, the third is run again and scored
    assert sorted(str(s.id) for s in kept) == sorted(
        str(s.id) for s in fresh_log.samples if s.error is None
    )
    assert len(kept) == 2 and all(s.scores for s in retried.samples)
    assert retried.results is not None and retried.results.completed_samples == SAMPLES
    assert all(s.target == before[s.id].target for s in retried.samples)
    data = (retried.eval.metadata or {})[PROVENANCE_KEY]
    assert data["fingerprint"] == (fresh_log.eval.metadata or {})[PROVENANCE_KEY]["fingerprint"]


@pytest.mark.slow
def test_a_kept_sample_of_another_draw_is_refused(fresh_copy: Path, tmp_path: Path) -> None:
    log = read_eval_log(str(fresh_copy))
    assert log.samples is not None
    kept = log.samples[1]
    written = str(kept.target)
    kept.target = str(float(written) * 1.1)  # what a draw by other rules would have given
    write_eval_log(log, str(fresh_copy))

    code, said = inspect_retry(fresh_copy, tmp_path / "retried")
    line = assert_refused(
        code, said, tmp_path / "retried",
        f"knowledgefmath fresh seed 3: cannot resume {fresh_copy.name}: ",
        "1 of the 2 samples it keeps are not the variant built now",
        f"({kept.id}: target '{kept.target}' in the log, '{written}' now)",
    )  # fmt: skip
    assert len(line) < 400


@pytest.mark.slow
def test_a_log_of_another_rules_version_is_refused(fresh_copy: Path, tmp_path: Path) -> None:
    log = read_eval_log(str(fresh_copy))
    data = (log.eval.metadata or {})[PROVENANCE_KEY]
    now, rules = data["fingerprint"], data["variant"]["rules"]
    data["fingerprint"], data["variant"]["rules"] = "0123456789abcdef", "1"
    write_eval_log(log, str(fresh_copy))

    code, said = inspect_retry(fresh_copy, tmp_path / "retried")
    assert_refused(
        code, said, tmp_path / "retried",
        "its variant's data fingerprint is 0123456789abcdef (rules 1), the variant built "
        f"now is {now} (rules {rules}), so the samples it keeps are another draw's",
    )  # fmt: skip


@pytest.mark.slow
def test_an_original_run_retries_as_before(tmp_path: Path) -> None:
    log = first_run(ORIGINAL, tmp_path / "first")
    assert log.location
    code, said = inspect_retry(Path(log.location), tmp_path / "retried")
    assert code == 0, said
    [info] = list_eval_logs(str(tmp_path / "retried"))
    retried = read_eval_log(info)
    assert retried.status == "success", said[-2000:]
    assert retried.samples is not None and len(retried.samples) == SAMPLES
    assert not any(s.error for s in retried.samples)


# --------------------------------------------------------------------------- #
# the Python API (eval_retry) and the comparison itself
# --------------------------------------------------------------------------- #


@pytest.mark.slow
def test_eval_retry_refuses_a_kept_sample_whose_input_was_another_draw(
    fresh_log: EvalLog, tmp_path: Path
) -> None:
    edited = fresh_log.model_copy(deep=True)
    assert edited.samples is not None
    edited.samples[0].input = str(edited.samples[0].input).replace("0", "7", 1)
    with pytest.raises(OtherDraw, match=r"1 of the 2 samples it keeps .* \(demo-\S+: input "):
        eval_retry(edited, log_dir=str(tmp_path / "retried"), display="none")
    assert not list_eval_logs(str(tmp_path / "retried"))


@pytest.mark.slow
def test_an_eval_set_resume_is_refused_too(tmp_path: Path) -> None:
    """``finmath grid`` runs eval sets: resuming one keeps its logs' samples the same way."""
    log_dir = tmp_path / "set"
    gold = str(list(knowledgefmath(**FRESH).dataset)[2].target)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(numeric, "_gold", Bug(gold))
        done, _ = eval_set(
            TASK, task_args=FRESH, model="mockllm/model", limit=SAMPLES,
            log_dir=str(log_dir), display="none", retry_attempts=0,
        )  # fmt: skip
    assert not done
    [info] = list_eval_logs(str(log_dir))
    log = read_eval_log(info)
    assert log.samples is not None
    log.samples[0].target = "12.5"
    write_eval_log(log, info.name)
    with pytest.raises(OtherDraw, match=r"1 of the 2 samples it keeps .* \(demo-0: target '12.5'"):
        eval_set(TASK, task_args=FRESH, model="mockllm/model", limit=SAMPLES,
                 log_dir=str(log_dir), display="none")  # fmt: skip


def _sample(id: str, target: str, input: str = "q", variant: Any = None) -> Any:
    metadata = {"variant": variant} if variant is not None else {}
    return SimpleNamespace(
        id=id, target=target, input=input, metadata=metadata, error=None, invalidation=None
    )


def test_kept_differences_compare_target_input_and_the_variant_record() -> None:
    rebuilt = [
        Sample(id="a", input="q", target="1.5", metadata={"variant": {"replaced": [("2", "3")]}}),
        Sample(id="b", input="q", target="2"),
    ]
    same = [_sample("a", "1.5", variant={"replaced": [["2", "3"]]}), _sample("b", "2")]
    assert kept_differences(same, rebuilt) == (2, 0, [])
    # a summary without the record (over 1 kB) compares target and input only
    assert kept_differences([_sample("a", "1.5")], rebuilt) == (1, 0, [])
    other = _sample("a", "1.5", variant={"replaced": [["2", "4"]]})
    count, differ, [first] = kept_differences([other, _sample("b", "2", "q2")], rebuilt)
    assert (count, differ) == (2, 2)
    assert first.startswith("a: variant record ") and "now" in first
    assert (
        sample_difference(_sample("b", "2", "q2"), rebuilt[1]) == "input 'q2' in the log, 'q' now"
    )


def test_errored_and_unknown_samples_are_not_compared() -> None:
    rebuilt = [Sample(id="a", input="q", target="1")]
    errored = _sample("a", "9")
    errored.error = "a bug"
    assert kept_differences([errored, _sample("z", "9")], rebuilt) == (0, 0, [])


def test_an_original_run_is_not_looked_at() -> None:
    # no variant in the task arguments nor in the rebuilt data: nothing is read
    prior = SimpleNamespace(
        eval=SimpleNamespace(task="knowledgefmath", task_args={}, metadata={}),
        samples=None,
        location=None,
    )
    variant_resume.refuse_other_draws(prior, None, [Sample(id="a", input="q", target="1")])


def test_the_variant_key_is_the_variants_own() -> None:
    from finmath_tasks import variant_resume, variants

    assert variant_resume.VARIANT_KEY == variants.VARIANT_KEY
