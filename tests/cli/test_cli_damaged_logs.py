"""Damaged and crafted logs through the real commands (``finmath report``, ``finmath export``
in a subprocess): a log whose header reads but one of whose sample members was cut inside
the zip, and a log whose score was renamed ``a/b``. Each command ends with one line naming
the log and what is wrong, or leaves the log out and lists it; never a traceback, and
never a file outside ``--out``.

The logs are made by Inspect's own command line (``inspect eval`` on mockllm), then damaged
here: the .eval is rewritten member by member (zstd, Inspect's method 93, through
``zipfile_zstd``, which Inspect itself imports) with one sample's JSON cut in half.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import zipfile_zstd  # noqa: F401  (zstd members, as Inspect writes them)
from inspect_ai.log import list_eval_logs, read_eval_log, write_eval_log

from finmath_tasks.cli.markup import file_name

CUT_MEMBER = "samples/demo-3_epoch_1.json"


def inspect_eval(log_dir: Path, *args: str) -> Path:
    """One real ``inspect eval`` of knowledgefmath's demo split on mockllm; its log."""
    subprocess.run(
        [
            str(Path(sys.executable).parent / "inspect"),
            "eval",
            "finmath_tasks/knowledgefmath",
            "--model",
            "mockllm/model",
            "-T",
            "split=demo",
            *args,
            "--log-dir",
            str(log_dir),
            "--display",
            "none",
        ],
        check=True,
        capture_output=True,
        env=os.environ,
    )
    [info] = list_eval_logs(str(log_dir))
    log = read_eval_log(info, header_only=True)
    assert log.status == "success"
    return Path(info.name.removeprefix("file://"))


def finmath(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "finmath_tasks.cli", *args], capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("damaged")
    oracle = inspect_eval(root / "oracle", "-T", "solver=oracle")
    cot = inspect_eval(root / "cot", "-T", "solver=cot", "--limit", "4")
    return {"oracle": oracle, "cot": cot}


def cut_copy(source: Path, target: Path, member: str) -> None:
    """``source`` rewritten to ``target`` with ``member``'s bytes cut in half (the zip's
    directory intact: the header still reads)."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as out:
        names = src.namelist()
        assert member in names, names
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == member:
                data = data[: len(data) // 2]
            out.writestr(info, data)


@pytest.mark.slow
def test_report_leaves_out_a_log_with_a_cut_sample_and_lists_it(
    made: dict[str, Path], tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    cut = logs / "cut.eval"
    cut_copy(made["oracle"], cut, CUT_MEMBER)
    assert read_eval_log(str(cut), header_only=True).status == "success"  # header reads
    healthy = logs / made["cot"].name
    healthy.write_bytes(made["cot"].read_bytes())
    out = tmp_path / "report"
    done = finmath("report", str(logs), "--out", str(out), "--no-plots")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    about = [line for line in done.stderr.splitlines() if "cut.eval" in line]
    assert len(about) == 1, done.stderr
    assert "its header reads but its samples do not: left out (JSONDecodeError" in about[0]
    report = (out / "report.md").read_text()
    listed = report.split("Not shown in any accuracy table")[1].split("##")[0]
    assert "cut.eval: its header reads but its samples do not" in listed
    rows = {r["log"]: r for r in csv.DictReader((out / "runs.csv").open())}
    assert rows["cut.eval"]["shown_in"] == ""
    assert "samples do not" in rows["cut.eval"]["not_shown"]
    assert rows[healthy.name]["shown_in"]  # the other log is reported
    assert rows[healthy.name]["not_shown"] == ""
    assert "cut.eval" not in (out / "paired.csv").read_text()

    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "cut.eval").write_bytes(cut.read_bytes())
    done = finmath("report", str(alone), "--out", str(tmp_path / "report2"), "--no-plots")
    assert done.returncode == 1  # nothing usable
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_export_of_a_log_with_a_cut_sample_is_one_line(
    made: dict[str, Path], tmp_path: Path
) -> None:
    cut = tmp_path / "cut.eval"
    cut_copy(made["oracle"], cut, CUT_MEMBER)
    target = tmp_path / "rows.json"
    done = finmath("export", str(cut), "-o", str(target))
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert str(cut) in lines[0] and "JSONDecodeError" in lines[0]
    assert not target.exists()


@pytest.mark.slow
def test_a_score_named_with_a_slash_makes_a_plot_inside_out(
    made: dict[str, Path], tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")
    log = read_eval_log(str(made["cot"]))
    assert log.results is not None and log.samples
    for score in log.results.scores:
        score.name = score.name.replace("tolerant", "a/b")
    for sample in log.samples:
        sample.scores = {k.replace("tolerant", "a/b"): v for k, v in (sample.scores or {}).items()}
    logs = tmp_path / "logs"
    write_eval_log(log, str(logs / "renamed.eval"))
    out = tmp_path / "out" / "report"
    done = finmath("report", str(logs), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    plot = out / "knowledgefmath_error_classes_a_b.png"
    assert plot.is_file() and plot.stat().st_size > 1000
    assert plot.name in (out / "report.md").read_text()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report"]
    assert not [p for p in out.rglob("*") if p.is_dir()]  # no folder made inside --out
    exported = tmp_path / "rows.json"
    done = finmath("export", str(logs / "renamed.eval"), "-o", str(exported))
    assert done.returncode == 0, done.stderr
    assert '"a/b"' in exported.read_text()


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (
            ("knowledgefmath", "error_classes", "tolerant"),
            "knowledgefmath_error_classes_tolerant.png",
        ),
        (("t", "a/b"), "t_a_b.png"),
        (("..", "x"), "_._x.png"),
        (("../../etc", "passwd"), "_._.._etc_passwd.png"),
        (("topic=Accounting & Tax",), "topic=Accounting___Tax.png"),
        (("",), "_.png"),
    ],
)
def test_file_names_from_log_names_stay_in_the_folder(
    parts: tuple[str, ...], expected: str
) -> None:
    name = file_name(*parts)
    assert name == expected
    assert "/" not in name and not name.startswith(".")
