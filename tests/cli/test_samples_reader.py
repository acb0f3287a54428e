"""The report's own reader of local ``.eval`` logs (``finmath_tasks.cli.samples``).

It reads a log's header and the fields the report uses of each sample from the zip itself
with Inspect's models; what it gives must be what Inspect's ``read_eval_log`` and
``read_eval_log_samples`` give, on real logs written by Inspect (zstd members): finished,
with an errored sample, with epochs. A member cut inside the zip, whose CRC no longer
matches, and a sample edited into another shape are a ``DamagedLog``, as through Inspect.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import zipfile_zstd  # noqa: F401  (zstd members, as Inspect writes them)
from inspect_ai import eval
from inspect_ai.log import EvalLog, read_eval_log, read_eval_log_samples, write_eval_log

from finmath_tasks.cli.samples import (
    DamagedLog,
    SampleRecord,
    eval_zip_records,
    log_records,
    read_header,
)


def inspect_records(path: str) -> list[SampleRecord]:
    return [
        SampleRecord(s.id, int(s.epoch), s.target, dict(s.metadata or {}), dict(s.scores or {}))
        for s in read_eval_log_samples(path, all_samples_required=False)
    ]


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, EvalLog]:
    root = tmp_path_factory.mktemp("reader")
    [plain] = eval(
        "finmath_tasks/knowledgefmath", task_args={"split": "demo", "solver": "cot"},
        model="mockllm/model", limit=4, display="none", log_dir=str(root / "plain"),
    )  # fmt: skip
    [epochs] = eval(
        "finmath_tasks/knowledgefmath", task_args={"split": "demo", "solver": "oracle"},
        model="mockllm/model", limit=3, epochs=2, display="none", log_dir=str(root / "epochs"),
    )  # fmt: skip
    return {"plain": plain, "epochs": epochs}


def test_the_reader_gives_what_inspect_gives(logs: dict[str, EvalLog], tmp_path: Path) -> None:
    # a log with a sample in error and one with a sample missing (unfinished), as Inspect
    # writes them back, beside the two as run
    assert logs["plain"].location
    full = read_eval_log(logs["plain"].location)
    assert full.samples
    full.samples[1].error = full.samples[0].error  # None: the shape kept
    full.status = "error"
    del full.samples[2]
    write_eval_log(full, str(tmp_path / "partial.eval"))
    paths = [str(log.location) for log in logs.values()] + [str(tmp_path / "partial.eval")]
    for path in paths:
        assert zipfile.ZipFile(path).getinfo("header.json").compress_type == 93  # zstd
        ours, inspects = read_header(path), read_eval_log(path, header_only=True)
        assert ours.model_dump(exclude={"reductions"}) == inspects.model_dump(
            exclude={"reductions"}
        )
        records = log_records(path)
        assert records == inspect_records(path) and records
    assert [(r.id, r.epoch) for r in log_records(paths[1])] == [
        (i, e) for i in ("demo-0", "demo-1", "demo-2") for e in (1, 2)
    ]
    assert len(log_records(paths[2])) == 3  # the sample the log lacks is left out


def rewrite(source: str, target: Path, member: str, change: object) -> None:
    """``source`` copied to ``target`` with ``member``'s bytes changed by ``change``."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as out:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == member:
                data = change(data)  # type: ignore[operator]
            out.writestr(info, data)


def test_a_member_cut_inside_the_zip_is_damaged(logs: dict[str, EvalLog], tmp_path: Path) -> None:
    source = str(logs["plain"].location)
    member = "samples/demo-1_epoch_1.json"
    cut = tmp_path / "cut.eval"
    with zipfile.ZipFile(source) as src:
        info = src.getinfo(member)
    # flip the bytes of the member's compressed data in place: the directory and the
    # header read, the member's CRC (or its zstd frame) does not
    raw = bytearray(Path(source).read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    raw[start + 10 : start + 40] = bytes(b ^ 0xFF for b in raw[start + 10 : start + 40])
    cut.write_bytes(bytes(raw))
    assert read_header(str(cut)).status == "success"
    with pytest.raises(DamagedLog, match="its header reads but its samples do not: left out"):
        log_records(str(cut))
    with pytest.raises(Exception):  # noqa: B017  (Inspect's own reader fails on it too)
        inspect_records(str(cut))


@pytest.mark.parametrize(
    ("what", "change", "why"),
    [
        ("cut in half", lambda d: d[: len(d) // 2], "JSONDecodeError"),
        ("target a number", lambda d: _edit(d, target=5), "ValidationError"),
        ("scores a list", lambda d: _edit(d, scores=[1]), "ValueError"),
    ],
)
def test_a_sample_that_does_not_read_is_damaged(
    logs: dict[str, EvalLog], tmp_path: Path, what: str, change: object, why: str
) -> None:
    edited = tmp_path / "edited.eval"
    rewrite(str(logs["plain"].location), edited, "samples/demo-2_epoch_1.json", change)
    with pytest.raises(DamagedLog, match=f"samples do not: left out \\({why}: "):
        log_records(str(edited))


def _edit(data: bytes, **fields: object) -> bytes:
    return json.dumps({**json.loads(data), **fields}).encode()


def test_a_log_without_sample_ids_is_left_to_inspect(
    logs: dict[str, EvalLog], tmp_path: Path
) -> None:
    # a header listing no sample ids: Inspect's reader says why it cannot read the samples
    edited = tmp_path / "no_ids.eval"

    def no_ids(data: bytes) -> bytes:
        header = json.loads(data)
        header["eval"]["dataset"]["sample_ids"] = None
        return json.dumps(header).encode()

    rewrite(str(logs["plain"].location), edited, "header.json", no_ids)
    assert eval_zip_records(edited, {"deserializing": True}) is None
    with pytest.raises(
        DamagedLog, match=r"\(RuntimeError: This log file does not include sample_ids"
    ):
        log_records(str(edited))
