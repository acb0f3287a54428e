"""CoT and PoT on the same questions are selected by a tag, not a group: lm_eval prints
a group's row (even an empty one) and indents its tasks under it, and with no aggregate
row of their own it indented TAT-QA's tasks under the group printed above them
(``finmath_sara``). Through the real ``lm_eval run`` against a loopback server: the
tagged tasks are printed at the top level and the groups that pool distinct questions
keep their row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "lm_eval", reason='lm-evaluation-harness is not installed (the "lm-eval" extra)'
)

import yaml
from scripted_lm import lm_eval_cli, scripted_server

from finmath_tasks.lm_eval import config_files

pytestmark = [pytest.mark.slow, pytest.mark.realdata]


def _configs() -> list[dict[str, Any]]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))  # type: ignore[arg-type, return-value]
    return [yaml.load(p.read_text(encoding="utf-8"), Loader=Loader) for p in config_files()]


def _tags() -> dict[str, list[str]]:
    """Each tag of our task configs and the tasks it selects."""
    tags: dict[str, list[str]] = {}
    for config in _configs():
        for tag in [config["tag"]] if isinstance(config.get("tag"), str) else config.get("tag", []):
            tags.setdefault(tag, []).append(config["task"])
    return tags


def _table_rows(stdout: str) -> list[str]:
    """The first cell of each row of lm_eval's results table (its tasks and groups, a
    group's members indented with `` - ``)."""
    rows = []
    for line in stdout.splitlines():
        cells = line.split("|")
        if len(cells) > 2 and cells[1].strip() and set(cells[1].strip()) - set("-:"):
            rows.append(cells[1].rstrip())
    return rows


def test_cot_and_pot_tasks_print_at_the_top_level(data_dir: Path) -> None:
    tags = _tags()
    same_questions = {"finmath_knowledgefmath", "finmath_tatqa"}
    assert same_questions <= set(tags), tags
    # a group with its row first (where TAT-QA's tasks were indented), then every tag
    selection = ["finmath_sara", *sorted(tags)]
    with scripted_server(lambda sent: "Therefore, the answer is 1.") as server:
        run = lm_eval_cli(
            server,
            ",".join(selection),
            "--limit",
            "1",
            "--confirm_run_unsafe_code",
            "--metadata",
            json.dumps({"sandbox": "bwrap"}),
            env={"FINMATH_DATA_DIR": str(data_dir)},
        )
    assert run.returncode == 0, run.stderr[-3000:]
    tagged = [task for tag in sorted(tags) for task in tags[tag]]
    assert len(server.requests) == 2 + len(tagged)  # one question per task
    rows = _table_rows(run.stdout)
    names = [row.strip().removeprefix("- ").strip() for row in rows]
    for task in tagged:
        assert task in names, run.stdout
        [row] = [r for r in rows if r.strip().removeprefix("- ").strip() == task]
        assert not row.lstrip().startswith("-"), f"{task} is indented under a group:\n{run.stdout}"
        assert not row.startswith(" "), run.stdout
    # SARA's group pools distinct cases: its row stays, its tasks under it
    assert "finmath_sara" in names
    for task in ("finmath_sara_entailment", "finmath_sara_tax"):
        [row] = [r for r in rows if r.strip().removeprefix("- ").strip() == task]
        assert row.lstrip().startswith("- "), run.stdout
    # no row (and no empty group row) for a tag
    assert not set(tags) & set(names), run.stdout
