"""Red-team cases: damaged inputs on every surface end in one line and a failing status.

Each case builds its damaged input in the test (a copy of a real file from
``../shared/data`` with one record broken, or a crafted log or folder), runs the
surface a user runs (a task's loader, ``finmath export``, ``finmath published``,
``finmath mathhay build``) and checks the outcome: an error of one line that names
the file and record (or parameter) and, for a command, a non-zero status. The cases
where the run used to go on with less (a benchmark quietly smaller, a part of a
document left out, a partial submission written as whole) are here too, each shown
to stop or to say what it holds. A new surface adds its cases to the tables below.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log

from finmath_tasks._inspect_private import PrerequisiteError
from finmath_tasks.cli.main import main as finmath

# ---- shared builders --------------------------------------------------------------------


def real(data_dir: Path, *parts: str) -> Any:
    return json.loads((data_dir.joinpath(*parts)).read_text(encoding="utf-8"))


def write(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def one_line(message: str) -> str:
    text = message.strip()
    assert text and "\n" not in text, f"not one line:\n{text}"
    assert "Traceback" not in text, text
    return text


# ---- dataset records: the loaders stop, naming the file and the record -------------------

MATHHAY_TYPES = ("sssd", "2ssd", "3ssd", "ss2d", "2s2d", "3s2d", "3s3d")


def mathhay_verified(data_dir: Path, tmp: Path, skip: str = "") -> Path:
    """A copy of v1's seven verified files (without ``skip``'s) under ``tmp``."""
    folder = tmp / "mathhay" / "v1"
    folder.mkdir(parents=True)
    for t in MATHHAY_TYPES:
        if t != skip:
            name = f"verified_haystack_question_{t}.json"
            shutil.copy(data_dir / "mathhay" / "v1" / name, folder / name)
    return folder


def mathhay_missing_file(data_dir: Path, tmp: Path) -> None:
    from finmath_tasks.tasks.mathhay import mathhay

    mathhay_verified(data_dir, tmp, skip="ss2d")
    # task_type=all (the default): 110 samples under the same name before; now an error
    mathhay(data_dir=str(tmp), release="v1", subset="verified")


def mathhay_sssd(data_dir: Path, tmp: Path, change: Callable[[list[Any]], None]) -> None:
    from finmath_tasks.tasks.mathhay.dataset import load_data

    folder = mathhay_verified(data_dir, tmp)
    path = folder / "verified_haystack_question_sssd.json"
    records = json.loads(path.read_text())
    change(records)
    write(path, records)
    load_data(str(tmp), "v1", "verified", ["sssd"])


def mathhay_duplicate(data_dir: Path, tmp: Path) -> None:
    mathhay_sssd(data_dir, tmp, lambda r: r.insert(5, copy.deepcopy(r[3])))  # 33, not 32


def mathhay_number_document(data_dir: Path, tmp: Path) -> None:
    mathhay_sssd(data_dir, tmp, lambda r: r[2].update(Document=12345))


def mathhay_pool(change: Callable[[Path, Path], None]) -> Any:
    def run(data_dir: Path, tmp: Path) -> None:
        from finmath_tasks.tasks.mathhay.dataset import load_data

        folder = mathhay_verified(data_dir, tmp)
        change(data_dir / "mathhay" / "v1" / "documents_reconstructed.json", folder)
        load_data(str(tmp), "v1", "verified", ["sssd"])

    return run


def _reconstructed_number(source: Path, folder: Path) -> None:
    pool = json.loads(source.read_text())
    pool["documents"][6]["Document"] = 12345
    write(folder / source.name, pool)


def _pool_with_a_string(source: Path, folder: Path) -> None:
    pool = json.loads(source.read_text())
    entries: list[Any] = [{"Document": d["Document"]} for d in pool["documents"]]
    entries[3] = entries[3]["Document"]
    write(folder / "documents.json", entries)


def tatqa_case(change: Callable[[dict[str, Any]], None], subset: str = "arithmetic") -> Any:
    def run(data_dir: Path, tmp: Path) -> None:
        from finmath_tasks.tasks.tatqa.dataset import load_dataset

        records = real(data_dir, "tatqa", "tatqa_dataset_dev.json")
        change(records[4])
        write(tmp / "tatqa" / "tatqa_dataset_dev.json", records)
        load_dataset("dev", subset, data_dir=str(tmp))

    return run


def first_of_type(answer_type: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def find(document: dict[str, Any]) -> dict[str, Any]:
        return next(q for q in document["questions"] if q["answer_type"] == answer_type)

    return find


def _all_answer_types(document: dict[str, Any], value: str) -> None:
    for question in document["questions"]:
        question["answer_type"] = value


def _repeat_uid(document: dict[str, Any]) -> None:
    document["questions"][1]["uid"] = document["questions"][0]["uid"]


def finqa_case(change: Callable[[list[dict[str, Any]]], None]) -> Any:
    def run(data_dir: Path, tmp: Path) -> None:
        from finmath_tasks.tasks.finqa.dataset import load_dataset

        records = real(data_dir, "finqa", "dev.json")
        change(records)
        write(tmp / "finqa" / "dev.json", records)
        load_dataset("dev", data_dir=str(tmp))

    return run


def knowledgefmath_case(change: Callable[[list[dict[str, Any]]], None]) -> Any:
    def run(data_dir: Path, tmp: Path) -> None:
        from finmath_tasks.tasks.knowledgefmath.dataset import load_dataset

        records = real(data_dir, "financemath", "validation.json")
        change(records)
        write(tmp / "financemath" / "validation.json", records)
        load_dataset("validation", str(tmp))

    return run


def _cut_program(records: list[dict[str, Any]]) -> None:
    program = records[11]["python_solution"]
    records[11]["python_solution"] = program[: len(program) // 2] + "\n    return ("


def _renamed_entry(records: list[dict[str, Any]]) -> None:
    records[12]["python_solution"] = records[12]["python_solution"].replace(
        "def solution(", "def answer("
    )


def knowledgefmath_oracle_pot_without_programs(data_dir: Path, tmp: Path) -> None:
    from finmath_tasks.tasks.knowledgefmath import knowledgefmath

    # the test split withholds the gold programs: a traceback and an errored run before
    knowledgefmath(split="test", solver="oracle_pot", data_dir=str(data_dir))


def sara_duplicate(data_dir: Path, tmp: Path) -> None:
    from finmath_tasks.tasks.sara.dataset import load_data, load_dataset

    root = tmp / "sara"
    shutil.copytree(data_dir / "sara", root)
    split = root / "splits" / "test"
    ids = split.read_text().split()
    split.write_text("\n".join([*ids, ids[3]]) + "\n")
    load_dataset(load_data(str(tmp)), "test", "all")


@dataclass(frozen=True)
class LoadCase:
    run: Callable[[Path, Path], None]
    says: tuple[str, ...]
    """Fragments the one-line message must hold (file, record, what is wrong)."""


LOAD_CASES: dict[str, LoadCase] = {
    "mathhay-missing-subset-file": LoadCase(
        mathhay_missing_file,
        ("verified_haystack_question_ss2d.json not found", "task type ss2d", "-T task_type="),
    ),
    "mathhay-duplicate-record": LoadCase(
        mathhay_duplicate,
        ("verified_haystack_question_sssd.json: record #5 repeats record #3",),
    ),
    "mathhay-document-a-number": LoadCase(
        mathhay_number_document,
        ("verified_haystack_question_sssd.json", "record #2", "'Document' is a int"),
    ),
    "mathhay-pool-document-a-number": LoadCase(
        mathhay_pool(_reconstructed_number),
        ("documents_reconstructed.json: malformed", "documents entry #6: 'Document' is not text"),
    ),
    "mathhay-pool-entry-a-string": LoadCase(
        mathhay_pool(_pool_with_a_string),
        ("documents.json: entry #3 is a str",),
    ),
    "tatqa-table-a-string": LoadCase(
        tatqa_case(lambda d: d.update(table="| a | b |")),
        ("tatqa_dataset_dev.json: document #4", "table is a str"),
    ),
    "tatqa-paragraphs-plain-strings": LoadCase(
        tatqa_case(lambda d: d.update(paragraphs=[p["text"] for p in d["paragraphs"]])),
        ("tatqa_dataset_dev.json: document #4", "paragraph #0 is a str"),
    ),
    "tatqa-answer-type-capitalised": LoadCase(
        tatqa_case(lambda d: first_of_type("arithmetic")(d).update(answer_type="Arithmetic")),
        ("tatqa_dataset_dev.json: record #", "of document #4", "answer_type 'Arithmetic'"),
    ),
    "tatqa-no-answer-type-recognised": LoadCase(
        tatqa_case(lambda d: _all_answer_types(d, "Arithmetic")),
        ("of document #4", "answer_type 'Arithmetic' is not one of"),
    ),
    "tatqa-unparsable-arithmetic-answer": LoadCase(
        tatqa_case(lambda d: first_of_type("arithmetic")(d).update(answer="-22.22 million")),
        ("of document #4", "must be a number, got '-22.22 million'"),
    ),
    "tatqa-span-answer-left-out-by-the-subset": LoadCase(
        # a question the arithmetic subset does not take is still checked
        tatqa_case(lambda d: first_of_type("multi-span")(d).update(answer_type="Multi-span")),
        ("of document #4", "answer_type 'Multi-span'"),
    ),
    "tatqa-repeated-question-uid": LoadCase(
        tatqa_case(_repeat_uid, subset="all"),
        ("of document #4", "repeats question uid"),
    ),
    "finqa-gold-program-unparsable": LoadCase(
        finqa_case(lambda r: r[9]["qa"].update(program="subtract(5, 3), divide(#0")),
        ("dev.json: record #9", "qa.program (the gold program) does not parse"),
    ),
    "finqa-repeated-record": LoadCase(
        finqa_case(lambda r: r.append(copy.deepcopy(r[0]))),
        ("dev.json: record #200", "repeats sample id", "of record #0"),
    ),
    "knowledgefmath-repeated-record": LoadCase(
        knowledgefmath_case(lambda r: r.append(copy.deepcopy(r[7]))),
        ("validation.json: record #200", "repeats sample id", "of record #7"),
    ),
    "knowledgefmath-gold-program-cut": LoadCase(
        knowledgefmath_case(_cut_program),
        ("validation.json: record #11", "python_solution (the gold program) is not valid Python"),
    ),
    "knowledgefmath-gold-program-without-entry-point": LoadCase(
        knowledgefmath_case(_renamed_entry),
        ("validation.json: record #12", "defines no solution()"),
    ),
    "knowledgefmath-oracle-pot-without-gold-programs": LoadCase(
        knowledgefmath_oracle_pot_without_programs,
        ("-T solver=oracle_pot", "1000 of 1000 records of split 'test' have none"),
    ),
    "sara-repeated-case-in-split": LoadCase(
        sara_duplicate,
        ("splits/test: record #120", "repeats sample id"),
    ),
}


@pytest.mark.realdata
@pytest.mark.parametrize("case", LOAD_CASES.values(), ids=list(LOAD_CASES))
def test_a_damaged_record_stops_loading_in_one_line(
    case: LoadCase, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FINMATH_DATA_DIR", raising=False)
    with pytest.raises(PrerequisiteError) as info:  # Inspect prints it alone: no traceback
        case.run(data_dir, tmp_path)
    message = one_line(str(info.value))
    for fragment in case.says:
        assert fragment in message, f"{fragment!r} not in: {message}"


@pytest.mark.slow
@pytest.mark.realdata
def test_inspect_eval_stops_with_one_line_and_status_1(data_dir: Path, tmp_path: Path) -> None:
    """A task error as a user meets it: `inspect eval` prints the one line, exits 1 (the
    oracle_pot run on the test split used to start, fail every sample and exit 0)."""
    done = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval", "finmath_tasks/knowledgefmath",
         "-T", "split=test", "-T", "solver=oracle_pot", "--sandbox", "local",
         "-T", f"data_dir={data_dir}", "--model", "mockllm/model", "--limit", "1",
         "--log-dir", str(tmp_path / "logs")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    message = " ".join((done.stdout + done.stderr).split())
    assert "Traceback" not in done.stderr
    assert "-T solver=oracle_pot runs each record's gold program" in message
    assert not list((tmp_path / "logs").glob("*.eval"))  # no run was started


# ---- finmath export ---------------------------------------------------------------------

DEMO = 4
"""Samples of the scripted run whose log the export cases damage."""


@pytest.fixture(scope="module")
def finished_log(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    from finmath_tasks.tasks.knowledgefmath import knowledgefmath

    folder = tmp_path_factory.mktemp("export-logs")
    [log] = inspect_eval(
        knowledgefmath(split="demo", solver="oracle"),
        model="mockllm/model",
        limit=DEMO,
        display="none",
        log_dir=str(folder),
    )
    assert log.status == "success" and len(log.samples or []) == DEMO
    return log


def unfinished(log: EvalLog, tmp: Path, status: str, held: int) -> str:
    """The finished log as a run stopped after ``held`` samples would leave it."""
    damaged = log.model_copy(deep=True)
    damaged.status = status  # type: ignore[assignment]
    damaged.samples = (damaged.samples or [])[:held]
    damaged.results = None
    path = tmp / f"{status}.eval"
    write_eval_log(damaged, str(path))
    return str(path)


def truncated(log: EvalLog, tmp: Path) -> str:
    data = Path(log.location).read_bytes()
    path = tmp / "truncated.eval"
    path.write_bytes(data[: len(data) // 2])
    return str(path)


def not_a_log(log: EvalLog, tmp: Path) -> str:
    return str(write(tmp / "results.json", {"accuracy": 0.5, "model": "x"}))


@dataclass(frozen=True)
class ExportCase:
    log: Callable[[EvalLog, Path], str]
    args: Callable[[Path], list[str]]
    says: tuple[str, ...]


def _out(tmp: Path) -> list[str]:
    return ["-o", str(tmp / "out.json")]


EXPORT_CASES: dict[str, ExportCase] = {
    "cancelled-run": ExportCase(
        lambda log, tmp: unfinished(log, tmp, "cancelled", 2),
        _out,
        (
            "cancelled.eval: the run did not finish (status cancelled",
            f"holds 2 of {DEMO}",
            "--partial",
        ),
    ),
    "killed-run": ExportCase(
        lambda log, tmp: unfinished(log, tmp, "started", 1),
        lambda tmp: [*_out(tmp), "--format", "submission"],
        ("status started", f"holds 1 of {DEMO} samples"),
    ),
    "errored-run": ExportCase(
        lambda log, tmp: unfinished(log, tmp, "error", 3), _out, ("status error",)
    ),
    "missing-log": ExportCase(
        lambda log, tmp: str(tmp / "nowhere.eval"), _out, ("nowhere.eval: no such file",)
    ),
    "truncated-log": ExportCase(truncated, _out, ("truncated.eval: not a readable Inspect log",)),
    "json-not-a-log": ExportCase(not_a_log, _out, ("results.json: not a readable Inspect log",)),
    "output-a-folder": ExportCase(
        lambda log, tmp: log.location, lambda tmp: ["-o", str(tmp)], ("is a folder",)
    ),
    "output-under-a-missing-folder": ExportCase(
        lambda log, tmp: log.location,
        lambda tmp: ["-o", str(tmp / "no" / "out.json")],
        ("does not exist",),
    ),
    "unknown-format": ExportCase(
        lambda log, tmp: log.location,
        lambda tmp: [*_out(tmp), "--format", "csv"],
        ("--format 'csv' is not one of rows, submission",),
    ),
}


@pytest.mark.parametrize("case", EXPORT_CASES.values(), ids=list(EXPORT_CASES))
def test_export_refuses_in_one_line(
    case: ExportCase, finished_log: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = case.log(finished_log, tmp_path)
    status = finmath(["export", log, *case.args(tmp_path)])
    err = capsys.readouterr().err
    assert status != 0
    message = one_line(err)
    for fragment in case.says:
        assert fragment in message, f"{fragment!r} not in: {message}"
    assert not (tmp_path / "out.json").exists()  # nothing written that could pass as whole


def test_a_partial_export_says_so_in_its_name_and_on_screen(
    finished_log: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = unfinished(finished_log, tmp_path, "cancelled", 2)
    status = finmath(["export", log, "-o", str(tmp_path / "sub.json"), "--partial"])
    out = capsys.readouterr().out
    assert status == 0
    written = tmp_path / f"sub.partial-2-of-{DEMO}.json"
    assert not (tmp_path / "sub.json").exists() and written.is_file()
    assert len(json.loads(written.read_text())) == 2
    assert f"PARTIAL: wrote 2 of {DEMO} samples" in out and "status cancelled" in out
    # without --partial, the unfinished run is refused and the message says how to export it
    assert finmath(["export", log, "-o", str(tmp_path / "whole.json")]) == 2
    assert "--partial" in one_line(capsys.readouterr().err)
    assert not (tmp_path / "whole.json").exists()


def test_a_finished_run_exports_whole(
    finished_log: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sub.json"
    assert finmath(["export", finished_log.location, "-o", str(out)]) == 0
    assert len(json.loads(out.read_text())) == DEMO
    assert f"wrote {DEMO} predictions to {out}" in capsys.readouterr().out
    assert read_eval_log(finished_log.location).status == "success"


# ---- finmath published, finmath mathhay build --------------------------------------------


def build_args(tmp: Path, *extra: str) -> list[str]:
    return ["mathhay", "build", "--period", "P-1", "--model", "mockllm/model", *extra]


def _a_file(tmp: Path) -> list[str]:
    (tmp / "a-file").write_text("x")
    return build_args(tmp, "--out", str(tmp / "a-file"), "--stages", "topics")


def _missing_documents(tmp: Path) -> list[str]:
    return build_args(
        tmp, "--out", str(tmp / "b"), "--stages", "topics,queries,documents",
        "--documents", str(tmp / "no-such-folder"),
    )  # fmt: skip


def _queries_without_topics(tmp: Path) -> list[str]:
    return build_args(tmp, "--out", str(tmp / "b"), "--stages", "queries")


def _qc_without_questions(tmp: Path) -> list[str]:
    return build_args(tmp, "--out", str(tmp / "b"), "--stages", "qc", "--task-types", "sssd")


def _later_stage_finished(tmp: Path) -> list[str]:
    write(tmp / "b" / "P-1" / "filtered_documents.json", {})
    write(tmp / "b" / "P-1" / "high_quality_questions_sssd.json", [])
    return build_args(
        tmp, "--out", str(tmp / "b"), "--stages", "questions,qc", "--task-types", "sssd"
    )


COMMAND_CASES: dict[str, tuple[Callable[[Path], list[str]], tuple[str, ...]]] = {
    "published-unknown-benchmark": (
        lambda tmp: ["published", "nosuch"],
        ("no published results are declared for 'nosuch'",),
    ),
    "published-unknown-table": (
        lambda tmp: ["published", "sara", "--table", "Table 99"],
        ("no table 'Table 99'",),
    ),
    "build-out-a-file": (_a_file, ("--out", "a-file: is a file")),
    "build-documents-missing-folder": (
        _missing_documents,
        ("--documents", "no-such-folder: no such folder"),
    ),
    "build-queries-without-topics": (
        _queries_without_topics,
        ("the queries stage reads", "main_topics.json", "add the topics stage"),
    ),
    "build-qc-without-questions": (
        _qc_without_questions,
        ("the qc stage reads", "generated_questions_sssd.json"),
    ),
    "build-later-stage-finished": (
        _later_stage_finished,
        ("high_quality_questions_sssd.json exists (a finished stage)", "--overwrite"),
    ),
}


@pytest.mark.parametrize("case", COMMAND_CASES.values(), ids=list(COMMAND_CASES))
def test_commands_stop_in_one_line_before_any_model_call(
    case: tuple[Callable[[Path], list[str]], tuple[str, ...]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv, says = case
    if case in (
        COMMAND_CASES["build-qc-without-questions"],
        COMMAND_CASES["build-later-stage-finished"],
    ):
        # a build with the qc stage resolves its sandbox first: without one, that
        # (multi-line, listing each backend) is what it says
        from finmath_tasks.sandbox.resolve import SandboxUnavailableError, resolve_sandbox

        try:
            resolve_sandbox("auto")
        except SandboxUnavailableError as e:
            pytest.skip(f"the qc stage needs a sandbox: {str(e).splitlines()[0]}")
    from finmath_tasks.tasks.mathhay.build import calls

    def no_model_calls(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a model was called before the inputs were checked")

    monkeypatch.setattr(calls, "eval", no_model_calls)  # every stage's model calls
    status = finmath(argv(tmp_path))
    assert status != 0
    message = one_line(capsys.readouterr().err)
    for fragment in says:
        assert fragment in message, f"{fragment!r} not in: {message}"
    assert not (tmp_path / "b" / "P-1" / ".build").exists()  # stopped before the build began


# ---- unscored samples: counted beside the accuracy, in Inspect's own summary -------------


@pytest.mark.realdata
def test_unscored_samples_are_counted_beside_every_accuracy(data_dir: Path, tmp_path: Path) -> None:
    """The test split withholds its answers: every sample is unscored, and the summary
    says how many instead of an accuracy alone."""
    from eval_helpers import assert_readable_summary, scripted
    from finmath_tasks.tasks.knowledgefmath import knowledgefmath

    [log] = inspect_eval(
        knowledgefmath(split="test", data_dir=str(data_dir)),
        model=scripted(["The answer is 12."] * 3),
        limit=3,
        display="none",
        log_dir=str(tmp_path),
    )
    assert log.status == "success" and log.results is not None
    shown = assert_readable_summary(log)
    accuracies = [s for s in log.results.scores if "accuracy" in s.metrics]
    assert accuracies
    for score in accuracies:
        assert score.unscored_samples == 3, score.name
    [count] = [s for s in log.results.scores if s.name == "unscored"]
    assert count.metrics["n"].value == 3  # counted beside the accuracies, in the summary
    assert "unscored" in str(shown["text"])
    reasons = {s.reason for sample in log.samples or [] for s in (sample.scores or {}).values()}
    assert reasons == {"no_gold_answer"}  # the reason stays in every sample's score
