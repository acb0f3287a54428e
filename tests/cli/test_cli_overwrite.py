"""No ``finmath`` command writes over what it reads: ``export -o``, ``report --out`` and
``grid --plan`` pointed at a log (or at the folder of the logs) are refused in one line,
and the logs stay whole."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log

from finmath_tasks.cli.main import main as finmath
from finmath_tasks.cli.overwrite import is_export, is_inspect_log, output_problem, plan_overwrites

SAMPLES = 2


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    from finmath_tasks.tasks.knowledgefmath import knowledgefmath

    folder = tmp_path_factory.mktemp("overwrite-logs")
    [log] = inspect_eval(
        knowledgefmath(split="demo", solver="oracle"),
        model="mockllm/model",
        limit=SAMPLES,
        display="none",
        log_dir=str(folder),
    )
    assert log.status == "success"
    return log


@pytest.fixture
def log_dir(finished: EvalLog, tmp_path: Path) -> Path:
    """A folder holding a copy of the finished log (``run.eval``)."""
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(finished.location, folder / "run.eval")
    return folder


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def intact(path: Path, before: bytes) -> None:
    assert path.read_bytes() == before
    assert read_eval_log(str(path)).status == "success"


@pytest.mark.parametrize("spelling", ["same", "dotted", "link"])
def test_export_refuses_to_write_over_its_log(
    log_dir: Path, capsys: pytest.CaptureFixture[str], spelling: str
) -> None:
    log = log_dir / "run.eval"
    before = log.read_bytes()
    output = {
        "same": log,
        "dotted": log_dir / ".." / log_dir.name / "run.eval",
        "link": log_dir / "alias.eval",
    }[spelling]
    if spelling == "link":
        output.symlink_to(log)
    assert finmath(["export", str(log), "-o", str(output)]) == 2
    message = one_line(capsys.readouterr().err)
    assert f"-o {output}: is the log it exports" in message
    intact(log, before)


def test_a_partial_export_refuses_a_name_that_is_its_log(
    finished: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cancelled = finished.model_copy(deep=True)
    cancelled.status = "cancelled"
    cancelled.samples = (cancelled.samples or [])[:1]
    cancelled.results = None
    # the name a partial export of -o sub.json would take
    log = tmp_path / f"sub.partial-1-of-{SAMPLES}.json"
    write_eval_log(cancelled, str(log), format="json")
    before = log.read_bytes()
    assert finmath(["export", str(log), "-o", str(tmp_path / "sub.json"), "--partial"]) == 2
    assert "is the log it exports" in one_line(capsys.readouterr().err)
    assert log.read_bytes() == before


def test_report_refuses_to_write_into_the_folder_of_its_logs(
    log_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = log_dir / "run.eval"
    before = log.read_bytes()
    assert finmath(["report", str(log_dir), "--out", str(log_dir), "--no-plots"]) == 2
    message = one_line(capsys.readouterr().err)
    assert f"--out {log_dir}: is a folder of the logs it reports" in message
    assert sorted(p.name for p in log_dir.iterdir()) == ["run.eval"]
    # a log in a subfolder: that subfolder is refused too, the folder above is not
    sub = log_dir / "more"
    sub.mkdir()
    shutil.copy(log, sub / "other.eval")
    assert finmath(["report", str(log_dir), "--out", str(sub), "--no-plots"]) == 2
    assert "is a folder of the logs it reports" in one_line(capsys.readouterr().err)
    intact(log, before)


def test_report_refuses_an_output_that_is_a_log(
    log_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = log_dir / "run.eval"
    before = log.read_bytes()
    assert finmath(["report", str(log_dir), "--out", str(log), "--no-plots"]) == 2
    assert f"--out {log}: would write over the log" in one_line(capsys.readouterr().err)
    intact(log, before)


def test_report_into_another_folder_still_works(
    log_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    assert finmath(["report", str(log_dir), "--out", str(out), "--no-plots"]) == 0
    assert (out / "report.md").is_file()
    # a folder above the logs' folder holds no log itself: the report may go there
    assert finmath(["report", str(log_dir), "--out", str(tmp_path), "--no-plots"]) == 0
    assert (tmp_path / "report.md").is_file()
    capsys.readouterr()


def test_grid_refuses_a_plan_over_a_log_or_among_the_logs(
    log_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = log_dir / "run.eval"
    before = log.read_bytes()
    grid = ["grid", "sara", "--model", "mockllm/model"]
    elsewhere = tmp_path / "elsewhere"
    assert finmath([*grid, "--log-dir", str(elsewhere), "--plan", str(log)]) == 2
    assert f"--plan {log}: is an Inspect log" in one_line(capsys.readouterr().err)
    intact(log, before)
    json_log = tmp_path / "run.json"
    write_eval_log(read_eval_log(str(log)), str(json_log), format="json")
    json_before = json_log.read_bytes()
    assert finmath([*grid, "--log-dir", str(elsewhere), "--plan", str(json_log)]) == 2
    assert "is an Inspect log" in one_line(capsys.readouterr().err)
    assert json_log.read_bytes() == json_before
    plan = log_dir / "plan.json"
    assert finmath([*grid, "--log-dir", str(log_dir), "--plan", str(plan)]) == 2
    assert f"--plan {plan}: is inside the log directory" in one_line(capsys.readouterr().err)
    assert not plan.exists()


# --- any Inspect log, by content, and any file the command did not write ---------------


@pytest.fixture
def other(log_dir: Path, tmp_path: Path) -> Path:
    """Another finished log (of another run), in another folder."""
    folder = tmp_path / "other-logs"
    folder.mkdir()
    path = folder / "other.eval"
    shutil.copy(log_dir / "run.eval", path)
    return path


def as_json_log(log: Path, path: Path) -> Path:
    write_eval_log(read_eval_log(str(log)), str(path), format="json")
    return path


@pytest.mark.parametrize("flags", [[], ["--overwrite"]], ids=["plain", "--overwrite"])
@pytest.mark.parametrize("spelling", ["eval", "json", "renamed", "link", "dotted"])
def test_export_never_writes_over_another_log(
    log_dir: Path,
    other: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    spelling: str,
    flags: list[str],
) -> None:
    made: dict[str, Callable[[], Path]] = {
        "eval": lambda: other,
        "json": lambda: as_json_log(other, tmp_path / "j.json"),
        # an .eval log under a name of another kind: judged by its content
        "renamed": lambda: other.rename(tmp_path / "predictions.json"),
        "link": lambda: tmp_path / "link.json",
        "dotted": lambda: other.parent / ".." / other.parent.name / other.name,
    }
    target = made[spelling]()
    victim = target
    if spelling == "link":
        target.symlink_to(other)
        victim = other
    before = victim.read_bytes()
    log = log_dir / "run.eval"
    assert finmath(["export", str(log), "-o", str(target), *flags]) == 2
    message = one_line(capsys.readouterr().err)
    assert f"-o {target}: is an Inspect log" in message
    assert "writing there would destroy it" in message
    assert victim.read_bytes() == before
    # the renamed .eval log is read as the zip it is, whatever its name
    assert read_eval_log(str(victim), format="json" if spelling == "json" else "eval").status == (
        "success"
    )


def test_export_writes_over_its_own_output_only_unless_told(
    log_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(log_dir / "run.eval")
    out = tmp_path / "predictions.json"
    assert finmath(["export", log, "-o", str(out)]) == 0
    assert finmath(["export", log, "-o", str(out)]) == 0  # an earlier export: replaced
    capsys.readouterr()
    notes = tmp_path / "notes.json"
    for mine in ('{"my": "notes"}', '[{"id": 1, "my": "data"}]', "plain text\n"):
        notes.write_text(mine)
        assert finmath(["export", log, "-o", str(notes)]) == 2
        message = one_line(capsys.readouterr().err)
        assert f"-o {notes}: exists and is not an earlier export; pass --overwrite" in message
        assert notes.read_text() == mine
    assert finmath(["export", log, "-o", str(notes), "--overwrite"]) == 0
    assert len(json.loads(notes.read_text())) == SAMPLES
    capsys.readouterr()


def test_grid_plan_never_writes_over_a_log_through_a_link_or_onto_a_folder(
    log_dir: Path, other: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = ["grid", "sara", "--model", "mockllm/model", "--log-dir", str(tmp_path / "grid")]
    before = other.read_bytes()
    link = tmp_path / "link.json"
    link.symlink_to(other)
    for flags in ([], ["--overwrite"]):
        assert finmath([*grid, "--plan", str(link), *flags]) == 2
        message = one_line(capsys.readouterr().err)
        assert f"--plan {link}: is an Inspect log (a link to {other.resolve()})" in message
    intact(other, before)
    folder = tmp_path / "plans"
    folder.mkdir()
    assert finmath([*grid, "--plan", str(folder)]) == 2
    assert f"--plan {folder}: is a folder; give a file name" in one_line(capsys.readouterr().err)
    mine = tmp_path / "mine.txt"
    mine.write_text("my own notes\n")
    assert finmath([*grid, "--plan", str(mine)]) == 2
    message = one_line(capsys.readouterr().err)
    assert f"--plan {mine}: exists and is not a finmath grid plan; pass --overwrite" in message
    assert mine.read_text() == "my own notes\n"


def test_report_never_writes_over_a_log_in_its_folder(
    log_dir: Path, other: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.md").symlink_to(other)
    before = other.read_bytes()
    for flags in ([], ["--overwrite"]):
        assert finmath(["report", str(log_dir), "--out", str(out), "--no-plots", *flags]) == 2
        message = one_line(capsys.readouterr().err)
        assert f"--out {out}: report.md there is an Inspect log" in message
    intact(other, before)
    # a log renamed as one of the report's files: judged by its content
    (out / "report.md").unlink()
    as_json_log(other, out / "comparisons.csv")
    assert finmath(["report", str(log_dir), "--out", str(out), "--no-plots", "--overwrite"]) == 2
    assert "comparisons.csv there is an Inspect log" in one_line(capsys.readouterr().err)


def test_report_writes_over_its_own_files_only_unless_told(
    log_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "report.md").write_text("my own notes\n")
    report = ["report", str(log_dir), "--out", str(out), "--no-plots"]
    assert finmath(report) == 2
    message = one_line(capsys.readouterr().err)
    assert f"--out {out}: holds report.md, which no finmath report wrote" in message
    assert (out / "report.md").read_text() == "my own notes\n"
    assert finmath([*report, "--overwrite"]) == 0
    assert (out / "report.md").read_text() != "my own notes\n"
    assert finmath(report) == 0  # the report's own folder now: a rerun replaces its files
    fresh = tmp_path / "fresh"
    assert finmath(["report", str(log_dir), "--out", str(fresh), "--no-plots"]) == 0
    assert finmath(["report", str(log_dir), "--out", str(fresh), "--no-plots"]) == 0
    capsys.readouterr()


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(content=st.binary(max_size=600), prefix=st.sampled_from([b"", b"PK\x03\x04", b"{"]))
def test_judging_any_content_never_raises(tmp_path: Path, content: bytes, prefix: bytes) -> None:
    """Whatever a file holds (a truncated zip, broken JSON, junk), the checks give a bool
    or one line, never an exception."""
    path = tmp_path / "any.json"
    path.write_bytes(prefix + content)
    assert isinstance(is_inspect_log(path), bool)
    for problem in (
        output_problem("-o", path, is_export, "an earlier export"),
        plan_overwrites(str(path), str(tmp_path / "logs")),
    ):
        assert problem == "" or (problem.startswith(("-o ", "--plan ")) and "\n" not in problem)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(content=st.binary(max_size=400), prefix=st.sampled_from([b"", b"PK\x03\x04", b"{"]))
def test_export_of_any_junk_file_is_refused_in_one_line(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    content: bytes,
    prefix: bytes,
) -> None:
    """``finmath export`` of a file with any content that is no log: status 2 and one line
    naming the file; never a traceback, and nothing written."""
    folder = tmp_path_factory.mktemp("junk")
    log, out = folder / "junk.eval", folder / "out.json"
    log.write_bytes(prefix + content)
    status = finmath(["export", str(log), "-o", str(out)])
    err = capsys.readouterr().err
    assert status == 2 and not out.exists()
    assert one_line(err).startswith(f"finmath: {log}: ")
