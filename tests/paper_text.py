"""Where the papers' full text is (tests that check against it skip when it is absent).

Located the way tests/conftest.py locates the benchmark data: ``FINMATH_PAPERS_DIR``,
else ``docs/papers`` beside the data directory (``FINMATH_DATA_DIR``'s parent, i.e.
``../shared/docs/papers`` next to ``../shared/data``), else ``../shared/docs/papers``
beside the repository.
"""

from __future__ import annotations

import os
import re
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


# --- reading a table row's printed values from an extraction ---------------------------------

_PAIR = re.compile(r"(\d+(?:\.\d+)?)\s*±(?:plus-or-minus\\pm)?\s*(\d+(?:\.\d+)?)")
"""``value ± half`` as both extractions print it (the alternative one adds LaTeX residue)."""
_LATEX_PAIR = re.compile(r"(\d+(?:\.\d+)?)\}?\s*\\pm\s*(?:\\textbf\{)?(\d+(?:\.\d+)?)")
"""``value \\pm half`` inside a LaTeX array (the main extraction's merged rows)."""
_CAPTION = re.compile(r"^Table \d+:")


def table_block(text: str, table: str, max_lines: int = 40) -> list[str]:
    """The lines of ``table`` ("Table 2"): from its caption back to the previous caption."""
    lines = text.splitlines()
    captions = [i for i, line in enumerate(lines) if line.strip().startswith(f"{table}:")]
    assert captions, f"no caption {table!r} in the extraction"
    end = captions[0]
    start = end - 1
    while start > 0 and end - start < max_lines and not _CAPTION.match(lines[start - 1].strip()):
        start -= 1
    return lines[start:end]


def row_pairs(
    block: list[str], label: str, labels: list[str] | None = None
) -> list[tuple[str, str]]:
    """The (value, half-width) pairs printed on the row ``label`` of a table block.

    A line starting with the label (then a space or a tab) gives its pairs in order.
    Otherwise, a line of merged rows (``labels`` before a LaTeX array of values, as the
    main extraction prints Table 1) gives the pair at the label's position among ``labels``.
    """
    for line in block:
        stripped = line.strip()
        if stripped.startswith(label) and stripped[len(label) : len(label) + 1] in (" ", "\t"):
            pairs = _PAIR.findall(stripped[len(label) :])
            if pairs:
                return pairs
    for line in block:
        head, dollar, tail = line.partition("$")
        head = " ".join(head.split())
        if not dollar or label not in head or labels is None:
            continue
        present = sorted((head.index(x), x) for x in labels if x in head)
        index = [x for _, x in present].index(label)
        return [_LATEX_PAIR.findall(tail)[index]]
    return []


def grid_has_run(grid: object, setting: dict[str, str]) -> bool:
    """Whether a run of ``grid`` (a ``cli.declare.Grid``) has the task arguments ``setting``
    (an argument the run does not set counts with the task's default)."""
    import inspect as pyinspect

    defaults = {
        name: p.default
        for name, p in pyinspect.signature(grid.task).parameters.items()  # type: ignore[attr-defined]
        if p.default is not pyinspect.Parameter.empty
    }
    for run in grid.arg_sets():  # type: ignore[attr-defined]
        if all(str(run.get(k, defaults.get(k))) == v for k, v in setting.items()):
            return True
    return False
