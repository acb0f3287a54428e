"""Dataset loading shared by every benchmark: the authors' files, a local directory, or the Hub.

Resolution order for where the data comes from:
1. the task parameter ``data_dir`` (``-T data_dir=/path``),
2. the environment variable ``FINMATH_DATA_DIR``,
3. the Hugging Face Hub, where the task has a Hub copy and ``-T revision=`` names one,
4. the authors' own files at a pinned commit (:class:`Upstream`): downloaded from
   ``https://raw.githubusercontent.com/<repository>/<commit>/<path>`` (or
   ``$FINMATH_DATA_MIRROR/<repository>/<commit>/<path>``), checked against their git
   blob ids, and kept in ``$FINMATH_CACHE_DIR`` (default: the user's cache folder for
   finmath-tasks), so later runs need no network.

A local directory may hold the upstream files directly (``validation.json``)
or in a per-benchmark subfolder (``<benchmark>/validation.json``), so one
``FINMATH_DATA_DIR`` can serve every benchmark.

Every loaded dataset carries its provenance (:func:`dataset_provenance`): the source
(local folder, repository and commit, or Hub id and revision), the files read with
their git blob ids, and a fingerprint of those contents; the tasks record it in their
eval metadata under :data:`PROVENANCE_KEY`. A local folder's files are compared with the
authors' pinned blob ids (:func:`~finmath_tasks.verification.verify_local`): the
provenance says whether they are the authors' data, and a copy that is not is warned about.

Files are read by Inspect's own readers: a local JSON file (a user's copy, or the
verified copy of the authors' file) by ``json_dataset`` (:func:`json_file_dataset`),
a Hub split by ``hf_dataset`` (:func:`hub_split_dataset`). What this module adds
around them: the download, blob-id check and cache of the authors' files, the
provenance, the gated/offline messages (:func:`hub_errors`), and
:class:`RecordChecker`, the ``record_to_sample`` handed to the reader: a record that
cannot be converted stops loading with an error that names the file (or Hub id), the
record's position and its id, so nothing is dropped silently.

A benchmark describes where its data lives with a ``DataSource`` and loads a split with
``load_split`` (both in :mod:`finmath_tasks.data_source`), or calls the same readers from
its own loader. The
lower-level helpers (:func:`read_json_records`, :func:`load_hub_records`,
:func:`records_to_dataset`) serve benchmarks whose records Inspect's readers cannot
convert one at a time: a record that expands into several samples checked against each
other, fields spread over several files, a folder of case files.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai.dataset import MemoryDataset, Sample, hf_dataset, json_dataset

from finmath_tasks.blobs import file_blob_id, git_blob_id, read_text
from finmath_tasks.errors import UsageError
from finmath_tasks.verification import AUTHORS_KEY, COMPARED_KEY

logger = logging.getLogger(__name__)

DATA_DIR_ENV = "FINMATH_DATA_DIR"
MIRROR_ENV = "FINMATH_DATA_MIRROR"
"""A base URL that replaces ``https://raw.githubusercontent.com`` (a mirror; our tests)."""
CACHE_ENV = "FINMATH_CACHE_DIR"
"""Where downloaded files are kept (default: the user's cache folder for finmath-tasks)."""
DEFAULT_BASE_URL = "https://raw.githubusercontent.com"
DOWNLOAD_TIMEOUT = 60.0
"""Seconds a download may stall before it fails."""
DOWNLOAD_WORKERS = 8

Record = dict[str, Any]


class DatasetError(UsageError, RuntimeError):
    """A dataset cannot be loaded; the message says what to do.

    An Inspect ``PrerequisiteError``: ``inspect eval`` prints the message alone,
    without a traceback in front of it.
    """


def check_revision_or_folder(
    benchmark: str, revision: str | None, data_dir: str | os.PathLike[str] | None
) -> None:
    """Refuse a Hub ``revision`` together with a data folder (``-T data_dir`` or
    ``$FINMATH_DATA_DIR``): the folder would be read and the revision silently dropped."""
    if not revision:
        return
    if data_dir not in (None, ""):
        folder = f"-T data_dir={data_dir}"
    elif os.environ.get(DATA_DIR_ENV):
        folder = f"${DATA_DIR_ENV} ({os.environ[DATA_DIR_ENV]})"
    else:
        return
    raise DatasetError(
        f"{benchmark}: revision reads the Hub; data_dir reads a folder: choose one "
        f"(-T revision={revision} was given with {folder})"
    )


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path | None:
    """The local data directory to use, or None to use the Hub."""
    if data_dir is not None and not isinstance(data_dir, str | os.PathLike):
        raise DatasetError(
            f"-T data_dir={data_dir!r} must be a path (a string), not {type(data_dir).__name__}"
        )
    chosen = data_dir if data_dir not in (None, "") else os.environ.get(DATA_DIR_ENV) or None
    if chosen is None:
        return None
    path = Path(chosen).expanduser()
    if not path.is_dir():
        origin = "-T data_dir" if data_dir not in (None, "") else DATA_DIR_ENV
        raise DatasetError(f"{origin}={chosen!s}: no such directory")
    return path


def find_local_file(data_dir: Path, subdir: str, filename: str) -> Path:
    """``data_dir/filename`` or ``data_dir/subdir/filename``, whichever exists."""
    candidates = [data_dir / filename, data_dir / subdir / filename]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    tried = " or ".join(str(c) for c in candidates)
    raise DatasetError(f"Data file not found: looked for {tried}")


def read_json_records(
    path: Path, object_hook: Callable[[dict[str, Any]], Any] | None = None
) -> list[Record]:
    """Records of a JSON array file or a JSON-lines file; errors name the file and place.

    ``object_hook`` (``json.loads``'s) sees each object as it is parsed."""
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"{path}: cannot read ({e})") from e
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text, object_hook=object_hook)
        except json.JSONDecodeError as e:
            raise DatasetError(
                f"{path}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}"
            ) from e
        records = data
    elif stripped.startswith("{") and _single_json_value(text):
        raise DatasetError(
            f"{path}: the file holds one JSON object (keys: {_keys(text)}); expected a JSON "
            "list of records, or JSON lines with one record per line"
        )
    else:
        records = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line, object_hook=object_hook))
            except json.JSONDecodeError as e:
                raise DatasetError(f"{path}: malformed JSON on line {lineno}: {e.msg}") from e
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise DatasetError(
                f"{path}: record #{i} is a {type(record).__name__}, expected an object"
            )
    return records


def _single_json_value(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _keys(text: str, limit: int = 8) -> str:
    keys = list(json.loads(text))
    shown = ", ".join(repr(k) for k in keys[:limit])
    return shown + (f", ... ({len(keys)} in all)" if len(keys) > limit else "")


@contextmanager
def hub_errors(path: str, split: str, needed: str | None) -> Iterator[None]:
    """Errors of reading a Hub dataset as one actionable line: gated (what to accept, the
    token to set), unreachable (the offline way: a local copy), no such split.

    ``needed``: the upstream file a local copy must hold, named in the messages. A
    :class:`DatasetError` (a record named by :class:`RecordChecker`) passes unchanged.
    """
    try:
        yield
    except DatasetError:
        raise
    except Exception as e:
        message = str(e)
        lowered = message.lower()
        what = f"file {needed!r}" if needed else f"split {split!r}"
        hint = (
            f"pass -T data_dir=<directory with {needed or f'the {split} file'}> "
            f"or set {DATA_DIR_ENV}"
        )
        if "gated" in lowered or "authenticated" in lowered or "401" in message or "403" in message:
            raise DatasetError(
                f"The Hugging Face dataset {path!r} is gated: accept its terms at "
                f"https://huggingface.co/datasets/{path} while logged in, create a token "
                f"(https://huggingface.co/settings/tokens) and export HF_TOKEN=<token>; or {hint}. "
                f"({type(e).__name__}: {message[:300]})"
            ) from e
        if (
            isinstance(e, ConnectionError | OSError)
            or "couldn't reach" in lowered
            or "offline" in lowered
        ):
            raise DatasetError(
                f"Cannot reach the Hugging Face Hub for {path!r} ({what}); "
                f"{hint}. ({type(e).__name__}: {message[:300]})"
            ) from e
        if isinstance(e, ValueError) and "split" in lowered:
            raise DatasetError(f"{path!r} has no {what}: {message[:300]}") from e
        raise DatasetError(
            f"Could not load {path!r} {what}: {type(e).__name__}: {message[:300]}; or {hint}"
        ) from e


def load_hub_records(
    path: str,
    *,
    split: str,
    revision: str | None = None,
    name: str | None = None,
    local_file: str | None = None,
    **kwargs: Any,
) -> list[Record]:
    """Records of a Hub dataset split (``datasets.load_dataset``), with actionable errors.

    For a benchmark whose records expand into several samples each (Inspect's
    ``hf_dataset`` converts one record at a time, and such a benchmark checks a record
    against the others first). ``local_file``: the upstream file a local copy must hold,
    named in the messages (default: the file of ``data_files``; ``datasets`` calls a lone
    data file's split "train", which tells the user nothing).
    """
    import datasets

    needed = local_file or _data_file_name(kwargs.get("data_files"), split)
    with hub_errors(path, split, needed):
        ds = datasets.load_dataset(path, name=name, split=split, revision=revision, **kwargs)
    return [dict(row) for row in ds]


def hub_split_dataset(
    path: str,
    record_to_sample: Callable[[Record], Sample],
    *,
    split: str,
    source: str,
    name: str,
    revision: str | None = None,
    id_field: str | None = None,
    answers: bool | None = None,
    local_file: str | None = None,
    **kwargs: Any,
) -> tuple[MemoryDataset, list[Record]]:
    """A Hub split read by Inspect's ``hf_dataset``, each record through a
    :class:`RecordChecker`, and its records (for the split's provenance).

    Inspect's retries of a failed Hub request are off: offline (the common case where the
    data is a local copy) the message with the offline way comes at once, not after
    minutes of retrying; ``cached=False`` reads the Hub's copy rather than an earlier
    read kept in Inspect's cache.
    """
    check = RecordChecker(
        record_to_sample, source=source, id_field=id_field, answers=answers, keep_records=True
    )
    needed = local_file or _data_file_name(kwargs.get("data_files"), split)
    with hub_errors(path, split, needed):
        dataset = hf_dataset(
            path,
            split=split,
            revision=revision,
            sample_fields=check,
            cached=False,
            retry=False,
            **kwargs,
        )
    return check.finish(dataset, name), check.records or []


def _data_file_name(data_files: Any, split: str) -> str | None:
    """The file name of ``data_files`` for ``split`` (a name, a list of one, a mapping)."""
    if isinstance(data_files, Mapping):
        data_files = data_files.get(split)
    if isinstance(data_files, list | tuple) and len(data_files) == 1:
        data_files = data_files[0]
    if isinstance(data_files, str | os.PathLike):
        return Path(data_files).name
    return None


class RecordChecker:
    """A ``record_to_sample`` for Inspect's readers that names the record it cannot convert.

    Wraps a benchmark's ``record_to_sample``: a record that is not an object or that the
    function refuses (a missing field, a value of the wrong shape) raises a
    :class:`DatasetError` naming the source, the record's position and its id; a sample
    id seen before names both records; with ``answers=True`` a record without a gold
    answer is an error. :meth:`finish` then refuses an empty source and logs how many
    records lack an answer. Inspect's readers convert records with no such message (a
    bare ``KeyError`` with a traceback), which is what this adds.
    """

    def __init__(
        self,
        record_to_sample: Callable[[Record], Sample],
        *,
        source: str,
        id_field: str | None = None,
        answers: bool | None = None,
        keep_records: bool = False,
    ) -> None:
        self.record_to_sample = record_to_sample
        self.source = source
        self.id_field = id_field
        self.answers = answers
        self.records: list[Record] | None = [] if keep_records else None
        """The records seen, in order (kept when asked: a Hub split's provenance)."""
        self._count = 0
        self._seen: dict[Any, int] = {}
        self._without_answer: list[str] = []

    def __call__(self, record: Record) -> Sample:
        i = self._count
        self._count += 1
        if not isinstance(record, dict):
            raise DatasetError(
                f"{self.source}: record #{i} is a {type(record).__name__}, expected an object"
            )
        if self.records is not None:
            self.records.append(record)
        label = f"record #{i}"
        if self.id_field and record.get(self.id_field) is not None:
            label += f" ({self.id_field}={record[self.id_field]!r})"
        try:
            sample = self.record_to_sample(record)
        except DatasetError as e:
            raise DatasetError(f"{self.source}: {label}: {e}") from e
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            detail = f"missing field {e}" if isinstance(e, KeyError) else str(e)
            raise DatasetError(f"{self.source}: {label} is malformed: {detail}") from e
        if sample.id is not None:
            if sample.id in self._seen:
                raise DatasetError(
                    f"{self.source}: {label} repeats sample id {sample.id!r} of record "
                    f"#{self._seen[sample.id]}"
                )
            self._seen[sample.id] = i
        if not _has_target(sample):
            if self.answers:
                raise DatasetError(
                    f"{self.source}: {label} has no gold answer, but every record of this "
                    "split must have one"
                )
            self._without_answer.append(label)
        return sample

    def finish(self, samples: Iterable[Sample], name: str) -> MemoryDataset:
        """The converted samples as a dataset located at the source; refuses none."""
        converted = list(samples)
        if not converted:
            raise DatasetError(f"{self.source}: no records")
        if self._without_answer:
            logger.log(
                logging.INFO if self.answers is False else logging.WARNING,
                "%s: %d of %d records have no gold answer (generated and logged, left unscored)%s",
                self.source,
                len(self._without_answer),
                len(converted),
                "" if self.answers is False else f"; first: {self._without_answer[0]}",
            )
        return MemoryDataset(converted, name=name, location=self.source)


def records_to_dataset(
    records: Iterable[Record],
    record_to_sample: Callable[[Record], Sample],
    *,
    source: str,
    name: str,
    id_field: str | None = None,
    answers: bool | None = None,
) -> MemoryDataset:
    """Convert records to samples; a bad record raises a DatasetError naming it.

    ``answers``: True when every record must have a gold answer (a sample with
    an empty target is then an error naming its record), False when answers
    are withheld, None when either is fine. How many records lack an answer is
    logged either way.
    """
    check = RecordChecker(record_to_sample, source=source, id_field=id_field, answers=answers)
    return check.finish([check(record) for record in records], name)


def json_file_dataset(
    path: Path,
    record_to_sample: Callable[[Record], Sample],
    *,
    source: str,
    name: str,
    id_field: str | None = None,
    answers: bool | None = None,
) -> MemoryDataset:
    """A local JSON file's records as samples, read by Inspect's ``json_dataset``.

    ``path`` is a local file (a user's copy, or a verified copy of the authors' file);
    each record goes through a :class:`RecordChecker`, and a file that is not JSON is a
    :class:`DatasetError` naming the line. Inspect's reader tells a JSON-lines file by
    its ``.jsonl`` name only, and reads a file holding one object as one record: a
    ``.json`` file that does not hold a JSON list goes through :func:`read_json_records`,
    which reads JSON lines under any name and names a lone object for what it is.
    """
    if path.suffix != ".jsonl" and _first_character(path) != "[":
        records = read_json_records(path)
        return records_to_dataset(
            records, record_to_sample, source=source, name=name, id_field=id_field,
            answers=answers,
        )  # fmt: skip
    check = RecordChecker(record_to_sample, source=source, id_field=id_field, answers=answers)
    try:
        dataset = json_dataset(str(path), sample_fields=check, name=name)
    except json.JSONDecodeError as e:
        raise DatasetError(
            f"{path}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}"
        ) from e
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"{path}: cannot read ({e})") from e
    except ValueError as e:  # a line of a .jsonl file that is not a JSON object
        if isinstance(e, DatasetError):
            raise
        raise DatasetError(f"{path}: malformed JSON: {_one_line(e)}") from e
    return check.finish(dataset, name)


def _first_character(path: Path) -> str:
    """The file's first character that is not white space ("" for an empty file)."""
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(4096):
                if stripped := chunk.lstrip():
                    return stripped[:1].decode("latin-1")
    except OSError as e:
        raise DatasetError(f"{path}: cannot read ({e})") from e
    return ""


def _has_target(sample: Sample) -> bool:
    target = sample.target
    if isinstance(target, str):
        return bool(target.strip())
    return any(str(t).strip() for t in target)


# ---- the authors' files at a pinned commit -------------------------------------------


def cache_dir() -> Path:
    """``$FINMATH_CACHE_DIR``, else the user's cache folder for finmath-tasks."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen:
        return Path(chosen).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("finmath-tasks"))


def unusable_cache(benchmark: str, error: OSError) -> str:
    """One line for a cache folder that cannot hold the downloaded files (under a regular
    file, on a read-only or virtual file system, ...), naming it and :data:`CACHE_ENV`."""
    origin = CACHE_ENV if os.environ.get(CACHE_ENV) else f"the default: {CACHE_ENV} is unset"
    where = f": {error.filename}" if error.filename else ""
    return (
        f"{benchmark}: the cache folder {cache_dir()} ({origin}) cannot hold the downloaded "
        f"files ({error.strerror or type(error).__name__}{where}); set {CACHE_ENV} to a "
        "folder you can write, or run with -T data_dir=<folder with the benchmark's files>"
    )


def base_url() -> str:
    return (os.environ.get(MIRROR_ENV) or DEFAULT_BASE_URL).rstrip("/")


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


@dataclass(frozen=True)
class Upstream:
    """A benchmark's files in its authors' repository at one commit, each with its git blob id.

    :meth:`fetch` returns verified local copies: a cached file whose blob id matches is
    used as it is (no network); otherwise the file is downloaded, checked, written to a
    temporary name beside its place and renamed into place, so an interrupted or
    concurrent download never leaves a file that a later run would use. A cached file
    that no longer matches is downloaded again.
    """

    benchmark: str
    repository: str
    """``owner/name`` on GitHub."""
    commit: str
    """The full commit hash the files are pinned to."""
    blobs: Mapping[str, str]
    """Path in the repository to its git blob id."""

    @classmethod
    def from_manifest(
        cls, benchmark: str, repository: str, commit: str, manifest: Path
    ) -> Upstream:
        """The files a task's ``upstream.tsv`` pins (repository, commit, path, git_blob per
        line); every line must name ``repository`` at ``commit``."""
        blobs: dict[str, str] = {}
        lines = manifest.read_text(encoding="utf-8").splitlines()
        rows = [line.split("\t") for line in lines if line.strip() and not line.startswith("#")]
        header, rows = rows[0], rows[1:]
        for row in rows:
            item = dict(zip(header, row, strict=True))
            if (item["repository"], item["commit"]) != (repository, commit):
                raise ValueError(
                    f"{manifest}: {item['path']} is pinned in {item['repository']}@"
                    f"{item['commit']}, not {repository}@{commit}"
                )
            blobs[item["path"]] = item["git_blob"]
        return cls(benchmark, repository, commit, blobs)

    @property
    def label(self) -> str:
        return f"{self.repository}@{self.commit[:7]}"

    def url(self, path: str) -> str:
        return f"{base_url()}/{self.repository}/{self.commit}/{urllib.parse.quote(path)}"

    def folder(self) -> Path:
        """The cache folder that mirrors the repository's tree at the commit."""
        return cache_dir() / self.repository / self.commit

    def has(self, path: str) -> bool:
        return path in self.blobs

    def fetch(self, paths: Iterable[str]) -> dict[str, Path]:
        """Verified local copies of ``paths`` (downloaded where the cache lacks them)."""
        wanted = list(dict.fromkeys(paths))
        if len(wanted) <= 1:
            return {path: self.fetch_one(path) for path in wanted}
        with ThreadPoolExecutor(max_workers=DOWNLOAD_WORKERS) as pool:
            return dict(zip(wanted, pool.map(self.fetch_one, wanted), strict=True))

    def fetch_one(self, path: str) -> Path:
        expected = self.blobs.get(path)
        if expected is None:
            raise DatasetError(f"{self.benchmark}: {path} is not a file pinned in {self.label}")
        target = self.folder() / path
        if target.is_file():
            if file_blob_id(target) == expected:
                return target
            logger.warning(
                "%s: the cached %s does not match its pinned git blob id %s: downloading it again",
                self.benchmark,
                target,
                expected,
            )
            target.unlink(missing_ok=True)
        try:  # an unusable cache folder is named before anything is downloaded
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise DatasetError(unusable_cache(self.benchmark, e)) from e
        url = self.url(path)
        what_to_do = (
            f"check the connection or {MIRROR_ENV}, or run offline with -T data_dir=<folder "
            f"with the benchmark's files> (or {DATA_DIR_ENV})"
        )
        try:
            with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response:
                data = response.read()
        except urllib.error.HTTPError as e:
            raise DatasetError(
                f"{self.benchmark}: cannot download {path} from {url} (HTTP {e.code} "
                f"{_one_line(e.reason)}); {what_to_do}"
            ) from e
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as e:
            reason = e.reason if isinstance(e, urllib.error.URLError) else e
            raise DatasetError(
                f"{self.benchmark}: cannot download {path} from {url} "
                f"({type(e).__name__}: {_one_line(reason)}); {what_to_do}"
            ) from e
        actual = git_blob_id(data)
        if actual != expected:
            raise DatasetError(
                f"{self.benchmark}: {path} downloaded from {url} is not the pinned file "
                f"(git blob {actual}, expected {expected}, {len(data)} bytes); it was not "
                f"cached: retry later, check {MIRROR_ENV}, or run with -T data_dir=<folder with "
                "the verified files>"
            )
        try:
            write_atomically(target, data)
        except OSError as e:
            raise DatasetError(unusable_cache(self.benchmark, e)) from e
        return target

    def provenance(self, paths: Iterable[str]) -> dict[str, Any]:
        files = {path: self.blobs[path] for path in dict.fromkeys(paths)}
        record: dict[str, Any] = {
            "source": "github",
            "location": f"{self.repository}@{self.commit}",
            "repository": self.repository,
            "commit": self.commit,
        }
        if os.environ.get(MIRROR_ENV):
            record["mirror"] = base_url()
        # fetched files are checked against their blob ids before use: the authors' files
        verdict = {AUTHORS_KEY: True, COMPARED_KEY: f"{self.repository}@{self.commit}"}
        return {**record, "files": files, "fingerprint": fingerprint(files.values()), **verdict}


def write_atomically(target: Path, data: bytes) -> None:
    """``data`` at ``target``: written under a temporary name beside it, then renamed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# ---- provenance: where a run's data came from ------------------------------------------

PROVENANCE_KEY = "data"
"""The task metadata key of a run's data provenance (see :func:`local_provenance`)."""


def fingerprint(blob_ids: Iterable[str]) -> str:
    """One id for a set of files' contents: the same files give the same fingerprint
    wherever they were read from (a local copy, the repository, the cache)."""
    joined = "\n".join(sorted(blob_ids))
    return hashlib.sha256(joined.encode()).hexdigest()[:16]


def local_provenance(
    folder: Path, files: Iterable[Path], extra: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A local folder's files (their git blob ids, so a copy of the upstream files has the
    upstream ids); ``extra``: name to blob id of content that is not a file as such."""
    blobs: dict[str, str] = {}
    for path in dict.fromkeys(files):
        try:
            name = str(path.relative_to(folder))
        except ValueError:
            name = str(path)
        blobs[name] = file_blob_id(path)
    blobs.update(extra or {})
    return {
        "source": "local",
        "location": str(folder),
        "path": str(folder),
        "files": blobs,
        "fingerprint": fingerprint(blobs.values()),
    }


def hub_provenance(hub_id: str, revision: str | None, name: str, records: list[Record]) -> dict:
    """A Hub split: its id, revision and the git blob id of its records as canonical JSON."""
    canonical = json.dumps(records, sort_keys=True, ensure_ascii=False, default=str)
    blobs = {f"{name} (records)": git_blob_id(canonical.encode())}
    return {
        "source": "hub",
        "location": f"hf://{hub_id}@{revision or 'main'}",
        "hub_id": hub_id,
        "revision": revision,
        "files": blobs,
        "fingerprint": fingerprint(blobs.values()),
    }


def with_extra(provenance: dict[str, Any], extra: Mapping[str, str]) -> dict[str, Any]:
    """``provenance`` with more named contents in its files and fingerprint."""
    files = {**provenance["files"], **extra}
    return {**provenance, "files": files, "fingerprint": fingerprint(files.values())}


_PROVENANCE_ATTR = "_finmath_provenance"


def attach_provenance(dataset: MemoryDataset, provenance: dict[str, Any]) -> MemoryDataset:
    setattr(dataset, _PROVENANCE_ATTR, provenance)
    return dataset


def dataset_provenance(dataset: Any) -> dict[str, Any] | None:
    """The provenance :func:`load_split` (or a benchmark's loader) attached, if any."""
    value = getattr(dataset, _PROVENANCE_ATTR, None)
    return value if isinstance(value, dict) else None
