"""A program that looks, from inside a sandbox, for any file of the finmath_tasks package.

:func:`scan_program` is the text of a ``solution()`` program: it walks every readable path
from ``/`` (not following links; /proc, /sys and /dev left out: kernel views and devices,
no files of ours), within a time bound, and counts

- every path with ``finmath_tasks`` in a name (the package's folder, its data, its
  ``.dist-info``, an editable install's finder and ``.pth``), and
- every file whose content is one of the package's files that are not modules (package
  data: the demo split with its golds, prompts, tables), whatever its name or place;

it returns that count (0: nothing found) and prints a JSON summary: whether the walk was
complete, how many files and folders it saw and read, the first hits, and for every site
directory (``site-packages``, ``dist-packages``) holding entries not among ``allowed``, the
folder, how many and the first few.
The same function runs on the host over the package's own folder as the control: there it
finds every data file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import finmath_tasks

PACKAGE_DIR = Path(finmath_tasks.__file__).resolve().parent
ALLOWED_SITE_ENTRIES = ("numpy", "scipy", "sympy", "isympy", "mpmath", "numpy_financial")
"""The libraries programs are promised (``bwrap_command.SANDBOX_LIBRARIES``): names of the
entries a site directory in the bwrap sandbox may hold (their packages, ``.libs``, metadata)."""

_SCAN = r"""
import hashlib, json, os, stat, time

FINGERPRINTS = {fingerprints!r}
ALLOWED = {allowed!r}
SKIP = ("/proc", "/sys", "/dev")


def scan(roots, seconds):
    deadline = time.monotonic() + seconds
    sizes = {{size for size, _ in FINGERPRINTS}}
    digests = {{tuple(pair) for pair in FINGERPRINTS}}
    seen = {{"files": 0, "dirs": 0, "read": 0, "unreadable": 0}}
    hits, foreign, complete = [], [], True
    stack = list(roots)
    while stack:
        if time.monotonic() > deadline:
            complete = False
            break
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            seen["unreadable"] += 1
            continue
        seen["dirs"] += 1
        if os.path.basename(folder) in ("site-packages", "dist-packages") and ALLOWED:
            others = [e.name for e in entries if e.name.split("-")[0].split(".")[0] not in ALLOWED]
            if others:
                foreign.append([folder, len(others), sorted(others)[:5]])
        for entry in entries:
            if entry.path in SKIP:
                continue
            if "finmath_tasks" in entry.name:
                hits.append(entry.path)
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                seen["unreadable"] += 1
                continue
            if stat.S_ISDIR(info.st_mode):
                stack.append(entry.path)
            elif stat.S_ISREG(info.st_mode):
                seen["files"] += 1
                if info.st_size in sizes:
                    try:
                        with open(entry.path, "rb") as f:
                            digest = hashlib.sha256(f.read()).hexdigest()
                    except OSError:
                        seen["unreadable"] += 1
                        continue
                    seen["read"] += 1
                    if (info.st_size, digest) in digests:
                        hits.append(entry.path)
    return {{"complete": complete, "seen": seen, "hits": sorted(set(hits)),
             "foreign": sorted(foreign)}}


def solution():
    found = scan(["/"], {seconds!r})
    print(json.dumps({{**found, "hits": found["hits"][:20], "hit_count": len(found["hits"])}}))
    return len(found["hits"])
"""


def fingerprints(package: Path = PACKAGE_DIR) -> list[tuple[int, str]]:
    """(size, sha256) of every file of the package that is not a module (its data), 64
    bytes or more (smaller ones, e.g. an empty marker, would match unrelated files)."""
    found = set()
    for path in package.rglob("*"):
        if not path.is_file() or path.suffix in (".py", ".pyc") or "__pycache__" in path.parts:
            continue
        data = path.read_bytes()
        if len(data) >= 64:
            found.add((len(data), hashlib.sha256(data).hexdigest()))
    return sorted(found)


def scan_program(seconds: float = 90.0, allowed: tuple[str, ...] = ()) -> str:
    """The scanning program (``allowed``: report site entries outside these names)."""
    return _SCAN.format(fingerprints=fingerprints(), allowed=list(allowed), seconds=seconds)
