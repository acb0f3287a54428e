"""lm_eval's logged samples carry each score's error class: `lm_eval run` as a user runs it
(our configs, lm_eval's OpenAI-compatible client against a loopback server, --log_samples)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

pytest.importorskip("lm_eval", reason="the lm_eval extra is not installed")

from scripted_lm import lm_eval_cli, scripted_server

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
    # lm_eval rebuilds the verdict as a plain dict and logs its repr
    verdict = ast.literal_eval(text) if isinstance(text, str) else text
    assert verdict["scores"]["financemath"] == 1.0 and verdict["scores"]["tolerant"] == 0.0
    # the first release's reading (no power of ten) and ours call it a scale error
    assert verdict["error_classes"] == {"knowledgefmath2023": "scale", "tolerant": "scale"}
