"""A question whose table is larger than any real one (3,002 rows: a header, 3,000 amounts and their total) is left out of a fresh
variant with its reason, and the run goes on with the others (a real ``inspect eval`` on a
crafted TAT-QA file). How long it takes is measured in benchmarks/variant_table_size.py."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from inspect_ai.log import read_eval_log

from finmath_tasks.tasks.tatqa.dataset import records_to_samples
from finmath_tasks.tasks.tatqa.variants import instantiate
from finmath_tasks.variants import MAX_TABLE_ROWS


def crafted(rows: int) -> dict[str, Any]:
    """A TAT-QA document whose table has ``rows`` amounts and their total, and a question
    on the change of one of them."""
    rng = random.Random(rows)
    body = [[f"Item {i}", rng.randint(1000, 99999), rng.randint(1000, 99999)] for i in range(rows)]
    table = [["", "2019", "2018"]] + [[name, f"{a:,}", f"{b:,}"] for name, a, b in body]
    table.append(["Total", f"{sum(r[1] for r in body):,}", f"{sum(r[2] for r in body):,}"])
    name, a, b = body[5]
    question = {
        "uid": f"crafted-{rows}",
        "order": 1,
        "question": f"What is the change in {name} from 2018 to 2019?",
        "answer": a - b,
        "derivation": f"{a:,}-{b:,}",
        "answer_type": "arithmetic",
        "answer_from": "table",
        "rel_paragraphs": [],
        "req_comparison": False,
        "scale": "thousand",
    }
    return {
        "table": {"uid": f"table-{rows}", "table": table},
        "paragraphs": [{"uid": f"p-{rows}", "order": 1, "text": "Amounts are in thousands."}],
        "questions": [question],
    }


def test_a_table_larger_than_any_real_one_is_left_out_with_its_reason() -> None:
    samples = list(records_to_samples([crafted(3000), crafted(12)], "arithmetic", "crafted"))
    result = instantiate(samples, 1)
    assert result.left_out == {"crafted-3000": "table too large to check its totals (3002 rows)"}
    assert [s.id for s in result.samples] == ["crafted-12"]
    # the bound is above the largest real table (27 rows) with room to spare
    assert MAX_TABLE_ROWS >= 2 * 27
    edge = list(records_to_samples([crafted(MAX_TABLE_ROWS - 2)], "arithmetic", "crafted"))
    assert "too large" not in str(instantiate(edge, 1).left_out)


def test_inspect_eval_leaves_the_large_table_out_and_scores_the_rest(tmp_path: Path) -> None:
    folder = tmp_path / "data" / "tatqa"
    folder.mkdir(parents=True)
    records = [crafted(3000), crafted(12), crafted(20)]
    (folder / "tatqa_dataset_dev.json").write_text(json.dumps(records))
    env = {**os.environ, "FINMATH_VARIANT_CACHE": str(tmp_path / "variants")}
    command = [sys.executable, "-m", "inspect_ai", "eval", "finmath_tasks/tatqa"]
    command += ["-T", "variant=fresh", "-T", "variant_seed=1", "-T", "solver=oracle"]
    command += ["-T", f"data_dir={tmp_path / 'data'}", "-T", "subset=arithmetic"]
    command += ["--model", "mockllm/model", "--log-dir", str(tmp_path / "logs")]
    command += ["--display", "plain"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    [path] = list((tmp_path / "logs").glob("*.eval"))
    log = read_eval_log(str(path))
    assert log.status == "success"
    assert log.eval.dataset.name == "tatqa-dev fresh seed 1: 2 of 3 instantiated"
    summary = log.eval.metadata["variant"]  # type: ignore[index]
    assert summary["left_out"] == {
        "crafted-3000": "table too large to check its totals (3002 rows)"
    }
    assert log.samples is not None
    assert sorted(str(s.id) for s in log.samples) == ["crafted-12", "crafted-20"]
    assert log.results is not None
    scores = {s.name: s.metrics["accuracy"].value for s in log.results.scores}
    assert scores and all(value == 1.0 for value in scores.values()), scores
