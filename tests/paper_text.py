"""Where the papers' full text is (tests that check against it skip when it is absent).

Located the way tests/conftest.py locates the benchmark data: ``FINMATH_PAPERS_DIR``,
else ``docs/papers`` beside the data directory (``FINMATH_DATA_DIR``'s parent, i.e.
``../shared/docs/papers`` next to ``../shared/data``), else ``../shared/docs/papers``
beside the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def papers_dir() -> Path | None:
    candidates = []
    if os.environ.get("FINMATH_PAPERS_DIR"):
        candidates.append(Path(os.environ["FINMATH_PAPERS_DIR"]))
    if os.environ.get("FINMATH_DATA_DIR"):
        candidates.append(Path(os.environ["FINMATH_DATA_DIR"]).parent / "docs" / "papers")
    candidates.append(REPO_ROOT.parent / "shared" / "docs" / "papers")
    return next((c for c in candidates if c.is_dir()), None)


def paper_path(name: str) -> Path | None:
    """The paper file ``name`` in :func:`papers_dir`, or None when there is none."""
    base = papers_dir()
    path = base / name if base else None
    return path if path is not None and path.is_file() else None
