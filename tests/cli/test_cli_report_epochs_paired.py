"""`finmath report`'s statistics with epochs and in paired rows, each against a hand
computation: with epochs the unit is the question (its score the mean over its epochs,
n the questions, a t interval over questions for fractional scores; sample-epochs
counted against sample-epochs), per-topic intervals likewise; a paired row uses t with
clusters - 1 degrees of freedom when clustered, and an interval of non-zero width when
no question differs (Tango's)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest
from inspect_ai import Epochs, Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log
from inspect_ai.scorer import Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState
from scipy.stats import norm, t

from eval_helpers import scripted
from finmath_tasks.cli.declare import Groups, Report
from finmath_tasks.cli.reading import run_of
from finmath_tasks.cli.report import runs_table
from finmath_tasks.cli.runs import group_cell, run_cell
from finmath_tasks.cli.stats import PerSample, paired, tango
from finmath_tasks.cli.stats import accuracy as question_accuracy

Z = norm.ppf(0.975)

# 12 questions x 3 epochs: question i is right in VERDICTS[i] of its epochs (in order)
VERDICTS = [
    [1, 1, 1], [1, 1, 0], [1, 0, 0], [0, 0, 0], [1, 1, 1], [1, 1, 1],
    [0, 1, 1], [1, 1, 1], [0, 0, 1], [1, 1, 1], [0, 0, 0], [1, 1, 1],
]  # fmt: skip
TOPIC = ["A"] * 6 + ["B"] * 6


def _epochs_log(tmp_path: Path, verdicts: list[list[int]], name: str = "epochs_demo") -> Path:
    """A real eval whose question i scores ``verdicts[i][e]`` in epoch e (mean-reduced)."""
    count = len(verdicts[0])
    seen: dict[str, int] = {}

    @scorer(metrics=[accuracy(), stderr()], name="verdict")
    def verdict():  # type: ignore[no-untyped-def]
        async def score(state: TaskState, target: Target) -> Score:
            sid = str(state.sample_id)
            epoch = seen[sid] = seen.get(sid, 0) + 1
            return Score(value=float(verdicts[int(sid)][epoch - 1]))

        return score

    task = Task(
        dataset=[
            Sample(id=str(i), input=f"q{i}", metadata={"topic": TOPIC[i]})
            for i in range(len(verdicts))
        ],
        scorer=verdict(),
        epochs=Epochs(count, "mean"),
        name=name,
    )
    logs = tmp_path / name
    [log] = eval(task, model=scripted(["ok"] * len(verdicts) * count), log_dir=str(logs),
                 display="none", max_samples=1)  # fmt: skip
    assert log.status == "success", log.error
    [path] = logs.glob("*.eval")
    return path


def _t_interval(values: list[float]) -> tuple[float, float]:
    """mean ± t(n - 1) x sd / sqrt(n), within [0, 1]."""
    m, n = statistics.mean(values), len(values)
    half = t.ppf(0.975, n - 1) * statistics.stdev(values) / math.sqrt(n)
    return max(0.0, m - half), min(1.0, m + half)


def _wilson(k: int, n: int) -> tuple[float, float]:
    p = k / n
    center = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return center - half, center + half


def test_a_3_epoch_run_is_counted_and_its_interval_taken_over_questions(tmp_path: Path) -> None:
    path = _epochs_log(tmp_path, VERDICTS)
    run = run_of(read_eval_log(str(path), header_only=True), str(path))
    # sample-epochs against sample-epochs: all 36 scored
    assert (run.epochs, run.scored, run.total) == (3, 36, 36)
    [row] = runs_table([run]).rows
    assert "36/36" in row
    means = [statistics.mean(v) for v in VERDICTS]
    cell = run_cell(run, "verdict", Report())
    assert cell is not None and cell.low is not None and cell.high is not None
    assert cell.value == pytest.approx(statistics.mean(means))
    low, high = _t_interval(means)  # n = 12 questions, not 36 sample-epochs
    assert (cell.low, cell.high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    # by hand: the 12 means are 1, 2/3, 1/3, 0, 1, 1, 2/3, 1, 1/3, 1, 0, 1
    assert statistics.mean(means) == pytest.approx(24 / 36)
    # the interval of 24 of 36 independent 0/1 samples would be narrower: not that one
    assert high - low > _wilson(24, 36)[1] - _wilson(24, 36)[0]


def test_per_topic_intervals_are_over_the_topics_questions(tmp_path: Path) -> None:
    path = _epochs_log(tmp_path, VERDICTS)
    run = run_of(read_eval_log(str(path), header_only=True), str(path))
    report = Report(groups=Groups(prefix="", key="topic", from_samples=True))
    for topic in ("A", "B"):
        means = [statistics.mean(v) for v, g in zip(VERDICTS, TOPIC, strict=True) if g == topic]
        cell = group_cell(run, "verdict", topic, report)
        assert cell is not None and cell.low is not None and cell.high is not None
        assert cell.value == pytest.approx(statistics.mean(means))
        low, high = _t_interval(means)  # over the topic's 6 questions
        assert (cell.low, cell.high) == (pytest.approx(low, abs=1e-9), pytest.approx(high))


def test_two_identical_epochs_give_the_one_epoch_interval_per_topic(tmp_path: Path) -> None:
    """Answers identical in both epochs: each question's mean is 0 or 1, so the topic's
    interval is Wilson's over its questions, as for one epoch (not over 2 x questions)."""
    once = [[v[0]] for v in VERDICTS]
    twice = [[v[0], v[0]] for v in VERDICTS]
    report = Report(groups=Groups(prefix="", key="topic", from_samples=True))
    cells = []
    for name, verdicts in (("once", once), ("twice", twice)):
        path = _epochs_log(tmp_path, verdicts, name)
        run = run_of(read_eval_log(str(path), header_only=True), str(path))
        cells.append(group_cell(run, "verdict", "A", report))
    one, two = cells
    assert one is not None and two is not None
    right = sum(v[0] for v, g in zip(VERDICTS, TOPIC, strict=True) if g == "A")
    low, high = _wilson(right, 6)
    for cell in (one, two):
        assert (cell.low, cell.high) == (pytest.approx(low, abs=1e-9), pytest.approx(high))


def test_a_pair_with_no_discordant_question_has_an_interval_of_non_zero_width() -> None:
    values = {str(i): [float(i % 3 != 0)] for i in range(20)}
    a = PerSample(values, {})
    found = paired(a, PerSample(dict(values), {}))
    assert found is not None and found.difference == 0.0 and found.stderr == 0.0
    assert found.interval == "tango" and found.p_mcnemar == 1.0
    # Tango's bounds with no discordant pair: ± z² / (n + z²), by hand
    bound = Z * Z / (20 + Z * Z)
    assert found.low == pytest.approx(-bound) and found.high == pytest.approx(bound)
    assert found.high - found.low > 0.1


def test_tangos_interval_matches_its_score_statistic_at_both_bounds() -> None:
    """At each bound the score statistic equals ± z (Tango 1998, with the constrained
    maximum likelihood estimate of the share only b got right), by hand."""
    only_a, only_b, n = 8, 5, 20
    low, high = tango(only_a, only_b, n, Z)

    def statistic(d: float) -> float:
        a_, b_ = 2 * n, -only_a - only_b + (2 * n - only_a + only_b) * d
        c_ = -only_b * d * (1 - d)
        q = (math.sqrt(b_ * b_ - 4 * a_ * c_) - b_) / (2 * a_)
        return (only_a - only_b - n * d) / math.sqrt(n * (2 * q + d * (1 - d)))

    assert statistic(low) == pytest.approx(Z, abs=1e-6)
    assert statistic(high) == pytest.approx(-Z, abs=1e-6)
    assert low < (only_a - only_b) / n < high


def test_a_clustered_pair_uses_t_with_clusters_minus_1_degrees_of_freedom() -> None:
    # 12 questions on 4 documents; a right on 9, b on 6
    a_right = [1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 1]
    b_right = [1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 1]
    docs = [f"d{i // 3}" for i in range(12)]
    ids = [str(i) for i in range(12)]
    a = PerSample(
        {i: [float(v)] for i, v in zip(ids, a_right, strict=True)},
        dict(zip(ids, docs, strict=True)),
    )
    b = PerSample(
        {i: [float(v)] for i, v in zip(ids, b_right, strict=True)},
        dict(zip(ids, docs, strict=True)),
    )
    found = paired(a, b)
    assert found is not None and found.clusters == 4 and found.interval == "t"
    d = [x - y for x, y in zip(a_right, b_right, strict=True)]
    mean = statistics.mean(d)
    # the clustered standard error, by hand: sqrt(C / (C - 1) x sum over documents of the
    # squared sum of deviations) / n
    sums = [sum(d[k] - mean for k in range(12) if docs[k] == doc) for doc in sorted(set(docs))]
    se = math.sqrt(sum(s * s for s in sums) * 4 / 3) / 12
    crit = t.ppf(0.975, 3)
    assert found.difference == pytest.approx(mean) and found.stderr == pytest.approx(se)
    assert found.low == pytest.approx(mean - crit * se)
    assert found.high == pytest.approx(mean + crit * se)
    # not the normal interval
    assert found.high - found.low > 2 * Z * se + 1e-6


def test_a_fractional_accuracy_gets_the_t_interval_and_a_binary_one_wilsons() -> None:
    means = {"0": [1.0, 0.0], "1": [1.0, 1.0], "2": [0.0, 0.0], "3": [1.0, 0.0], "4": [1.0, 1.0]}
    found = question_accuracy(PerSample(means, {}))
    assert found is not None and found.n == 5 and not found.binary
    low, high = _t_interval([0.5, 1.0, 0.0, 0.5, 1.0])
    assert (found.low, found.high) == (pytest.approx(low), pytest.approx(high))
    binary = question_accuracy(PerSample({k: v[:1] for k, v in means.items()}, {}))
    assert binary is not None and binary.binary
    assert (binary.low, binary.high) == tuple(pytest.approx(x) for x in _wilson(4, 5))
