"""What comparing a local copy with the authors' files costs: MathHay v1 (the largest
release a task reads) loaded from a local folder with the comparison and without it.

    python benchmarks/local_data_verification.py [data_dir] [--repeats N]
    # default data_dir: $FINMATH_DATA_DIR, else ../shared/data

"With" is the task's own load (``load_data``: the 14 question files of the paper's
verified+unverified set, 673 questions, and v1's pool): every file read is hashed (git
blob id, from the bytes the parser reads: :mod:`finmath_tasks.blobs`) and compared with
its pinned id, and the pool's content with v1's pinned pool. "Without" is the same load
with every hash replaced by a constant and the comparison skipped: what loading costs
when the files are trusted unread. The two alternate, after
one warm-up load of each (the files are then in the page cache for both); the medians and
the fastest of each are printed with their ratios, and the time the "with" loads spent
computing blob ids. The bound we hold ourselves to: a median ratio of at most 1.10.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from finmath_tasks import blobs, loading
from finmath_tasks.tasks.mathhay import dataset
from finmath_tasks.tasks.mathhay.dataset import TASK_TYPES, load_data

RELEASE = "v1"
SUBSET = "verified+unverified"
BOUND = 1.10


def data_dir(arg: str | None) -> str:
    if arg:
        return arg
    env = os.environ.get("FINMATH_DATA_DIR")
    if env:
        return env
    return str(Path(__file__).resolve().parents[1].parent / "shared" / "data")


def _unhashed(content: Any) -> str:
    return "0" * 40


def _unverified(upstream: Any, provenance: dict[str, Any], *args: Any) -> dict[str, Any]:
    return provenance


@contextmanager
def without_verification() -> Iterator[None]:
    """The load with no file hashed and nothing compared."""
    with (
        mock.patch.object(blobs, "git_blob_id", _unhashed),
        mock.patch.object(loading, "file_blob_id", _unhashed),
        mock.patch.object(dataset, "file_blob_id", _unhashed),
        mock.patch.object(dataset, "git_blob_id", _unhashed),
        mock.patch.object(dataset, "verify_local", _unverified),
    ):
        yield


@contextmanager
def hashing_clock(spent: list[float]) -> Iterator[None]:
    """The load as it is, with the time spent computing git blob ids added to ``spent``."""
    original = blobs.git_blob_id

    def clocked(data: bytes) -> str:
        start = time.perf_counter()
        try:
            return original(data)
        finally:
            spent.append(time.perf_counter() - start)

    with (
        mock.patch.object(blobs, "git_blob_id", clocked),
        mock.patch.object(dataset, "git_blob_id", clocked),
    ):
        yield


def timed(load: Callable[[], Any]) -> float:
    start = time.perf_counter()
    load()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", nargs="?")
    parser.add_argument("--repeats", type=int, default=11)
    args = parser.parse_args()
    root = data_dir(args.data_dir)

    def load() -> Any:
        return load_data(root, RELEASE, SUBSET, list(TASK_TYPES))

    def load_without() -> Any:
        with without_verification():
            return load()

    data = load()
    check = load_without()
    if data.provenance.get("authors_data") is not True:
        print(f"{root}: v1 is not the authors' data here: {data.provenance.get('other_files')}")
        return 1
    if "authors_data" in check.provenance:
        print("the load without verification still compared the files: the patch missed")
        return 1
    files = [Path(data.root) / name for name in data.provenance["files"] if name.endswith(".json")]
    files.append(Path(data.pool_file))
    size = sum(path.stat().st_size for path in files if path.is_file())
    with_times: list[float] = []
    without_times: list[float] = []
    hashing: list[float] = []
    for _ in range(args.repeats):
        with hashing_clock(hashing):
            with_times.append(timed(load))
        without_times.append(timed(load_without))
    with_median = statistics.median(with_times)
    without_median = statistics.median(without_times)
    ratio = with_median / without_median
    hashed = sum(hashing) / args.repeats
    print(
        f"MathHay {RELEASE} {SUBSET} from {data.root}: {len(data.questions)} questions, "
        f"{len(files)} files, {size / 1e6:.1f} MB hashed; {args.repeats} loads each, alternating"
    )
    print(f"{'':30}{'with verification':>18}{'without':>10}{'ratio':>8}")
    print(f"{'load_data, median (s)':30}{with_median:>18.3f}{without_median:>10.3f}{ratio:>8.3f}")
    print(
        f"{'load_data, fastest (s)':30}{min(with_times):>18.3f}{min(without_times):>10.3f}"
        f"{min(with_times) / min(without_times):>8.3f}"
    )
    share = hashed / statistics.mean(with_times)
    print(f"{'  of which hashing, mean (s)':30}{hashed:>18.3f}{0:>10.3f}{share:>7.1%}")
    print(f"bound: median ratio at most {BOUND:.2f}: {'met' if ratio <= BOUND else 'NOT met'}")
    return 0 if ratio <= BOUND else 1


if __name__ == "__main__":
    sys.exit(main())
