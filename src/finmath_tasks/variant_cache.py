"""Fresh variants made once: a seed's instantiation kept on disk and read back by later runs.

Instantiating a split's fresh variants reruns every gold program (a Python gold in the
sandbox: tens of seconds per seed), and every run of a seed would do it again: each
``inspect eval``, each run of a grid and of its dry run, ``finmath variants``. The first
one writes what it made (the variants, the questions left out with their reasons, the
programs' values on the original numbers, the rules version) to a cache entry; the
others read it.

Where: ``$FINMATH_VARIANT_CACHE`` if set (``off`` turns the cache off), else the
``variants`` folder of the package's cache folder (``$FINMATH_CACHE_DIR``, else the
user's cache folder for finmath-tasks, where the authors' files are kept too). One file
per benchmark, split and seed under ``<folder>/<benchmark>/``; deleting the folder clears
it.

An entry is keyed by everything that changes the variants: the benchmark, the split, the
seed, the original data's fingerprint, a digest of the questions instantiated (the
samples given: another ``subset`` of the same files is other questions), the benchmark's
rules version, the function that instantiates, and the package's version with a digest
of the sources that draw, check and recompute (:data:`CODE`: an edit there makes new
entries). An entry holds only plain JSON
values (a sample with anything else is not cached, and says so), checked by its SHA-256
on reading: a truncated or edited entry is ignored with a warning and made again. Writes
go to a temporary file renamed into place; a lock file beside the entry makes a second
process that wants the same seed wait for the first one's entry instead of making it
again. A folder that cannot be written leaves the variants made anew each run, with a
warning.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import logging
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from inspect_ai.dataset import Sample

from finmath_tasks.loading import cache_dir, write_atomically

logger = logging.getLogger(__name__)

CACHE_ENV = "FINMATH_VARIANT_CACHE"
"""The cache's folder; ``off`` (or ``0``, ``none``) turns it off."""
OFF = ("off", "0", "none", "false", "no")
FORMAT = 1
"""The entry format; part of the key."""

_FIELDS = ("id", "input", "choices", "target", "metadata", "sandbox", "files", "setup")
"""The fields of a Sample an entry keeps (all of them)."""


class Uncacheable(ValueError):
    """A value that plain JSON would not give back exactly."""


def folder() -> Path | None:
    """The cache folder, or None when ``$FINMATH_VARIANT_CACHE`` turns the cache off."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None and chosen.strip().lower() in OFF:
        return None
    if chosen:
        return Path(chosen).expanduser()
    return cache_dir() / "variants"


def _plain(value: Any, where: str) -> Any:
    """``value`` itself if JSON gives it back equal and of the same types, else
    :class:`Uncacheable` (a tuple would come back a list, a str subclass a str)."""
    kind = type(value)
    if value is None or kind in (str, int, bool):
        return value
    if kind is float:
        if value != value or value in (float("inf"), float("-inf")):
            raise Uncacheable(f"{where}: {value!r} is not a JSON number")
        return value
    if kind is list:
        for i, item in enumerate(value):
            _plain(item, f"{where}[{i}]")
        return value
    if kind is dict:
        for k, item in value.items():
            if type(k) is not str:
                raise Uncacheable(f"{where}: key {k!r} is not a string")
            _plain(item, f"{where}[{k!r}]")
        return value
    raise Uncacheable(f"{where}: a {kind.__name__} is not plain JSON")


def sample_record(sample: Sample) -> dict[str, Any]:
    """A sample as plain JSON values (every field), or :class:`Uncacheable`."""
    return {f: _plain(getattr(sample, f), f"sample {sample.id!r} {f}") for f in _FIELDS}


def sample_from(record: dict[str, Any]) -> Sample:
    return Sample(**{f: record[f] for f in _FIELDS})


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def samples_digest(samples: Sequence[Sample]) -> str:
    """A digest of the questions a split's variants are drawn from."""
    digest = hashlib.sha256()
    for sample in samples:
        digest.update(_canonical(sample_record(sample)) + b"\n")
    return digest.hexdigest()


CODE = (
    "variant*.py",
    "tasks/{benchmark}/**/*.py",
    "scorers/comparisons.py",
    "scorers/extraction.py",
    "sandbox/**/*.py",
)
"""The package's sources a benchmark's variants are made by (relative to the package): the
shared variant code and this cache, the benchmark's folder, the golds' reading and the
comparisons that decide whether a gold moved, and the sandbox that Python golds run
in. An edit to any of them makes new entries."""
_CODE_DIGESTS: dict[str, str] = {}


def code_digest(benchmark: str) -> str:
    """A digest of the package's version and the sources in :data:`CODE`."""
    if benchmark not in _CODE_DIGESTS:
        from importlib.metadata import PackageNotFoundError, version

        root = Path(__file__).parent
        digest = hashlib.sha256()
        with contextlib.suppress(PackageNotFoundError):  # not installed: the sources alone
            digest.update(version("finmath-tasks").encode() + b"\0")
        paths = {p for pattern in CODE for p in root.glob(pattern.format(benchmark=benchmark))}
        for path in sorted(paths):
            relative = path.relative_to(root).as_posix()
            digest.update(relative.encode() + b"\0" + path.read_bytes() + b"\0")
        _CODE_DIGESTS[benchmark] = digest.hexdigest()
    return _CODE_DIGESTS[benchmark]


def function_name(instantiate: Callable[..., Any]) -> str:
    """The module and name of a benchmark's ``instantiate`` (a wrapper's, its class's)."""
    name = getattr(instantiate, "__qualname__", None) or type(instantiate).__qualname__
    return f"{getattr(instantiate, '__module__', '')}.{name}"


def cache_key(
    benchmark: str,
    split: str,
    seed: int,
    fingerprint: str,
    samples: str,
    rules: str,
    code: str | None = None,
    function: str = "",
) -> dict[str, Any]:
    """Everything that changes a seed's variants (``samples``: :func:`samples_digest`;
    ``function``: :func:`function_name` of the instantiation)."""
    return {
        "format": FORMAT,
        "benchmark": benchmark,
        "split": split,
        "seed": seed,
        "fingerprint": fingerprint,
        "samples": samples,
        "rules": rules,
        "code": code if code is not None else code_digest(benchmark),
        "function": function,
    }


def entry_path(root: Path, key: dict[str, Any]) -> Path:
    """The entry's file: ``<root>/<benchmark>/<split>-seed<seed>-<digest of the key>.json.gz``."""
    name = hashlib.sha256(_canonical(key)).hexdigest()[:20]
    return root / key["benchmark"] / f"{key['split']}-seed{key['seed']}-{name}.json.gz"


def encode(key: dict[str, Any], made: Any) -> bytes:
    """An entry's bytes: a header line (the key, the payload's SHA-256), then the payload."""
    payload = _canonical(
        {
            "seed": made.seed,
            "samples": [sample_record(s) for s in made.samples],
            "left_out": _plain(dict(made.left_out), "left_out"),
            "originals": _plain(dict(made.originals), "originals"),
            "rules": _plain(made.rules, "rules"),
        }
    )
    header = _canonical({"key": key, "sha256": hashlib.sha256(payload).hexdigest()})
    return gzip.compress(header + b"\n" + payload, compresslevel=3, mtime=0)


class Corrupt(ValueError):
    """An entry that cannot be read back as it was written."""


def decode(key: dict[str, Any], data: bytes) -> dict[str, Any]:
    """The payload of an entry written under ``key``, or :class:`Corrupt` with the reason."""
    try:
        text = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as e:
        raise Corrupt(f"not a whole gzip file ({e})") from None
    head, newline, payload = text.partition(b"\n")
    if not newline:
        raise Corrupt("no header line")
    try:
        header = json.loads(head)
        if header["key"] != key:
            raise Corrupt("its key is another one")
        if hashlib.sha256(payload).hexdigest() != header["sha256"]:
            raise Corrupt("its content does not match its SHA-256")
        value = json.loads(payload)
    except (ValueError, KeyError, TypeError) as e:
        raise Corrupt(f"unreadable ({type(e).__name__}: {e})") from None
    if not isinstance(value, dict):
        raise Corrupt("its content is not an object")
    return value


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold ``<entry>.lock`` (a second process waits here for the first's entry); where
    the lock cannot be taken (no fcntl, a read-only folder) the caller goes on without."""
    try:
        import fcntl
    except ImportError:  # not POSIX: atomic writes alone
        yield
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path.with_name(path.name + ".lock"), "a")  # noqa: SIM115
    except OSError:
        yield
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logger.info("waiting for another process making the variants of %s", path.name)
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:
            pass  # a file system without locks
        yield


def _unwritable(root: Path, error: OSError) -> None:
    logger.warning(
        "the fresh-variant cache %s cannot be written (%s): the variants are made anew "
        "each run; set %s to a folder you can write (or to off)",
        root,
        error.strerror or type(error).__name__,
        CACHE_ENV,
    )


def instantiated(
    benchmark: str,
    split: str,
    seed: int,
    fingerprint: str,
    samples: list[Sample],
    rules: str,
    instantiate: Callable[[list[Sample], int], Any],
    build: Callable[[dict[str, Any]], Any],
) -> Any:
    """``instantiate(samples, seed)``, read from the cache where an entry of this key was
    written (``build`` turns an entry's payload into the benchmark's result), else made
    and written there. Never fails for the cache's sake: a folder that cannot be written,
    a corrupt entry or a sample that is not plain JSON each leave a warning and the
    variants made here."""
    root = folder()
    if root is None:
        return instantiate(samples, seed)
    try:
        digest = samples_digest(samples)
        key = cache_key(
            benchmark, split, seed, fingerprint, digest, rules, function=function_name(instantiate)
        )
    except Uncacheable as e:
        logger.warning("%s %s seed %d: not cached (%s)", benchmark, split, seed, e)
        return instantiate(samples, seed)
    path = entry_path(root, key)
    with _locked(path):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = None
        except OSError as e:
            logger.warning("the fresh-variant cache entry %s cannot be read (%s)", path, e)
            data = None
        if data is not None:
            try:
                made = build(decode(key, data))
            except (Corrupt, ValueError, KeyError, TypeError) as e:
                logger.warning(
                    "the fresh-variant cache entry %s is corrupt (%s): ignored, made again",
                    path,
                    e,
                )
            else:
                logger.info("%s %s seed %d: variants read from %s", benchmark, split, seed, path)
                return made
        made = instantiate(samples, seed)
        try:
            entry = encode(key, made)
        except Uncacheable as e:
            logger.warning("%s %s seed %d: not cached (%s)", benchmark, split, seed, e)
            return made
        try:
            write_atomically(path, entry)
        except OSError as e:
            _unwritable(root, e)
        else:
            logger.info("%s %s seed %d: variants written to %s", benchmark, split, seed, path)
        return made


__all__ = ["CACHE_ENV", "folder", "instantiated", "sample_from", "samples_digest"]
