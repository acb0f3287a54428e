"""lm_eval's logged samples carry each score's error class: `lm_eval run` as a user runs it
(our configs, lm_eval's OpenAI-compatible client against a loopback server, --log_samples)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("lm_eval", reason="the lm_eval extra is not installed")

from scripted_lm import lm_eval_cli, logged_verdict_of, scripted_server

from finmath_tasks.scorers.error_classes import NEAR, SCALE, SIGN

COT = "finmath_knowledgefmath_cot"


@pytest.mark.slow
def test_logged_samples_carry_each_scores_error_class(tmp_path: Path) -> None:
    # the demo split's first question: gold 14685; 14685000 is the gold times 1000, which
    # FinanceMath's official comparison accepts (any power of ten) and ours does not
    with scripted_server(lambda messages: "The answer is 14685000.") as server:
        run = lm_eval_cli(
            server, COT, "--limit", "1", "--log_samples", "--output_path", str(tmp_path / "out"),
            "--metadata", json.dumps({"split": "demo"}),
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    [samples] = list((tmp_path / "out").rglob(f"samples_{COT}_*.jsonl"))
    [record] = [json.loads(line) for line in samples.read_text().splitlines() if line.strip()]
    [text] = record["filtered_resps"]
    verdict = logged_verdict_of(text)
    assert verdict["scores"]["financemath"] == 1.0 and verdict["scores"]["tolerant"] == 0.0
    # the first release's reading (no power of ten) and ours call it a scale error
    assert verdict["error_classes"] == {"knowledgefmath2023": "scale", "tolerant": "scale"}
    # and their causes: the gold re-run with its input 1100 times 10^3 gives the answer
    assert verdict["error_causes"] == {"knowledgefmath2023": "unit", "tolerant": "unit"}
    assert verdict["error_evidence"]["tolerant"]["exponent"] == 3
    assert verdict["error_evidence"]["tolerant"]["input"] == "1100"


# the demo split's first four questions and the class each reply gets from our tolerant
# comparison (FinanceMath's official one accepts a power of ten and a sign flip)
def _demo_golds() -> list[tuple[str, float]]:
    from finmath_tasks.tasks.knowledgefmath import knowledgefmath

    return [(str(s.input), float(str(s.target))) for s in knowledgefmath(split="demo").dataset][:4]


REPLIES = [
    lambda gold: gold,  # correct
    lambda gold: gold * 1000,  # scale
    lambda gold: -gold,  # sign
    lambda gold: gold * 1.05,  # 5% off: near
]
HAND_COUNTS = {
    "tolerant": {"correct": 1, NEAR: 1, SCALE: 1, SIGN: 1},
    "financemath": {"correct": 3, NEAR: 1},
}


@pytest.mark.slow
@pytest.mark.parametrize("cache", [False, True], ids=["no-cache", "use-cache"])
def test_results_carry_each_scores_class_counts(tmp_path: Path, cache: bool) -> None:
    golds = _demo_golds()

    def reply(messages: list[dict[str, str]]) -> str:
        text = str(messages[-1]["content"])
        [i] = [i for i, (question, _) in enumerate(golds) if question[:80] in text]
        return f"The answer is {REPLIES[i](golds[i][1]):.6f}."

    cache_args = ["--use_cache", str(tmp_path / "cache")] if cache else []
    with scripted_server(reply) as server:
        run = lm_eval_cli(
            server, COT, "--limit", "4", "--output_path", str(tmp_path / "out"),
            "--metadata", json.dumps({"split": "demo"}), *cache_args,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    [found] = list((tmp_path / "out").rglob("results_*.json"))
    results = json.loads(found.read_text())["results"][COT]
    for score, counts in HAND_COUNTS.items():
        assert results[f"{score},none"] == pytest.approx(counts["correct"] / 4)
        assert results[f"{score}_error_classes,none"] == counts
        assert results[f"{score}_error_classes_stderr,none"] == "N/A"
    # the first release's reading: four answers, each with a class or correct
    assert sum(results["knowledgefmath2023_error_classes,none"].values()) == 4
    # the counts are beside the metrics in lm_eval's printed table too
    assert "tolerant_error_classes" in run.stdout


def test_class_counts_count_each_repeat_and_say_what_carries_no_class() -> None:
    from finmath_tasks.lm_eval.classes import class_counts, document_classes

    verdicts = [
        {"scores": {"tolerant": 0.0, "execution_rate": 0.0}, "error_classes": {"tolerant": SCALE}},
        {"scores": {"tolerant": 1.0, "execution_rate": 1.0}},
        {"scores": {"tolerant": float("nan"), "execution_rate": None}},  # left out
    ]
    # one document of three repeats: each scored verdict counted
    assert document_classes(verdicts, "tolerant") == [SCALE, "correct"]
    # a wrong value without a class (execution_rate has none) is unclassified, not correct
    assert document_classes(verdicts, "execution_rate") == ["unclassified", "correct"]
    items = [document_classes(verdicts, "tolerant"), ["unclassified"], [SIGN]]
    assert list(class_counts(items).items()) == [
        ("correct", 1), (SCALE, 1), (SIGN, 1), ("unclassified", 1)
    ]  # fmt: skip
