"""`finmath report` reads every Inspect log of a folder whatever its name, names each file it
skips, marks unfinished runs, reports --alias names that match nothing, and stops in one
line on an --out it cannot write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, write_eval_log
from inspect_ai.scorer import match
from report_check import parse_markdown

from eval_helpers import scripted
from finmath_tasks.cli.main import main


def _log(tmp_path: Path, name: str, n: int = 6) -> EvalLog:
    task = Task(
        dataset=[Sample(id=str(i), input=f"q{i}", target=str(i)) for i in range(n)],
        scorer=match(),
        name="inputs_demo",
    )
    answers = [str(i) if i % 2 else "x" for i in range(n)]
    [log] = eval(task, model=scripted(answers, name), log_dir=str(tmp_path / "made"),
                 display="none", max_samples=1)  # fmt: skip
    assert log.status == "success"
    return log


def test_logs_of_any_name_are_read_and_every_skipped_file_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    write_eval_log(_log(tmp_path, "mockllm/a"), str(folder / "my_run.json"), format="json")
    unfinished = _log(tmp_path, "mockllm/b", n=4)
    unfinished.status = "cancelled"
    write_eval_log(unfinished, str(folder / "stopped.eval"))
    (folder / "notes.json").write_text('{"not": "a log"}')
    (folder / "half.json").write_text('{"version": 2, "status": "succ')
    out = tmp_path / "out"
    assert main(["report", str(folder), "--out", str(out), "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert "notes.json: not a readable Inspect log, skipped" in err
    assert "half.json: not a readable Inspect log, skipped" in err
    assert "stopped.eval: status cancelled, 4/4 samples: shown marked unfinished" in err
    tables = parse_markdown((out / "report.md").read_text())
    header, rows = tables["Logs"]
    by_log = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    assert set(by_log) == {"my_run.json", "stopped.eval"}
    assert by_log["my_run.json"]["status"] == "success"
    assert by_log["my_run.json"]["scored/total"] == "6/6"
    assert by_log["stopped.eval"]["status"] == "UNFINISHED (cancelled)"
    assert "UNFINISHED (cancelled, 4/4)" in by_log["stopped.eval"]["run"]
    # the paired comparison of the two runs (4 common samples) says one is unfinished
    [paired] = [t for t in tables if t.startswith("Paired differences")]
    [row] = tables[paired][1]
    # the runs are named by their settings, the unfinished one by its mark, not its file
    [side] = [s for s, cell in (("run a", row[1]), ("run b", row[2])) if "UNFINISHED" in cell]
    assert f"{side}: UNFINISHED (cancelled)" in row[-1]
    assert not [cell for cell in row if "stopped.eval" in cell]


def test_aliases_that_match_nothing_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    write_eval_log(_log(tmp_path, "mockllm/a"), str(folder / "a.eval"))
    out = tmp_path / "out"
    code = main(["report", str(folder), "--out", str(out), "--no-plots",
                 "--alias", "mockllm/zzz=Nobody 9B", "--alias", "mockllm/a=GPT-4o"])  # fmt: skip
    assert code == 0
    err = capsys.readouterr().err
    assert "--alias mockllm/zzz=Nobody 9B: no log's model is 'mockllm/zzz'" in err
    assert "--alias mockllm/zzz=Nobody 9B: no published cell of the reported tasks" in err
    # mockllm/a is a log's model; its task (undeclared) publishes nothing, so GPT-4o is unknown
    assert "no log's model is 'mockllm/a'" not in err


def test_an_out_that_is_a_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    write_eval_log(_log(tmp_path, "mockllm/a"), str(folder / "a.eval"))
    a_file = tmp_path / "report.txt"
    a_file.write_text("")
    assert main(["report", str(folder), "--out", str(a_file), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"finmath: --out {a_file} is a file, not a folder"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_out_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    write_eval_log(_log(tmp_path, "mockllm/a"), str(folder / "a.eval"))
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert main(["report", str(folder), "--out", str(locked), "--no-plots"]) == 2
        err = capsys.readouterr().err
        assert err.strip().startswith(f"finmath: --out {locked}: cannot write there")
    finally:
        locked.chmod(0o700)
