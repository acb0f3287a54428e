"""No tracker numbers in the repository's text: a reader cannot look up a ticket by its number, so
code, tests, docs and data notes state the reason itself."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("src", "tests", "benchmarks", "docs", "scripts", "deploy", ".ci")
FILES = ("README.md", "pyproject.toml")
TEXT_SUFFIXES = {".py", ".md", ".txt", ".tsv", ".csv", ".yaml", ".yml", ".toml", ".json", ".sh"}
SKIP_PARTS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}

# the word issue(s) followed by a number (with a space, a hyphen or "#"), or a bare "(#N)"
TRACKER = re.compile(r"\bissues?[ -]?#?\d+|\(#\d+\)", re.IGNORECASE)


def text_files(root: Path) -> list[Path]:
    found = [root / name for name in FILES if (root / name).is_file()]
    for folder in FOLDERS:
        base = root / folder
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            wanted = path.suffix in TEXT_SUFFIXES or folder == ".ci"
            if wanted and path.is_file() and not SKIP_PARTS & set(path.parts):
                found.append(path)
    return sorted(found)


def tracker_mentions(root: Path) -> list[str]:
    hits = []
    for path in text_files(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        for n, line in enumerate(text.splitlines(), 1):
            if TRACKER.search(line):
                hits.append(f"{path.relative_to(root)}:{n}: {line.strip()[:120]}")
    return hits


def test_no_tracker_numbers_in_the_repository() -> None:
    hits = tracker_mentions(REPO)
    assert not hits, "write the reason instead of a tracker number:\n" + "\n".join(hits)


def test_the_scan_reads_what_it_must() -> None:
    names = {p.relative_to(REPO).as_posix() for p in text_files(REPO)}
    assert {"README.md", "docs/architecture.md", ".ci/run"} <= names
    assert "src/finmath_tasks/tasks/mathhay/published.tsv" in names
    assert "tests/test_no_tracker_numbers.py" in names


def test_the_scan_finds_a_planted_number(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    # built from parts, so that this file itself holds no match
    decided, bare = "as decided in Iss" + "ue #12, see there", "a\tb (" + "#7)"
    (tmp_path / "docs" / "page.md").write_text(f"fine\n{decided}\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "notes.tsv").write_text(f"{bare}\n")
    (tmp_path / "README.md").write_text("the record #11 is named, not a tracker number\n")
    assert tracker_mentions(tmp_path) == [
        f"docs/page.md:2: {decided}",
        f"src/notes.tsv:1: {bare}",
    ]
