"""lm_eval refuses a fresh variant without a seed of 1 or more as Inspect does: the same
task check, one line in lm_eval's terms, no model call."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip(
    "lm_eval", reason='lm-evaluation-harness is not installed (the "lm-eval" extra)'
)

from scripted_lm import lm_eval_cli, scripted_server

from finmath_tasks.sandbox.bwrap import bwrap_available

COT = "finmath_knowledgefmath_cot"


@pytest.mark.slow
@pytest.mark.parametrize("seed", [{}, {"variant_seed": 0}], ids=["no seed", "seed 0"])
def test_lm_eval_run_refuses_fresh_without_a_seed(seed: dict[str, int]) -> None:
    metadata = {"split": "demo", "variant": "fresh", **seed}
    with scripted_server(lambda messages: "Therefore, the answer is 1.0.") as server:
        run = lm_eval_cli(server, COT, "--limit", "2", "--metadata", json.dumps(metadata))
    assert run.returncode != 0, run.stdout + run.stderr
    assert server.requests == []  # refused before any model call
    assert "Traceback" not in run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(f"lm_eval: {COT}: ")
    # the task's own check, its parameters named as lm_eval's --metadata
    assert """--metadata '{"variant": "fresh"}' needs""" in last
    assert "variant_seed" in last and "from 1 to" in last


@pytest.mark.slow
@pytest.mark.bwrap
def test_lm_eval_run_with_a_seed_runs_the_fresh_variant() -> None:
    ok, reason = bwrap_available()
    if not ok:  # the variant's golds are recomputed by their programs in the sandbox
        pytest.skip(f"bubblewrap unavailable: {reason}")
    metadata = {"split": "demo", "variant": "fresh", "variant_seed": 1}
    with scripted_server(lambda messages: "Therefore, the answer is 1.0.") as server:
        run = lm_eval_cli(server, COT, "--limit", "2", "--metadata", json.dumps(metadata))
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(server.requests) == 2


@pytest.mark.slow
@pytest.mark.bwrap
def test_the_refusal_s_hint_runs_as_written() -> None:
    """The refusal names the setting it needs as --metadata JSON; given exactly as
    written (merged over the refused run's), the run goes ahead: the hint's seed is an
    integer of 1 or more, not the placeholder text "N" (which is refused in turn)."""
    ok, reason = bwrap_available()
    if not ok:  # the variant's golds are recomputed by their programs in the sandbox
        pytest.skip(f"bubblewrap unavailable: {reason}")
    metadata = {"split": "demo", "variant": "fresh"}
    with scripted_server(lambda messages: "Therefore, the answer is 1.0.") as server:
        refused = lm_eval_cli(server, COT, "--limit", "2", "--metadata", json.dumps(metadata))
        assert refused.returncode != 0 and server.requests == []
        last = refused.stderr.strip().splitlines()[-1]
        hints = [json.loads(h) for h in re.findall(r"--metadata '(\{[^']*\})'", last)]
        [hint] = [h for h in hints if "variant_seed" in h]
        assert isinstance(hint["variant_seed"], int) and hint["variant_seed"] >= 1, last
        followed = lm_eval_cli(
            server, COT, "--limit", "2", "--metadata", json.dumps({**metadata, **hint})
        )
    assert followed.returncode == 0, followed.stderr[-2000:]
    assert len(server.requests) == 2
