"""No pointers to the project's work items in the repository's text, neither their numbers
nor words about them ("as the ...  asked"): a reader cannot look them up, so code, tests,
docs and data notes state the reason itself."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("src", "tests", "benchmarks", "docs", "scripts", "deploy", ".ci")
FILES = ("README.md", "pyproject.toml")
TEXT_SUFFIXES = {".py", ".md", ".txt", ".tsv", ".csv", ".yaml", ".yml", ".toml", ".json", ".sh"}
SKIP_PARTS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}

# the word issue(s) followed by a number (with a space, a hyphen or "#"), or a bare "(#N)"
ITEM_NUMBER = re.compile(r"\bissues?[ -]?#?\d+|\(#\d+\)", re.IGNORECASE)
# words about a work item: "the" or "this" before the word issue (also "...'s", "as ...
# expected"; not the finance terms issue date and issue price, even across a "\n" of a
# JSON string), the word issue before "that", and the words for the place work items are
# kept (spelt here with a character class, so this file holds no match)
ITEM_WORDS = re.compile(
    r"\b(?:the|this) issue\b(?!(?:\s|\\n)+(?:date|price)s?\b)|\bissues? that\b"
    r"|\btic[k]ets?\b|\btrac[k]ers?\b",
    re.IGNORECASE,
)


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
            if ITEM_NUMBER.search(line) or ITEM_WORDS.search(line):
                hits.append(f"{path.relative_to(root)}:{n}: {line.strip()[:120]}")
    return hits


def test_no_tracker_numbers_in_the_repository() -> None:
    hits = tracker_mentions(REPO)
    assert not hits, "write the reason instead of pointing at a work item:\n" + "\n".join(hits)


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
    (tmp_path / "README.md").write_text("the record #11 is named, not a work item's number\n")
    assert tracker_mentions(tmp_path) == [
        f"docs/page.md:2: {decided}",
        f"src/notes.tsv:1: {bare}",
    ]


def test_the_scan_finds_planted_words(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    # built from parts, so that this file itself holds no match
    planted = [
        "The iss" + "ue that asked for this counted 6.9M",
        "Small models fail, as the iss" + "ue expected.",
        "# the iss" + "ue's PoT case, gold -22.22",
        "see the tic" + "ket for why",
        "filed in the trac" + "ker",
        "fixed by this iss" + "ue",
    ]
    fine = [
        "The present value at the market rate on the issue date.",
        "the bond's issue price is below par",
        r'"formula": "at the market rate on the issue\n    date."',  # a JSON string
        "a sample that raises is never silent",
    ]
    (tmp_path / "docs" / "page.md").write_text("\n".join(planted + fine) + "\n")
    assert tracker_mentions(tmp_path) == [
        f"docs/page.md:{n}: {line}" for n, line in enumerate(planted, 1)
    ]
